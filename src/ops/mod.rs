//! The operations layer: every state-changing operation of the three
//! interfaces, one function each, one file per area.
//!
//! An operation takes the tenant and a typed input, runs its whole read,
//! check and write as one storage transaction ([`herald_storage::Tx`]: the
//! store may run the closure again, so nothing slow or external happens
//! inside; a password is hashed before it), and returns a typed output. The
//! events the operation publishes are queued in that same transaction
//! (`publish`), so a change and its events commit together or not at all,
//! and only the run that commits queues them; `commit` makes the write
//! durable before the operation returns, so an answer is only given for
//! what is on disk.
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

/// An event an operation publishes with its transaction (see `publish`).
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
    /// An event of the operation's change.
    pub fn new(kind: &'static str, name: &'static str, data: Value) -> Event {
        Event { kind, name, data }
    }
}

/// Queues `event` for the tenant's webhooks with the operation's transaction
/// `tx` (see `herald_actors::webhooks::queue`).
pub(crate) fn publish(tx: &herald_storage::Tx, tenant: &str, event: Event) -> herald_storage::Result<()> {
    let event = herald_actors::webhooks::Event::new(tenant, event.kind, event.name, event.data);
    herald_actors::webhooks::queue(tx, &event).map(drop)
}

/// After an operation's transaction committed: waits until its write (and
/// the events queued with it) is durable.
pub(crate) async fn commit(engine: &Engine) -> ApiResult<()> {
    engine.store.durable().await?;
    Ok(())
}
