//! App versions, their registration policies and integrity voting, and the
//! apps with their latest versions.

use super::apps::checked;
use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_CLIENT, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::app::CATEGORIES;
use crate::models::validate;
use crate::models::version::{
    self as model, like, AppKinds, AppLatest, AppsLatest, AppsLatestQuery, ArchView, DefaultPolicy,
    DefaultPolicyParameters, PlatformLatest, PolicyBody, PolicyView, SummaryPolicy, VersionBody, VersionNumbers,
    VersionQuery, VersionView, VoteBody, VoteCount, VoteList, VotePage, VoteSummary, VoteView,
};
use crate::ops;
use crate::paging::Paging;
use herald_storage::apps::App;
use herald_storage::now_ms;
use herald_storage::versions::{Policy, Version};
use std::collections::BTreeMap;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const ADMINISTER: Access = Access::Tenant(ADMIN);
    pub const READ: Access = Access::Tenant(ADMIN_OR_READ);
    pub const VOTE: Access = Access::Tenant(ADMIN_OR_CLIENT);
}

/// The credential types an app can have, as [`AppsLatestQuery::credentials`] names them.
pub const CREDENTIALS: [&str; 3] = ["APNS", "FCM", "HMS"];

/// See [`Engine::versions`].
pub struct Versions<'a>(pub(crate) &'a Engine);

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("version {id} not found"))
}

fn policy_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("registration policy {id} not found"))
}

/// A `%` search text: its length is checked without the wildcards.
fn search(name: &str, v: &Option<String>, min: usize, max: usize) -> ApiResult<()> {
    match v {
        Some(v) => validate::id(name, v.trim_start_matches('%').trim_end_matches('%'), min, max),
        None => Ok(()),
    }
}

/// At most 3 items, each from `allowed`.
fn list_of(name: &str, values: &[String], allowed: &[&str]) -> ApiResult<()> {
    if values.len() > 3 {
        return Err(ApiError::field(name, "at most 3 items"));
    }
    for (i, v) in values.iter().enumerate() {
        if !allowed.contains(&v.as_str()) {
            return Err(ApiError::field(&format!("{name}[{i}]"), format!("must be one of {}", allowed.join(", "))));
        }
    }
    Ok(())
}

/// The credential types an app has.
fn credentials(a: &App) -> Vec<&'static str> {
    let mut c = Vec::new();
    if a.ios_apns_private_key.is_some() || a.ios_apns_certificate.is_some() {
        c.push("APNS");
    }
    if a.fcm_service_account.is_some() {
        c.push("FCM");
    }
    if a.hpk_client_id.is_some() {
        c.push("HMS");
    }
    c
}

