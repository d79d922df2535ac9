//! The event bus: an event is matched against the tenant's active webhooks and
//! written to each matching webhook's outbox in the transaction of the
//! change it reports ([`queue`]), so the change and its event are durable
//! together or not at all; the targets are woken after the commit.

use super::dispatcher::DispatcherMsg;
use crate::filter::{event_lookup, Expr};
use herald_storage::webhooks::OutboxEntry;
use herald_storage::{now_ms, Store, Tx};
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

/// Publishes events that are a change of their own (the test event), and
/// wakes webhook targets. One per engine.
pub struct EventBus {
    store: Store,
    dispatcher: OnceLock<ActorRef<DispatcherMsg>>,
}

impl EventBus {
    pub(crate) fn new(store: Store) -> EventBus {
        EventBus { store, dispatcher: OnceLock::new() }
    }

    /// Wakes the dispatcher's targets: of a webhook changed, and of every
    /// outbox a committed transaction wrote to.
    pub(crate) fn attach(&self, dispatcher: ActorRef<DispatcherMsg>) {
        let waker = dispatcher.clone();
        self.store.on_outbox_write(move |tenant, webhook| {
            let _ = waker.cast(DispatcherMsg::Wake(tenant.to_string(), webhook.to_string()));
        });
        let _ = self.dispatcher.set(dispatcher);
    }

    /// Queues an event that reports no other change, in a transaction of
    /// its own; returns how many webhooks it matched. The caller makes it
    /// durable before answering.
    pub fn publish(&self, event: &Event) -> Result<usize, herald_storage::Error> {
        self.store.transact(|tx| queue(tx, event))
    }

    /// Tells a webhook's target that its configuration changed.
    pub fn wake(&self, tenant: &str, webhook: &str) {
        if let Some(d) = self.dispatcher.get() {
            let _ = d.cast(DispatcherMsg::Wake(tenant.to_string(), webhook.to_string()));
        }
    }
}

/// Queues `event` with transaction `tx` for every active webhook of its
/// tenant whose filter matches, as the transaction sees them (see
/// `Tx::webhooks_of`); returns how many. Their targets are woken once `tx`
/// commits; if it does not, nothing was queued. `tx` may run more than once:
/// only the run that commits counts.
pub fn queue(tx: &Tx, event: &Event) -> Result<usize, herald_storage::Error> {
    // Listed before counting: a stale list (the tenant's first event since
    // start or since a webhook changed) aborts this run for a run again,
    // which must not count the event twice. A run again after a conflict
    // (rare) still counts it again.
    let webhooks = tx.webhooks_of(&event.tenant)?;
    crate::telemetry::tenant(&event.tenant).events_published.increment(1);
    let now = now_ms();
    let body = event.to_json(now);
    let lookup = event_lookup(&body);
    let mut entry = None;
    let mut matched: usize = 0;
    for webhook in webhooks.iter() {
        if !webhook.active || !Expr::parse(&webhook.filter).is_ok_and(|f| f.matches(&lookup)) {
            continue;
        }
        let entry = entry.get_or_insert_with(|| OutboxEntry {
            event_id: event.id.clone(),
            body: body.to_string(),
            created_ms: now,
            attempts: 0,
            next_attempt_ms: now,
        });
        tx.enqueue_event(&event.tenant, &webhook.id, entry)?;
        matched = matched.saturating_add(1);
    }
    Ok(matched)
}
