//! Where broadcast work runs: on threads of its own, scheduled as batch work.
//!
//! A broadcast and a send to one client compete for the same cores, and when
//! both are busy the kernel, not Herald, decides who runs. On threads of their
//! own under `SCHED_BATCH`, broadcast partitions (their storage reads, their
//! sends and the connections they open) never preempt a thread when they wake
//! (each answer and each socket write wakes one): the send API and the
//! interactive lane's connection run when they have work. A higher nice
//! value lowers the broadcast's share further. On an idle machine nothing changes.
//! See [`PushSettings::bulk_nice`](crate::PushSettings).
//!
//! Batch work rather than nice alone: two broadcasts at once finished
//! 12–20% sooner (200k and 1M tokens), and at 1M the interactive p99 during
//! them fell from 36 to 27 ms (one run; the README's "Interactive sends stay
//! fast").

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
    /// Starts the bulk runtime, its threads batch work `nice` steps below the
    /// calling thread's priority (at most 19, the lowest); `None` runs
    /// broadcast work on the caller's runtime.
    pub fn start(nice: Option<u8>) -> Result<Bulk, String> {
        let Some(nice) = nice else { return Ok(Bulk { runtime: None }) };
        // Absolute: the blocking pool's threads are started from the (already
        // lowered) workers and inherit their value.
        let own = rustix::process::getpriority_process(None).unwrap_or(0);
        let target = own.saturating_add(i32::from(nice)).min(19);
        let batch = batch_priority(target);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .thread_name("herald-bulk")
            .enable_all()
            .on_thread_start(move || lower_priority(target, batch))
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

const BATCH: thread_priority::ThreadSchedulePolicy =
    thread_priority::ThreadSchedulePolicy::Normal(thread_priority::NormalThreadSchedulePolicy::Batch);

/// `nice` as the thread-priority crate names it for a normal policy (a step
/// of 0 to 99 that maps to a nice value); `None` if no step maps to it.
fn batch_priority(nice: i32) -> Option<thread_priority::ThreadPriority> {
    use thread_priority::{ThreadPriority, ThreadPriorityValue};
    (u8::from(ThreadPriorityValue::MIN)..=u8::from(ThreadPriorityValue::MAX))
        .filter_map(|p| ThreadPriorityValue::try_from(p).ok())
        .map(ThreadPriority::Crossplatform)
        .find(|p| p.to_posix(BATCH).ok() == Some(nice))
}

/// Puts the calling thread under `SCHED_BATCH` at `nice` (`batch`: the same
/// value as [`batch_priority`] names it; Linux keeps both per thread).
/// Neither needs privilege when the value is not lowered; a failure leaves
/// the thread as it was, which is only less fair, so it is logged, not fatal.
fn lower_priority(nice: i32, batch: Option<thread_priority::ThreadPriority>) {
    let batched =
        batch.map(|p| thread_priority::set_thread_priority_and_policy(thread_priority::thread_native_id(), p, BATCH));
    if let Some(Ok(())) = batched {
        return;
    }
    tracing::warn!(result = ?batched, nice, "could not make a broadcast thread batch work; lowering its nice value only");
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

    fn batch() -> bool {
        thread_priority::thread_schedule_policy().unwrap() == BATCH
    }

    #[tokio::test]
    async fn bulk_work_runs_on_threads_of_lower_priority() {
        let base = my_nice();
        let bulk = Bulk::start(Some(5)).unwrap();
        assert!(bulk.handle().is_some());
        let task = bulk.spawn(async { (std::thread::current().name().map(String::from), my_nice(), batch()) });
        let (name, nice, batched) = task.await.unwrap();
        assert_eq!(name.as_deref(), Some("herald-bulk"));
        assert_eq!(nice, (base + 5).min(19));
        assert!(batched, "broadcast threads are batch work");
        // Started from a lowered worker, a blocking thread is not lowered twice.
        let blocking = bulk.spawn(async { tokio::task::spawn_blocking(my_nice).await.unwrap() });
        assert_eq!(blocking.await.unwrap(), (base + 5).min(19));
        assert_eq!(bulk.spawn_blocking(my_nice).await.unwrap(), (base + 5).min(19));
        assert!(bulk.spawn_blocking(batch).await.unwrap(), "and so are its blocking threads");
        assert_eq!(my_nice(), base, "the caller's thread keeps its priority");
        assert!(!batch(), "and its policy");
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
