//! Delivery records of sends: the report of each notification, each client's
//! outcome, and the durable fan-out jobs of topic broadcasts.
//!
//! A one-client or one-user send is one record, its report with its clients'
//! outcomes: it is written on every send, and one plain insert costs a fifth
//! of a transaction over a report and an outcome tree (`cargo bench --bench
//! storage`). Data directories from before keep them in those trees, which
//! the readers still look in.
//!
//! The one-client and one-user sends of a send-batch request are one record
//! together ([`BatchRecord`]): a batch's notification ids are consecutive
//! ULIDs, so the record is keyed by the last and a notification is found in
//! a record keyed at or after its id, at most [`BATCH_SPAN`] past it. One
//! insert per request rather than per event: the report inserts were 15% of
//! a batch's CPU (`cargo bench --bench load -- --perf`). On sled, single
//! sends are written so too, a tenant's sends of a millisecond together
//! (see `send_groups`); their records may interleave with others'.
//!
//! A broadcast commits each batch of clients in one transaction: the job's
//! cursor, the report's counts and the batch's undelivered clients together.
//! A job resumed after a crash starts at its cursor, so a client of a batch
//! that was in flight is sent again (at least once) but never counted twice.
//!
//! A job also keeps its read mark: the highest client the fan-out may have
//! sent to, made durable before any send past it. On resume, every client
//! sent again up to that mark may be a duplicate and is counted as `resent`
//! in the report (an upper bound of the duplicates the crash caused).
//!
//! Both the mark and the count came after the first records were written:
//! postcard is not self-describing, so each is a field appended to the end of
//! its stored record, and records without it are still read (see
//! `decode_job` and `decode_broadcast_report`).

use crate::keys::{key, last_part, prefix, Key};
use crate::store::{get, put, Store};
use crate::{codec, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What happened to one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// The provider accepted the message.
    Sent,
    /// The provider said the token is dead; it was marked invalid.
    Invalid,
    /// Not delivered for another reason (provider error, timeout, no credentials).
    Failed,
}

/// One client's outcome of one send.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientOutcome {
    /// The client's app: the report counts per app.
    pub app: String,
    /// `apns`, `fcm`, `hms`, or empty when no provider was reached.
    pub provider: String,
    /// What became of the send to this client.
    pub state: State,
    /// HTTP status: the provider's, or Herald's own (404, 423, 500, ...) when none was reached.
    pub code: u16,
    /// The provider's error text, when it gave one.
    pub message: Option<String>,
}

/// Outcomes counted by state, per app or per provider in a report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Clients the provider accepted.
    pub sent: u64,
    /// Clients whose token the provider declared dead.
    pub invalid: u64,
    /// Clients not delivered for any other reason.
    pub failed: u64,
}

impl Counts {
    /// Counts one more outcome in `state` (saturating).
    pub fn add(&mut self, state: State) {
        match state {
            State::Sent => self.sent = self.sent.saturating_add(1),
            State::Invalid => self.invalid = self.invalid.saturating_add(1),
            State::Failed => self.failed = self.failed.saturating_add(1),
        }
    }
    /// Adds `c`'s counts to these.
    fn merge(&mut self, c: &Counts) {
        self.sent = self.sent.saturating_add(c.sent);
        self.invalid = self.invalid.saturating_add(c.invalid);
        self.failed = self.failed.saturating_add(c.failed);
    }

    /// Every outcome counted, whatever its state.
    pub fn total(&self) -> u64 {
        self.sent.saturating_add(self.invalid).saturating_add(self.failed)
    }
}

/// The report of one notification.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The notification's id; the report's key.
    pub id: String,
    /// `client`, `user` or `topic`.
    pub kind: String,
    /// The client id, user id or topic the notification was sent to.
    pub recipient: String,
    /// When the send was accepted, ms since the epoch.
    pub created_ms: u64,
    /// When the last client's outcome was counted; `None` while a broadcast runs.
    pub completed_ms: Option<u64>,
    /// Clients queued per app.
    pub targeted: BTreeMap<String, u64>,
    /// Outcome counts per app name.
    pub by_app: BTreeMap<String, Counts>,
    /// Outcome counts per provider reached (`apns`, `fcm`, `hms`).
    pub by_provider: BTreeMap<String, Counts>,
    /// Broadcast clients sent again after a crash, which may have been
    /// delivered before it: an upper bound of the duplicates. Not part of the
    /// encoding of `Report` itself, which one-client sends embed in their
    /// record: a broadcast's report record stores it after the report.
    #[serde(skip)]
    pub resent: u64,
    /// Why a broadcast was given up (its fan-out failed on every restart);
    /// stored like `resent`.
    #[serde(skip)]
    pub failure: Option<String>,
    /// When a broadcast was cancelled, ms since the epoch; stored like `resent`.
    #[serde(skip)]
    pub cancelled_ms: Option<u64>,
}

