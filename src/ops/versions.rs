//! App versions, registration policies and integrity voting.
//!
//! Deleting votes needs to know all of them, which a transaction cannot
//! scan: they are listed before ([`herald_storage::versions::Ballots`]) and
//! the transaction checks that the version's ballot generation did not move
//! (a vote or an architecture added meanwhile), else the list is made again.

use super::{commit, publish, Event};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::version::{self as model, Ballot, Decision, Refusal, VersionBody};
use herald_storage::versions::{ArchState, Ballots, Policy, Version};
use herald_storage::{now_ms, Error as StoreError, Tx};
use serde_json::json;

/// How many times an operation lists the votes again after one was added meanwhile.
const ATTEMPTS: usize = 5;

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("version {id} not found"))
}

fn kept_changing(id: &str) -> ApiError {
    ApiError::conflict(format!("the votes of version {id} kept changing: try again"))
}

fn policy_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("registration policy {id} not found"))
}

/// The version as stored in this transaction, or 404.
fn stored(tx: &Tx, tenant: &str, id: &str) -> ApiResult<Version> {
    tx.version(tenant, id)?.ok_or_else(|| not_found(id))
}

/// Writes `v` after checking that its app exists (the app's delete checks
/// the versions that joined it), with the answers of a refused write.
fn write(tx: &Tx, tenant: &str, v: &Version) -> ApiResult<()> {
    if tx.app(tenant, &v.app_name)?.is_none() {
        return Err(ApiError::field("appName", format!("no app named {} in this tenant", v.app_name)));
    }
    tx.put_version(tenant, v).map_err(|e| match e {
        StoreError::NotFound("policy") => {
            ApiError::field("policyId", format!("no registration policy {}", v.policy_id.as_deref().unwrap_or("")))
        }
        StoreError::Conflict(_) => ApiError::conflict(format!(
            "version {} of app {} on {} already exists",
            v.version_str, v.app_name, v.platform
        )),
        other => other.into(),
    })
}

/// Creates a version of an existing app.
pub async fn create(engine: &Engine, tenant: &str, body: &VersionBody) -> ApiResult<Version> {
    let parsed = body.validate(false)?;
    let v = model::record(body, parsed, None, &ulid::Ulid::generate().to_string(), now_ms());
    engine.store.transact(|tx| write(tx, tenant, &v))?;
    commit(engine).await?;
    Ok(v)
}

/// Updates a version on its record as stored at the write
/// ([`model::record`]): a lock made meanwhile stays unless the body sets it.
pub async fn update(engine: &Engine, tenant: &str, id: &str, body: &VersionBody) -> ApiResult<Version> {
    let parsed = body.validate(true);
    let now = now_ms();
    let v = engine.store.transact(|tx| {
        let old = stored(tx, tenant, id)?;
        let v = model::record(body, parsed.clone()?, Some(&old), id, now);
        write(tx, tenant, &v)?;
        Ok::<_, ApiError>(v)
    })?;
    commit(engine).await?;
    Ok(v)
}

/// Locks or unlocks a version; a locked version takes no votes.
pub async fn set_lock(engine: &Engine, tenant: &str, id: &str, locked: bool) -> ApiResult<Version> {
    let now = now_ms();
    let v = engine.store.transact(|tx| {
        let mut v = stored(tx, tenant, id)?;
        v.version_lock = locked;
        v.modified_ms = now;
        tx.put_version(tenant, &v)?;
        Ok::<_, ApiError>(v)
    })?;
    commit(engine).await?;
    Ok(v)
}

/// Deletes a version with its architectures and votes, in one transaction.
pub async fn delete(engine: &Engine, tenant: &str, id: &str) -> ApiResult<()> {
    for _ in 0..ATTEMPTS {
        let ballots = engine.store.versions().ballots(tenant, id, None)?;
        let done = engine.store.transact(|tx| {
            stored(tx, tenant, id)?;
            if !tx.ballots_unchanged(&ballots)? {
                return Ok(false);
            }
            remove_version(tx, tenant, id, &ballots)?;
            Ok::<_, ApiError>(true)
        })?;
        if done {
            return commit(engine).await;
        }
    }
    Err(kept_changing(id))
}

/// The writes of deleting a version whose ballots are `ballots` (checked
/// unchanged by the caller): the version, its index and policy use, its
/// architectures and votes.
pub(crate) fn remove_version(tx: &Tx, tenant: &str, id: &str, ballots: &Ballots) -> herald_storage::Result<()> {
    tx.delete_version(tenant, id)?;
    tx.remove_ballots(ballots, true)
}

/// What a counted vote answers.
pub struct Counted {
    /// The version voted on, as stored.
    pub version: Version,
    /// The architecture's state after the vote (`REGISTERED` once the quorum agrees).
    pub state: ArchState,
}