impl Versions<'_> {
    fn load(&self, tenant: &str, id: &str) -> ApiResult<Version> {
        self.0.store.versions().get(tenant, id)?.ok_or_else(|| not_found(id))
    }

    fn view(&self, tenant: &str, v: &Version) -> ApiResult<VersionView> {
        let archs = self.0.store.versions().archs(tenant, &v.id)?;
        Ok(VersionView::of(tenant, v, &archs))
    }

    /// Creates a version of an existing app (409 when its app, platform and
    /// versionStr exist already).
    pub async fn create(&self, caller: &Caller, tenant: &str, body: VersionBody) -> ApiResult<VersionView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        let v = ops::versions::create(self.0, tenant, &body).await?;
        Ok(VersionView::of(tenant, &v, &[]))
    }

    /// A version with the registration state of its architectures.
    pub async fn get(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<VersionView> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("versionId", id)?;
        let v = self.load(tenant, id)?;
        self.view(tenant, &v)
    }

    /// Updates a version; what the body leaves out (sdkVersion, lock,
    /// integrity checking) stays.
    pub async fn update(&self, caller: &Caller, tenant: &str, id: &str, body: VersionBody) -> ApiResult<VersionView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("versionId", id)?;
        let v = ops::versions::update(self.0, tenant, id, &body).await?;
        self.view(tenant, &v)
    }

    /// Deletes a version with its registrations and votes.
    pub async fn delete(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("versionId", id)?;
        ops::versions::delete(self.0, tenant, id).await
    }

    /// Locks a version (its clients may not register, it takes no votes) or unlocks it.
    pub async fn lock(&self, caller: &Caller, tenant: &str, id: &str, locked: bool) -> ApiResult<VersionView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("versionId", id)?;
        let v = ops::versions::set_lock(self.0, tenant, id, locked).await?;
        self.view(tenant, &v)
    }

    /// The distinct version numbers (versionStr) of the versions matching
    /// `query`, numerically ordered, a page (of 1 to 100) of them.
    pub async fn list(
        &self,
        caller: &Caller,
        tenant: &str,
        query: &VersionQuery,
        paging: Paging,
    ) -> ApiResult<VersionNumbers> {
        caller.authorize(Some(tenant), access::READ)?;
        let paging = checked(paging, "pageSize", 1, 100)?;
        search("appName", &query.app_name, 1, 32)?;
        search("platform", &query.platform, 3, 10)?;
        if let Some(s) = &query.version_str {
            let core = s.strip_prefix('%').unwrap_or(s);
            let core = core.strip_suffix('%').unwrap_or(core);
            if core.is_empty() || core.len() > 20 || !core.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return Err(ApiError::field("versionStr", "digits and dots, with an optional % at either end"));
            }
        }
        let mut distinct: BTreeMap<u64, String> = BTreeMap::new();
        for v in self.0.store.versions().list(tenant)? {
            if query.app_name.as_ref().is_some_and(|p| !like(p, &v.app_name))
                || query.platform.as_ref().is_some_and(|p| !like(p, &v.platform))
                || query.version_lock.is_some_and(|l| l != v.version_lock)
                || query.is_check_integrity.is_some_and(|i| i != v.is_check_integrity)
                || query.version_str.as_ref().is_some_and(|p| !like(p, &v.version_str))
            {
                continue;
            }
            distinct.insert(v.version, v.version_str);
        }
        let ordered: Box<dyn Iterator<Item = String>> =
            if query.descending { Box::new(distinct.into_values().rev()) } else { Box::new(distinct.into_values()) };
        Ok(VersionNumbers { versions: ordered.skip(paging.offset()).take(paging.size).collect() })
    }

    /// The registration state of each architecture of a version.
    pub async fn architectures(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<Vec<ArchView>> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("versionId", id)?;
        let v = self.load(tenant, id)?;
        let archs = self.0.store.versions().archs(tenant, &v.id)?;
        Ok(archs.iter().map(|a| ArchView::of(&v.id, a)).collect())
    }

    /// Deletes the registration of one architecture of a version, with its votes.
    pub async fn delete_registration(&self, caller: &Caller, tenant: &str, id: &str, arch: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("versionId", id)?;
        model::architecture("architectureName", arch)?;
        ops::versions::delete_registration(self.0, tenant, id, arch).await
    }

    /// Casts an integrity vote: a client votes as itself; an administrator
    /// votes for the client the body names.
    pub async fn vote(&self, caller: &Caller, tenant: &str, id: &str, body: VoteBody) -> ApiResult<ArchView> {
        validate::ulid("versionId", id)?;
        let principal = caller
            .authorize(Some(tenant), access::VOTE)?
            .ok_or_else(|| ApiError::unauthorized("missing bearer token"))?;
        body.validate()?;
        let client_id = if principal.is_admin() {
            body.ast_client_id
                .clone()
                .ok_or_else(|| ApiError::field("astClientId", "is required for an admin's vote"))?
        } else {
            let own = principal.client_id.clone().ok_or_else(|| ApiError::forbidden("only a client may vote"))?;
            if body.ast_client_id.as_ref().is_some_and(|c| *c != own) {
                return Err(ApiError::forbidden("a client votes only as itself"));
            }
            own
        };
        let (arch, check) = (&body.architecture_name, &body.integrity_check_id);
        let counted = ops::versions::vote(self.0, tenant, id, &client_id, arch, check).await?;
        Ok(ArchView::of(&counted.version.id, &counted.state))
    }

    /// A page (of 1 to 100) of the votes of architecture `arch` of a version,
    /// those for `integrity_check_id` only when it is given.
    pub async fn votes(
        &self,
        caller: &Caller,
        tenant: &str,
        id: &str,
        arch: &str,
        integrity_check_id: Option<&str>,
        paging: Paging,
    ) -> ApiResult<VoteList> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("versionId", id)?;
        model::architecture("architectureName", arch)?;
        if let Some(c) = integrity_check_id {
            model::integrity_check_id("integrityCheckId", c)?;
        }
        let paging = checked(paging, "pageSize", 1, 100)?;
        let v = self.load(tenant, id)?;
        let votes = self
            .0
            .store
            .versions()
            .votes(tenant, &v.id, arch)?
            .into_iter()
            .filter(|x| integrity_check_id.is_none_or(|c| c == x.integrity_check_id))
            .skip(paging.offset())
            .take(paging.size)
            .map(|x| VoteView { ast_client_id: x.client_id, integrity_check_id: x.integrity_check_id })
            .collect();
        Ok(VoteList {
            version_id: v.id,
            app_name: v.app_name,
            platform: v.platform,
            version_str: v.version_str,
            architecture: arch.to_string(),
            votes,
            metadata: VotePage { page: paging.page, page_size: paging.size },
        })
    }

    /// The tally of architecture `arch` of a version under its policy.
    pub async fn summary(&self, caller: &Caller, tenant: &str, id: &str, arch: &str) -> ApiResult<VoteSummary> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("versionId", id)?;
        model::architecture("architectureName", arch)?;
        let v = self.load(tenant, id)?;
        let store = self.0.store.versions();
        let policy = match &v.policy_id {
            Some(id) => store.policy(tenant, id)?.map(|p| SummaryPolicy::Quorum(PolicyView::of(&p))),
            None => Some(SummaryPolicy::Default(DefaultPolicy {
                kind: "DEFAULT".into(),
                name: "default".into(),
                parameters: DefaultPolicyParameters { register_user_id: v.register_user_id.clone() },
            })),
        };
        let mut tally = store.arch(tenant, &v.id, arch)?.map(|s| s.tally).unwrap_or_default();
        tally.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let total = tally.iter().fold(0u32, |t, (_, n)| t.saturating_add(*n));
        let votes = tally
            .into_iter()
            .map(|(id, n)| VoteCount { integrity_check_id: id, num: n, percent: percent(n, total) })
            .collect();
        Ok(VoteSummary {
            version_id: v.id,
            app_name: v.app_name,
            platform: v.platform,
            version_str: v.version_str,
            architecture: arch.to_string(),
            policy,
            votes,
        })
    }

    /// Resets the voting of one architecture (`arch`) of a version, or of all:
    /// a registered one keeps its registration and starts an empty round.
    pub async fn reset(&self, caller: &Caller, tenant: &str, id: &str, arch: Option<&str>) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("versionId", id)?;
        if let Some(a) = arch {
            model::architecture("architectureName", a)?;
        }
        ops::versions::reset(self.0, tenant, id, arch).await
    }

    /// Creates a registration policy (a quorum of votes).
    pub async fn create_policy(&self, caller: &Caller, tenant: &str, body: PolicyBody) -> ApiResult<PolicyView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        body.validate()?;
        let p = Policy {
            id: ulid::Ulid::generate().to_string(),
            name: body.name,
            kind: body.kind,
            quorum_size: body.parameters.quorum_size,
            max_votes: body.parameters.max_votes,
            uses: 0,
            created_ms: now_ms(),
        };
        ops::versions::create_policy(self.0, tenant, &p).await?;
        Ok(PolicyView::of(&p))
    }

    /// The registration policies of the tenant.
    pub async fn policies(&self, caller: &Caller, tenant: &str) -> ApiResult<Vec<PolicyView>> {
        caller.authorize(Some(tenant), access::READ)?;
        Ok(self.0.store.versions().policies(tenant)?.iter().map(PolicyView::of).collect())
    }

    /// One registration policy.
    pub async fn policy(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<PolicyView> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("policyId", id)?;
        let p = self.0.store.versions().policy(tenant, id)?.ok_or_else(|| policy_not_found(id))?;
        Ok(PolicyView::of(&p))
    }

    /// Deletes a registration policy no version uses (409 while one does).
    pub async fn delete_policy(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("policyId", id)?;
        ops::versions::delete_policy(self.0, tenant, id).await
    }

    /// The apps matching `query`, each with the latest version of each of its
    /// platforms, a page (of 1 to 100) of them, and how many matched.
    pub async fn apps_latest(
        &self,
        caller: &Caller,
        tenant: &str,
        query: &AppsLatestQuery,
        paging: Paging,
    ) -> ApiResult<AppsLatest> {
        caller.authorize(Some(tenant), access::READ)?;
        let paging = checked(paging, "pageSize", 1, 100)?;
        search("appName", &query.app_name, 1, 32)?;
        search("platform", &query.platform, 3, 100)?;
        let app_filter = query.app_name.as_ref().map(|s| s.trim_matches('%').to_string());
        let platform_filter = query.platform.as_ref().map(|s| s.trim_matches('%').to_string());
        let (categories, creds) = (&query.categories, &query.credentials);
        list_of("category", categories, &CATEGORIES)?;
        list_of("credential", creds, &CREDENTIALS)?;
        let text = query.text_search.as_ref().map(|t| t.to_lowercase());
        if let Some(t) = &text {
            validate::length("textSearch", t, 1, 255)?;
        }
        let store = &self.0.store;
        let (apps, _) = store.apps().list(tenant, 0, usize::MAX)?;
        let mut out = Vec::new();
        for app in apps {
            let app_creds = credentials(&app);
            // Latest version per platform, numerically.
            let mut latest: BTreeMap<String, Version> = BTreeMap::new();
            for v in store.versions().of_app(tenant, &app.name)? {
                if latest.get(&v.platform).is_none_or(|l| v.version > l.version) {
                    latest.insert(v.platform.clone(), v);
                }
            }
            if let Some(p) = &platform_filter {
                latest.retain(|name, _| name.contains(p.as_str()));
                if latest.is_empty() {
                    continue;
                }
            }
            if app_filter.as_ref().is_some_and(|f| !app.name.contains(f.as_str()))
                || (!categories.is_empty() && !app.categories.iter().any(|c| categories.contains(c)))
                || (!creds.is_empty() && !app_creds.iter().any(|c| creds.iter().any(|f| f == c)))
            {
                continue;
            }
            if let Some(t) = &text {
                let hit = |s: &str| s.to_lowercase().contains(t.as_str());
                let matched = (app_filter.is_none() && hit(&app.name))
                    || (platform_filter.is_none() && latest.keys().any(|p| hit(p)))
                    || latest.values().any(|v| hit(&v.version_str))
                    || (categories.is_empty() && app.categories.iter().any(|c| hit(c)))
                    || (creds.is_empty() && app_creds.iter().any(|c| hit(c)));
                if !matched {
                    continue;
                }
            }
            let platforms = latest
                .into_values()
                .map(|v| PlatformLatest { name: v.platform, latest_version: v.version_str, latest_version_id: v.id })
                .collect();
            out.push(AppLatest {
                app_name: app.name,
                push_notification_config: AppKinds {
                    categories: app.categories,
                    credentials: app_creds.into_iter().map(str::to_string).collect(),
                },
                platforms,
            });
        }
        let total_count = out.len();
        let data = out.into_iter().skip(paging.offset()).take(paging.size).collect();
        Ok(AppsLatest { data, total_count })
    }
}

/// `n` of `total` votes in whole percent, rounded half up; computed in u64 so
/// that `n * 100` cannot overflow whatever the counts.
fn percent(n: u32, total: u32) -> u32 {
    let (n, total) = (u64::from(n), u64::from(total.max(1)));
    let p = n.saturating_mul(100).saturating_add(total / 2).checked_div(total).unwrap_or(0);
    u32::try_from(p).unwrap_or(u32::MAX)
}
