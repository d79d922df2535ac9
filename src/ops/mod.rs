//! The operations layer: every state-changing operation of the three
//! interfaces, one function each, one file per area.
//!
//! An operation takes the tenant and a typed input, runs its whole read,
//! check and write as one storage transaction ([`herald_storage::Tx`]: the
//! store may run the closure again, so nothing slow or external happens
//! inside; a password is hashed before it), and returns a typed output. The
//! transaction also returns the events the operation publishes; `commit`
//! publishes them once it has committed and makes both durable before the
//! operation returns, so an answer is only given for what is on disk.
//!
//! The rules an operation enforces (lock transitions, links, votes, signer
//! states, nonce single use, property rules) are plain functions in
//! `crate::models`, tested without storage. HTTP handlers decode, authorize,
//! call an operation and encode its answer; the embedding API calls the same
//! functions.

pub mod apps;
pub mod catalogue;
pub mod clients;
pub mod idempotency;
pub mod nonces;
pub mod properties;
pub mod push;
pub mod realm;
pub mod schedules;
pub mod signers;
pub mod tenants;
pub mod users;
pub mod versions;
pub mod webhooks;

use crate::engine::Engine;
use crate::error::ApiResult;
use serde_json::Value;

/// An event an operation publishes after its commit (see `herald_actors::webhooks::bus`).
#[derive(Debug)]
pub struct Event {
    /// `client`, `push`, `signer`, `version`, `login` or `domain`.
    pub kind: &'static str,
    /// The webhook event name subscribers filter on (`CLIENT_REGISTERED`, ...).
    pub name: &'static str,
    /// The event's payload, as the webhook body carries it.
    pub data: Value,
}

impl Event {
    /// An event to publish once the operation's write has committed.
    pub fn new(kind: &'static str, name: &'static str, data: Value) -> Event {
        Event { kind, name, data }
    }
}

/// After an operation's transaction committed: queues its events for the
/// tenant's webhooks, then waits until the write and the queued events are
/// durable (one grouped flush for both).
pub(crate) async fn commit(engine: &Engine, tenant: &str, events: Vec<Event>) -> ApiResult<()> {
    let bus = engine.push.events();
    for e in events {
        bus.emit(tenant, e.kind, e.name, e.data);
    }
    engine.store.durable().await?;
    Ok(())
}
