//! The `FanOut` actor: one partition of a topic broadcast (see
//! `herald_storage::broadcasts`), streamed from the token index in small
//! batches with bounded in-flight sends, checkpointed after every batch
//! under the partition's lease.
//!
//! A kill -9 resends what was sent but not durably checkpointed. That is kept
//! to about what is in flight: batches are small, the clients sent to but not
//! committed never exceed `bulk_in_flight` plus two batches, and checkpoints are
//! made durable by a group commit at most `GROUP_COMMIT` (5 ms) apart, awaited
//! beside the sends rather than in front of them.
//!
//! Each read also advances the partition's read mark, and no client is sent
//! to before a checkpoint holding a mark at or above it is durable; so after
//! a crash, the clients a resumed partition sends to up to the stored mark
//! are exactly those that may have been sent before, and the report counts
//! them as `resent` (durably, before sending them again).
//!
//! An engine that lost the partition's lease (it was paused past it, and
//! another engine took the partition over) has its next checkpoint refused:
//! the actor stops and `herald_lease_fenced_total{work="broadcast"}` counts it.
//!
//! Progress is certain because of two rules. The budget counts clients sent
//! but not committed, and batches commit in read order, so a client held
//! back in the oldest open batch (an HMS token waiting to fill its request
//! of many) keeps the budget spent by the later batches' answered clients;
//! before these rules the partition then waited on itself for good. So:
//! (1) a provider's partly filled request of many tokens goes once waiting
//! for more cannot help: the reader is blocked on the budget and the
//! request holds a client of the oldest batch, nothing is in flight, the
//! reader read nothing for `LINGER` for another reason, or the partition
//! is read to its end; (2) the oldest open batch's clients go whatever the
//! budget says, once their read mark is durable. Then the oldest batch
//! always completes (its clients are in flight, or can be sent), its commit
//! frees budget, and the next becomes the oldest. Rule (2) can put one
//! batch beyond the budget in flight, so what a kill -9 resends stays below
//! `bulk_in_flight` plus two batches.
//!
//! A cancelled broadcast (see `herald_storage::broadcasts`) is seen by every
//! partition running it, on whichever engine, at most `CANCEL_CHECK` after
//! the cancel: it sends nothing more, waits for the sends in flight, counts
//! their outcomes (those of partly done batches too) and ends as done; a
//! request still waiting for a bulk permit is dropped unsent, so what drains
//! is at most `bulk_in_flight` requests. Sends are paced by the engine's
//! [`Pacer`](crate::delivery::Pacer): at most one request of a partition
//! waits for its turn, so a cancel never waits behind a queue of paced sends.

use crate::channels::TenantChannels;
use crate::delivery::{backend_of, batch_limit, AppChannels, Deliverer, Job, Prepared};
use crate::pool::Lane;
use crate::providers::Notification;
use futures::future::{BoxFuture, FutureExt};
use futures::stream::{FuturesUnordered, StreamExt};
use herald_storage::broadcasts::Part;
use herald_storage::deliveries::{ClientOutcome, Job as BroadcastJob, State};
use herald_storage::leases::Lease;
use herald_storage::push_tokens::TokenRef;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The actor of one partition of a broadcast, spawned and supervised by its
/// tenant's `Tenant` actor; it stops when the partition is done.
pub struct FanOut;

/// What a `FanOut` actor is sent: only `Run`, which it sends itself on start.
pub enum FanOutMsg {
    /// Deliver the partition from its checkpoint to its end, then stop.
    Run,
}

/// What a `FanOut` actor is started (or restarted after a failure) with.
pub struct FanOutArgs {
    /// The tenant's channels, shared with its actor's other sends.
    pub channels: Arc<TenantChannels>,
    /// The partition's lease, which every checkpoint is written under.
    pub lease: Lease,
    /// The broadcast's job (its notification).
    pub job: BroadcastJob,
    /// The partition's number and its state as stored: a restart resumes from it.
    pub part: (u32, Part),
}

/// A running partition: its tenant's channels, the partition as
/// checkpointed so far, and its place in `herald_actors_live`.
pub struct FanOutState {
    args: FanOutArgs,
    _live: crate::telemetry::LiveActor,
}

