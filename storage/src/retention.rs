//! Retention: delivery reports (with their outcomes) and webhook attempt logs
//! older than a cutoff are deleted in bounded batches, on either backend.
//!
//! Without it every send leaves its report on disk for ever (about 400 bytes
//! a one-client send). Reports are keyed by notification id, a ULID, so a
//! tenant's reports older than an instant are one key range; each candidate
//! is still decoded and its creation time checked before it goes. A
//! broadcast still running keeps its report. Attempt logs are keyed by a
//! sequence per webhook, so the oldest come first and a sweep stops at the
//! first attempt young enough to keep. Failed events stay until replayed or
//! their webhook is deleted: they are what an operator acts on.

use crate::databases::Dbs;
use crate::deliveries::{decode_broadcast_report, BatchHead, SendRecord};
use crate::keys::{key, prefix, Key};
use crate::kv::{successor, Tree, Write};
use crate::webhooks::Attempt;
use crate::{codec, Result, Store};

/// What one pass deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Reports of one-client, one-user and broadcast sends.
    pub reports: u64,
    /// Per-client outcomes of broadcasts (a one-client send's are inside its report).
    pub outcomes: u64,
    /// Webhook delivery attempts.
    pub attempts: u64,
}

/// Keys deleted per write: a pass never holds more, nor keeps a transaction longer.
const BATCH: usize = 500;

impl Store {
    /// Deletes every finished send's report and outcomes created before
    /// `cutoff_ms`, in writes of at most 500 keys.
    pub fn sweep_reports(&self, cutoff_ms: u64) -> Result<Swept> {
        let mut swept = Swept::default();
        let bound = ulid::Ulid::from_parts(cutoff_ms, 0).to_string();
        for tenant in self.tenants().list()? {
            let t = self.trees()?;
            let (start, end) = (prefix(&[&tenant.id]), key(&[&tenant.id, &bound]));
            let sends = each_old(
                &t.sends,
                &start,
                &end,
                |v| Ok(codec::decode::<SendRecord>(v)?.report.created_ms < cutoff_ms),
                |keys| t.write_all(deletes(&t.sends, keys)),
            )?;
            // A batch's record counts as the reports it holds.
            let batched = std::cell::Cell::new(0u64);
            each_old(
                &t.batches,
                &start,
                &end,
                |v| {
                    let head = codec::decode::<BatchHead>(v)?;
                    let old = head.created_ms < cutoff_ms;
                    if old {
                        batched.set(batched.get().saturating_add(u64::from(head.reports)));
                    }
                    Ok(old)
                },
                |keys| t.write_all(deletes(&t.batches, keys)),
            )?;
            let broadcasts = each_old(
                &t.reports,
                &start,
                &end,
                |v| {
                    let report = decode_broadcast_report(v)?;
                    Ok(report.completed_ms.is_some() && report.created_ms < cutoff_ms)
                },
                |keys| {
                    for k in keys {
                        let mut outcomes = k.clone();
                        outcomes.push(0);
                        swept.outcomes = swept.outcomes.saturating_add(delete_prefix(&t, &t.outcomes, &outcomes)?);
                    }
                    t.write_all(deletes(&t.reports, keys))
                },
            )?;
            swept.reports =
                swept.reports.saturating_add(sends).saturating_add(batched.get()).saturating_add(broadcasts);
        }
        Ok(swept)
    }

    /// Deletes webhook delivery attempts made before `cutoff_ms`.
    pub fn sweep_attempts(&self, cutoff_ms: u64) -> Result<Swept> {
        let mut attempts = 0u64;
        for (tenant, webhook) in self.webhooks().all()? {
            let t = self.trees()?;
            let start = prefix(&[&tenant, &webhook.id]);
            let Some(end) = successor(&start) else { continue };
            let old = |v: &[u8]| Ok(codec::decode::<Attempt>(v)?.at_ms < cutoff_ms);
            let n = each_old(&t.attempts, &start, &end, old, |keys| t.write_all(deletes(&t.attempts, keys)))?;
            attempts = attempts.saturating_add(n);
        }
        Ok(Swept { attempts, ..Swept::default() })
    }

    /// Reports stored (one-client, one-user and broadcast sends), for the gauge.
    pub fn stored_reports(&self) -> Result<u64> {
        let t = self.trees()?;
        let mut batched = 0u64;
        for kv in t.batches.iter() {
            batched = batched.saturating_add(u64::from(codec::decode::<BatchHead>(&kv?.1)?.reports));
        }
        Ok(t.sends.count_prefix([])?.saturating_add(t.reports.count_prefix([])?).saturating_add(batched))
    }

    /// Webhook delivery attempts stored, for the gauge.
    pub fn stored_attempts(&self) -> Result<u64> {
        self.trees()?.attempts.count_prefix([])
    }
}

/// Hands `delete` the keys of `tree` from `start` (included) below `end`
/// whose value `old` accepts, [`BATCH`] at a time; how many in all.
fn each_old(
    tree: &Tree,
    start: &[u8],
    end: &[u8],
    old: impl Fn(&[u8]) -> Result<bool>,
    mut delete: impl FnMut(&[Vec<u8>]) -> Result<()>,
) -> Result<u64> {
    let mut deleted = 0u64;
    let mut from = start.to_vec();
    loop {
        let mut keys = Vec::new();
        let mut next = None;
        for kv in tree.range_from(&from) {
            let (k, v) = kv?;
            if k.as_ref() >= end {
                break;
            }
            if keys.len() >= BATCH {
                next = Some(k.to_vec());
                break;
            }
            if old(&v)? {
                keys.push(k.to_vec());
            }
        }
        deleted = deleted.saturating_add(keys.len() as u64);
        if !keys.is_empty() {
            delete(&keys)?;
        }
        match next {
            Some(k) => from = k,
            None => return Ok(deleted),
        }
    }
}

/// Deletes every key of `tree` that starts with `p`, [`BATCH`] per write; how many.
fn delete_prefix(t: &Dbs, tree: &Tree, p: &[u8]) -> Result<u64> {
    let mut deleted = 0u64;
    loop {
        let keys = tree.scan_prefix(p).keys().take(BATCH).map(|k| Ok(k?.to_vec())).collect::<Result<Vec<_>>>()?;
        if keys.is_empty() {
            return Ok(deleted);
        }
        deleted = deleted.saturating_add(keys.len() as u64);
        t.write_all(deletes(tree, &keys))?;
    }
}

fn deletes<'a>(tree: &'a Tree, keys: &[Vec<u8>]) -> Vec<Write<'a>> {
    keys.iter().map(|k| (tree, Key::from_slice(k), None)).collect()
}
