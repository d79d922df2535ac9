//! App versions, registration policies and votes (spec 002 "App version",
//! "Registration policy", "Vote").

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_storage::versions::{ArchState, Policy, Version, Vote, FAILED, REGISTERED, VOTING};
use serde::{Deserialize, Serialize};

/// Largest component of a versionStr (the numeric key packs three of them).
const MAX_PART: u64 = 999_999;
/// Upper bound of `maxVotes`: an architecture's tally is one record.
pub const MAX_VOTES: u32 = 1000;

/// Parses `major.minor.patch` into its canonical text and numeric sort key
/// (`major * 10^12 + minor * 10^6 + patch`, so 1.10.0 sorts after 1.9.0).
pub fn parse_version_str(field: &str, s: &str) -> ApiResult<(String, u64)> {
    let bad = || ApiError::field(field, "must be three dot-separated integers (each 0 to 999999), e.g. 1.2.3");
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 3 {
        return Err(bad());
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 6 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        nums[i] = p.parse().map_err(|_| bad())?;
        if nums[i] > MAX_PART {
            return Err(bad());
        }
    }
    // Each part is at most MAX_PART (6 digits): the key is below 10^18 < u64::MAX.
    #[allow(clippy::arithmetic_side_effects)]
    let key = nums[0] * 1_000_000_000_000 + nums[1] * 1_000_000 + nums[2];
    Ok((format!("{}.{}.{}", nums[0], nums[1], nums[2]), key))
}

/// Body of create and update.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VersionBody {
    /// An app of the tenant (1 to 255 characters on create, 3 to 255 on update).
    pub app_name: String,
    /// The platform the version is built for (1 to 100 characters).
    pub platform: String,
    /// `major.minor.patch`, each part 0 to 999999; stored without leading zeros and ordered numerically.
    pub version_str: String,
    /// The Herald SDK version the build embeds (at most 255 characters); absent on update keeps it.
    pub sdk_version: Option<String>,
    /// Whether the version is locked (it takes no votes); absent: false on create, kept on update.
    pub version_lock: Option<bool>,
    /// Whether integrity is checked by voting; absent: false on create, kept on update.
    pub is_check_integrity: Option<bool>,
    /// Under the default policy, the user whose client registers the version (1 to 255
    /// characters); this or `policyId` is required.
    pub register_user_id: Option<String>,
    /// The registration policy (a ULID) that decides the votes; this or `registerUserId` is required.
    pub policy_id: Option<String>,
}

impl VersionBody {
    /// The spec's body rules; returns the canonical versionStr and its key.
    pub fn validate(&self, update: bool) -> ApiResult<(String, u64)> {
        validate::id("appName", &self.app_name, if update { 3 } else { 1 }, 255)?;
        validate::id("platform", &self.platform, 1, 100)?;
        let parsed = parse_version_str("versionStr", &self.version_str)?;
        validate::max_length("sdkVersion", &self.sdk_version, 255)?;
        if let Some(u) = &self.register_user_id {
            validate::id("registerUserId", u, 1, 255)?;
        }
        if let Some(p) = &self.policy_id {
            validate::length("policyId", p, 26, 26)?;
            validate::ulid("policyId", p)?;
        }
        if self.register_user_id.is_none() && self.policy_id.is_none() {
            return Err(ApiError::field("policyId", "either policyId or registerUserId must be given"));
        }
        Ok(parsed)
    }
}

/// The record of a validated body (`parsed` is what [`VersionBody::validate`]
/// answered): a new version with id `id`, or `old` updated, which keeps its
/// id, creation time, and the sdkVersion, lock and integrity flag the body
/// does not give.
pub fn record(body: &VersionBody, parsed: (String, u64), old: Option<&Version>, id: &str, now: u64) -> Version {
    let (version_str, version) = parsed;
    Version {
        id: old.map_or_else(|| id.to_string(), |o| o.id.clone()),
        app_name: body.app_name.clone(),
        platform: body.platform.clone(),
        version_str,
        version,
        sdk_version: body.sdk_version.clone().or_else(|| old.and_then(|o| o.sdk_version.clone())),
        version_lock: body.version_lock.or(old.map(|o| o.version_lock)).unwrap_or(false),
        is_check_integrity: body.is_check_integrity.or(old.map(|o| o.is_check_integrity)).unwrap_or(false),
        register_user_id: body.register_user_id.clone(),
        policy_id: body.policy_id.clone(),
        created_ms: old.map_or(now, |o| o.created_ms),
        modified_ms: now,
    }
}