impl Report {
    /// The counts of every app together.
    pub fn total(&self) -> Counts {
        self.by_app.values().fold(Counts::default(), |mut t, c| {
            t.merge(c);
            t
        })
    }

    /// Counts one client's outcome under its app and its provider (if one was reached).
    pub fn record(&mut self, outcome: &ClientOutcome) {
        count(&mut self.by_app, &outcome.app, outcome.state);
        if !outcome.provider.is_empty() {
            count(&mut self.by_provider, &outcome.provider, outcome.state);
        }
    }
}

impl Report {
    /// Adds another report's counts (a committed batch of a broadcast).
    pub fn add(&mut self, other: &Report) {
        for (name, c) in &other.by_app {
            merge(&mut self.by_app, name, c);
        }
        for (name, c) in &other.by_provider {
            merge(&mut self.by_provider, name, c);
        }
    }
}

fn merge(map: &mut BTreeMap<String, Counts>, name: &str, c: &Counts) {
    map.entry(name.to_owned()).or_default().merge(c);
}

/// Adds one outcome to `map[name]` without allocating once the name is known.
fn count(map: &mut BTreeMap<String, Counts>, name: &str, state: State) {
    match map.get_mut(name) {
        Some(c) => c.add(state),
        None => map.entry(name.to_owned()).or_default().add(state),
    }
}

/// A broadcast in progress: per app, the last client id checkpointed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// The notification's id, shared with its report.
    pub id: String,
    /// The tenant the broadcast belongs to, kept in the job so recovery across tenants finds it.
    pub tenant: String,
    /// The notification (JSON), to rebuild it on resume.
    pub notification_json: String,
    /// The apps to fan out to, in order. Their cursors are those of jobs
    /// from before partitions; a job is split from them (see `broadcasts`).
    pub apps: Vec<JobApp>,
    /// When the broadcast was accepted, ms since the epoch.
    pub created_ms: u64,
    /// Of a job from before partitions: the highest client of the app in
    /// progress that may have been sent to.
    pub read_mark: Option<String>,
    /// How many partitions the job was split into; 0 until it is split.
    /// After the fields of `JobV2`, so that a record written before it decodes as that.
    pub parts: u32,
    /// Notifications per second the broadcast is paced to, besides its
    /// tenant's bulk quota (`?maxPerSecond=`); last, as `parts` (`JobV3`).
    pub max_per_second: Option<u32>,
}

/// [`Job`] as stored before it had `max_per_second`.
#[derive(Deserialize)]
struct JobV3 {
    id: String,
    tenant: String,
    notification_json: String,
    apps: Vec<JobApp>,
    created_ms: u64,
    read_mark: Option<String>,
    parts: u32,
}

impl From<JobV3> for Job {
    fn from(v: JobV3) -> Job {
        let JobV3 { id, tenant, notification_json, apps, created_ms, read_mark, parts } = v;
        Job { id, tenant, notification_json, apps, created_ms, read_mark, parts, max_per_second: None }
    }
}

/// [`Job`] as stored before it had `parts`.
#[derive(Deserialize)]
struct JobV2 {
    id: String,
    tenant: String,
    notification_json: String,
    apps: Vec<JobApp>,
    created_ms: u64,
    read_mark: Option<String>,
}

impl From<JobV2> for Job {
    fn from(v: JobV2) -> Job {
        let JobV2 { id, tenant, notification_json, apps, created_ms, read_mark } = v;
        Job { id, tenant, notification_json, apps, created_ms, read_mark, parts: 0, max_per_second: None }
    }
}

/// [`Job`] as stored before it had `read_mark`.
#[derive(Deserialize)]
struct JobV1 {
    id: String,
    tenant: String,
    notification_json: String,
    apps: Vec<JobApp>,
    created_ms: u64,
}

impl From<JobV1> for Job {
    fn from(v: JobV1) -> Job {
        let JobV1 { id, tenant, notification_json, apps, created_ms } = v;
        Job { id, tenant, notification_json, apps, created_ms, read_mark: None, parts: 0, max_per_second: None }
    }
}

