//! App versions, registration policies and per-architecture integrity voting.
//!
//! Trees: `versions` ([tenant, id] → [`Version`]), `versions_by_app`
//! ([tenant, app, platform, versionStr] → id, which also keeps that triple
//! unique), `policies` ([tenant, id] → [`Policy`]), `policies_by_name`
//! ([tenant, name] → id), `version_archs` ([tenant, version, arch] →
//! [`ArchState`]) and `version_votes` ([tenant, version, arch, round, client] →
//! [`Vote`]).
//!
//! Counting votes: a transaction has point reads and writes only (no scans),
//! so an architecture's state record carries the tally itself (votes per
//! integrityCheckId and the total). The operations layer reads the version,
//! its policy, the state and the client's previous vote in one transaction,
//! lets the vote rule (`models::version::decide_vote`) decide, and writes the
//! vote and the new state there ([`Tx::put_vote`], [`Tx::put_arch`]).
//!
//! Rounds: each voting round of an architecture has its own id (part of the
//! vote keys), so a vote lands in the round its transaction read.
//!
//! Deleting votes: they are listed before the transaction ([`Versions::ballots`])
//! and the transaction checks that the version's ballot generation did not
//! move ([`Tx::ballots_unchanged`]): every new vote or architecture state
//! moves it on. Likewise every version that joins an app moves the app's
//! version generation on ([`Tx::app_versions_generation`]), which deleting
//! an app with its versions checks.
//!
//! Policies count the versions using them (`uses`), updated in the same
//! transaction as the version.

use crate::keys::{key, last_part, prefix, Key};
use crate::store::{get, Store};
use crate::{codec, Error, Result, Tx};
use serde::{Deserialize, Serialize};

/// A registered version of an app on one platform.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    /// ULID, assigned at registration; the key of the record.
    pub id: String,
    /// The app it is a version of.
    pub app_name: String,
    /// The platform it runs on; with the app and `version_str`, unique.
    pub platform: String,
    /// Canonical `major.minor.patch`.
    pub version_str: String,
    /// The numeric sort key of `version_str`.
    pub version: u64,
    /// SDK version of the app version, as registered.
    pub sdk_version: Option<String>,
    /// A locked version takes no integrity votes.
    pub version_lock: bool,
    /// Whether its architectures are registered by integrity voting (no votes otherwise).
    pub is_check_integrity: bool,
    /// Under the default policy, the user whose client's vote registers an architecture alone.
    pub register_user_id: Option<String>,
    /// The registration policy (see [`Policy`]); `None` for the default policy.
    pub policy_id: Option<String>,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// Last change, ms since the epoch.
    pub modified_ms: u64,
}

/// A registration policy: how many agreeing votes register an architecture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// ULID, assigned at creation.
    pub id: String,
    /// Unique in the tenant (the `policies_by_name` index).
    pub name: String,
    /// `QUORUM`.
    pub kind: String,
    /// Agreeing votes that register an architecture.
    pub quorum_size: u32,
    /// Votes in a round after which, without a quorum, the architecture fails.
    pub max_votes: u32,
    /// Versions referring to this policy.
    pub uses: u32,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
}

/// Registration state of one architecture of a version, with its vote tally.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchState {
    /// The architecture's name; the last part of its key.
    pub architecture: String,
    /// `VOTING`, `REGISTERED` or `FAILED`.
    pub state: String,
    /// The current voting round (part of the vote keys).
    pub round: String,
    /// The integrity check id that reached the quorum, once `REGISTERED`.
    pub registered_check_id: Option<String>,
    /// Votes cast in this round.
    pub total: u32,
    /// Votes per integrityCheckId in this round.
    pub tally: Vec<(String, u32)>,
    /// Last change, ms since the epoch.
    pub updated_ms: u64,
}

/// [`ArchState::state`] while votes are collected.
pub const VOTING: &str = "VOTING";
/// [`ArchState::state`] once a quorum agreed.
pub const REGISTERED: &str = "REGISTERED";
/// [`ArchState::state`] once the round ended without a quorum.
pub const FAILED: &str = "FAILED";

/// One client's vote in one round of an architecture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    /// The voting client; one vote per client and round.
    pub client_id: String,
    /// The integrity check id the client reported.
    pub integrity_check_id: String,
    /// When the vote was cast, ms since the epoch.
    pub cast_ms: u64,
}

/// Reads of versions, policies, architectures and votes; writes go through [`Tx`].
pub struct Versions<'a>(&'a Store);

impl Store {
    /// The versions of this store.
    pub fn versions(&self) -> Versions<'_> {
        Versions(self)
    }
}

fn round_part(id: u64) -> String {
    format!("{id:020}")
}

fn index_key(tenant: &str, v: &Version) -> Key {
    key(&[tenant, &v.app_name, &v.platform, &v.version_str])
}

fn ballot_generation_key(tenant: &str, version: &str) -> Key {
    key(&[tenant, "version-ballots", version])
}

fn app_generation_key(tenant: &str, app: &str) -> Key {
    key(&[tenant, "app-versions", app])
}