/// `PUT /v1/tenants/{t}/versions/{versionId}/lock`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockBody {
    /// True locks the version (it takes no votes), false unlocks it.
    pub version_lock: bool,
}

fn registration_state_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&[VOTING, REGISTERED, FAILED])
}

/// The one kind of registration policy that can be created.
pub const QUORUM: &str = "QUORUM";

fn policy_type_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&[QUORUM])
}

/// The registration state of one architecture of a version.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchView {
    /// The version (a ULID).
    pub version_id: String,
    /// The architecture's name (3 to 10 characters), as the votes named it.
    pub architecture: String,
    /// Whether voting registered the architecture (`registrationState` is `REGISTERED`).
    pub is_registered: bool,
    /// `VOTING` while votes are counted, then `REGISTERED`, or `FAILED` when `maxVotes`
    /// votes were cast without a quorum.
    #[schema(schema_with = registration_state_schema)]
    pub registration_state: String,
}

impl ArchView {
    /// The read form of an architecture's stored state.
    pub fn of(version_id: &str, a: &ArchState) -> ArchView {
        ArchView {
            version_id: version_id.to_string(),
            architecture: a.architecture.clone(),
            is_registered: a.state == REGISTERED,
            registration_state: a.state.clone(),
        }
    }
}

/// An app version with the registration state of its architectures.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionView {
    /// The version's id (a ULID).
    pub id: String,
    /// The tenant of the version.
    pub tenant_id: String,
    /// The numeric sort key of `versionStr` (major * 10^12 + minor * 10^6 + patch), in decimal.
    pub version: String,
    /// The Herald SDK version the build embeds, when given.
    pub sdk_version: Option<String>,
    /// The app of the version.
    pub app_name: String,
    /// The platform the version is built for.
    pub platform: String,
    /// `major.minor.patch`, without leading zeros.
    pub version_str: String,
    /// Whether the version is locked: it takes no votes.
    pub version_lock: bool,
    /// Whether integrity is checked by voting; without it, votes are refused.
    pub is_check_integrity: bool,
    /// Under the default policy, the user whose client registers the version.
    pub register_user_id: Option<String>,
    /// The registration policy deciding the votes; absent under the default policy.
    pub policy_id: Option<String>,
    /// The state of each architecture voted on; empty before the first vote.
    pub architecture_integrities: Vec<ArchView>,
}

impl VersionView {
    /// The read form of a stored version with its architectures' states.
    pub fn of(tenant: &str, v: &Version, archs: &[ArchState]) -> VersionView {
        VersionView {
            id: v.id.clone(),
            tenant_id: tenant.to_string(),
            version: v.version.to_string(),
            sdk_version: v.sdk_version.clone(),
            app_name: v.app_name.clone(),
            platform: v.platform.clone(),
            version_str: v.version_str.clone(),
            version_lock: v.version_lock,
            is_check_integrity: v.is_check_integrity,
            register_user_id: v.register_user_id.clone(),
            policy_id: v.policy_id.clone(),
            architecture_integrities: archs.iter().map(|a| ArchView::of(&v.id, a)).collect(),
        }
    }
}

/// The quorum of a new registration policy.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyParameters {
    /// At most `maxVotes`.
    #[schema(minimum = 1, maximum = 1000)]
    pub quorum_size: u32,
    /// Up to [`MAX_VOTES`].
    #[schema(minimum = 1, maximum = 1000)]
    pub max_votes: u32,
}

/// `POST /v1/tenants/{t}/policies`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyBody {
    /// The policy's name, unique in the tenant (1 to 50 characters; 409 when taken).
    pub name: String,
    /// The kind of policy: only `QUORUM`.
    #[serde(rename = "type")]
    #[schema(schema_with = policy_type_schema)]
    pub kind: String,
    /// How many agreeing votes register an architecture, out of how many at most.
    pub parameters: PolicyParameters,
}