/// Decodes a stored job of any shape, newest first. A new record never
/// decodes as an older shape by mistake because it is tried first; an old
/// record never decodes as a newer one because it ends where the newer
/// field would start (postcard fails at the end of input rather than
/// inventing a value).
pub(crate) fn decode_job(bytes: &[u8]) -> Result<Job> {
    codec::decode::<Job>(bytes)
        .or_else(|e| codec::decode::<JobV3>(bytes).map(Job::from).map_err(|_| e))
        .or_else(|e| codec::decode::<JobV2>(bytes).map(Job::from).map_err(|_| e))
        .or_else(|e| codec::decode::<JobV1>(bytes).map(Job::from).map_err(|_| e))
}

/// A broadcast's report as stored: the report's own encoding followed by the
/// counts older records lack, so that those still decode as a bare [`Report`].
#[derive(Serialize)]
struct BroadcastReportRef<'a> {
    report: &'a Report,
    resent: u64,
    failure: &'a Option<String>,
    cancelled_ms: Option<u64>,
}

#[derive(Deserialize)]
struct BroadcastReport {
    report: Report,
    resent: u64,
    failure: Option<String>,
    cancelled_ms: Option<u64>,
}

/// [`BroadcastReport`] as stored before broadcasts could be cancelled.
#[derive(Deserialize)]
struct BroadcastReportV1 {
    report: Report,
    resent: u64,
    failure: Option<String>,
}

impl From<BroadcastReportV1> for BroadcastReport {
    fn from(v: BroadcastReportV1) -> BroadcastReport {
        let BroadcastReportV1 { report, resent, failure } = v;
        BroadcastReport { report, resent, failure, cancelled_ms: None }
    }
}

pub(crate) fn encode_broadcast_report(report: &Report) -> Result<Vec<u8>> {
    let cancelled_ms = report.cancelled_ms;
    codec::encode(&BroadcastReportRef { report, resent: report.resent, failure: &report.failure, cancelled_ms })
}

/// Decodes a record of the reports tree: a broadcast's report with its
/// resends, or a bare report (older broadcasts, and one-client sends from
/// before they had their own tree), tried in that order as in [`decode_job`].
pub(crate) fn decode_broadcast_report(bytes: &[u8]) -> Result<Report> {
    let decoded = codec::decode::<BroadcastReport>(bytes)
        .or_else(|e| codec::decode::<BroadcastReportV1>(bytes).map(BroadcastReport::from).map_err(|_| e));
    match decoded {
        Ok(BroadcastReport { mut report, resent, failure, cancelled_ms }) => {
            report.resent = resent;
            report.failure = failure;
            report.cancelled_ms = cancelled_ms;
            Ok(report)
        }
        Err(e) => codec::decode::<Report>(bytes).map_err(|_| e),
    }
}

/// The progress of a broadcast through one app's valid tokens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobApp {
    /// The app's name.
    pub app: String,
    /// The last client id committed; `None` before the first batch (the fan-out resumes after it).
    pub cursor: Option<String>,
    /// Whether every client of the app has been committed.
    pub done: bool,
}

/// A one-client or one-user send as stored: its report and every client's
/// outcome, in client-id order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendRecord {
    /// The notification's report.
    pub report: Report,
    /// Every client's outcome, keyed by client id, in client-id order.
    pub outcomes: Vec<(String, ClientOutcome)>,
}

/// [`SendRecord`] borrowed, to encode without copying (same encoding).
#[derive(Serialize)]
struct SendRecordRef<'a> {
    report: &'a Report,
    outcomes: &'a [(String, ClientOutcome)],
}

/// The one-client and one-user sends of one send-batch request: the send
/// whose notification id is `first` + i (as a ULID's number) at position i,
/// `None` where that id was not a recorded send (an event refused, or a
/// broadcast, whose report has its own record).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRecord<S = SendRecord> {
    /// The notification id of position 0.
    pub first: String,
    /// The latest creation time of its reports: what retention compares.
    pub created_ms: u64,
    /// How many positions hold a send: kept beside them so that retention
    /// and the stored-reports gauge read it without decoding the sends.
    pub reports: u32,
    /// The sends by position; borrowed (`&SendRecord`, the same encoding)
    /// to write the sends gathered by `send_groups` without copying them.
    pub sends: Vec<Option<S>>,
}

