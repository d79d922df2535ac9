//! The engine's periodic background tasks that take leases: the node's
//! heartbeat, the sweeper and the recovery of PKI issuances. They live until
//! [`Background::stop`], which [`Engine::shutdown`](crate::Engine::shutdown)
//! calls before it frees the engine's leases: a task still running then
//! kept its lease alive, or could take one again after it was freed (on
//! PostgreSQL the store outlives `shutdown`, so such a lease could stay
//! held for as long as the process ran).

use std::future::Future;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The background tasks of one engine, and their stop signal.
#[derive(Clone, Default)]
pub(crate) struct Background {
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl Background {
    /// Spawns `task`, handing it the stop signal: it returns once the signal is
    /// cancelled, at the latest when its current round is done.
    pub(crate) fn spawn<F>(&self, task: impl FnOnce(CancellationToken) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(task(self.stop.clone()));
    }

    /// Signals every task to stop and waits up to `within` for them to end.
    pub(crate) async fn stop(&self, within: Duration) {
        self.stop.cancel();
        self.tasks.close();
        if tokio::time::timeout(within, self.tasks.wait()).await.is_err() {
            tracing::warn!("background tasks did not stop within {within:?}");
        }
    }
}
