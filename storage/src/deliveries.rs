//! Delivery records of sends: the report of each notification, each client's
//! outcome, and the durable fan-out jobs of topic broadcasts.
//!
//! A one-client or one-user send is one record, its report with its clients'
//! outcomes: it is written on every send, and one plain insert costs a fifth
//! of a transaction over a report and an outcome tree (`cargo bench --bench
//! storage`). Data directories from before keep them in those trees, which
//! the readers still look in.
//!
//! A broadcast commits each batch of clients in one transaction: the job's
//! cursor, the report's counts and the batch's undelivered clients together.
//! A job resumed after a crash starts at its cursor, so a client of a batch
//! that was in flight is sent again (at least once) but never counted twice.

use crate::keys::{key, last_part, prefix};
use crate::store::{get, put, Store};
use crate::{codec, Result};
use serde::{Deserialize, Serialize};
use sled::Transactional;
use std::collections::BTreeMap;

/// What happened to one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    Sent,
    /// The provider said the token is dead; it was marked invalid.
    Invalid,
    Failed,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientOutcome {
    pub app: String,
    /// `apns`, `fcm`, `hms`, or empty when no provider was reached.
    pub provider: String,
    pub state: State,
    pub code: u16,
    pub message: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub sent: u64,
    pub invalid: u64,
    pub failed: u64,
}

impl Counts {
    pub fn add(&mut self, state: State) {
        match state {
            State::Sent => self.sent += 1,
            State::Invalid => self.invalid += 1,
            State::Failed => self.failed += 1,
        }
    }
    pub fn total(&self) -> u64 {
        self.sent + self.invalid + self.failed
    }
}

/// The report of one notification.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub id: String,
    /// `client`, `user` or `topic`.
    pub kind: String,
    pub recipient: String,
    pub created_ms: u64,
    pub completed_ms: Option<u64>,
    /// Clients queued per app.
    pub targeted: BTreeMap<String, u64>,
    pub by_app: BTreeMap<String, Counts>,
    pub by_provider: BTreeMap<String, Counts>,
}

impl Report {
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
    let t = map.entry(name.to_owned()).or_default();
    t.sent += c.sent;
    t.invalid += c.invalid;
    t.failed += c.failed;
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
    pub id: String,
    pub tenant: String,
    /// The notification (JSON), to rebuild it on resume.
    pub notification_json: String,
    pub apps: Vec<JobApp>,
    pub created_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobApp {
    pub app: String,
    pub cursor: Option<String>,
    pub done: bool,
}

/// A one-client or one-user send as stored: its report and every client's
/// outcome, in client-id order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendRecord {
    pub report: Report,
    pub outcomes: Vec<(String, ClientOutcome)>,
}

/// [`SendRecord`] borrowed, to encode without copying (same encoding).
#[derive(Serialize)]
struct SendRecordRef<'a> {
    report: &'a Report,
    outcomes: &'a [(String, ClientOutcome)],
}

pub struct Deliveries<'a>(&'a Store);

impl Store {
    pub fn deliveries(&self) -> Deliveries<'_> {
        Deliveries(self)
    }
}

impl Deliveries<'_> {
    /// Stores the report and the outcomes (in client-id order) of a finished
    /// one-client or one-user send, as one record.
    pub fn finish_send(&self, tenant: &str, report: &Report, outcomes: &[(String, ClientOutcome)]) -> Result<()> {
        let record = SendRecordRef { report, outcomes };
        put(&self.0.trees()?.sends, &key(&[tenant, &report.id]), &record)
    }

    /// Creates a broadcast job and its empty report together.
    pub fn create_job(&self, job: &Job, report: &Report) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[&job.tenant, &job.id]);
        let (jv, rv) = (codec::encode(job)?, codec::encode(report)?);
        (&t.jobs, &t.reports).transaction(|(jobs, reports)| {
            jobs.insert(k.as_slice(), jv.as_slice())?;
            reports.insert(k.as_slice(), rv.as_slice())?;
            Ok(())
        })?;
        Ok(())
    }

    /// Commits a finished batch of a broadcast: the job's cursor, the report
    /// and the outcomes of the batch's clients, in one transaction.
    pub fn commit_batch(&self, job: &Job, report: &Report, outcomes: &[(String, ClientOutcome)]) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[&job.tenant, &job.id]);
        let (jv, rv) = (codec::encode(job)?, codec::encode(report)?);
        let encoded = outcomes
            .iter()
            .map(|(client, o)| Ok((key(&[&job.tenant, &job.id, client]), codec::encode(o)?)))
            .collect::<Result<Vec<_>>>()?;
        (&t.jobs, &t.reports, &t.outcomes).transaction(|(jobs, reports, outs)| {
            jobs.insert(k.as_slice(), jv.as_slice())?;
            reports.insert(k.as_slice(), rv.as_slice())?;
            for (k, v) in &encoded {
                outs.insert(k.as_slice(), v.as_slice())?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Saves a job's cursors and its report's counts atomically; a finished job
    /// is removed and its report completed.
    pub fn checkpoint(&self, job: &Job, report: &Report, finished: bool) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[&job.tenant, &job.id]);
        let (jv, rv) = (codec::encode(job)?, codec::encode(report)?);
        (&t.jobs, &t.reports).transaction(|(jobs, reports)| {
            if finished {
                jobs.remove(k.as_slice())?;
            } else {
                jobs.insert(k.as_slice(), jv.as_slice())?;
            }
            reports.insert(k.as_slice(), rv.as_slice())?;
            Ok(())
        })?;
        Ok(())
    }

    /// Every unfinished broadcast of every tenant.
    pub fn unfinished_jobs(&self) -> Result<Vec<Job>> {
        self.0.trees()?.jobs.iter().map(|kv| codec::decode(&kv?.1)).collect()
    }

    pub fn report(&self, tenant: &str, notification: &str) -> Result<Option<Report>> {
        let k = key(&[tenant, notification]);
        match self.send(&k)? {
            Some(send) => Ok(Some(send.report)),
            None => get(&self.0.trees()?.reports, &k),
        }
    }

    fn send(&self, k: &[u8]) -> Result<Option<SendRecord>> {
        get(&self.0.trees()?.sends, k)
    }

    /// Client outcomes of a notification in client-id order.
    pub fn outcomes(
        &self,
        tenant: &str,
        notification: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<(String, ClientOutcome)>> {
        if let Some(send) = self.send(&key(&[tenant, notification]))? {
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