/// The fields [`BatchRecord`] starts with, decoded without its sends.
#[derive(Deserialize)]
pub(crate) struct BatchHead {
    pub(crate) first: String,
    pub(crate) created_ms: u64,
    pub(crate) reports: u32,
}

impl BatchRecord {
    /// The record of `sends`, each with its notification id; `sends` back
    /// unless the ids are ULIDs, increasing, and less than [`BATCH_SPAN`]
    /// apart from the first to the last (then each send needs a record of its own).
    pub fn of(sends: Vec<(String, SendRecord)>) -> std::result::Result<BatchRecord, Vec<(String, SendRecord)>> {
        let position = |first, id: &str| position(first, id.parse().ok()?).filter(|at| *at < BATCH_SPAN);
        let Some(first) = sends.first().and_then(|(id, _)| id.parse::<ulid::Ulid>().ok()) else { return Err(sends) };
        let mut at = Vec::with_capacity(sends.len());
        for (id, _) in &sends {
            match position(first, id) {
                Some(p) if at.last().is_none_or(|last| p > *last) => at.push(p),
                _ => return Err(sends),
            }
        }
        Ok(Self::placed(first, at.into_iter().zip(sends.into_iter().map(|(_, send)| send))))
    }

    /// The send of notification `id`, if this record holds it.
    fn take(self, id: ulid::Ulid) -> Option<SendRecord> {
        let at = position(self.first.parse().ok()?, id)?;
        self.sends.into_iter().nth(at).flatten()
    }
}

/// The position of notification `id` in a [`BatchRecord`] starting at
/// `first`; `None` before it or past any `usize`.
pub(crate) fn position(first: ulid::Ulid, id: ulid::Ulid) -> Option<usize> {
    usize::try_from(id.0.checked_sub(first.0)?).ok()
}

impl<S: std::borrow::Borrow<SendRecord>> BatchRecord<S> {
    /// The record of `sends` at increasing positions below [`BATCH_SPAN`]
    /// from notification id `first`; a send at any other is left out.
    pub(crate) fn placed(first: ulid::Ulid, sends: impl IntoIterator<Item = (usize, S)>) -> Self {
        let mut record = BatchRecord { first: first.to_string(), created_ms: 0, reports: 0, sends: Vec::new() };
        for (at, send) in sends {
            if at < record.sends.len() || at >= BATCH_SPAN {
                continue;
            }
            record.sends.resize_with(at, || None);
            record.created_ms = record.created_ms.max(send.borrow().report.created_ms);
            record.reports = record.reports.saturating_add(1);
            record.sends.push(Some(send));
        }
        record
    }

    /// The notification id of the last position: the record's key.
    pub(crate) fn last(&self) -> Result<String> {
        let first = self.first.parse::<ulid::Ulid>().map_err(|e| crate::Error::Codec(e.to_string()))?;
        let span = u128::try_from(self.sends.len().saturating_sub(1)).unwrap_or(u128::MAX);
        let last =
            first.0.checked_add(span).ok_or_else(|| crate::Error::Codec("batch ids past the last ULID".into()))?;
        Ok(ulid::Ulid(last).to_string())
    }
}

/// The key and bytes of a finished send's record.
fn send_entry(tenant: &str, report: &Report, outcomes: &[(String, ClientOutcome)]) -> Result<(Key, Vec<u8>)> {
    Ok((key(&[tenant, &report.id]), codec::encode(&SendRecordRef { report, outcomes })?))
}

/// The most positions one [`BatchRecord`] spans: a send-batch request
/// takes 500 events, each with the next id.
pub const BATCH_SPAN: usize = 4096;

/// Delivery records: reports, outcomes and broadcast jobs (in the delivery database, uncompressed).
pub struct Deliveries<'a>(&'a Store);

impl Store {
    /// The delivery records of this store.
    pub fn deliveries(&self) -> Deliveries<'_> {
        Deliveries(self)
    }
}