/// `client` votes `check_id` for architecture `arch` of a version: the
/// version, the client (of the version's app, not locked), the policy, the
/// architecture's state and the client's previous vote are read in one
/// transaction, the vote rule ([`model::decide_vote`]) decides, and the
/// vote and the new state are written in it. So a vote is counted only if
/// the version was unlocked, the client unlocked, and voting open when it
/// was written; two votes never both complete a quorum.
pub async fn vote(
    engine: &Engine,
    tenant: &str,
    version_id: &str,
    client_id: &str,
    arch: &str,
    check_id: &str,
) -> ApiResult<Counted> {
    let store = &engine.store;
    let round = store.versions().new_round()?;
    let now = now_ms();
    let outcome = store.transact(|tx| {
        let version = stored(tx, tenant, version_id)?;
        let client = tx
            .client(tenant, client_id)?
            .ok_or_else(|| ApiError::not_found(format!("client {client_id} not found")))?;
        if client.app_name != version.app_name {
            return Err(ApiError::forbidden(format!("client {client_id} is not a client of app {}", version.app_name)));
        }
        if client.is_locked() {
            return Err(ApiError::forbidden(format!("client {client_id} is locked")));
        }
        let policy = match &version.policy_id {
            Some(p) => Some(tx.policy(tenant, p)?.ok_or(StoreError::NotFound("policy"))?),
            None => None,
        };
        let registering_client = match &version.register_user_id {
            Some(user) => tx.link(tenant, user, client_id)?.is_some(),
            None => false,
        };
        let state = tx.arch(tenant, version_id, arch)?.unwrap_or_else(|| model::fresh_state(arch, &round, now));
        let previous = tx.vote(tenant, version_id, arch, &state.round, client_id)?;
        let round = state.round.clone();
        let ballot = Ballot {
            version: &version,
            policy: policy.as_ref(),
            state,
            previous: previous.as_ref(),
            registering_client,
        };
        match model::decide_vote(ballot, client_id, check_id, now) {
            Decision::Refused(r) => Ok(Err(r)),
            Decision::Counted { vote, state, registered_now } => {
                tx.put_vote(tenant, version_id, arch, &round, &vote)?;
                tx.put_arch(tenant, version_id, &state)?;
                if registered_now {
                    let v = &version;
                    let data = json!({ "versionId": v.id, "appName": v.app_name, "platform": v.platform, "versionStr": v.version_str,
                                       "architecture": state.architecture, "integrityCheckId": state.registered_check_id });
                    publish(tx, tenant, Event::new("version", "VERSION_REGISTERED", data))?;
                }
                Ok(Ok((version, state)))
            }
        }
    })?;
    let (v, state) = outcome.map_err(|r| match r {
        Refusal::Locked => ApiError::conflict(format!("version {version_id} is locked")),
        Refusal::NoIntegrityCheck => ApiError::conflict(format!("version {version_id} does not check integrity")),
        Refusal::Closed(s) => ApiError::conflict(format!("voting on {arch} is closed ({s})")),
        Refusal::NotEligible => {
            ApiError::forbidden("under the default policy only a client of registerUserId registers")
        }
    })?;
    commit(engine).await?;
    Ok(Counted { version: v, state })
}

/// Resets voting of one architecture, or of all (`None`): a registered
/// architecture keeps its state and loses its votes, any other starts over
/// ([`model::reset`]), in one transaction.
pub async fn reset(engine: &Engine, tenant: &str, version_id: &str, arch: Option<&str>) -> ApiResult<()> {
    let round = engine.store.versions().new_round()?;
    let now = now_ms();
    for _ in 0..ATTEMPTS {
        let ballots = engine.store.versions().ballots(tenant, version_id, arch)?;
        let done = engine.store.transact(|tx| {
            stored(tx, tenant, version_id)?;
            if !tx.ballots_unchanged(&ballots)? {
                return Ok(false);
            }
            for a in ballots.arch_names() {
                let Some(state) = tx.arch(tenant, version_id, &a)? else { continue };
                match model::reset(state, &round, now) {
                    Some(kept) => tx.put_arch(tenant, version_id, &kept)?,
                    None => drop(tx.remove_arch(tenant, version_id, &a)?),
                }
            }
            tx.remove_ballots(&ballots, false)?;
            Ok::<_, ApiError>(true)
        })?;
        if done {
            return commit(engine).await;
        }
    }
    Err(kept_changing(version_id))
}

/// Removes an architecture's registration (its state) with its votes; 404
/// when it has no state.
pub async fn delete_registration(engine: &Engine, tenant: &str, version_id: &str, arch: &str) -> ApiResult<()> {
    for _ in 0..ATTEMPTS {
        let ballots = engine.store.versions().ballots(tenant, version_id, Some(arch))?;
        let found = engine.store.transact(|tx| {
            stored(tx, tenant, version_id)?;
            if !tx.ballots_unchanged(&ballots)? {
                return Ok(None);
            }
            let found = tx.remove_arch(tenant, version_id, arch)?;
            tx.remove_ballots(&ballots, false)?;
            Ok::<_, ApiError>(Some(found))
        })?;
        match found {
            Some(true) => return commit(engine).await,
            Some(false) => {
                return Err(ApiError::not_found(format!(
                    "architecture {arch} of version {version_id} has no registration"
                )))
            }
            None => {}
        }
    }
    Err(kept_changing(version_id))
}

/// Creates a registration policy; 409 when its name is taken.
pub async fn create_policy(engine: &Engine, tenant: &str, p: &Policy) -> ApiResult<()> {
    engine.store.transact(|tx| {
        tx.insert_policy(tenant, p).map_err(|e| match e {
            StoreError::Conflict(_) => ApiError::conflict(format!("a policy named {} exists", p.name)),
            other => other.into(),
        })
    })?;
    commit(engine).await
}

/// Deletes a policy no version uses ([`model::check_policy_unused`]), else 409.
pub async fn delete_policy(engine: &Engine, tenant: &str, id: &str) -> ApiResult<()> {
    engine.store.transact(|tx| {
        let p = tx.policy(tenant, id)?.ok_or_else(|| policy_not_found(id))?;
        model::check_policy_unused(&p)
            .map_err(|_| ApiError::conflict(format!("registration policy {id} is used by a version")))?;
        tx.delete_policy(tenant, id)?;
        Ok::<_, ApiError>(())
    })?;
    commit(engine).await
}
