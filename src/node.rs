//! This engine among the engines sharing a `--store` database: its node id,
//! and the heartbeat that keeps its leases (see `herald_storage::leases`).
//!
//! Every engine holds a lease `node/<id>` for as long as it lives; the count
//! of those still unexpired is the number of live engines, which divides the
//! per-engine rate limits (see `rate_limit`). The heartbeat renews all of an
//! engine's leases in one statement every third of the lease's lifetime, so
//! a lease outlives one missed heartbeat, not two.

use herald_storage::leases::Lease;
use herald_storage::Store;
use metrics::gauge;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A node id as given: 1 to 64 letters, digits, `.`, `_` or `-`.
pub fn valid_node_id(id: &str) -> Result<String, String> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    match ok {
        true => Ok(id.to_string()),
        false => Err(format!("{id:?} is not 1 to 64 letters, digits, '.', '_' or '-'")),
    }
}

/// The configured node id, or the one kept in `data_dir/node-id` (generated
/// and written there the first time), so an engine restarted on the same
/// directory takes its own leases back at once.
pub fn node_id(configured: Option<&str>, data_dir: &Path) -> Result<String, String> {
    if let Some(id) = configured {
        return valid_node_id(id);
    }
    let path = data_dir.join("node-id");
    match std::fs::read_to_string(&path) {
        Ok(text) => valid_node_id(text.trim()).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = format!("node-{}", ulid::Ulid::generate().to_string().to_lowercase());
            std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
            std::fs::write(&path, format!("{id}\n")).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(id)
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// What the heartbeat knows of the cluster: read by the rate limits.
#[derive(Debug)]
pub struct Cluster {
    live: AtomicU64,
}

impl Cluster {
    /// A cluster of `live` engines (tests of what divides by it).
    pub fn of(live: u64) -> Cluster {
        Cluster { live: AtomicU64::new(live) }
    }

    /// Live engines sharing the database, this one included (at least 1).
    pub fn live_nodes(&self) -> u64 {
        self.live.load(Ordering::Relaxed).max(1)
    }
}

/// Frees the leases a previous run under this node id left, takes the
/// node's own lease and starts the heartbeat, which runs until `background` stops.
pub(crate) fn start(
    background: &crate::background::Background,
    store: Store,
    ttl: Duration,
) -> Result<Arc<Cluster>, String> {
    let freed = store.leases().free_all_mine().map_err(|e| format!("freeing this node's old leases: {e}"))?;
    if freed > 0 {
        tracing::info!(freed, node = store.node_id(), "took back the leases of this node's previous run");
    }
    gauge!("herald_node_info", "node" => store.node_id().to_string()).set(1.0);
    let name = format!("node/{}", store.node_id());
    let mut own = store.leases().acquire(&name).map_err(|e| format!("taking the node lease: {e}"))?;
    let cluster = Arc::new(Cluster::of(1));
    let shared = cluster.clone();
    background.spawn(|stop| async move {
        let mut tick = tokio::time::interval(ttl.checked_div(3).unwrap_or(ttl));
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let store = store.clone();
            let name = name.clone();
            let kept = tokio::task::spawn_blocking(move || beat(&store, &name, own)).await;
            own = match kept {
                Ok((own, live)) => {
                    if let Some(live) = live {
                        shared.live.store(live, Ordering::Relaxed);
                    }
                    own
                }
                Err(_) => None,
            };
        }
    });
    Ok(cluster)
}

/// One heartbeat: renews every lease, takes the node lease again if it was
/// lost (the database was unreachable longer than a lease), counts live nodes.
fn beat(store: &Store, name: &str, mut own: Option<Lease>) -> (Option<Lease>, Option<u64>) {
    match store.leases().heartbeat() {
        Ok(held) => gauge!("herald_leases_held").set(held as f64),
        Err(e) => tracing::warn!(error = %e, "lease heartbeat failed: leases expire unless the next one succeeds"),
    }
    if let Err(e) = store.leases().keep(&mut own, name) {
        tracing::warn!(error = %e, "could not keep the node lease");
    }
    let live = store.leases().count_live("node/").ok();
    if let Some(n) = live {
        gauge!("herald_nodes_live").set(n as f64);
    }
    (own, live)
}
