//! Delivery records of sends: the report of each notification, each client's
//! outcome, and the durable fan-out jobs of topic broadcasts.
//!
//! A broadcast's cursor and counts are checkpointed together in one
//! transaction; per-client outcomes are written as they arrive, so a resumed
//! job skips clients already recorded after its checkpoint and never counts a
//! client twice.

use crate::keys::{key, last_part, prefix};
use crate::store::{get, Store};
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
        self.by_app.entry(outcome.app.clone()).or_default().add(outcome.state);
        if !outcome.provider.is_empty() {
            self.by_provider.entry(outcome.provider.clone()).or_default().add(outcome.state);
        }
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

pub struct Deliveries<'a>(&'a Store);

impl Store {
    pub fn deliveries(&self) -> Deliveries<'_> {
        Deliveries(self)
    }
}

impl Deliveries<'_> {
    /// Stores the report and the outcomes of a finished send in one transaction.
    pub fn finish_send(&self, tenant: &str, report: &Report, outcomes: &[(String, ClientOutcome)]) -> Result<()> {
        let t = self.0.trees();
        let report_value = codec::encode(report)?;
        let encoded = outcomes
            .iter()
            .map(|(client, o)| Ok((key(&[tenant, &report.id, client]), codec::encode(o)?)))
            .collect::<Result<Vec<_>>>()?;
        let report_key = key(&[tenant, &report.id]);
        (&t.reports, &t.outcomes).transaction(|(reports, outs)| {
            reports.insert(report_key.as_slice(), report_value.as_slice())?;
            for (k, v) in &encoded {
                outs.insert(k.as_slice(), v.as_slice())?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Creates a broadcast job and its empty report together.
    pub fn create_job(&self, job: &Job, report: &Report) -> Result<()> {
        let t = self.0.trees();
        let k = key(&[&job.tenant, &job.id]);
        let (jv, rv) = (codec::encode(job)?, codec::encode(report)?);
        (&t.jobs, &t.reports).transaction(|(jobs, reports)| {
            jobs.insert(k.as_slice(), jv.as_slice())?;
            reports.insert(k.as_slice(), rv.as_slice())?;
            Ok(())
        })?;
        Ok(())
    }

    /// Records one client's outcome as it arrives (not yet checkpointed).
    pub fn record_outcome(
        &self,
        tenant: &str,
        notification: &str,
        client: &str,
        outcome: &ClientOutcome,
    ) -> Result<()> {
        self.0.trees().outcomes.insert(key(&[tenant, notification, client]), codec::encode(outcome)?)?;
        Ok(())
    }

    pub fn outcome(&self, tenant: &str, notification: &str, client: &str) -> Result<Option<ClientOutcome>> {
        get(&self.0.trees().outcomes, &key(&[tenant, notification, client]))
    }

    /// Saves a job's cursors and its report's counts atomically; a finished job
    /// is removed and its report completed.
    pub fn checkpoint(&self, job: &Job, report: &Report, finished: bool) -> Result<()> {
        let t = self.0.trees();
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
        self.0.trees().jobs.iter().map(|kv| codec::decode(&kv?.1)).collect()
    }

    pub fn report(&self, tenant: &str, notification: &str) -> Result<Option<Report>> {
        get(&self.0.trees().reports, &key(&[tenant, notification]))
    }

    /// Client outcomes of a notification in client-id order.
    pub fn outcomes(
        &self,
        tenant: &str,
        notification: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<(String, ClientOutcome)>> {
        self.0
            .trees()
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
