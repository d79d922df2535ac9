//! Where broadcast work runs: on threads of its own at a lower OS priority.
//!
//! A broadcast and a send to one client compete for the same cores, and when
//! both are busy the kernel, not Herald, decides who runs. On threads of their
//! own with a higher nice value, broadcast partitions (their storage reads,
//! their sends and the connections they open) yield the CPU to what a caller
//! waits for: the send API, the interactive lane's connection, and the
//! providers' side when they run on the same machine. On an idle machine
//! nothing changes. See [`PushSettings::bulk_nice`](crate::PushSettings).

use std::future::Future;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// Runs broadcast work: on a runtime of its own, or on the caller's when
/// [`PushSettings::bulk_nice`](crate::PushSettings) is unset.
pub struct Bulk {
    /// Shut down without waiting when dropped (see [`Drop`]).
    runtime: Option<Runtime>,
}

impl Bulk {
    /// Starts the bulk runtime, its threads `nice` steps below the calling
    /// thread's priority (at most 19, the lowest); `None` runs broadcast work
    /// on the caller's runtime.
    pub fn start(nice: Option<u8>) -> Result<Bulk, String> {
        let Some(nice) = nice else { return Ok(Bulk { runtime: None }) };
        // Absolute: the blocking pool's threads are started from the (already
        // lowered) workers and inherit their value.
        let own = rustix::process::getpriority_process(None).unwrap_or(0);
        let target = own.saturating_add(i32::from(nice)).min(19);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .thread_name("herald-bulk")
            .enable_all()
            .on_thread_start(move || lower_priority(target))
            .build()
            .map_err(|e| format!("starting the broadcast runtime: {e}"))?;
        Ok(Bulk { runtime: Some(runtime) })
    }

    /// Runs `task` on the bulk threads.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match &self.runtime {
            Some(rt) => rt.spawn(task),
            None => tokio::spawn(task),
        }
    }

    /// Runs blocking `work` (storage scans) on the bulk runtime's blocking threads.
    pub fn spawn_blocking<F, R>(&self, work: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        match &self.runtime {
            Some(rt) => rt.spawn_blocking(work),
            None => tokio::task::spawn_blocking(work),
        }
    }

    /// The bulk runtime, if it has one of its own (tests spawn on it directly).
    #[cfg(test)]
    fn handle(&self) -> Option<&tokio::runtime::Handle> {
        self.runtime.as_ref().map(Runtime::handle)
    }
}

impl Drop for Bulk {
    /// Without waiting: the engine is dropped from async code (or from a bulk
    /// thread itself), where blocking on the runtime's threads is not allowed.
    /// Broadcasts were stopped at their checkpoints before (`Push::shutdown`).
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Sets the calling thread's nice value (Linux keeps one per thread). Raising
/// it needs no privilege; a failure leaves the thread as it was, which is
/// only less fair, so it is logged, not fatal.
fn lower_priority(nice: i32) {
    let me = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(me), nice) {
        tracing::warn!(error = %e, nice, "could not lower a broadcast thread's priority");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn my_nice() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
    }

    #[tokio::test]
    async fn bulk_work_runs_on_threads_of_lower_priority() {
        let base = my_nice();
        let bulk = Bulk::start(Some(5)).unwrap();
        assert!(bulk.handle().is_some());
        let task = bulk.spawn(async { (std::thread::current().name().map(String::from), my_nice()) });
        let (name, nice) = task.await.unwrap();
        assert_eq!(name.as_deref(), Some("herald-bulk"));
        assert_eq!(nice, (base + 5).min(19));
        // Started from a lowered worker, a blocking thread is not lowered twice.
        let blocking = bulk.spawn(async { tokio::task::spawn_blocking(my_nice).await.unwrap() });
        assert_eq!(blocking.await.unwrap(), (base + 5).min(19));
        assert_eq!(bulk.spawn_blocking(my_nice).await.unwrap(), (base + 5).min(19));
        assert_eq!(my_nice(), base, "the caller's thread keeps its priority");
    }

    #[tokio::test]
    async fn unset_it_runs_on_the_callers_runtime() {
        let bulk = Bulk::start(None).unwrap();
        assert!(bulk.handle().is_none());
        let caller = std::thread::current().id();
        assert_eq!(bulk.spawn(async move { std::thread::current().id() }).await.unwrap(), caller);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn it_can_be_dropped_from_async_code_and_from_its_own_threads() {
        drop(Bulk::start(Some(1)).unwrap());
        let bulk = std::sync::Arc::new(Bulk::start(Some(1)).unwrap());
        let last = bulk.clone();
        drop(bulk);
        // The last reference goes on one of the runtime's own threads.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let on = last.handle().unwrap().clone();
        on.spawn(async move {
            drop(last);
            let _ = tx.send(());
        });
        rx.await.unwrap();
    }
}