impl PolicyBody {
    /// Checks the name, the type and `1 <= quorumSize <= maxVotes <= 1000`; 400 naming the field.
    pub fn validate(&self) -> ApiResult<()> {
        validate::id("name", &self.name, 1, 50)?;
        if self.kind != QUORUM {
            return Err(ApiError::field("type", "must be QUORUM"));
        }
        let p = &self.parameters;
        if p.max_votes < 1 || p.max_votes > MAX_VOTES {
            return Err(ApiError::field("parameters.maxVotes", format!("must be from 1 to {MAX_VOTES}")));
        }
        if p.quorum_size < 1 || p.quorum_size > p.max_votes {
            return Err(ApiError::field("parameters.quorumSize", "must be from 1 to maxVotes"));
        }
        Ok(())
    }
}

/// A policy is deleted only while no version uses it.
pub fn check_policy_unused(p: &Policy) -> Result<(), &'static str> {
    if p.uses > 0 {
        return Err("is used by a version");
    }
    Ok(())
}

/// A registration policy as read.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PolicyView {
    /// The policy's id (a ULID): what a version's `policyId` names.
    pub id: String,
    /// The policy's name, unique in the tenant.
    pub name: String,
    /// `QUORUM`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The quorum the policy requires.
    pub parameters: PolicyParametersView,
}

/// The quorum of a [`PolicyView`].
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyParametersView {
    /// Agreeing votes for one integrityCheckId that register an architecture.
    pub quorum_size: u32,
    /// Votes after which voting fails when no integrityCheckId reached the quorum.
    pub max_votes: u32,
}

impl PolicyView {
    /// The read form of a stored policy.
    pub fn of(p: &Policy) -> PolicyView {
        PolicyView {
            id: p.id.clone(),
            name: p.name.clone(),
            kind: p.kind.clone(),
            parameters: PolicyParametersView { quorum_size: p.quorum_size, max_votes: p.max_votes },
        }
    }
}

/// The distinct version numbers `GET /versions` answers.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VersionNumbers {
    /// Distinct `versionStr` values in numeric order, highest first with `orderByVersion=desc`.
    pub versions: Vec<String>,
}

/// The conditions of `GET /versions`; `%` at either end of a text is a wildcard.
#[derive(Debug, Clone, Default)]
pub struct VersionQuery {
    /// Versions of the app of this name (1 to 32 characters besides the wildcards).
    pub app_name: Option<String>,
    /// Versions of this platform (3 to 10 characters besides the wildcards).
    pub platform: Option<String>,
    /// Only locked (true) or only unlocked (false) versions.
    pub version_lock: Option<bool>,
    /// Only versions with (true) or without (false) integrity checking.
    pub is_check_integrity: Option<bool>,
    /// Versions whose versionStr matches: digits and dots, with an optional `%` at either end.
    pub version_str: Option<String>,
    /// Newest first (`orderByVersion=desc`) rather than oldest first.
    pub descending: bool,
}

/// One client's vote.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoteView {
    /// The client that voted (a ULID).
    pub ast_client_id: String,
    /// The integrity check value it voted for (22 characters).
    pub integrity_check_id: String,
}

/// The page a [`VoteList`] shows.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VotePage {
    /// The page shown, from 1.
    pub page: usize,
    /// Votes per page (1 to 100).
    pub page_size: usize,
}

/// The votes of one architecture of a version, a page of them.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoteList {
    /// The version voted on (a ULID).
    pub version_id: String,
    /// The app of the version.
    pub app_name: String,
    /// The platform of the version.
    pub platform: String,
    /// The version's `major.minor.patch`.
    pub version_str: String,
    /// The architecture whose votes these are.
    pub architecture: String,
    /// The page of votes of the current round; only those for `integrityCheckId` when the query names one.
    pub votes: Vec<VoteView>,
    /// Which page this is.
    pub metadata: VotePage,
}