impl Actor for FanOut {
    type Msg = FanOutMsg;
    type State = FanOutState;
    type Arguments = FanOutArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: FanOutArgs,
    ) -> Result<FanOutState, ActorProcessingErr> {
        myself.cast(FanOutMsg::Run)?;
        Ok(FanOutState { args, _live: crate::telemetry::LiveActor::new("fanout") })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: FanOutMsg,
        state: &mut FanOutState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            FanOutMsg::Run => match run(&mut state.args).await {
                Ok(()) => myself.stop(Some("partition done".into())),
                Err(e) if fenced(&e) => {
                    metrics::counter!("herald_lease_fenced_total", "work" => "broadcast").increment(1);
                    tracing::warn!(lease = %state.args.lease.name, "the partition's lease moved to another engine: stopping here");
                    myself.stop(Some("lease lost".into()));
                }
                Err(e) => return Err(e),
            },
        }
        Ok(())
    }
}

/// Whether a fan-out failed because its lease moved on.
fn fenced(e: &ActorProcessingErr) -> bool {
    matches!(e.downcast_ref::<herald_storage::Error>(), Some(herald_storage::Error::Fenced(_)))
}

/// Delivers every remaining batch of the partition, then marks it done;
/// resumable from its checkpoint.
async fn run(args: &mut FanOutArgs) -> Result<(), ActorProcessingErr> {
    let FanOutArgs { channels, lease, job, part: (n, part) } = args;
    let d = channels.deliverer();
    let store = d.store().clone();
    let notification: Notification = serde_json::from_str(&job.notification_json)?;
    crate::telemetry::tenant(&job.tenant).fanout_jobs_started.increment(1);
    // A deleted app has no channels: nothing to send to its clients.
    let app = part.app.clone();
    let cancelled = store.broadcasts().cancelled(&job.tenant, &job.id)?.is_some();
    if let Some(app_channels) = channels.of_app(&app).map_err(|e| format!("app {app}: {e}"))?.filter(|_| !cancelled) {
        let at = Place { lease, tenant: &job.tenant, job: &job.id, n: *n, max_per_second: job.max_per_second };
        send_part(d, &at, part, &app_channels, &notification).await?;
    }
    store.wait_writable().await;
    store.broadcasts().finish(lease, (&job.tenant, &job.id, *n), part)?;
    store.durable().await?;
    Ok(())
}

/// Ends a partition whose fan-out failed on every restart: it is stored done
/// with the reason, so the broadcast completes as `FAILED` with it once its
/// other partitions are done.
pub fn give_up(d: &Deliverer, lease: &Lease, reason: &str) -> herald_storage::Result<()> {
    let Some((tenant, job, n)) = herald_storage::broadcasts::parse_part_lease(&lease.name) else { return Ok(()) };
    let Some(mut part) = d.store().broadcasts().part(&tenant, &job, n)? else { return Ok(()) };
    part.failure = Some(reason.to_string());
    d.store().broadcasts().finish(lease, (&tenant, &job, n), &part)?;
    tracing::error!(tenant, job, partition = n, reason, "broadcast partition given up after repeated failures");
    Ok(())
}

/// Where a partition's checkpoints go: its lease, tenant, job and number;
/// and the broadcast's own rate.
struct Place<'a> {
    lease: &'a Lease,
    tenant: &'a str,
    job: &'a str,
    n: u32,
    max_per_second: Option<u32>,
}

/// How often a running partition looks whether its broadcast was cancelled:
/// the cancel reaches every engine within this (plus the sends in flight).
const CANCEL_CHECK: Duration = Duration::from_millis(200);

/// Shortest time between two flushes a broadcast starts: checkpoints reach
/// the disk in groups this far apart at most (plus the flush itself), which
/// bounds what a kill -9 loses beyond the sends in flight.
const GROUP_COMMIT: Duration = Duration::from_millis(5);

/// How long after its last yield a partition lets its worker thread run
/// other tasks (counted from the yield, so after a wait for answers it
/// yields once more, which costs a reschedule). Otherwise one poll goes on
/// for as long as answers are ready (up to tokio's budget of 128
/// operations), milliseconds in which an interactive send's tasks, queued
/// on the same thread, wait.
const TURN: Duration = Duration::from_millis(1);

/// How long a provider's partly filled request of many tokens waits for more
/// once no client was read though the budget would let the reader read (it
/// is paused by a full disk): more would come only after that.
const LINGER: Duration = Duration::from_millis(3);

