//! A topic broadcast split into partitions that engines sharing a database
//! claim, run and take over, each under its own lease.
//!
//! A broadcast is created as a job (see `deliveries`) already split: each
//! app's valid tokens cut into partitions of a given size (ranges of the
//! token index, read once with the count the send answers), each stored
//! with its own cursor, read mark and counts, and its lease
//! `part/<tenant>/<id>/<n>` offered; the job's lease `job/<tenant>/<id>` is
//! parked. A job stored unsplit (by an engine from before partitions) has
//! its lease offered instead, and the engine that claims it splits it. Any
//! engine claims a partition, sends to its range and commits each batch
//! under the partition's lease, so an engine that lost it
//! (paused, partitioned) cannot write over its successor's progress. A
//! partition done removes its lease and frees the job's: the engine that
//! claims it next finds every partition done and completes the report, or
//! parks it again. A partition whose engine died is claimed again once its
//! lease expires and resumes from its checkpoint; clients up to its read mark
//! count as `resent`, which bounds the duplicates by what was in flight.

use crate::deliveries::{decode_broadcast_report, decode_job, Job, Report};
use crate::keys::{key, prefix};
use crate::kv::Write;
use crate::leases::{Lease, LeaseOp};
use crate::{codec, Result, Store};
use serde::{Deserialize, Serialize};

/// One partition of a broadcast: a range of one app's token index.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// The app whose tokens it covers.
    pub app: String,
    /// The range starts after this client; `None`: at the app's first.
    pub after: Option<String>,
    /// The range ends with this client; `None`: at the app's last.
    pub until: Option<String>,
    /// The last client committed; the partition resumes after it.
    pub cursor: Option<String>,
    /// The highest client that may have been sent to (see `fanout`).
    pub read_mark: Option<String>,
    /// Every client of the range is committed.
    pub done: bool,
    /// Outcome counts of the committed batches, per app and per provider.
    pub counts: Report,
    /// Clients sent again after a takeover (they may have been delivered before).
    pub resent: u64,
    /// Why the partition was given up, if it was.
    pub failure: Option<String>,
}

/// What the engine holding a job's lease found.
#[derive(Debug)]
pub enum JobState {
    /// The job is gone (completed by another engine, or never stored).
    Gone,
    /// Not split yet: the holder splits it.
    Unsplit(Job),
    /// Partitions are still running: the holder parks the lease.
    Running,
    /// Every partition is done: the holder completes the report.
    Done(Job, Box<Report>),
}

/// A job's lease name.
pub fn job_lease(tenant: &str, job: &str) -> String {
    format!("job/{tenant}/{job}")
}

/// A partition's lease name.
pub fn part_lease(tenant: &str, job: &str, n: u32) -> String {
    format!("part/{tenant}/{job}/{}", part_id(n))
}

/// The writes and lease changes that store `job` cut into `parts`: the job
/// with its partition count, each partition with its lease offered, and
/// the job's lease (`job_lease`) parked until a partition ends.
pub(crate) fn split_writes<'t>(
    t: &'t crate::databases::Trees,
    job: &Job,
    parts: &[Part],
    job_lease: String,
) -> Result<(Vec<Write<'t>>, Vec<LeaseOp>)> {
    let n = u32::try_from(parts.len()).unwrap_or(u32::MAX);
    let job = Job { parts: n, ..job.clone() };
    let mut writes: Vec<Write<'_>> = vec![(&t.jobs, key(&[&job.tenant, &job.id]), Some(codec::encode(&job)?))];
    let mut ops = Vec::with_capacity(parts.len().saturating_add(1));
    for (i, part) in (0..n).zip(parts) {
        writes.push((&t.parts, key(&[&job.tenant, &job.id, &part_id(i)]), Some(codec::encode(part)?)));
        ops.push(LeaseOp::Offer(part_lease(&job.tenant, &job.id, i)));
    }
    ops.push(LeaseOp::Park(job_lease));
    Ok((writes, ops))
}

/// The tenant, job and partition number a partition's lease names.
pub fn parse_part_lease(name: &str) -> Option<(String, String, u32)> {
    let mut it = name.strip_prefix("part/")?.split('/');
    let (tenant, job, n) = (it.next()?, it.next()?, it.next()?);
    Some((tenant.to_string(), job.to_string(), n.parse().ok()?))
}