/// How many votes went to one integrityCheckId.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoteCount {
    /// An integrity check value votes went to.
    pub integrity_check_id: String,
    /// How many votes of the current round it has.
    pub num: u32,
    /// Of all the votes of the round, rounded to the nearest integer.
    pub percent: u32,
}

/// The policy a version's votes are decided by.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum SummaryPolicy {
    /// The version's registration policy.
    Quorum(PolicyView),
    /// No policy: the registering user's client decides alone.
    Default(DefaultPolicy),
}

/// The default policy (`type` `DEFAULT`, `name` `default`).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DefaultPolicy {
    /// Always `DEFAULT`: the version has no `policyId`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Always `default`.
    pub name: String,
    /// Whose client registers the version.
    pub parameters: DefaultPolicyParameters,
}

/// Whose client registers under the default policy.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultPolicyParameters {
    /// The version's `registerUserId`: a vote of that user's client registers an architecture alone.
    pub register_user_id: Option<String>,
}

/// The tally of one architecture of a version, most voted first.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoteSummary {
    /// The version voted on (a ULID).
    pub version_id: String,
    /// The app of the version.
    pub app_name: String,
    /// The platform of the version.
    pub platform: String,
    /// The version's `major.minor.patch`.
    pub version_str: String,
    /// The architecture tallied.
    pub architecture: String,
    /// `None` when the version's policy no longer exists.
    pub policy: Option<SummaryPolicy>,
    /// The count of each integrityCheckId in the current round, most voted first; empty before any vote.
    pub votes: Vec<VoteCount>,
}

/// The conditions of `GET /apps-latest`.
#[derive(Debug, Clone, Default)]
pub struct AppsLatestQuery {
    /// Part of the app name (`%` at either end is ignored).
    pub app_name: Option<String>,
    /// Part of a platform name (`%` at either end is ignored).
    pub platform: Option<String>,
    /// Apps of any of these categories (at most 3).
    pub categories: Vec<String>,
    /// Apps with any of these credentials, `APNS`, `FCM` or `HMS` (at most 3).
    pub credentials: Vec<String>,
    /// Text found (case-insensitively) in any field not filtered otherwise.
    pub text_search: Option<String>,
}

/// An app with the latest version of each of its platforms.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppLatest {
    /// The app's name.
    pub app_name: String,
    /// What the app pushes and through which providers.
    pub push_notification_config: AppKinds,
    /// Each platform the app has versions of, with its latest version; empty without versions.
    pub platforms: Vec<PlatformLatest>,
}

/// What an app pushes (categories) and through which providers (credentials).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AppKinds {
    /// The notification categories the app accepts: `chat`, `payment`, `tms`.
    pub categories: Vec<String>,
    /// `APNS`, `FCM`, `HMS`.
    pub credentials: Vec<String>,
}

/// The latest version of one platform of an app.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformLatest {
    /// A platform the app has versions for.
    pub name: String,
    /// The highest `versionStr` of that platform, compared numerically.
    pub latest_version: String,
    /// The id (a ULID) of that version.
    pub latest_version_id: String,
}

/// A page of apps with their latest versions, and how many matched in all.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsLatest {
    /// The page of matching apps.
    pub data: Vec<AppLatest>,
    /// How many apps matched, over all pages.
    pub total_count: usize,
}

/// `POST .../versions/{id}/votes`; an admin names the client it votes for.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VoteBody {
    /// The architecture voted on (3 to 10 characters).
    pub architecture_name: String,
    /// The integrity check value the client computed (exactly 22 characters).
    pub integrity_check_id: String,
    /// The client the vote is for (a ULID): required when an administrator votes; a client may name only itself.
    pub ast_client_id: Option<String>,
}

impl VoteBody {
    /// Checks the forms of the architecture, the integrityCheckId and the client id; 400 naming the field.
    pub fn validate(&self) -> ApiResult<()> {
        architecture("architectureName", &self.architecture_name)?;
        integrity_check_id("integrityCheckId", &self.integrity_check_id)?;
        if let Some(c) = &self.ast_client_id {
            validate::ulid("astClientId", c)?;
        }
        Ok(())
    }
}