/// How often a broadcast paused by a full disk looks again.
const FULL_DISK_RECHECK: Duration = Duration::from_millis(250);

/// A batch read from the token index, committed once all its sends are done.
struct OpenBatch {
    last_client: String,
    size: usize,
    remaining: usize,
    /// The checkpoint write whose read mark covers this batch: its clients
    /// are sent to only once that write is durable.
    reserved_by: u64,
    /// Undelivered clients: what the report lists besides the counts.
    undelivered: Vec<(String, ClientOutcome)>,
    counts: Report,
}

use herald_storage::deliveries::Report;

/// Checkpoint writes of one broadcast and their group commit: flushes run
/// beside the sends, one at a time, started at most every [`GROUP_COMMIT`]
/// unless sends wait for one.
struct GroupCommit {
    store: herald_storage::Store,
    /// Checkpoint writes made so far.
    written: u64,
    /// Writes known to be on disk.
    durable: u64,
    /// The running flush and the writes it covers.
    flush: Option<(u64, BoxFuture<'static, herald_storage::Result<()>>)>,
    /// When the next flush is due: one timer, reset rather than created per
    /// wait, since the send loop waits on it once per answer.
    due: Pin<Box<tokio::time::Sleep>>,
}

impl GroupCommit {
    fn new(store: herald_storage::Store) -> GroupCommit {
        let due = Box::pin(tokio::time::sleep_until(Instant::now()));
        GroupCommit { store, written: 0, durable: 0, flush: None, due }
    }

    /// Starts a flush covering every write so far if one is due, or at once
    /// when `urgent` (sends wait for a read mark to be durable).
    fn maybe_start(&mut self, urgent: bool) {
        let now = Instant::now();
        if self.flush.is_some() || self.written == self.durable || (!urgent && now < self.due.deadline()) {
            return;
        }
        let store = self.store.clone();
        self.flush = Some((self.written, Box::pin(async move { store.durable().await })));
        // An `Instant` is time since boot: a few milliseconds more cannot overflow it.
        #[allow(clippy::arithmetic_side_effects)]
        let next = now + GROUP_COMMIT;
        self.due.as_mut().reset(next);
    }

    /// Waits for the running flush to finish, or for the next one to be due.
    /// Cancel-safe: the flush is kept across calls.
    async fn progress(&mut self) -> herald_storage::Result<()> {
        match &mut self.flush {
            Some((covers, flush)) => {
                let (covers, flushed) = (*covers, flush.await);
                self.flush = None; // finished: never polled again
                flushed?;
                self.durable = covers;
            }
            None if self.written > self.durable => self.due.as_mut().await,
            None => std::future::pending().await,
        }
        Ok(())
    }
}

/// One app's tokens between the index and the checkpoints.
struct Window {
    read_cursor: Option<String>,
    exhausted: bool,
    /// The read mark stored before this run: clients up to it may have been
    /// sent to already.
    resume_mark: Option<String>,
    open: VecDeque<OpenBatch>,
    first_seq: usize,
    /// Clients read but not yet sent to, with their batch's sequence number.
    pending: VecDeque<Pending>,
    /// Clients of open (uncommitted) batches.
    unsettled: usize,
    /// Outcomes of committed batches not yet written.
    to_write: Vec<(String, ClientOutcome)>,
    dirty: bool,
    /// When clients were last read: a lane's partly filled request waits
    /// [`LINGER`] from then for more.
    last_read: Instant,
}

impl Window {
    fn new(part: &Part) -> Window {
        Window {
            read_cursor: part.cursor.clone().or_else(|| part.after.clone()),
            exhausted: false,
            resume_mark: part.read_mark.clone(),
            open: VecDeque::new(),
            first_seq: 0,
            pending: VecDeque::new(),
            unsettled: 0,
            to_write: Vec::new(),
            dirty: false,
            last_read: Instant::now(),
        }
    }

