//! Webhooks: create, update, delete with their records, replay of failed events.
//!
//! The receiver's 410 that disables a webhook is the delivery actor's write
//! (`Webhooks::change` in `herald_actors::webhooks::target`), one transaction too.

use super::commit;
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::webhook::{self as model, WebhookBody, WebhookUpdate};
use herald_actors::webhooks::{generate_secret, Event};
use herald_storage::webhooks::Webhook;
use herald_storage::{now_ms, Secret};

/// How many times a delete lists the webhook's records again after one was added meanwhile.
const ATTEMPTS: usize = 5;

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("webhook {id} not found"))
}

/// The BASIC credentials of a body, the password sealed.
fn seal_password(
    engine: &Engine,
    tenant: &str,
    id: &str,
    body: &WebhookBody,
) -> ApiResult<(Option<String>, Option<Secret>)> {
    match (&body.auth_credentials, body.auth_type()) {
        (Some(c), "BASIC") => Ok((
            Some(c.username.clone()),
            Some(engine.store.seal(c.password.as_bytes(), &Webhook::secret_context(tenant, id, "password"))?),
        )),
        _ => Ok((None, None)),
    }
}

/// A created webhook with its signing secret, which only this answer shows.
pub struct Created {
    /// The webhook as stored (its secret sealed).
    pub webhook: Webhook,
    /// The signing secret in clear: shown once, never readable again.
    pub secret: String,
}

/// Creates a webhook (`who` made it) with a new signing secret, generated and
/// sealed before the transaction.
pub async fn create(engine: &Engine, tenant: &str, who: &str, body: &WebhookBody) -> ApiResult<Created> {
    let id = ulid::Ulid::generate().to_string();
    let secret = generate_secret().map_err(ApiError::internal)?;
    let (auth_username, auth_password) = seal_password(engine, tenant, &id, body)?;
    let now = now_ms();
    let w = Webhook {
        id: id.clone(),
        filter: body.filter.clone(),
        callback_url: body.callback_url.clone(),
        auth_type: body.auth_type().to_string(),
        auth_username,
        auth_password,
        active: body.active.unwrap_or(true),
        secret: engine.store.seal(secret.as_bytes(), &Webhook::secret_context(tenant, &id, "secret"))?,
        created_ms: now,
        modified_ms: now,
        created_by: who.to_string(),
        modified_by: who.to_string(),
        disabled_reason: None,
    };
    engine.store.transact(|tx| tx.insert_webhook(tenant, &w))?;
    commit(engine).await?;
    Ok(Created { webhook: w, secret })
}

/// Updates a webhook on its record as stored at the write ([`model::update`]):
/// a 410 that disabled it meanwhile keeps its reason when this update does
/// not re-activate it. A re-activated webhook then delivers what waited.
pub async fn update(engine: &Engine, tenant: &str, id: &str, who: &str, body: &WebhookBody) -> ApiResult<Webhook> {
    let (auth_username, auth_password) = seal_password(engine, tenant, id, body)?;
    let change = WebhookUpdate {
        filter: body.filter.clone(),
        callback_url: body.callback_url.clone(),
        auth_type: body.auth_type().to_string(),
        auth_username,
        auth_password,
        active: body.active.unwrap_or(true),
        modified_ms: now_ms(),
        modified_by: who.to_string(),
    };
    let w = engine.store.transact(|tx| {
        let mut w = tx.webhook(tenant, id)?.ok_or_else(|| not_found(id))?;
        model::update(&mut w, &change);
        tx.put_webhook(tenant, &w)?;
        Ok::<_, ApiError>(w)
    })?;
    commit(engine).await?;
    engine.push.events().wake(tenant, id);
    Ok(w)
}

/// Deletes a webhook with its outbox, failed events and attempt log in one
/// transaction. They are listed before it; an entry added meanwhile moves
/// the webhook's record generation on and the list is made again, and none
/// is added once the webhook is gone.
pub async fn delete(engine: &Engine, tenant: &str, id: &str) -> ApiResult<()> {
    for _ in 0..ATTEMPTS {
        let records = engine.store.webhooks().records(tenant, id)?;
        let done = engine.store.transact(|tx| {
            if tx.webhook(tenant, id)?.is_none() {
                return Err(not_found(id));
            }
            if !tx.webhook_records_unchanged(&records)? {
                return Ok(false);
            }
            tx.delete_webhook(tenant, id)?;
            tx.remove_webhook_records(&records)?;
            Ok(true)
        })?;
        if done {
            return commit(engine).await;
        }
    }
    Err(ApiError::conflict(format!("webhook {id} kept receiving events during the delete: try again")))
}

/// Puts the failed events created at or after `since_ms` back into the
/// outbox ([`model::requeue`]), in one transaction; answers how many.
pub async fn replay(engine: &Engine, tenant: &str, id: &str, since_ms: u64) -> ApiResult<usize> {
    let failed = engine.store.webhooks().failed(tenant, id)?;
    let now = now_ms();
    let n = engine.store.transact(|tx| {
        if tx.webhook(tenant, id)?.is_none() {
            return Err(not_found(id));
        }
        let mut n: usize = 0;
        for (k, e) in &failed {
            if let Some(again) = model::requeue(e, since_ms, now) {
                if tx.requeue_failed(tenant, id, k, &again)? {
                    n = n.saturating_add(1);
                }
            }
        }
        Ok(n)
    })?;
    commit(engine).await?;
    engine.push.events().wake(tenant, id);
    Ok(n)
}

/// Publishes a domain event: it is queued, durably, in the outbox of every
/// active webhook of its tenant whose filter matches (one transaction);
/// answers how many.
pub async fn publish(engine: &Engine, event: &Event) -> ApiResult<usize> {
    let matched = engine.push.events().publish(event)?;
    commit(engine).await?;
    Ok(matched)
}