/// An architecture name: 3 to 10 printable characters (400 naming `field` otherwise).
pub fn architecture(field: &str, v: &str) -> ApiResult<()> {
    validate::id(field, v, 3, 10)
}

/// An integrityCheckId: exactly 22 printable characters (400 naming `field` otherwise).
pub fn integrity_check_id(field: &str, v: &str) -> ApiResult<()> {
    validate::id(field, v, 22, 22)
}

/// A `LIKE`-style match: `%` at the start and/or end is a wildcard; otherwise exact.
pub fn like(pattern: &str, value: &str) -> bool {
    let starts = pattern.starts_with('%');
    let ends = pattern.len() > 1 && pattern.ends_with('%');
    let core = pattern.trim_start_matches('%').trim_end_matches('%');
    match (starts, ends) {
        (true, true) => value.contains(core),
        (true, false) => value.ends_with(core),
        (false, true) => value.starts_with(core),
        (false, false) => value == core,
    }
}

/// The records a vote is decided on, as stored inside its transaction.
pub struct Ballot<'a> {
    /// The version voted on.
    pub version: &'a Version,
    /// Its registration policy; `None` under the default policy.
    pub policy: Option<&'a Policy>,
    /// The architecture's state; a fresh `VOTING` one for its first vote.
    pub state: ArchState,
    /// The client's vote in the current round, when it voted before.
    pub previous: Option<&'a Vote>,
    /// Whether the client is linked to the version's `registerUserId`.
    pub registering_client: bool,
}

/// Why a vote was not counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The version is locked (the API answers 409).
    Locked,
    /// The version does not check integrity (409).
    NoIntegrityCheck,
    /// Voting of this architecture is over (`REGISTERED` or `FAILED`).
    Closed(String),
    /// Default policy: the client is not linked to the version's `registerUserId`.
    NotEligible,
}

/// What the vote rule makes of a [`Ballot`]: refused, or the vote and the
/// architecture's new state to write.
#[derive(Debug)]
pub enum Decision {
    /// The vote is not counted; nothing is written.
    Refused(Refusal),
    /// The vote counts: both records are written in the vote's transaction.
    Counted {
        /// The client's vote in the current round (replacing its earlier one).
        vote: Vote,
        /// The architecture's state after the vote.
        state: ArchState,
        /// Whether this vote registered the architecture (a `VERSION_REGISTERED` event follows).
        registered_now: bool,
    },
}

/// The state of an architecture's first vote, in round `round`.
pub fn fresh_state(arch: &str, round: &str, now: u64) -> ArchState {
    ArchState {
        architecture: arch.to_string(),
        state: VOTING.to_string(),
        round: round.to_string(),
        registered_check_id: None,
        total: 0,
        tally: Vec::new(),
        updated_ms: now,
    }
}

/// The vote rule of integrity voting: a locked version or one without
/// integrity checking takes no votes; under the default policy (none) only a
/// client of the version's `registerUserId` votes, and decides alone; a vote
/// replacing the client's earlier one moves its count; the first
/// integrityCheckId to reach the policy's `quorumSize` registers the
/// architecture, and reaching `maxVotes` without a quorum fails it.
pub fn decide_vote(b: Ballot<'_>, client: &str, check_id: &str, now: u64) -> Decision {
    if b.version.version_lock {
        return Decision::Refused(Refusal::Locked);
    }
    if !b.version.is_check_integrity {
        return Decision::Refused(Refusal::NoIntegrityCheck);
    }
    if b.policy.is_none() && !b.registering_client {
        return Decision::Refused(Refusal::NotEligible);
    }
    let mut state = b.state;
    if state.state != VOTING {
        return Decision::Refused(Refusal::Closed(state.state));
    }
    match b.previous {
        Some(previous) => {
            if let Some(e) = state.tally.iter_mut().find(|(id, _)| *id == previous.integrity_check_id) {
                e.1 = e.1.saturating_sub(1);
            }
            state.tally.retain(|(_, n)| *n > 0);
        }
        None => state.total = state.total.saturating_add(1),
    }
    let count = match state.tally.iter_mut().find(|(id, _)| id == check_id) {
        Some(e) => {
            e.1 = e.1.saturating_add(1);
            e.1
        }
        None => {
            state.tally.push((check_id.to_string(), 1));
            1
        }
    };
    // The default policy: the registering user's client decides alone.
    let (quorum, max) = b.policy.map_or((1, u32::MAX), |p| (p.quorum_size, p.max_votes));
    let registered_now = count >= quorum;
    if registered_now {
        state.state = REGISTERED.to_string();
        state.registered_check_id = Some(check_id.to_string());
    } else if state.total >= max {
        state.state = FAILED.to_string();
    }
    state.updated_ms = now;
    let vote = Vote { client_id: client.to_string(), integrity_check_id: check_id.to_string(), cast_ms: now };
    Decision::Counted { vote, state, registered_now }
}