    /// Reads batches while at most `cap` + one batch clients are open, so
    /// the next batch is read (and its mark made durable) while the sends of
    /// the previous ones run. Advances the read mark and counts the clients up
    /// to the previous run's mark as resent.
    fn read(&mut self, ctx: &Ctx<'_>, part: &mut Part, written: u64) -> Result<(), ActorProcessingErr> {
        while !self.exhausted && self.unsettled <= ctx.cap.saturating_add(ctx.batch) {
            let mut batch =
                ctx.store.push_tokens().valid_of_app(ctx.tenant, ctx.app, self.read_cursor.as_deref(), ctx.batch)?;
            // The partition's range ends at `until`.
            if let Some(until) = part.until.as_deref() {
                if let Some(past) = batch.iter().position(|(client, _)| client.as_str() > until) {
                    batch.truncate(past);
                    self.exhausted = true;
                }
            }
            let Some((last, _)) = batch.last() else {
                self.exhausted = true;
                break;
            };
            if let Some(mark) = self.resume_mark.as_deref() {
                let resent = batch.iter().filter(|(client, _)| client.as_str() <= mark).count() as u64;
                part.resent = part.resent.saturating_add(resent);
            }
            if part.read_mark.as_deref().is_none_or(|m| m < last.as_str()) {
                part.read_mark = Some(last.clone());
            }
            self.read_cursor = Some(last.clone());
            let seq = self.first_seq.saturating_add(self.open.len());
            self.open.push_back(OpenBatch {
                last_client: last.clone(),
                size: batch.len(),
                remaining: batch.len(),
                reserved_by: written.saturating_add(1),
                undelivered: Vec::new(),
                counts: Report::default(),
            });
            self.unsettled = self.unsettled.saturating_add(batch.len());
            self.pending.extend(batch.into_iter().map(|(client, token)| (seq, client, token)));
            self.dirty = true;
            self.last_read = Instant::now();
        }
        Ok(())
    }

    /// The next clients to send to, in one request: a client whose batch's
    /// mark is durable, while fewer than `cap` + one batch clients were sent
    /// to but not committed, or whatever that count when the client is of the
    /// oldest open batch (the module doc's rules); or, for a provider taking
    /// many tokens per request (HMS), up to that many of its clients. Such a
    /// request fills from the stream: it goes when full, or when waiting
    /// cannot help (the reader is blocked and the request holds a client of
    /// the oldest batch, or the reader is at the end, nothing is in flight
    /// (`idle`), or reads paused for [`LINGER`]) and none of its
    /// provider's clients read so far waits for its mark to be durable.
    /// Meanwhile the clients of other providers go on one by one.
    fn next_send(&mut self, ctx: &Ctx<'_>, durable: u64, idle: bool) -> Option<Request> {
        // Pending clients are unsettled ones, so the subtraction is exact.
        let room = ctx.cap.saturating_add(ctx.batch).saturating_sub(self.unsettled.saturating_sub(self.pending.len()));
        match self.pick(ctx, room, durable, idle)? {
            Pick::One(i) => self.pending.remove(i).map(Request::One),
            Pick::Batch(indexes) => Some(Request::Batch(self.take(&indexes))),
        }
    }

    /// The indexes in `pending` of the next request's clients (see [`Window::next_send`]).
    fn pick(&self, ctx: &Ctx<'_>, room: usize, durable: u64, idle: bool) -> Option<Pick> {
        let durable_at = |seq: usize| self.open[self.slot(seq)].reserved_by <= durable;
        // Nothing more is read until a batch commits (see `Window::read`).
        let blocked = self.unsettled > ctx.cap.saturating_add(ctx.batch);
        // Reads paused for another reason (a full disk): nothing more comes for now.
        let quiet = !blocked && self.last_read.elapsed() >= LINGER;
        let stalled = idle || quiet;
        let mut deferred: Vec<Option<crate::providers::Backend>> = Vec::new();
        for (i, (seq, _, token)) in self.pending.iter().enumerate() {
            if !durable_at(*seq) {
                return None; // nor is any later one
            }
            // Pending clients are in read order: past the oldest batch's, none goes without room.
            let oldest = self.slot(*seq) == 0;
            if room == 0 && !oldest {
                return None;
            }
            // A full request, and what fits the room left (more once answers
            // come); the oldest batch's clients fit whatever the room.
            let full = batch_limit(token.provider).min(ctx.cap);
            if full <= 1 {
                return Some(Pick::One(i));
            }
            let limit = if oldest { full.min(room.max(ctx.batch)) } else { full.min(room) };
            let backend = backend_of(token.provider);
            if deferred.contains(&backend) {
                continue;
            }
            let mut picked = Vec::with_capacity(limit);
            let mut awaits_flush = false;
            for (j, (seq, _, t)) in self.pending.iter().enumerate().skip(i) {
                if backend_of(t.provider) != backend {
                    continue;
                }
                if !durable_at(*seq) {
                    awaits_flush = true;
                    break;
                }
                picked.push(j);
                if picked.len() == limit {
                    break;
                }
            }
            if picked.len() == full || (!awaits_flush && (stalled || self.exhausted || (blocked && oldest))) {
                return Some(Pick::Batch(picked));
            }
            deferred.push(backend);
        }
        None
    }

