//! Apps and their push credentials.
//!
//! Every app write moves [`herald_storage::Store::apps_generation`] on once
//! its transaction is over (committed or not), never before: the push
//! engine's channels, built from the app's record, are then built again.

use super::commit;
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::app::{record, web_push_record, AppBody, AppView, SealedSecrets, SealedVapid};
use herald_actors::credentials::WEB_PUSH_KEY;
use herald_storage::apps::App;
use herald_storage::now_ms;

/// How many times a delete lists the app's versions again after one joined it meanwhile.
const ATTEMPTS: usize = 5;

fn not_found(name: &str) -> ApiError {
    ApiError::not_found(format!("app {name} not found"))
}

/// The body's new secret values, sealed before the transaction.
fn seal(engine: &Engine, tenant: &str, name: &str, body: &AppBody) -> ApiResult<(SealedSecrets, Option<SealedVapid>)> {
    let secrets = SealedSecrets::of(body, |field, value| {
        Ok(engine.store.seal(value.as_bytes(), &App::secret_context(tenant, name, field))?)
    })?;
    let vapid =
        SealedVapid::of(body, |der| Ok(engine.store.seal(der, &App::secret_context(tenant, name, WEB_PUSH_KEY))?))?;
    Ok((secrets, vapid))
}

/// Runs an app write and moves the apps generation on after it.
fn app_write<T>(engine: &Engine, write: impl FnOnce() -> ApiResult<T>) -> ApiResult<T> {
    let written = write();
    engine.store.apps().changed();
    written
}

/// Validates (credentials are parsed as the send path reads them, a service
/// account's `token_uri` is checked against the provider endpoint guard, its
/// host resolved) and creates an app; 409 when the name is taken.
pub async fn create(engine: &Engine, tenant: &str, name: &str, body: &AppBody) -> ApiResult<AppView> {
    body.validate(name)?;
    body.check_endpoints(&engine.config.push.endpoint_policy()).await?;
    let (sealed, vapid) = seal(engine, tenant, name, body)?;
    let app = record(name, body, &sealed, None, now_ms())?;
    let web_push = web_push_record(body, vapid.as_ref(), None)?;
    app_write(engine, || {
        engine.store.transact(|tx| {
            tx.insert_app(tenant, &app).map_err(|e| match e {
                herald_storage::Error::Conflict(_) => ApiError::conflict(format!("app {name} already exists")),
                other => other.into(),
            })?;
            Ok(tx.put_web_push(tenant, name, web_push.as_ref())?)
        })
    })?;
    commit(engine).await?;
    Ok(AppView::of(tenant, &app, web_push.as_ref()))
}

/// Updates an app on its record as stored at the write ([`record`]: a masked
/// secret keeps the stored one): a concurrent delete stands (404), a
/// concurrent update is built on.
pub async fn update(engine: &Engine, tenant: &str, name: &str, body: &AppBody) -> ApiResult<AppView> {
    body.validate(name)?;
    body.check_endpoints(&engine.config.push.endpoint_policy()).await?;
    let (sealed, vapid) = seal(engine, tenant, name, body)?;
    let now = now_ms();
    let (app, web_push) = app_write(engine, || {
        engine.store.transact(|tx| {
            let old = tx.app(tenant, name)?.ok_or_else(|| not_found(name))?;
            let app = record(name, body, &sealed, Some(&old), now)?;
            let web_push = web_push_record(body, vapid.as_ref(), tx.web_push(tenant, name)?.as_ref())?;
            tx.put_app(tenant, &app)?;
            tx.put_web_push(tenant, name, web_push.as_ref())?;
            Ok((app, web_push))
        })
    })?;
    commit(engine).await?;
    Ok(AppView::of(tenant, &app, web_push.as_ref()))
}

/// Deletes an app with its versions (their architectures and votes) in one
/// transaction. The versions are listed before it; the app's version
/// generation and each version's ballot generation are checked in it, so a
/// version (or a vote) added meanwhile makes the list again, and a version
/// created after the delete finds no app.
pub async fn delete(engine: &Engine, tenant: &str, name: &str) -> ApiResult<()> {
    let versions = engine.store.versions();
    for _ in 0..ATTEMPTS {
        let generation = versions.app_generation(tenant, name)?;
        let listed = versions
            .of_app(tenant, name)?
            .into_iter()
            .map(|v| Ok((versions.ballots(tenant, &v.id, None)?, v)))
            .collect::<ApiResult<Vec<_>>>()?;
        let done = app_write(engine, || {
            engine.store.transact(|tx| {
                if tx.app(tenant, name)?.is_none() {
                    return Err(not_found(name));
                }
                if tx.app_versions_generation(tenant, name)? != generation {
                    return Ok(false);
                }
                let mut gone = Vec::new();
                for (ballots, v) in &listed {
                    // A version moved to another app meanwhile is not this app's any more.
                    if tx.version(tenant, &v.id)?.is_some_and(|now| now.app_name == *name) {
                        if !tx.ballots_unchanged(ballots)? {
                            return Ok(false);
                        }
                        gone.push((ballots, v));
                    }
                }
                tx.delete_app(tenant, name)?;
                for (ballots, v) in gone {
                    super::versions::remove_version(tx, tenant, &v.id, ballots)?;
                }
                Ok(true)
            })
        })?;
        if done {
            return commit(engine).await;
        }
    }
    Err(ApiError::conflict(format!("versions of app {name} kept changing during the delete: try again")))
}