/// Resetting an architecture's voting: a registered one keeps its state and
/// starts an empty round `round` (its votes go); any other starts over (its
/// state goes: `None`).
pub fn reset(state: ArchState, round: &str, now: u64) -> Option<ArchState> {
    if state.state != REGISTERED {
        return None;
    }
    Some(ArchState { round: round.to_string(), total: 0, tally: Vec::new(), updated_ms: now, ..state })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voting(total: u32, tally: &[(&str, u32)]) -> ArchState {
        ArchState {
            architecture: "arm64".into(),
            state: VOTING.into(),
            round: "r1".into(),
            registered_check_id: None,
            total,
            tally: tally.iter().map(|(id, n)| (id.to_string(), *n)).collect(),
            updated_ms: 0,
        }
    }

    fn quorum(size: u32, max: u32) -> Policy {
        Policy {
            id: "p".into(),
            name: "p".into(),
            kind: "QUORUM".into(),
            quorum_size: size,
            max_votes: max,
            uses: 1,
            created_ms: 0,
        }
    }

    fn counted(d: Decision) -> (ArchState, bool) {
        match d {
            Decision::Counted { state, registered_now, .. } => (state, registered_now),
            Decision::Refused(o) => panic!("refused: {o:?}"),
        }
    }

    #[test]
    fn a_quorum_registers_and_max_votes_without_one_fails() {
        let v = Version { is_check_integrity: true, policy_id: Some("p".into()), ..Version::default() };
        let p = quorum(2, 3);
        let ballot =
            |state, previous| Ballot { version: &v, policy: Some(&p), state, previous, registering_client: false };
        let (s, now) = counted(decide_vote(ballot(voting(0, &[]), None), "c1", "A", 1));
        assert_eq!((s.state.as_str(), s.total, now), (VOTING, 1, false));
        let (s, now) = counted(decide_vote(ballot(voting(1, &[("A", 1)]), None), "c2", "A", 2));
        assert_eq!((s.state.as_str(), s.registered_check_id.as_deref(), now), (REGISTERED, Some("A"), true));
        let (s, _) = counted(decide_vote(ballot(voting(2, &[("A", 1), ("B", 1)]), None), "c3", "C", 3));
        assert_eq!((s.state.as_str(), s.total), (FAILED, 3), "maxVotes reached without a quorum");
    }

    #[test]
    fn a_replaced_vote_moves_its_count_without_counting_twice() {
        let v = Version { is_check_integrity: true, policy_id: Some("p".into()), ..Version::default() };
        let p = quorum(3, 10);
        let earlier = Vote { client_id: "c1".into(), integrity_check_id: "A".into(), cast_ms: 0 };
        let ballot = Ballot {
            version: &v,
            policy: Some(&p),
            state: voting(2, &[("A", 1), ("B", 1)]),
            previous: Some(&earlier),
            registering_client: false,
        };
        let (s, _) = counted(decide_vote(ballot, "c1", "B", 5));
        assert_eq!((s.total, s.tally), (2, vec![("B".to_string(), 2)]));
    }

    #[test]
    fn refusals_name_their_reason() {
        let refused =
            |v: &Version, policy: Option<&Policy>, state: ArchState, registering_client: bool| match decide_vote(
                Ballot { version: v, policy, state, previous: None, registering_client },
                "c",
                "A",
                0,
            ) {
                Decision::Refused(o) => format!("{o:?}"),
                Decision::Counted { .. } => "counted".into(),
            };
        let p = quorum(2, 3);
        let open = Version { is_check_integrity: true, ..Version::default() };
        let locked = Version { version_lock: true, ..open.clone() };
        let unchecked = Version { is_check_integrity: false, ..open.clone() };
        assert_eq!(refused(&locked, Some(&p), voting(0, &[]), false), "Locked");
        assert_eq!(
            refused(&locked, None, voting(0, &[]), true),
            "Locked",
            "a lock refuses even the registering client"
        );
        assert_eq!(refused(&unchecked, Some(&p), voting(0, &[]), false), "NoIntegrityCheck");
        assert_eq!(refused(&open, None, voting(0, &[]), false), "NotEligible", "default policy, not bob's client");
        let bobs = Version { register_user_id: Some("bob".into()), ..open.clone() };
        assert_eq!(refused(&bobs, None, voting(0, &[]), true), "counted", "bob's client decides alone");
        let closed = ArchState { state: REGISTERED.into(), ..voting(2, &[]) };
        assert_eq!(refused(&open, Some(&p), closed, false), "Closed(\"REGISTERED\")");
    }

    #[test]
    fn a_reset_keeps_a_registration_and_starts_anything_else_over() {
        let registered =
            ArchState { state: REGISTERED.into(), registered_check_id: Some("A".into()), ..voting(3, &[("A", 3)]) };
        let kept = reset(registered, "r2", 9).expect("a registration stays");
        assert_eq!((kept.state.as_str(), kept.registered_check_id.as_deref()), (REGISTERED, Some("A")));
        assert_eq!((kept.round.as_str(), kept.total, kept.tally.len(), kept.updated_ms), ("r2", 0, 0, 9));
        assert_eq!(reset(voting(2, &[("A", 2)]), "r2", 9), None);
        assert_eq!(reset(ArchState { state: FAILED.into(), ..voting(3, &[]) }, "r2", 9), None);
    }

    #[test]
    fn an_update_keeps_what_its_body_does_not_give() {
        let body = VersionBody {
            app_name: "shop".into(),
            platform: "ios".into(),
            version_str: "1.2.3".into(),
            sdk_version: None,
            version_lock: None,
            is_check_integrity: None,
            register_user_id: Some("bob".into()),
            policy_id: None,
        };
        let parsed = body.validate(false).unwrap();
        let created = record(&body, parsed.clone(), None, "V1", 5);
        assert_eq!((created.id.as_str(), created.version_lock, created.created_ms), ("V1", false, 5));
        let old = Version { version_lock: true, sdk_version: Some("9".into()), ..created };
        let updated = record(&body, parsed, Some(&old), "ignored", 7);
        assert_eq!(
            (updated.id.as_str(), updated.version_lock, updated.sdk_version.as_deref()),
            ("V1", true, Some("9"))
        );
        assert_eq!((updated.created_ms, updated.modified_ms), (5, 7));
    }

    #[test]
    fn only_an_unused_policy_is_deleted() {
        assert!(check_policy_unused(&quorum(1, 1)).is_err());
        assert!(check_policy_unused(&Policy { uses: 0, ..quorum(1, 1) }).is_ok());
    }

    #[test]
    fn version_keys_order_numerically() {
        let (_, a) = parse_version_str("v", "1.9.0").unwrap();
        let (c, b) = parse_version_str("v", "1.10.0").unwrap();
        assert!(b > a);
        assert_eq!(c, "1.10.0");
        assert_eq!(parse_version_str("v", "01.2.3").unwrap().0, "1.2.3");
        for bad in ["1.2", "1.2.3.4", "a.b.c", "1..2", "1.2.3000000", "-1.2.3", ""] {
            assert!(parse_version_str("v", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn like_patterns() {
        assert!(like("%1.2", "11.1.2"));
        assert!(!like("%1.2", "1.2.3"));
        assert!(like("1.2%", "1.2.3"));
        assert!(like("%2%", "1.2.3"));
        assert!(like("1.2.3", "1.2.3"));
        assert!(!like("1.2", "1.2.3"));
        assert!(like("%", "x"));
    }
}