    /// When a lane's partly filled request, waiting for more clients, goes
    /// unless more are read: [`LINGER`] after the last read.
    fn linger_ends(&self) -> Option<Instant> {
        let ends = self.last_read.checked_add(LINGER)?;
        (!self.pending.is_empty() && ends > Instant::now()).then_some(ends)
    }

    /// Removes the pending clients at `indexes` (ascending), in order.
    fn take(&mut self, indexes: &[usize]) -> Vec<Pending> {
        let mut taken = Vec::with_capacity(indexes.len());
        let mut next = indexes.iter().peekable();
        let mut kept = VecDeque::with_capacity(self.pending.len().saturating_sub(indexes.len()));
        for (i, entry) in std::mem::take(&mut self.pending).into_iter().enumerate() {
            if next.peek() == Some(&&i) {
                next.next();
                taken.push(entry);
            } else {
                kept.push_back(entry);
            }
        }
        self.pending = kept;
        taken
    }

    /// Whether the next send waits for a read mark to be durable.
    fn waits_for(&self, durable: u64) -> bool {
        self.pending.front().is_some_and(|(seq, _, _)| self.open[self.slot(*seq)].reserved_by > durable)
    }

    /// The index in `open` of the batch numbered `seq`.
    // A client pending or in flight belongs to an open batch, and open batches
    // are numbered from `first_seq` on, so `seq >= first_seq`.
    #[allow(clippy::arithmetic_side_effects)]
    fn slot(&self, seq: usize) -> usize {
        seq - self.first_seq
    }

    /// Records one outcome; commits (in memory) the batches now complete, in
    /// order, advancing the app's cursor.
    fn settle(&mut self, part: &mut Part, tenant: &str, seq: usize, client: String, outcome: ClientOutcome) {
        let slot = self.slot(seq);
        let batch = &mut self.open[slot];
        // One outcome per client of the batch.
        batch.remaining = batch.remaining.saturating_sub(1);
        batch.counts.record(&outcome);
        if outcome.state != State::Sent {
            batch.undelivered.push((client, outcome));
        }
        while self.open.front().is_some_and(|b| b.remaining == 0) {
            let Some(done) = self.open.pop_front() else { break };
            self.first_seq = self.first_seq.saturating_add(1);
            self.unsettled = self.unsettled.saturating_sub(done.size);
            part.counts.add(&done.counts);
            part.cursor = Some(done.last_client);
            self.to_write.extend(done.undelivered);
            self.dirty = true;
            crate::telemetry::tenant(tenant).fanout_notifications.increment(done.size as u64);
        }
    }

    /// Records the outcomes of one request (none for a skipped one).
    fn settle_answer(&mut self, part: &mut Part, tenant: &str, answered: Answered) {
        match answered {
            Answered::One(seq, client, outcome) => self.settle(part, tenant, seq, client, outcome),
            Answered::Batch(group, outcomes) => {
                for ((seq, client, _), outcome) in group.into_iter().zip(outcomes) {
                    self.settle(part, tenant, seq, client, outcome);
                }
            }
            Answered::Skipped => {}
        }
    }

    /// Of a cancelled partition with nothing in flight: counts the outcomes
    /// of the batches left partly done (nothing more of them will be sent).
    fn settle_cancelled(&mut self, part: &mut Part) {
        for batch in std::mem::take(&mut self.open) {
            part.counts.add(&batch.counts);
            self.to_write.extend(batch.undelivered);
        }
        self.pending.clear();
        self.unsettled = 0;
        self.exhausted = true;
        self.dirty = true;
    }

