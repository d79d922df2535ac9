//! Grouped flushing: many concurrent writers share one flush.
//!
//! A writer takes a ticket after its write and waits until a flush that started
//! after the ticket was taken has finished. One thread runs flushes back to back,
//! each covering every ticket issued before it began, so under load the cost of
//! a flush is shared by all writers that arrived while the previous one ran.

use crate::databases::Slot;
use crate::{Error, Result};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;
use tokio::sync::watch;

#[derive(Clone, Copy, Default, Debug)]
struct Done {
    /// Every ticket up to this one is on disk.
    flushed: u64,
    /// Every ticket above `flushed` and up to this one saw its flush fail.
    failed: u64,
    /// The last failure was for want of disk space.
    full: bool,
}

#[derive(Default)]
struct Queue {
    requested: u64,
    shutdown: bool,
}

pub(crate) struct Flusher {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    done: watch::Receiver<Done>,
    /// Joined on drop, so the databases are closed when the store is.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Flusher {
    pub(crate) fn start(dbs: Slot) -> Result<Self> {
        let queue = Arc::new((Mutex::new(Queue::default()), Condvar::new()));
        let (tx, done) = watch::channel(Done::default());
        let q = queue.clone();
        let thread = std::thread::Builder::new()
            .name("herald-flusher".into())
            .spawn(move || run(dbs, q, tx))
            .map_err(|e| Error::Flush(format!("spawning the flusher thread: {e}")))?;
        Ok(Self { queue, done, thread: Some(thread) })
    }

    /// Waits until everything written before this call is on disk.
    pub(crate) async fn durable(&self) -> Result<()> {
        let ticket = {
            let (lock, cv) = &*self.queue;
            let mut q = lock.lock().map_err(|_| Error::Flush("flusher poisoned".into()))?;
            q.requested = q.requested.saturating_add(1);
            cv.notify_one();
            q.requested
        };
        let mut rx = self.done.clone();
        let done = rx
            .wait_for(|d| d.flushed >= ticket || d.failed >= ticket)
            .await
            .map_err(|_| Error::Flush("flusher stopped".into()))?;
        match (done.flushed >= ticket, done.full) {
            (true, _) => Ok(()),
            (false, true) => Err(Error::Full),
            (false, false) => Err(Error::Flush("sled flush failed".into())),
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        let (lock, cv) = &*self.queue;
        if let Ok(mut q) = lock.lock() {
            q.shutdown = true;
            cv.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(dbs: Slot, queue: Arc<(Mutex<Queue>, Condvar)>, tx: watch::Sender<Done>) {
    let (lock, cv) = &*queue;
    let mut done = Done::default();
    loop {
        let target = {
            let Ok(mut q) = lock.lock() else { return };
            while q.requested <= done.flushed.max(done.failed) && !q.shutdown {
                q = match cv.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
            if q.requested <= done.flushed.max(done.failed) {
                return; // shut down with nothing pending
            }
            q.requested
        };
        let started = Instant::now();
        let result = dbs.get().and_then(|d| d.flush());
        metrics::histogram!("herald_storage_flush_seconds").record(started.elapsed().as_secs_f64());
        match result {
            Ok(_) => done.flushed = target,
            Err(e) => {
                tracing::error!(error = %e, "sled flush failed");
                done.failed = target;
                done.full = matches!(e, Error::Full);
            }
        }
        tx.send_replace(done);
    }
}
