//! The event bus: an event is matched against the tenant's active webhooks and
//! written to each matching webhook's outbox; the targets are woken.

use super::dispatcher::DispatcherMsg;
use crate::filter::{event_lookup, Expr};
use herald_storage::webhooks::OutboxEntry;
use herald_storage::{now_ms, Store};
use ractor::ActorRef;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// An event as webhooks receive it.
#[derive(Clone, Debug)]
pub struct Event {
    /// ULID assigned when the event is created; receivers deduplicate retries by it.
    pub id: String,
    /// The tenant whose webhooks receive it (`tenantId`).
    pub tenant: String,
    /// `client`, `push`, `signer`, `version`, `login` or `domain`.
    pub kind: String,
    /// The event's name within its type (`TMS_RESULT_AVAILABLE`); filters match on it.
    pub event: String,
    /// Delivered as `data`; filters reach into it with `data.<path>`.
    pub data: Value,
}

impl Event {
    /// An event with a fresh id, for [`EventBus::publish`].
    pub fn new(tenant: &str, kind: &str, event: &str, data: Value) -> Event {
        Event {
            id: ulid::Ulid::generate().to_string(),
            tenant: tenant.into(),
            kind: kind.into(),
            event: event.into(),
            data,
        }
    }

    /// The delivered body: `{ id, tenantId, type, event, timestamp, data }`.
    pub fn to_json(&self, timestamp_ms: u64) -> Value {
        let timestamp =
            time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(timestamp_ms).saturating_mul(1_000_000))
                .ok()
                .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
                .unwrap_or_default();
        json!({ "id": self.id, "tenantId": self.tenant, "type": self.kind, "event": self.event, "timestamp": timestamp, "data": self.data })
    }
}

/// Where events go: written durably to each matching webhook's outbox, whose target
/// is then woken. One per engine.
pub struct EventBus {
    store: Store,
    dispatcher: OnceLock<ActorRef<DispatcherMsg>>,
}

impl EventBus {
    pub(crate) fn new(store: Store) -> EventBus {
        EventBus { store, dispatcher: OnceLock::new() }
    }

    pub(crate) fn attach(&self, dispatcher: ActorRef<DispatcherMsg>) {
        let _ = self.dispatcher.set(dispatcher);
    }

    /// Queues the event for every active webhook of its tenant whose filter
    /// matches; returns how many. The caller makes it durable before answering.
    pub fn publish(&self, event: &Event) -> Result<usize, herald_storage::Error> {
        crate::telemetry::tenant(&event.tenant).events_published.increment(1);
        let now = now_ms();
        let body = event.to_json(now);
        let lookup = event_lookup(&body);
        let matching: Vec<String> = self
            .store
            .webhooks()
            .list(&event.tenant)?
            .into_iter()
            .filter(|w| w.active)
            .filter(|w| Expr::parse(&w.filter).map(|f| f.matches(&lookup)).unwrap_or(false))
            .map(|w| w.id)
            .collect();
        if matching.is_empty() {
            return Ok(0);
        }
        let entry = OutboxEntry {
            event_id: event.id.clone(),
            body: body.to_string(),
            created_ms: now,
            attempts: 0,
            next_attempt_ms: now,
        };
        self.store.webhooks().enqueue(&event.tenant, &matching, &entry)?;
        for id in &matching {
            self.wake(&event.tenant, id);
        }
        Ok(matching.len())
    }

    /// Publishes an event the engine emits itself; failures are logged, never fatal.
    pub fn emit(&self, tenant: &str, kind: &str, event: &str, data: Value) {
        if let Err(e) = self.publish(&Event::new(tenant, kind, event, data)) {
            tracing::error!(tenant, event, error = %e, "could not queue an event");
        }
    }

    /// Tells a webhook's target that its outbox or configuration changed.
    pub fn wake(&self, tenant: &str, webhook: &str) {
        if let Some(d) = self.dispatcher.get() {
            let _ = d.cast(DispatcherMsg::Wake(tenant.to_string(), webhook.to_string()));
        }
    }
}