    /// Writes the partition (and the outcomes committed since the last
    /// write) in one transaction under its lease, if anything changed.
    fn write(&mut self, ctx: &Ctx<'_>, part: &Part, commits: &mut GroupCommit) -> Result<(), ActorProcessingErr> {
        if self.dirty {
            let at = ctx.place;
            let outcomes = std::mem::take(&mut self.to_write);
            ctx.store.broadcasts().commit(at.lease, (at.tenant, at.job, at.n), part, outcomes)?;
            self.dirty = false;
            commits.written = commits.written.saturating_add(1);
        }
        Ok(())
    }
}

/// A client read but not yet sent to: its batch's sequence number, its id and token.
type Pending = (usize, String, TokenRef);

/// The clients of one request.
enum Request {
    One(Pending),
    /// Of a provider taking many tokens per request (HMS).
    Batch(Vec<Pending>),
}

/// A request's clients and their outcomes.
enum Answered {
    One(usize, String, ClientOutcome),
    Batch(Vec<Pending>, Vec<ClientOutcome>),
    /// Not sent: the broadcast was cancelled while the request waited for its turn or a permit.
    Skipped,
}

/// Which pending clients [`Window::next_send`] takes (indexes in `pending`).
enum Pick {
    One(usize),
    Batch(Vec<usize>),
}

/// What the window reads and sends with.
struct Ctx<'a> {
    store: &'a herald_storage::Store,
    /// Where the partition's checkpoints go.
    place: &'a Place<'a>,
    tenant: &'a str,
    app: &'a str,
    /// `bulk_in_flight`: sends in flight at most.
    cap: usize,
    /// Clients per batch read and committed.
    batch: usize,
}

/// Streams a partition's tokens from its cursor with at most `bulk_in_flight`
/// notifications in flight (each holding one of the deliverer's bulk permits,
/// which all broadcasts share; an HMS request of many tokens holds one per
/// token), committing each batch (cursor, counts, undelivered
/// clients) once all of its sends are done; see the module doc for how that
/// bounds resends.
async fn send_part(
    d: &Arc<Deliverer>,
    place: &Place<'_>,
    part: &mut Part,
    channels: &AppChannels,
    n: &Notification,
) -> Result<(), ActorProcessingErr> {
    let settings = d.settings();
    let ctx = Ctx {
        store: d.store(),
        place,
        tenant: place.tenant,
        app: &channels.app,
        cap: settings.bulk_in_flight.max(1),
        batch: settings.batch_size.max(1),
    };
    let prepared = Prepared::default();
    let send = Job { tenant: place.tenant, channels, prepared: &prepared, notification: n, deadline: None };
    let mut w = Window::new(part);
    let mut commits = GroupCommit::new(ctx.store.clone());
    // Set once the broadcast is cancelled: a request waiting for its turn is
    // not sent. (Declared before the sends, which borrow it.)
    let stopped = std::sync::atomic::AtomicBool::new(false);
    let mut in_flight = FuturesUnordered::new();
    let mut cancel_check = Instant::now();
    // The pacer's turn of the request waiting for it, if one is.
    let mut paced_until: Option<Instant> = None;
    // Fires at the next cancel check or paced turn: one timer, reset when
    // that instant changes rather than made at every turn of the loop.
    let mut wake_timer = Box::pin(tokio::time::sleep_until(cancel_check));
    let mut turn = Instant::now();
    loop {
        // On a full disk nothing is read or written (the sends in flight
        // finish and wait in memory) until there is room again.
        let writable = ctx.store.writable().is_ok();
        let cancelled = stopped.load(std::sync::atomic::Ordering::Relaxed);
        if writable && !cancelled {
            w.read(&ctx, part, commits.written)?;
            w.write(&ctx, part, &mut commits)?;
        }
        if !cancelled && Instant::now() >= cancel_check {
            if ctx.store.broadcasts().cancelled(place.tenant, place.job)?.is_some() {
                stopped.store(true, std::sync::atomic::Ordering::Relaxed);
                tracing::info!(
                    tenant = place.tenant,
                    job = place.job,
                    partition = place.n,
                    "broadcast cancelled: stopping"
                );
                continue;
            }
            // An `Instant` is time since boot: a fraction of a second more cannot overflow it.
            #[allow(clippy::arithmetic_side_effects)]
            let next = Instant::now() + CANCEL_CHECK;
            cancel_check = next;
        }
        if cancelled && in_flight.is_empty() {
            w.settle_cancelled(part);
            ctx.store.wait_writable().await;
            w.write(&ctx, part, &mut commits)?;
            return Ok(());
        }
        if paced_until.is_some_and(|t| t <= Instant::now()) {
            paced_until = None;
        }
        while !cancelled && paced_until.is_none() && in_flight.len() < ctx.cap {
            let Some(request) = w.next_send(&ctx, commits.durable, in_flight.is_empty()) else { break };
            let size = match &request {
                Request::One(_) => 1,
                Request::Batch(group) => group.len(),
            };
            let wait = d.pace(place.tenant, place.job, place.max_per_second, size);
            if !wait.is_zero() {
                // At most one request waits for its turn: the loop sends no more until then.
                paced_until = Instant::now().checked_add(wait);
            }
            in_flight.push(send_request(d, &send, &stopped, wait, size, request));
        }
        if !cancelled && w.exhausted && w.open.is_empty() && !w.dirty {
            return Ok(());
        }
        commits.maybe_start(w.waits_for(commits.durable));
        let wake = paced_until.map_or(cancel_check, |t| t.min(cancel_check));
        let wake = w.linger_ends().map_or(wake, |t| t.min(wake));
        if wake_timer.deadline() != wake {
            wake_timer.as_mut().reset(wake);
        }
        tokio::select! {
            Some(answered) = in_flight.next(), if !in_flight.is_empty() => {
                w.settle_answer(part, place.tenant, answered);
                // The answers already in are settled in the same turn, so
                // they share its reads, checkpoint write and timers.
                while let Some(Some(answered)) = in_flight.next().now_or_never() {
                    w.settle_answer(part, place.tenant, answered);
                }
            }
            flushed = commits.progress() => flushed?,
            // In a block, so that no timer is made while the disk has room.
            () = async { tokio::time::sleep(FULL_DISK_RECHECK).await }, if !writable => {}
            () = &mut wake_timer, if !cancelled => {}
        }
        if turn.elapsed() >= TURN {
            tokio::task::yield_now().await;
            turn = Instant::now();
        }
    }
}

