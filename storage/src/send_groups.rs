//! Grouped writes of one-client and one-user send records (sled only).
//!
//! Each send's record in an insert of its own was an eighth of a one-client
//! send's CPU (`cargo bench --bench load -- --perf`): a sled insert walks the
//! tree, links a page delta and now and then rewrites the page, whatever the
//! record's size. A send instead hands its record here and answers at once.
//! A writer thread gathers what arrives within [`WINDOW`] and writes each
//! tenant's run of close notification ids as one [`BatchRecord`] (one-client
//! sends draw their ids from one monotonic generator, so those of a
//! millisecond are consecutive), as a send-batch request's are written.
//! Until written, a record is read from here.
//!
//! Durability is unchanged: a send's record was never flushed before its
//! answer (it joins the next grouped flush), and [`Store::durable`] first
//! waits for the records handed in before it.
//!
//! Not on PostgreSQL: there another engine may read the report as soon as
//! the send is answered.
//!
//! [`BatchRecord`]: crate::deliveries::BatchRecord
//! [`Store::durable`]: crate::Store::durable

use crate::databases::Slot;
use crate::deliveries::{position, BatchRecord, SendRecord, BATCH_SPAN};
use crate::keys::key;
use crate::store::put;
use crate::{Error, Result};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;

/// How long the writer gathers records after the first arrives: at 30 000
/// sends a second, some 30 records per write.
const WINDOW: Duration = Duration::from_millis(1);

/// Records waiting at most; past it (the writes failing) sends are refused
/// rather than memory growing.
const MAX_PENDING: usize = 65_536;

/// How long the writer waits before trying failed writes again.
const RETRY: Duration = Duration::from_millis(250);

/// A send's record until written.
struct Pending {
    tenant: String,
    id: ulid::Ulid,
    record: SendRecord,
}

#[derive(Default)]
struct State {
    /// Handed in since the writer last took them.
    open: Vec<Pending>,
    /// Taken by the writer and being written: still read from here.
    writing: Arc<Vec<Pending>>,
    /// Records handed in so far: the ticket of the last.
    queued: u64,
    /// A caller of [`SendGroups::written`] waits: the writer skips its window.
    hurry: bool,
    /// Set by tests (see [`SendGroups::hold`]): the writer gathers until
    /// someone waits for the records, however long that takes.
    held: bool,
    shutdown: bool,
}

/// Up to which ticket records are written, or failed to be.
#[derive(Clone, Copy, Default)]
struct Done {
    written: u64,
    failed: u64,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    done: watch::Sender<Done>,
}

impl Shared {
    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| Error::Unavailable("the send records' writer panicked".into()))
    }
}

/// The writer thread of send records and what waits for it.
pub(crate) struct SendGroups {
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl SendGroups {
    pub(crate) fn start(dbs: Slot) -> Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            done: watch::channel(Done::default()).0,
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("herald-sends".into())
            .spawn(move || run(&dbs, &s))
            .map_err(|e| Error::Unavailable(format!("spawning the send records' writer: {e}")))?;
        Ok(Self { shared, thread: Mutex::new(Some(thread)) })
    }

