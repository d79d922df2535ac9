//! Webhooks: their configuration, the attempt log, replay of failed events,
//! and publishing domain events to them.

use super::apps::checked;
use crate::auth::{Access, Caller, Principal, ADMIN, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::list_filter;
use crate::models::validate;
use crate::models::webhook::{AttemptView, DomainEvent, Published, Replayed, WebhookBody, WebhookView};
use crate::ops;
use crate::paging::Paging;
use herald_actors::filter::Condition;
use herald_actors::webhooks::Event;
use serde_json::json;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const ADMINISTER: Access = Access::Tenant(ADMIN);
    pub const READ: Access = Access::Tenant(ADMIN_OR_READ);
    pub const PUBLISH: Access = Access::Tenant(ADMIN);
}

/// See [`Engine::webhooks`].
pub struct Webhooks<'a>(pub(crate) &'a Engine);

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("webhook {id} not found"))
}

/// The principal of an operation of `access` (a tenant's, so there is one).
fn principal<'c>(caller: &'c Caller, tenant: &str, access: Access) -> ApiResult<&'c Principal> {
    caller.authorize(Some(tenant), access)?.ok_or_else(|| ApiError::unauthorized("missing bearer token"))
}

impl Webhooks<'_> {
    /// Creates a webhook; its signing secret is answered this once.
    pub async fn create(&self, caller: &Caller, tenant: &str, body: WebhookBody) -> ApiResult<WebhookView> {
        let who = principal(caller, tenant, access::ADMINISTER)?;
        body.validate()?;
        let created = ops::webhooks::create(self.0, tenant, &who.username, &body).await?;
        let mut view = WebhookView::of(tenant, &created.webhook);
        view.secret = Some(created.secret);
        Ok(view)
    }

    /// A page (of 5 to 100) of the webhooks satisfying every condition of
    /// `filter` (fields: [`WebhookView::FIELDS`]).
    pub async fn list(
        &self,
        caller: &Caller,
        tenant: &str,
        filter: &[Condition],
        paging: Paging,
    ) -> ApiResult<Vec<WebhookView>> {
        caller.authorize(Some(tenant), access::READ)?;
        let paging = checked(paging, "page_size", 5, 100)?;
        if let Some(c) = filter.iter().find(|c| !WebhookView::FIELDS.contains(&c.attr.as_str())) {
            return Err(ApiError::bad_request(format!("UnknownProperty: {}", c.attr)));
        }
        Ok(self
            .0
            .store
            .webhooks()
            .list(tenant)?
            .iter()
            .map(|w| WebhookView::of(tenant, w))
            .filter(|v| list_filter::matches(filter, |f| v.field(f)))
            .skip(paging.offset())
            .take(paging.size)
            .collect())
    }

    /// One webhook (its password masked, without its secret).
    pub async fn get(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<WebhookView> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("webhookId", id)?;
        let w = self.0.store.webhooks().get(tenant, id)?.ok_or_else(|| not_found(id))?;
        Ok(WebhookView::of(tenant, &w))
    }

    /// Replaces a webhook's configuration; re-activating it delivers what waited.
    pub async fn update(&self, caller: &Caller, tenant: &str, id: &str, body: WebhookBody) -> ApiResult<WebhookView> {
        let who = principal(caller, tenant, access::ADMINISTER)?;
        validate::ulid("webhookId", id)?;
        body.validate()?;
        let w = ops::webhooks::update(self.0, tenant, id, &who.username, &body).await?;
        Ok(WebhookView::of(tenant, &w))
    }

    /// Deletes a webhook with its outbox, failed events and attempt log.
    pub async fn delete(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("webhookId", id)?;
        ops::webhooks::delete(self.0, tenant, id).await
    }

    /// A page (of 5 to 100) of a webhook's delivery attempts.
    pub async fn attempts(
        &self,
        caller: &Caller,
        tenant: &str,
        id: &str,
        paging: Paging,
    ) -> ApiResult<Vec<AttemptView>> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::ulid("webhookId", id)?;
        let paging = checked(paging, "page_size", 5, 100)?;
        let store = &self.0.store;
        store.webhooks().get(tenant, id)?.ok_or_else(|| not_found(id))?;
        let attempts = store.webhooks().attempts(tenant, id, paging.offset(), paging.size)?;
        Ok(attempts.into_iter().map(AttemptView::of).collect())
    }

    /// Puts the webhook's failed events created at or after `since` back into
    /// its outbox.
    pub async fn replay(
        &self,
        caller: &Caller,
        tenant: &str,
        id: &str,
        since: time::OffsetDateTime,
    ) -> ApiResult<Replayed> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("webhookId", id)?;
        let since_ms = (since.unix_timestamp_nanos() / 1_000_000).max(0) as u64;
        let requeued = ops::webhooks::replay(self.0, tenant, id, since_ms).await?;
        Ok(Replayed { requeued })
    }

    /// Publishes a domain event: it is queued, durably, for every active
    /// webhook of the tenant whose filter matches it.
    pub async fn publish(&self, caller: &Caller, tenant: &str, body: DomainEvent) -> ApiResult<Published> {
        caller.authorize(Some(tenant), access::PUBLISH)?;
        body.validate()?;
        let data = if body.data.is_null() { json!({}) } else { body.data };
        let event = Event::new(tenant, "domain", &body.event, data);
        let webhooks = ops::webhooks::publish(self.0, &event).await?;
        Ok(Published { id: event.id, webhooks })
    }
}
