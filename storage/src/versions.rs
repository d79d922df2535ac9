//! App versions, registration policies and per-architecture integrity voting.
//!
//! Trees: `versions` ([tenant, id] → [`Version`]), `versions_by_app`
//! ([tenant, app, platform, versionStr] → id, which also keeps that triple
//! unique), `policies` ([tenant, id] → [`Policy`]), `policies_by_name`
//! ([tenant, name] → id), `version_archs` ([tenant, version, arch] →
//! [`ArchState`]) and `version_votes` ([tenant, version, arch, round, client] →
//! [`Vote`]).
//!
//! Counting votes: sled transactions offer point reads and writes only (no
//! scans), so an architecture's state record carries the tally itself (votes per
//! integrityCheckId and the total). One vote is a single serializable sled
//! transaction over the versions, policies, architecture-state and votes trees:
//! it reads the version (lock, integrity flag, policy), the policy, the state and
//! the client's previous vote, asks the vote rule (a plain function of the
//! front end, `models::version::decide_vote`) what becomes of them, and writes
//! the vote and the new state.
//! sled retries a transaction that conflicts with a concurrent one, so two votes
//! can never both complete a quorum, nor push the count past `maxVotes`.
//!
//! Rounds: each voting round of an architecture has its own id (part of the vote
//! keys). A reset writes a new round (or removes the state) in a transaction and
//! only then sweeps the old round's votes; a vote racing with the reset either
//! lands in the old round (swept, and never counted or listed) or in the new one.
//!
//! Policies count the versions using them (`uses`), updated in the same
//! transaction as the version, so a policy in use can never be deleted.

use crate::error::abort;
use crate::keys::{key, last_part, prefix};
use crate::store::{get, Store};
use crate::{codec, Error, Result};
use serde::{Deserialize, Serialize};
use sled::transaction::{ConflictableTransactionError, TransactionalTree};
use sled::Transactional;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    pub id: String,
    pub app_name: String,
    pub platform: String,
    /// Canonical `major.minor.patch`.
    pub version_str: String,
    /// The numeric sort key of `version_str`.
    pub version: u64,
    pub sdk_version: Option<String>,
    pub version_lock: bool,
    pub is_check_integrity: bool,
    pub register_user_id: Option<String>,
    pub policy_id: Option<String>,
    pub created_ms: u64,
    pub modified_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub id: String,
    pub name: String,
    /// `QUORUM`.
    pub kind: String,
    pub quorum_size: u32,
    pub max_votes: u32,
    /// Versions referring to this policy.
    pub uses: u32,
    pub created_ms: u64,
}

/// Registration state of one architecture of a version, with its vote tally.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchState {
    pub architecture: String,
    /// `VOTING`, `REGISTERED` or `FAILED`.
    pub state: String,
    /// The current voting round (part of the vote keys).
    pub round: String,
    pub registered_check_id: Option<String>,
    /// Votes cast in this round.
    pub total: u32,
    /// Votes per integrityCheckId in this round.
    pub tally: Vec<(String, u32)>,
    pub updated_ms: u64,
}

pub const VOTING: &str = "VOTING";
pub const REGISTERED: &str = "REGISTERED";
pub const FAILED: &str = "FAILED";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    pub client_id: String,
    pub integrity_check_id: String,
    pub cast_ms: u64,
}

/// What became of a vote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VoteOutcome {
    /// Counted; `registered_now` when this vote completed the registration.
    Counted {
        state: ArchState,
        version: Box<Version>,
        registered_now: bool,
    },
    Locked,
    NoIntegrityCheck,
    /// Voting of this architecture is over (`REGISTERED` or `FAILED`).
    Closed(String),
    /// Default policy: the client is not linked to the version's `registerUserId`.
    NotEligible,
}

/// The records a vote is decided on, as stored inside its transaction.
pub struct Ballot<'a> {
    pub version: &'a Version,
    pub policy: Option<&'a Policy>,
    /// The architecture's state; a fresh `VOTING` one for its first vote.
    pub state: ArchState,
    /// The client's vote in the current round, when it voted before.
    pub previous: Option<&'a Vote>,
}

/// What the vote rule makes of a [`Ballot`]: refused, or the vote and the
/// architecture's new state to write.
pub enum Decision {
    Refused(VoteOutcome),
    Counted { vote: Vote, state: ArchState, registered_now: bool },
}