impl Deliveries<'_> {
    /// Stores the report and the outcomes (in client-id order) of a finished
    /// one-client or one-user send, as one record.
    pub fn finish_send(&self, tenant: &str, report: &Report, outcomes: &[(String, ClientOutcome)]) -> Result<()> {
        let (k, record) = send_entry(tenant, report, outcomes)?;
        self.0.trees()?.sends.insert(k, record)
    }

    /// Stores the sends of one send-batch request as one record (see [`BatchRecord`]).
    pub fn finish_batch(&self, tenant: &str, record: &BatchRecord) -> Result<()> {
        put(&self.0.trees()?.batches, &key(&[tenant, &record.last()?]), record)
    }

    /// Creates a broadcast job, its empty report and its partitions together
    /// (see `broadcasts`): their leases are offered, the job's parked until a
    /// partition ends. A job created without partitions has its lease
    /// offered instead: an engine claims it and splits it.
    pub fn create_job(&self, job: &Job, report: &Report, parts: &[crate::broadcasts::Part]) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[&job.tenant, &job.id]);
        let lease = crate::broadcasts::job_lease(&job.tenant, &job.id);
        let (mut writes, ops) = if parts.is_empty() {
            (vec![(&t.jobs, k.clone(), Some(codec::encode(job)?))], vec![crate::leases::LeaseOp::Offer(lease)])
        } else {
            crate::broadcasts::split_writes(&t, job, parts, lease)?
        };
        writes.push((&t.reports, k, Some(encode_broadcast_report(report)?)));
        self.0.write_fenced(None, writes, ops)
    }

    /// Every unfinished broadcast of every tenant.
    pub fn unfinished_jobs(&self) -> Result<Vec<Job>> {
        self.0.trees()?.jobs.iter().map(|kv| decode_job(&kv?.1)).collect()
    }

    /// Hands in the record of a finished one-client or one-user send: on
    /// sled it is written with others within milliseconds and read from
    /// memory until then (see `send_groups`); elsewhere as
    /// [`Self::finish_send`], awaited without blocking the caller's thread
    /// (every send writes one).
    pub async fn record_send(&self, tenant: &str, record: SendRecord) -> Result<()> {
        match (&self.0.inner.send_groups, record.report.id.parse::<ulid::Ulid>()) {
            (Some(groups), Ok(id)) => groups.record(tenant, id, record),
            _ => {
                let (k, value) = send_entry(tenant, &record.report, &record.outcomes)?;
                self.0.trees()?.sends.insert_async(&k, value).await
            }
        }
    }

    /// The report of a notification, whether a one-client send or a
    /// broadcast (with the counts of its partitions while it runs); `None` when unknown.
    pub fn report(&self, tenant: &str, notification: &str) -> Result<Option<Report>> {
        let k = key(&[tenant, notification]);
        if let Some(send) = self.send(tenant, notification, &k)? {
            return Ok(Some(send.report));
        }
        let Some(mut report) = self.0.trees()?.reports.get(&k)?.map(|v| decode_broadcast_report(&v)).transpose()?
        else {
            return Ok(self.batched(tenant, notification)?.map(|send| send.report));
        };
        if report.completed_ms.is_none() {
            crate::broadcasts::add_parts(&mut report, &self.0.broadcasts().parts(tenant, notification)?);
            report.cancelled_ms = self.0.broadcasts().cancelled(tenant, notification)?;
        }
        Ok(Some(report))
    }

    /// The send of `notification` (key `k`) while handed in but not yet
    /// written, or in a record of its own.
    fn send(&self, tenant: &str, notification: &str, k: &[u8]) -> Result<Option<SendRecord>> {
        if let (Some(groups), Ok(id)) = (&self.0.inner.send_groups, notification.parse::<ulid::Ulid>()) {
            if let Some(send) = groups.find(tenant, id)? {
                return Ok(Some(send));
            }
        }
        get(&self.0.trees()?.sends, k)
    }

    /// The send of `notification` in a record of several: one keyed by its
    /// last id, at most [`BATCH_SPAN`] past the first, so among those keyed
    /// from `notification` to [`BATCH_SPAN`] past it. Records of runs
    /// gathered while others' sends were in flight may interleave, so each
    /// that starts at or before the id is looked in.
    fn batched(&self, tenant: &str, notification: &str) -> Result<Option<SendRecord>> {
        let Ok(id) = notification.parse::<ulid::Ulid>() else { return Ok(None) };
        let end = key(&[tenant, &ulid::Ulid(id.0.saturating_add(BATCH_SPAN as u128)).to_string()]);
        for found in self.0.trees()?.batches.range_from(key(&[tenant, notification])) {
            let (k, v) = found?;
            if k.as_ref() >= end.as_slice() {
                break;
            }
            let head: BatchHead = codec::decode(&v)?;
            if head.first.parse::<ulid::Ulid>().is_ok_and(|first| first <= id) {
                if let Some(send) = codec::decode::<BatchRecord>(&v)?.take(id) {
                    return Ok(Some(send));
                }
            }
        }
        Ok(None)
    }

    /// Client outcomes of a notification in client-id order.
    pub fn outcomes(
        &self,
        tenant: &str,
        notification: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<(String, ClientOutcome)>> {
        let send = match self.send(tenant, notification, &key(&[tenant, notification]))? {
            Some(send) => Some(send),
            None => self.batched(tenant, notification)?,
        };
        if let Some(send) = send {
            return Ok(send.outcomes.into_iter().skip(offset).take(limit).collect());
        }
        self.0
            .trees()?
            .outcomes
            .scan_prefix(prefix(&[tenant, notification]))
            .skip(offset)
            .take(limit)
            .map(|kv| {
                let (k, v) = kv?;
                Ok((last_part(&k), codec::decode(&v)?))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Job`] exactly as today's main stores it (before `read_mark`).
    #[derive(Serialize)]
    struct OldJob {
        id: String,
        tenant: String,
        notification_json: String,
        apps: Vec<JobApp>,
        created_ms: u64,
    }

    fn old_job() -> OldJob {
        let apps = vec![
            JobApp { app: "a".into(), cursor: Some("c1".into()), done: true },
            JobApp { app: "b".into(), cursor: None, done: false },
        ];
        OldJob { id: "n1".into(), tenant: "acme".into(), notification_json: "{}".into(), apps, created_ms: 1 << 40 }
    }

    fn old_report() -> Report {
        let mut report =
            Report { id: "n1".into(), kind: "topic".into(), recipient: "news".into(), ..Report::default() };
        report.targeted.insert("a".into(), 3);
        report.record(&ClientOutcome {
            app: "a".into(),
            provider: "apns".into(),
            state: State::Sent,
            code: 200,
            message: None,
        });
        report
    }

    /// Records written before the read mark and the resend count (a job, and
    /// a report encoded as a bare `Report`) are read back, with neither.
    #[test]
    fn records_of_the_old_shape_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        let (old, report) = (old_job(), old_report());
        let t = store.trees().unwrap();
        let k = key(&[&old.tenant, &old.id]);
        t.jobs.insert(k.as_slice(), codec::encode(&old).unwrap()).unwrap();
        t.reports.insert(k.as_slice(), codec::encode(&report).unwrap()).unwrap();

        let jobs = store.deliveries().unfinished_jobs().unwrap();
        assert_eq!(jobs.len(), 1);
        let job = &jobs[0];
        assert_eq!((job.id.as_str(), job.tenant.as_str(), job.created_ms), ("n1", "acme", 1 << 40));
        assert_eq!(job.apps, old.apps);
        assert_eq!(job.read_mark, None);
        let read = store.deliveries().report("acme", "n1").unwrap().unwrap();
        assert_eq!(read, report);
        assert_eq!(read.resent, 0);
    }

    /// New records decode as the new shape, never as the old one, and a
    /// report's encoding (embedded in one-client send records) is unchanged.
    #[test]
    fn new_records_round_trip() {
        let mut job: Job = decode_job(&codec::encode(&old_job()).unwrap()).unwrap();
        job.read_mark = Some("c7".into());
        assert_eq!(decode_job(&codec::encode(&job).unwrap()).unwrap(), job);
        job.parts = 3;
        job.max_per_second = Some(250);
        assert_eq!(decode_job(&codec::encode(&job).unwrap()).unwrap(), job);
        let mut report = old_report();
        report.resent = 12;
        let bytes = encode_broadcast_report(&report).unwrap();
        assert_eq!(decode_broadcast_report(&bytes).unwrap(), report);
        assert_eq!(codec::encode(&report).unwrap(), codec::encode(&old_report()).unwrap());
        assert!(decode_job(&[1, 2, 3]).is_err());
        report.cancelled_ms = Some(1 << 41);
        let bytes = encode_broadcast_report(&report).unwrap();
        assert_eq!(decode_broadcast_report(&bytes).unwrap(), report);
    }

    /// A broadcast's report stored before cancellation is read without it.
    #[test]
    fn reports_from_before_cancellation_are_read() {
        #[derive(Serialize)]
        struct V1<'a> {
            report: &'a Report,
            resent: u64,
            failure: Option<String>,
        }
        let report = old_report();
        let bytes = codec::encode(&V1 { report: &report, resent: 3, failure: Some("gave up".into()) }).unwrap();
        let read = decode_broadcast_report(&bytes).unwrap();
        assert_eq!((read.resent, read.failure.as_deref(), read.cancelled_ms), (3, Some("gave up"), None));
    }
}
