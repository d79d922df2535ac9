//! What an engine caches of the records (the apps generation its provider
//! channels are checked against, the user directories) kept coherent with
//! the writes of other engines sharing a PostgreSQL database.
//!
//! After a write that others cache, the writer publishes a notification
//! (`LISTEN`/`NOTIFY`, see `pg/listen.rs`); every other engine drops the
//! entry, within milliseconds. An engine that was not listening (its
//! connection dropped) drops everything once it listens again, and keeps
//! dropping everything every 250 ms until it does: a notification missed
//! during a reconnect costs a rebuild, never a stale read for long. The
//! lock and forced disconnect of clients are never cached: every request
//! reads them, on whichever engine.

use crate::databases::Engine;
use crate::Store;
use std::sync::atomic::Ordering;
use std::sync::Weak;

/// A write other engines must see.
pub(crate) enum Change<'a> {
    /// An app of some tenant was written: provider channels are checked again.
    Apps,
    /// A user of this tenant was written: its directory is rebuilt.
    Users(&'a str),
    /// A tenant's quotas were written: its cached limits are read again.
    Limits(&'a str),
}

impl Store {
    /// Tells the other engines sharing the database about `change`; a
    /// failure is logged (they catch up when their listener reconnects).
    pub(crate) fn publish(&self, change: Change<'_>) {
        let Ok(dbs) = self.trees() else { return };
        let Engine::Pg(pg) = &dbs.engine else { return };
        let payload = match change {
            Change::Apps => format!("{}\tapps\t", self.node_id()),
            Change::Users(tenant) => format!("{}\tusers\t{tenant}", self.node_id()),
            Change::Limits(tenant) => format!("{}\tlimits\t{tenant}", self.node_id()),
        };
        if let Err(e) = pg.notify(&payload) {
            tracing::warn!(error = %e, "could not tell other engines of a change");
        }
    }

    /// Starts listening to the other engines' changes (PostgreSQL only).
    pub(crate) fn listen(&self) {
        let Ok(dbs) = self.trees() else { return };
        let Engine::Pg(pg) = &dbs.engine else { return };
        let inner = std::sync::Arc::downgrade(&self.inner);
        pg.listen(std::sync::Arc::new(move |payload| changed(&inner, payload)));
    }
}

/// Drops what a notification says changed; everything on `None`.
fn changed(inner: &Weak<crate::store::Inner>, payload: Option<&str>) {
    let Some(inner) = inner.upgrade() else { return };
    let mut parts = payload.map(|p| p.splitn(3, '\t'));
    let fields = parts.as_mut().map(|p| (p.next().unwrap_or(""), p.next().unwrap_or(""), p.next().unwrap_or("")));
    match fields {
        None => {
            inner.apps_generation.fetch_add(1, Ordering::AcqRel);
            inner.directories.forget_all();
            inner.limits.forget_all();
        }
        Some((node, _, _)) if node == inner.opts.node_id => {}
        Some((_, "apps", _)) => {
            inner.apps_generation.fetch_add(1, Ordering::AcqRel);
        }
        Some((_, "users", tenant)) => inner.directories.forget(tenant),
        Some((_, "limits", tenant)) => inner.limits.forget(tenant),
        Some((_, kind, _)) => tracing::debug!(kind, "a change of an unknown kind: ignored"),
    }
}