pub struct Versions<'a>(&'a Store);

impl Store {
    pub fn versions(&self) -> Versions<'_> {
        Versions(self)
    }
}

type TxError = ConflictableTransactionError<Error>;

fn tx_get<T: serde::de::DeserializeOwned>(t: &TransactionalTree, k: &[u8]) -> std::result::Result<Option<T>, TxError> {
    match t.get(k)? {
        Some(v) => codec::decode(&v).map(Some).map_err(ConflictableTransactionError::Abort),
        None => Ok(None),
    }
}

fn tx_put<T: Serialize>(t: &TransactionalTree, k: &[u8], v: &T) -> std::result::Result<(), TxError> {
    let bytes = codec::encode(v).map_err(ConflictableTransactionError::Abort)?;
    t.insert(k, bytes)?;
    Ok(())
}

/// Adds `delta` to a policy's use count; a missing policy aborts with NotFound.
fn add_use(policies: &TransactionalTree, tenant: &str, id: &str, delta: i64) -> std::result::Result<(), TxError> {
    let k = key(&[tenant, id]);
    let Some(mut p) = tx_get::<Policy>(policies, &k)? else {
        return if delta > 0 { abort(Error::NotFound("policy")) } else { Ok(()) };
    };
    p.uses = (p.uses as i64 + delta).max(0) as u32;
    tx_put(policies, &k, &p)
}

fn round_part(id: u64) -> String {
    format!("{id:020}")
}