/// One request of a partition: it waits for its pacing turn and its share of
/// the bulk permits, then delivers, unless the broadcast was cancelled
/// meanwhile.
async fn send_request(
    d: &Deliverer,
    send: &Job<'_>,
    stopped: &std::sync::atomic::AtomicBool,
    wait: Duration,
    size: usize,
    request: Request,
) -> Answered {
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    // Waiting for its turn or for a permit (broadcasts share them),
    // a request of a cancelled broadcast is not sent.
    let _permits = d.bulk_permits(size).await;
    if stopped.load(std::sync::atomic::Ordering::Relaxed) {
        return Answered::Skipped;
    }
    // The delivery is boxed once the permit is in: the partitions of an
    // engine push up to `cap` requests each, most of them waiting for the
    // shared permits, and a waiting request then holds a few hundred bytes
    // instead of the delivery's ~2 KiB.
    match request {
        Request::One((seq, client, token)) => {
            let outcome = Box::pin(d.deliver(send, &client, &token, Lane::Bulk)).await;
            Answered::One(seq, client, outcome)
        }
        Request::Batch(group) => {
            let clients: Vec<(&str, &TokenRef)> = group.iter().map(|(_, c, t)| (c.as_str(), t)).collect();
            let outcomes = Box::pin(d.deliver_all(send, &clients, Lane::Bulk)).await;
            Answered::Batch(group, outcomes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_storage::push_tokens::PushProvider;

    /// A request waiting for its permits (most of an engine's, with four
    /// partitions of a thousand requests sharing a thousand permits) holds
    /// what it needs to start, not the state of the delivery it will make.
    #[test]
    fn a_request_waiting_for_its_permits_is_small() {
        let dir = tempfile::tempdir().unwrap();
        let d = crate::channels::tests::deliverer_of_shop(dir.path());
        let channels = TenantChannels::new("acme", d.clone()).of_app("shop").unwrap().unwrap();
        let (prepared, notification) = (Prepared::default(), Notification::default());
        let send = Job {
            tenant: "acme",
            channels: &channels,
            prepared: &prepared,
            notification: &notification,
            deadline: None,
        };
        let stopped = std::sync::atomic::AtomicBool::new(false);
        let token = TokenRef { provider: PushProvider::Apns, token: "aa".into() };
        let request = send_request(&d, &send, &stopped, Duration::ZERO, 1, Request::One((0, "c".into(), token)));
        let size = std::mem::size_of_val(&request);
        // 2 576 bytes in the test build before the delivery was boxed (2 464 in release).
        assert!(size <= 512, "a request waiting for its permits holds {size} bytes");
    }
}