/// The tenant and job a job's lease names.
pub fn parse_job_lease(name: &str) -> Option<(String, String)> {
    let (tenant, job) = name.strip_prefix("job/")?.split_once('/')?;
    Some((tenant.to_string(), job.to_string()))
}

/// Partition numbers as fixed-width text, so they sort in order.
fn part_id(n: u32) -> String {
    format!("{n:06}")
}

/// A job's partitions, in order.
pub struct Broadcasts<'a>(&'a Store);

impl Store {
    /// The partitions of running broadcasts.
    pub fn broadcasts(&self) -> Broadcasts<'_> {
        Broadcasts(self)
    }
}

impl Broadcasts<'_> {
    /// The job `id` of `tenant`, if still running.
    pub fn job(&self, tenant: &str, id: &str) -> Result<Option<Job>> {
        self.0.trees()?.jobs.get(key(&[tenant, id]))?.map(|v| decode_job(&v)).transpose()
    }

    /// Partition `n` of a job.
    pub fn part(&self, tenant: &str, job: &str, n: u32) -> Result<Option<Part>> {
        let v = self.0.trees()?.parts.get(key(&[tenant, job, &part_id(n)]))?;
        v.map(|v| codec::decode(&v)).transpose()
    }

    /// Every partition of a job, in order.
    pub fn parts(&self, tenant: &str, job: &str) -> Result<Vec<Part>> {
        self.0.trees()?.parts.scan_prefix(prefix(&[tenant, job])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Cancels a running broadcast: stored beside its job (never in it, which
    /// the engine splitting it rewrites), so every engine running one of its
    /// partitions sees it at the partition's next checkpoint. Answers when it
    /// was cancelled (the first cancel's time), or `None` when the job is not
    /// running (completed, or never stored).
    pub fn cancel(&self, tenant: &str, id: &str, now: u64) -> Result<Option<u64>> {
        if self.job(tenant, id)?.is_none() {
            return Ok(None);
        }
        if let Some(at) = self.cancelled(tenant, id)? {
            return Ok(Some(at));
        }
        let t = self.0.trees()?;
        let k = key(&[tenant, id]);
        self.0.write_fenced(None, vec![(&t.cancels, k.clone(), Some(codec::encode(&now)?))], Vec::new())?;
        if self.job(tenant, id)?.is_none() {
            // Completed meanwhile: its report says so, and nothing is left to stop.
            self.0.write_fenced(None, vec![(&t.cancels, k, None)], Vec::new())?;
            return Ok(None);
        }
        Ok(Some(now))
    }

    /// When the broadcast was cancelled, if it was and still runs.
    pub fn cancelled(&self, tenant: &str, id: &str) -> Result<Option<u64>> {
        self.0.trees()?.cancels.get(key(&[tenant, id]))?.map(|v| codec::decode(&v)).transpose()
    }

    /// What the holder of a job's lease is to do with it.
    pub fn job_state(&self, tenant: &str, id: &str) -> Result<JobState> {
        let Some(job) = self.job(tenant, id)? else { return Ok(JobState::Gone) };
        // A job with no app to send to (none accepts its category) has no
        // partitions to wait for: it is done as soon as it is looked at.
        if job.parts == 0 && job.apps.iter().any(|a| !a.done) {
            return Ok(JobState::Unsplit(job));
        }
        let parts = self.parts(tenant, id)?;
        if parts.len() < job.parts as usize || parts.iter().any(|p| !p.done) {
            return Ok(JobState::Running);
        }
        let mut report = self.base_report(tenant, id)?;
        add_parts(&mut report, &parts);
        report.cancelled_ms = self.cancelled(tenant, id)?;
        Ok(JobState::Done(job, Box::new(report)))
    }

    /// Stores the partitions of an unsplit job and offers their leases; the
    /// job's lease is parked until a partition finishes.
    pub fn split(&self, lease: &Lease, job: &Job, parts: &[Part]) -> Result<()> {
        let t = self.0.trees()?;
        let (writes, ops) = split_writes(&t, job, parts, lease.name.clone())?;
        self.0.write_fenced(Some(&self.0.fence(lease)), writes, ops)
    }

    /// Parks a job's lease while its partitions run; refused when a
    /// partition finished since the lease was claimed (its lease was freed
    /// meanwhile, and the next holder looks again).
    pub fn park(&self, lease: &Lease) -> Result<()> {
        self.0.write_fenced(Some(&self.0.fence(lease)), Vec::new(), vec![LeaseOp::Park(lease.name.clone())])
    }

    /// Commits a batch of partition `n`: its cursor, read mark, counts and
    /// the batch's undelivered clients' outcomes, under the partition's lease.
    pub fn commit(
        &self,
        lease: &Lease,
        (tenant, job, n): (&str, &str, u32),
        part: &Part,
        outcomes: Vec<(String, crate::deliveries::ClientOutcome)>,
    ) -> Result<()> {
        let t = self.0.trees()?;
        let mut writes: Vec<Write<'_>> = Vec::with_capacity(outcomes.len().saturating_add(1));
        writes.push((&t.parts, key(&[tenant, job, &part_id(n)]), Some(codec::encode(part)?)));
        for (client, o) in outcomes {
            writes.push((&t.outcomes, key(&[tenant, job, &client]), Some(codec::encode(&o)?)));
        }
        self.0.write_fenced(Some(&self.0.fence(lease)), writes, Vec::new())
    }

    /// Stores partition `n` done (or given up, with its failure), removes
    /// its lease and frees the job's, so an engine looks at the job again.
    pub fn finish(&self, lease: &Lease, (tenant, job, n): (&str, &str, u32), part: &Part) -> Result<()> {
        let t = self.0.trees()?;
        let part = Part { done: true, ..part.clone() };
        let writes: Vec<Write<'_>> = vec![(&t.parts, key(&[tenant, job, &part_id(n)]), Some(codec::encode(&part)?))];
        let ops = vec![LeaseOp::Remove(lease.name.clone()), LeaseOp::Release(job_lease(tenant, job))];
        self.0.write_fenced(Some(&self.0.fence(lease)), writes, ops)
    }

    /// Completes a job whose partitions are all done: its report (with
    /// `completed_ms` set) replaces the running one, and the job, its
    /// partitions and its lease are removed.
    pub fn complete(&self, lease: &Lease, job: &Job, report: &Report) -> Result<()> {
        let t = self.0.trees()?;
        let k = key(&[&job.tenant, &job.id]);
        let mut writes: Vec<Write<'_>> = vec![
            (&t.reports, k.clone(), Some(crate::deliveries::encode_broadcast_report(report)?)),
            (&t.jobs, k.clone(), None),
            (&t.cancels, k, None),
        ];
        for i in 0..job.parts {
            writes.push((&t.parts, key(&[&job.tenant, &job.id, &part_id(i)]), None));
        }
        self.0.write_fenced(Some(&self.0.fence(lease)), writes, vec![LeaseOp::Remove(lease.name.clone())])
    }

    /// Removes a lease whose work is gone (its job completed meanwhile).
    pub fn drop_lease(&self, lease: &Lease) -> Result<()> {
        self.0.write_fenced(Some(&self.0.fence(lease)), Vec::new(), vec![LeaseOp::Remove(lease.name.clone())])
    }

    /// The report as stored when the job was created (or, for a job from
    /// before partitions, with the counts it had committed).
    fn base_report(&self, tenant: &str, id: &str) -> Result<Report> {
        let stored = self.0.trees()?.reports.get(key(&[tenant, id]))?;
        Ok(stored
            .map(|v| decode_broadcast_report(&v))
            .transpose()?
            .unwrap_or_else(|| Report { id: id.to_string(), ..Report::default() }))
    }

    /// On sled, where leases live in memory: offers the leases of every
    /// unfinished job and partition, as after a restart.
    pub(crate) fn offer_unfinished(&self) -> Result<()> {
        let t = self.0.trees()?;
        let mut ops = Vec::new();
        for kv in t.jobs.iter() {
            let job = decode_job(&kv?.1)?;
            ops.push(LeaseOp::Offer(job_lease(&job.tenant, &job.id)));
            for (i, part) in (0..job.parts).zip(self.parts(&job.tenant, &job.id)?) {
                if !part.done {
                    ops.push(LeaseOp::Offer(part_lease(&job.tenant, &job.id, i)));
                }
            }
        }
        self.0.write_fenced(None, Vec::new(), ops)
    }
}

/// Adds the partitions' counts, resends and failure to a job's report.
pub(crate) fn add_parts(report: &mut Report, parts: &[Part]) {
    for p in parts {
        report.add(&p.counts);
        report.resent = report.resent.saturating_add(p.resent);
        if report.failure.is_none() {
            report.failure.clone_from(&p.failure);
        }
    }
}