impl Versions<'_> {
    fn index_key(tenant: &str, v: &Version) -> Vec<u8> {
        key(&[tenant, &v.app_name, &v.platform, &v.version_str])
    }

    /// Creates (`old` None) or replaces a version, keeping the app index unique
    /// and policy use counts right. Conflict("version") on a taken
    /// app/platform/versionStr, NotFound("policy") on an unknown policy,
    /// NotFound("version") when replacing a version that is gone.
    pub fn put(&self, tenant: &str, v: &Version, create: bool) -> Result<Version> {
        let t = self.0.trees()?;
        let k = key(&[tenant, &v.id]);
        let idx = Self::index_key(tenant, v);
        let stored = (&t.versions, &t.versions_by_app, &t.policies).transaction(|(versions, by_app, policies)| {
            let old = tx_get::<Version>(versions, &k)?;
            match (&old, create) {
                (Some(_), true) => return abort(Error::Conflict("version")),
                (None, false) => return abort(Error::NotFound("version")),
                _ => {}
            }
            if let Some(owner) = by_app.get(&idx)? {
                if owner.as_ref() != v.id.as_bytes() {
                    return abort(Error::Conflict("version"));
                }
            }
            if let Some(o) = &old {
                by_app.remove(Self::index_key(tenant, o))?;
                if let Some(p) = &o.policy_id {
                    add_use(policies, tenant, p, -1)?;
                }
            }
            if let Some(p) = &v.policy_id {
                add_use(policies, tenant, p, 1)?;
            }
            by_app.insert(idx.as_slice(), v.id.as_bytes())?;
            tx_put(versions, &k, v)?;
            Ok(v.clone())
        })?;
        Ok(stored)
    }

    /// Sets the lock flag; returns the updated version.
    pub fn set_lock(&self, tenant: &str, id: &str, locked: bool, now: u64) -> Result<Version> {
        let k = key(&[tenant, id]);
        let v = self.0.trees()?.versions.transaction(|versions| {
            let Some(mut v) = tx_get::<Version>(versions, &k)? else {
                return abort(Error::NotFound("version"));
            };
            v.version_lock = locked;
            v.modified_ms = now;
            tx_put(versions, &k, &v)?;
            Ok(v)
        })?;
        Ok(v)
    }

    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Version>> {
        get(&self.0.trees()?.versions, &key(&[tenant, id]))
    }

    /// Every version of the tenant.
    pub fn list(&self, tenant: &str) -> Result<Vec<Version>> {
        self.0.trees()?.versions.scan_prefix(prefix(&[tenant])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Versions of one app.
    pub fn of_app(&self, tenant: &str, app: &str) -> Result<Vec<Version>> {
        let t = self.0.trees()?;
        let mut out = Vec::new();
        for kv in t.versions_by_app.scan_prefix(prefix(&[tenant, app])) {
            let id = String::from_utf8_lossy(&kv?.1).into_owned();
            if let Some(v) = self.get(tenant, &id)? {
                out.push(v);
            }
        }
        Ok(out)
    }

    /// Deletes a version with its index entry, architectures and votes.
    pub fn delete(&self, tenant: &str, id: &str) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[tenant, id]);
        (&t.versions, &t.versions_by_app, &t.policies).transaction(|(versions, by_app, policies)| {
            let Some(old) = tx_get::<Version>(versions, &k)? else {
                return abort(Error::NotFound("version"));
            };
            versions.remove(k.as_slice())?;
            by_app.remove(Self::index_key(tenant, &old))?;
            if let Some(p) = &old.policy_id {
                add_use(policies, tenant, p, -1)?;
            }
            Ok(())
        })?;
        let p = prefix(&[tenant, id]);
        for tree in [&t.version_archs, &t.version_votes] {
            for k in tree.scan_prefix(&p).keys() {
                tree.remove(k?)?;
            }
        }
        Ok(())
    }

    /// Deletes every version of an app; returns how many.
    pub fn delete_of_app(&self, tenant: &str, app: &str) -> Result<usize> {
        let versions = self.of_app(tenant, app)?;
        for v in &versions {
            match self.delete(tenant, &v.id) {
                Ok(()) | Err(Error::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(versions.len())
    }

    // ---- policies ----

    pub fn create_policy(&self, tenant: &str, p: &Policy) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[tenant, &p.id]);
        let nk = key(&[tenant, &p.name]);
        (&t.policies, &t.policies_by_name).transaction(|(policies, by_name)| {
            if by_name.get(&nk)?.is_some() {
                return abort(Error::Conflict("policy"));
            }
            by_name.insert(nk.as_slice(), p.id.as_bytes())?;
            tx_put(policies, &k, p)
        })?;
        Ok(())
    }

    pub fn policy(&self, tenant: &str, id: &str) -> Result<Option<Policy>> {
        get(&self.0.trees()?.policies, &key(&[tenant, id]))
    }

    pub fn policies(&self, tenant: &str) -> Result<Vec<Policy>> {
        self.0.trees()?.policies.scan_prefix(prefix(&[tenant])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Deletes an unused policy: NotFound, or Conflict("policy in use").
    pub fn delete_policy(&self, tenant: &str, id: &str) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[tenant, id]);
        (&t.policies, &t.policies_by_name).transaction(|(policies, by_name)| {
            let Some(p) = tx_get::<Policy>(policies, &k)? else {
                return abort(Error::NotFound("policy"));
            };
            if p.uses > 0 {
                return abort(Error::Conflict("policy in use"));
            }
            policies.remove(k.as_slice())?;
            by_name.remove(key(&[tenant, &p.name]))?;
            Ok(())
        })?;
        Ok(())
    }

    // ---- architectures and votes ----

    pub fn arch(&self, tenant: &str, version: &str, arch: &str) -> Result<Option<ArchState>> {
        get(&self.0.trees()?.version_archs, &key(&[tenant, version, arch]))
    }

    pub fn archs(&self, tenant: &str, version: &str) -> Result<Vec<ArchState>> {
        self.0.trees()?.version_archs.scan_prefix(prefix(&[tenant, version])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Votes of the current round of an architecture, in client order.
    pub fn votes(&self, tenant: &str, version: &str, arch: &str) -> Result<Vec<Vote>> {
        let Some(state) = self.arch(tenant, version, arch)? else {
            return Ok(Vec::new());
        };
        self.0
            .trees()?
            .version_votes
            .scan_prefix(prefix(&[tenant, version, arch, &state.round]))
            .map(|kv| codec::decode(&kv?.1))
            .collect()
    }

    /// Casts (or replaces) `client`'s vote in one serializable transaction
    /// (see the module documentation): reads the version, its policy, the
    /// architecture's state and the client's previous vote, lets `decide`
    /// (the vote rule, which lives with the model, not here) say what
    /// becomes of them, and writes what it counted. `decide` may run again
    /// when the transaction retries, so it must only compute.
    pub fn vote(
        &self,
        tenant: &str,
        version_id: &str,
        arch: &str,
        client: &str,
        now: u64,
        decide: impl Fn(Ballot<'_>) -> Decision,
    ) -> Result<VoteOutcome> {
        let t = self.0.trees()?;
        let vk = key(&[tenant, version_id]);
        let ak = key(&[tenant, version_id, arch]);
        let fresh_round = round_part(t.db.generate_id()?);
        let outcome = (&t.versions, &t.policies, &t.version_archs, &t.version_votes).transaction(
            |(versions, policies, archs, votes)| {
                let Some(version) = tx_get::<Version>(versions, &vk)? else {
                    return abort(Error::NotFound("version"));
                };
                let policy = match &version.policy_id {
                    Some(p) => match tx_get::<Policy>(policies, &key(&[tenant, p]))? {
                        Some(p) => Some(p),
                        None => return abort(Error::NotFound("policy")),
                    },
                    None => None,
                };
                let state = tx_get::<ArchState>(archs, &ak)?.unwrap_or_else(|| ArchState {
                    architecture: arch.to_string(),
                    state: VOTING.to_string(),
                    round: fresh_round.clone(),
                    registered_check_id: None,
                    total: 0,
                    tally: Vec::new(),
                    updated_ms: now,
                });
                let key_of_vote = key(&[tenant, version_id, arch, &state.round, client]);
                let previous = tx_get::<Vote>(votes, &key_of_vote)?;
                let ballot = Ballot { version: &version, policy: policy.as_ref(), state, previous: previous.as_ref() };
                match decide(ballot) {
                    Decision::Refused(outcome) => Ok(outcome),
                    Decision::Counted { vote, state, registered_now } => {
                        tx_put(votes, &key_of_vote, &vote)?;
                        tx_put(archs, &ak, &state)?;
                        Ok(VoteOutcome::Counted { state, version: Box::new(version.clone()), registered_now })
                    }
                }
            },
        )?;
        Ok(outcome)
    }

    /// Resets one architecture: a registered one keeps its state and loses its
    /// votes; any other starts over (its state is removed). Returns false when
    /// the architecture has no state.
    pub fn reset(&self, tenant: &str, version: &str, arch: &str, now: u64) -> Result<bool> {
        let t = self.0.trees()?;
        let ak = key(&[tenant, version, arch]);
        let new_round = round_part(self.0.trees()?.db.generate_id()?);
        let found = t.version_archs.transaction(|archs| {
            let Some(mut state) = tx_get::<ArchState>(archs, &ak)? else {
                return Ok(false);
            };
            if state.state == REGISTERED {
                state.round = new_round.clone();
                state.total = 0;
                state.tally.clear();
                state.updated_ms = now;
                tx_put(archs, &ak, &state)?;
            } else {
                archs.remove(ak.as_slice())?;
            }
            Ok(true)
        })?;
        self.sweep(tenant, version, arch)?;
        Ok(found)
    }

    /// Removes an architecture's registration with its votes; false when it has none.
    pub fn delete_registration(&self, tenant: &str, version: &str, arch: &str) -> Result<bool> {
        let t = self.0.trees()?;
        let found = t.version_archs.remove(key(&[tenant, version, arch]))?.is_some();
        self.sweep(tenant, version, arch)?;
        Ok(found)
    }

    /// Names of the architectures with a state.
    pub fn arch_names(&self, tenant: &str, version: &str) -> Result<Vec<String>> {
        self.0
            .trees()?
            .version_archs
            .scan_prefix(prefix(&[tenant, version]))
            .keys()
            .map(|k| Ok(last_part(&k?)))
            .collect()
    }

    /// Deletes the votes of every round but the architecture's current one.
    fn sweep(&self, tenant: &str, version: &str, arch: &str) -> Result<()> {
        let current = self.arch(tenant, version, arch)?.map(|s| prefix(&[tenant, version, arch, &s.round]));
        let t = &self.0.trees()?.version_votes;
        for k in t.scan_prefix(prefix(&[tenant, version, arch])).keys() {
            let k = k?;
            if current.as_ref().is_some_and(|c| k.starts_with(c)) {
                continue;
            }
            t.remove(k)?;
        }
        Ok(())
    }
}