    /// Hands in the record of send `id` of `tenant`, written within a few
    /// milliseconds. Refused once the store closes, or while
    /// [`MAX_PENDING`] records wait (the writes failing).
    pub(crate) fn record(&self, tenant: &str, id: ulid::Ulid, record: SendRecord) -> Result<()> {
        let mut st = self.shared.lock()?;
        if st.shutdown {
            return Err(Error::Unavailable("the store is closed".into()));
        }
        if st.open.len() >= MAX_PENDING {
            return Err(Error::Unavailable("send records are not being written".into()));
        }
        st.open.push(Pending { tenant: tenant.to_string(), id, record });
        st.queued = st.queued.saturating_add(1);
        if st.open.len() == 1 {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    /// The record of send `id` of `tenant` while not yet written.
    pub(crate) fn find(&self, tenant: &str, id: ulid::Ulid) -> Result<Option<SendRecord>> {
        let st = self.shared.lock()?;
        let found = st.writing.iter().chain(&st.open).find(|p| p.id == id && p.tenant == tenant);
        Ok(found.map(|p| p.record.clone()))
    }

    /// Returns once every record handed in before the call is written (not
    /// yet flushed); an error when the writes of some failed.
    pub(crate) async fn written(&self) -> Result<()> {
        let ticket = {
            let mut st = self.shared.lock()?;
            if self.shared.done.borrow().written < st.queued {
                st.hurry = true;
                self.shared.wake.notify_one();
            }
            st.queued
        };
        let done = *self
            .shared
            .done
            .subscribe()
            .wait_for(|d| d.written >= ticket || d.failed >= ticket)
            .await
            .map_err(|_| Error::Unavailable("the send records' writer stopped".into()))?;
        if done.written >= ticket {
            Ok(())
        } else {
            Err(Error::Unavailable("writing send records failed".into()))
        }
    }

    /// Tests: while `held`, the writer takes nothing until a caller of
    /// [`SendGroups::written`] waits, so what a test hands in is one write
    /// however slowly the test runs (the window is a millisecond).
    #[cfg(feature = "test-support")]
    pub(crate) fn hold(&self, held: bool) -> Result<()> {
        self.shared.lock()?.held = held;
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Writes what waits and stops the writer: records handed in later are
    /// refused. Blocks until the writer has stopped.
    pub(crate) fn stop(&self) {
        if let Ok(mut st) = self.shared.state.lock() {
            st.shutdown = true;
            self.shared.wake.notify_one();
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}

impl Drop for SendGroups {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(dbs: &Slot, shared: &Shared) {
    loop {
        let Ok(mut st) = shared.lock() else { return };
        while st.open.is_empty() && !st.shutdown {
            st = match shared.wake.wait(st) {
                Ok(st) => st,
                Err(_) => return,
            };
        }
        if st.open.is_empty() {
            return; // shut down with nothing left
        }
        // Gather the window's records (while held, until someone waits for
        // them), unless someone waits for them.
        st = match shared.wake.wait_while(st, |s| s.held && !s.hurry && !s.shutdown) {
            Ok(st) => st,
            Err(_) => return,
        };
        st = match shared.wake.wait_timeout_while(st, WINDOW, |s| !s.hurry && !s.shutdown) {
            Ok((st, _)) => st,
            Err(_) => return,
        };
        st.hurry = false;
        let ticket = st.queued;
        st.writing = Arc::new(std::mem::take(&mut st.open));
        let writing = st.writing.clone();
        drop(st);
        let result = write(dbs, &writing);
        let Ok(mut st) = shared.lock() else { return };
        st.writing = Arc::default();
        match result {
            Ok(()) => {
                shared.done.send_modify(|d| d.written = ticket);
            }
            Err(e) => {
                shared.done.send_modify(|d| d.failed = ticket);
                if st.shutdown {
                    tracing::error!(error = %e, records = writing.len(), "send records lost as the store closed");
                    continue;
                }
                tracing::error!(error = %e, records = writing.len(), "writing send records failed; trying again");
                // Back in front, in their order; the writer's copy is the last.
                let failed = Arc::try_unwrap(writing).unwrap_or_default();
                let later = std::mem::replace(&mut st.open, failed);
                st.open.extend(later);
                let _ = shared.wake.wait_timeout_while(st, RETRY, |s| !s.shutdown);
            }
        }
    }
}

/// Writes each tenant's runs of ids less than [`BATCH_SPAN`] apart as one
/// record, a lone send as its own.
fn write(dbs: &Slot, records: &[Pending]) -> Result<()> {
    let trees = dbs.get()?;
    let mut sorted: Vec<&Pending> = records.iter().collect();
    sorted.sort_unstable_by(|a, b| (&a.tenant, a.id).cmp(&(&b.tenant, b.id)));
    let mut rest = sorted.as_slice();
    while let Some(first) = rest.first() {
        let run_len = rest
            .windows(2)
            .position(|w| {
                let (prev, next) = (w[0], w[1]);
                next.tenant != first.tenant
                    || next.id == prev.id
                    || next.id.0.saturating_sub(first.id.0) >= BATCH_SPAN as u128
            })
            .map_or(rest.len(), |at| at.saturating_add(1));
        let (run, after) = rest.split_at(run_len);
        rest = after;
        match run {
            [one] => put(&trees.sends, &key(&[&one.tenant, &one.record.report.id]), &one.record)?,
            run => {
                let at = |p: &Pending| position(first.id, p.id).unwrap_or(BATCH_SPAN);
                let record = BatchRecord::placed(first.id, run.iter().map(|p| (at(p), &p.record)));
                put(&trees.batches, &key(&[&first.tenant, &record.last()?]), &record)?
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::databases::Dbs;
    use crate::deliveries::Report;
    use crate::StoreOptions;

    fn record(id: ulid::Ulid) -> SendRecord {
        SendRecord { report: Report { id: id.to_string(), ..Report::default() }, outcomes: Vec::new() }
    }

    /// A failed write loses nothing: a wait for it fails, its record is
    /// still read from memory, and it is written once the databases are back.
    #[tokio::test]
    async fn records_of_a_failed_write_are_kept_and_written_later() {
        let dir = tempfile::tempdir().unwrap();
        let opts = StoreOptions::new(dir.path().to_path_buf());
        let space = std::sync::Arc::new(crate::space::Space::unmetered());
        let slot = Slot::new(Dbs::open(&opts, &space).unwrap());
        let groups = SendGroups::start(slot.clone()).unwrap();
        assert!(slot.close(Duration::from_secs(5)), "the databases closed, as while reopened");
        let id = ulid::Ulid::generate();
        groups.record("acme", id, record(id)).unwrap();
        assert!(groups.written().await.is_err(), "the wait fails with the write");
        assert!(groups.find("acme", id).unwrap().is_some(), "kept in memory");

        slot.put(Dbs::open(&opts, &space).unwrap());
        let written_again = async {
            while groups.find("acme", id).unwrap().is_some() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), written_again).await.expect("written again after the retry wait");
        groups.written().await.unwrap();
        let stored = slot.get().unwrap().sends.get(key(&["acme", &id.to_string()])).unwrap();
        assert!(stored.is_some(), "in its own record");
        groups.stop();
        assert!(groups.record("acme", id, record(id)).is_err(), "refused once stopped");
    }
}