/// The architecture states and votes of a version (or of one of its
/// architectures), listed outside a transaction to be deleted inside one
/// (see the module documentation).
#[derive(Clone, Debug)]
pub struct Ballots {
    tenant: String,
    version: String,
    generation: u64,
    archs: Vec<Key>,
    votes: Vec<Key>,
}

impl Ballots {
    /// Names of the listed architectures with a state.
    pub fn arch_names(&self) -> Vec<String> {
        self.archs.iter().map(|k| last_part(k)).collect()
    }
}

impl Versions<'_> {
    /// One version; `None` when absent.
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

    /// A number that moves on whenever a version joins the app: read it
    /// before [`Versions::of_app`], and check in the transaction that acts
    /// on that list ([`Tx::app_versions_generation`]) that none joined since.
    pub fn app_generation(&self, tenant: &str, app: &str) -> Result<u64> {
        Ok(get(&self.0.trees()?.generations, &app_generation_key(tenant, app))?.unwrap_or(0))
    }

    /// Lists the states and votes of a version, of every architecture or of
    /// `arch` only, with the version's ballot generation read first.
    pub fn ballots(&self, tenant: &str, version: &str, arch: Option<&str>) -> Result<Ballots> {
        let t = self.0.trees()?;
        let generation = get(&t.generations, &ballot_generation_key(tenant, version))?.unwrap_or(0);
        let p = match arch {
            Some(a) => prefix(&[tenant, version, a]),
            None => prefix(&[tenant, version]),
        };
        let archs = match arch {
            Some(a) => {
                let k = key(&[tenant, version, a]);
                if t.version_archs.contains_key(&k)? {
                    vec![k]
                } else {
                    Vec::new()
                }
            }
            None => t.version_archs.scan_prefix(&p).keys().map(|k| Ok(Key::from_slice(&k?))).collect::<Result<_>>()?,
        };
        let votes = t.version_votes.scan_prefix(&p).keys().map(|k| Ok(Key::from_slice(&k?))).collect::<Result<_>>()?;
        Ok(Ballots { tenant: tenant.to_string(), version: version.to_string(), generation, archs, votes })
    }

    /// A new voting round id, distinct from every earlier one.
    pub fn new_round(&self) -> Result<String> {
        Ok(round_part(self.0.trees()?.generate_id()?))
    }

    // ---- policies ----

    /// One policy; `None` when absent.
    pub fn policy(&self, tenant: &str, id: &str) -> Result<Option<Policy>> {
        get(&self.0.trees()?.policies, &key(&[tenant, id]))
    }

    /// Every policy of the tenant, in id order.
    pub fn policies(&self, tenant: &str) -> Result<Vec<Policy>> {
        self.0.trees()?.policies.scan_prefix(prefix(&[tenant])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    // ---- architectures and votes ----

    /// One architecture's state; `None` before its first vote.
    pub fn arch(&self, tenant: &str, version: &str, arch: &str) -> Result<Option<ArchState>> {
        get(&self.0.trees()?.version_archs, &key(&[tenant, version, arch]))
    }

    /// Every architecture state of a version, in name order.
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
}

impl Tx<'_> {
    /// One version, read inside the transaction.
    pub fn version(&self, tenant: &str, id: &str) -> Result<Option<Version>> {
        self.get(&self.t.versions, &key(&[tenant, id]))
    }

    /// Stores a version, new or over its previous record, keeping the app
    /// index unique (`Conflict("version")` on an app/platform/versionStr
    /// another version has) and the policies' use counts right
    /// (`NotFound("policy")` on an unknown policy). A version that joins an
    /// app moves the app's version generation on.
    pub fn put_version(&self, tenant: &str, v: &Version) -> Result<()> {
        let k = key(&[tenant, &v.id]);
        let idx = index_key(tenant, v);
        let old: Option<Version> = self.get(&self.t.versions, &k)?;
        if let Some(owner) = self.get_raw(&self.t.versions_by_app, &idx)? {
            if owner != v.id.as_bytes() {
                return Err(Error::Conflict("version"));
            }
        }
        if let Some(o) = &old {
            self.remove(&self.t.versions_by_app, &index_key(tenant, o))?;
            if let Some(p) = &o.policy_id {
                self.add_use(tenant, p, -1)?;
            }
        }
        if let Some(p) = &v.policy_id {
            self.add_use(tenant, p, 1)?;
        }
        if old.as_ref().is_none_or(|o| o.app_name != v.app_name) {
            self.bump(&app_generation_key(tenant, &v.app_name))?;
        }
        self.put_raw(&self.t.versions_by_app, &idx, v.id.as_bytes())?;
        self.put(&self.t.versions, &k, v)
    }

    /// Removes a version with its index entry and its use of its policy (not
    /// its architectures and votes: see [`Tx::remove_ballots`]); the version
    /// removed, if there was one.
    pub fn delete_version(&self, tenant: &str, id: &str) -> Result<Option<Version>> {
        let Some(old) = self.take::<Version>(&self.t.versions, &key(&[tenant, id]))? else {
            return Ok(None);
        };
        self.remove(&self.t.versions_by_app, &index_key(tenant, &old))?;
        if let Some(p) = &old.policy_id {
            self.add_use(tenant, p, -1)?;
        }
        Ok(Some(old))
    }

    /// See [`Versions::app_generation`].
    pub fn app_versions_generation(&self, tenant: &str, app: &str) -> Result<u64> {
        Ok(self.get(&self.t.generations, &app_generation_key(tenant, app))?.unwrap_or(0))
    }

    // ---- policies ----

    /// One policy, read inside the transaction.
    pub fn policy(&self, tenant: &str, id: &str) -> Result<Option<Policy>> {
        self.get(&self.t.policies, &key(&[tenant, id]))
    }

    /// Stores a new policy; `Conflict("policy")` when its name is taken.
    pub fn insert_policy(&self, tenant: &str, p: &Policy) -> Result<()> {
        let nk = key(&[tenant, &p.name]);
        if self.has(&self.t.policies_by_name, &nk)? {
            return Err(Error::Conflict("policy"));
        }
        self.put_raw(&self.t.policies_by_name, &nk, p.id.as_bytes())?;
        self.put(&self.t.policies, &key(&[tenant, &p.id]), p)
    }

    /// Removes a policy with its name; the policy removed, if there was one.
    pub fn delete_policy(&self, tenant: &str, id: &str) -> Result<Option<Policy>> {
        let Some(p) = self.take::<Policy>(&self.t.policies, &key(&[tenant, id]))? else {
            return Ok(None);
        };
        self.remove(&self.t.policies_by_name, &key(&[tenant, &p.name]))?;
        Ok(Some(p))
    }

    /// Adds `delta` to a policy's use count; `NotFound("policy")` when a use
    /// is added to a missing policy.
    fn add_use(&self, tenant: &str, id: &str, delta: i64) -> Result<()> {
        let k = key(&[tenant, id]);
        let Some(mut p) = self.get::<Policy>(&self.t.policies, &k)? else {
            return if delta > 0 { Err(Error::NotFound("policy")) } else { Ok(()) };
        };
        p.uses = u32::try_from(i64::from(p.uses).saturating_add(delta).max(0)).unwrap_or(u32::MAX);
        self.put(&self.t.policies, &k, &p)
    }

    // ---- architectures and votes ----

    /// One architecture's state, read inside the transaction.
    pub fn arch(&self, tenant: &str, version: &str, arch: &str) -> Result<Option<ArchState>> {
        self.get(&self.t.version_archs, &key(&[tenant, version, arch]))
    }

    /// Stores an architecture's state; a new one moves the version's ballot generation on.
    pub fn put_arch(&self, tenant: &str, version: &str, state: &ArchState) -> Result<()> {
        let k = key(&[tenant, version, &state.architecture]);
        if !self.has(&self.t.version_archs, &k)? {
            self.bump(&ballot_generation_key(tenant, version))?;
        }
        self.put(&self.t.version_archs, &k, state)
    }

    /// Removes an architecture's state (not its votes); whether it was there.
    pub fn remove_arch(&self, tenant: &str, version: &str, arch: &str) -> Result<bool> {
        self.remove(&self.t.version_archs, &key(&[tenant, version, arch]))
    }

    /// The client's vote in `round` of an architecture.
    pub fn vote(&self, tenant: &str, version: &str, arch: &str, round: &str, client: &str) -> Result<Option<Vote>> {
        self.get(&self.t.version_votes, &key(&[tenant, version, arch, round, client]))
    }

    /// Stores a vote in `round`; a new one moves the version's ballot generation on.
    pub fn put_vote(&self, tenant: &str, version: &str, arch: &str, round: &str, vote: &Vote) -> Result<()> {
        let k = key(&[tenant, version, arch, round, &vote.client_id]);
        if !self.has(&self.t.version_votes, &k)? {
            self.bump(&ballot_generation_key(tenant, version))?;
        }
        self.put(&self.t.version_votes, &k, vote)
    }

    /// Whether no vote nor architecture state was added to the version since
    /// `b` was listed: check it before [`Tx::remove_ballots`].
    pub fn ballots_unchanged(&self, b: &Ballots) -> Result<bool> {
        let now: u64 = self.get(&self.t.generations, &ballot_generation_key(&b.tenant, &b.version))?.unwrap_or(0);
        Ok(now == b.generation)
    }

    /// Removes the listed votes, and with `states` the listed architecture states.
    pub fn remove_ballots(&self, b: &Ballots, states: bool) -> Result<()> {
        for k in &b.votes {
            self.remove(&self.t.version_votes, k)?;
        }
        if states {
            for k in &b.archs {
                self.remove(&self.t.version_archs, k)?;
            }
        }
        Ok(())
    }

    fn bump(&self, k: &[u8]) -> Result<()> {
        let next = self.get::<u64>(&self.t.generations, k)?.unwrap_or(0).wrapping_add(1);
        self.put(&self.t.generations, k, &next)
    }
}
