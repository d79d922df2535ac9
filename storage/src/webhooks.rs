//! Webhooks, their durable outboxes and attempt logs.
//!
//! An event matching a webhook is written to that webhook's outbox before the
//! publishing call answers; the target delivers its outbox in key order (a
//! sequence number from sled's monotonic id generator), so ordering survives
//! restarts. An event whose retries are exhausted moves to the failed tree,
//! from which a replay puts it back.

use crate::keys::{key, prefix};
use crate::store::{all_with_tenant, get, put, Store};
use crate::{codec, Error, Result, Secret};
use serde::{Deserialize, Serialize};
use sled::transaction::ConflictableTransactionError;
use sled::Transactional;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Webhook {
    pub id: String,
    pub filter: String,
    pub callback_url: String,
    /// `NONE` or `BASIC`.
    pub auth_type: String,
    pub auth_username: Option<String>,
    pub auth_password: Option<Secret>,
    pub active: bool,
    /// The Standard Webhooks signing secret (`whsec_...`), sealed.
    pub secret: Secret,
    pub created_ms: u64,
    pub modified_ms: u64,
    pub created_by: String,
    pub modified_by: String,
    /// Why Herald disabled it (a 410 from the receiver), if it did.
    pub disabled_reason: Option<String>,
}

impl Webhook {
    pub fn secret_context(tenant: &str, id: &str, field: &str) -> String {
        format!("webhook/{tenant}/{id}/{field}")
    }
}

/// One event waiting for delivery to one webhook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub event_id: String,
    /// The body to POST (the event JSON).
    pub body: String,
    pub created_ms: u64,
    /// Attempts made so far.
    pub attempts: u32,
    /// Not before this time (ms).
    pub next_attempt_ms: u64,
}

/// One delivery attempt, as the attempt log shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub event_id: String,
    pub attempt: u32,
    pub at_ms: u64,
    /// HTTP status, or 0 when no answer came (refused, timed out).
    pub status: u16,
    pub duration_ms: u64,
    /// The first 2 KiB of the answer, or the error.
    pub response: String,
}

pub struct Webhooks<'a>(&'a Store);

impl Store {
    pub fn webhooks(&self) -> Webhooks<'_> {
        Webhooks(self)
    }
}

/// Sequence numbers sort as text: fixed width.
fn seq_part(seq: u64) -> String {
    format!("{seq:020}")
}

impl Webhooks<'_> {
    pub fn put(&self, tenant: &str, w: &Webhook) -> Result<()> {
        put(&self.0.trees()?.webhooks, &key(&[tenant, &w.id]), w)
    }

    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Webhook>> {
        get(&self.0.trees()?.webhooks, &key(&[tenant, id]))
    }

    /// Changes a webhook in one transaction: `change` sees the record as
    /// stored at that moment (it may run again if the transaction retries, so
    /// it must only compute) and says whether to write it. Answers the record
    /// as it now stands, or `None` when there is no such webhook.
    pub fn change(&self, tenant: &str, id: &str, change: impl Fn(&mut Webhook) -> bool) -> Result<Option<Webhook>> {
        let k = key(&[tenant, id]);
        let t = self.0.trees()?;
        let changed = t.webhooks.transaction(|tx| {
            let Some(raw) = tx.get(&k)? else { return Ok(None) };
            let mut w: Webhook = codec::decode(&raw).map_err(ConflictableTransactionError::Abort)?;
            if change(&mut w) {
                tx.insert(k.as_slice(), codec::encode(&w).map_err(ConflictableTransactionError::Abort)?)?;
            }
            Ok(Some(w))
        })?;
        Ok(changed)
    }

    pub fn list(&self, tenant: &str) -> Result<Vec<Webhook>> {
        self.0.trees()?.webhooks.scan_prefix(prefix(&[tenant])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Every webhook of every tenant, as (tenant, webhook).
    pub fn all(&self) -> Result<Vec<(String, Webhook)>> {
        all_with_tenant(&self.0.trees()?.webhooks)
    }

    /// Deletes the webhook with its outbox, failed events and attempt log.
    pub fn delete(&self, tenant: &str, id: &str) -> Result<()> {
        let t = self.0.trees()?;
        if t.webhooks.remove(key(&[tenant, id]))?.is_none() {
            return Err(Error::NotFound("webhook"));
        }
        let p = prefix(&[tenant, id]);
        for tree in [&t.outbox, &t.failed_events, &t.attempts] {
            for k in tree.scan_prefix(&p).keys() {
                tree.remove(k?)?;
            }
        }
        Ok(())
    }

    /// Queues one event for several webhooks in one transaction.
    pub fn enqueue(&self, tenant: &str, webhook_ids: &[String], entry: &OutboxEntry) -> Result<()> {
        let t = self.0.trees()?;
        let value = codec::encode(entry)?;
        let keys = webhook_ids
            .iter()
            .map(|w| Ok(key(&[tenant, w, &seq_part(self.0.trees()?.db.generate_id()?)])))
            .collect::<Result<Vec<_>>>()?;
        t.outbox.transaction(|outbox| {
            for k in &keys {
                outbox.insert(k.as_slice(), value.as_slice())?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// The first `limit` waiting entries of a webhook's outbox, in order, with their keys.
    pub fn pending(&self, tenant: &str, id: &str, limit: usize) -> Result<Vec<(Vec<u8>, OutboxEntry)>> {
        self.0
            .trees()?
            .outbox
            .scan_prefix(prefix(&[tenant, id]))
            .take(limit)
            .map(|kv| {
                let (k, v) = kv?;
                Ok((k.to_vec(), codec::decode(&v)?))
            })
            .collect()
    }

    pub fn outbox_depth(&self, tenant: &str, id: &str) -> usize {
        // A gauge: 0 while the database is being reopened.
        self.0.trees().map_or(0, |t| t.outbox.scan_prefix(prefix(&[tenant, id])).count())
    }

    /// Records an attempt and the entry's next state: delivered (removed),
    /// retried later (updated) or failed for good (moved to the failed tree).
    pub fn settle(&self, tenant: &str, id: &str, entry_key: &[u8], attempt: &Attempt, next: Settle) -> Result<()> {
        let t = self.0.trees()?;
        let attempt_key = key(&[tenant, id, &seq_part(self.0.trees()?.db.generate_id()?)]);
        let attempt_value = codec::encode(attempt)?;
        let next_value = match &next {
            Settle::Retry(e) | Settle::Failed(e) => Some(codec::encode(e)?),
            Settle::Delivered => None,
        };
        (&t.outbox, &t.failed_events, &t.attempts).transaction(|(outbox, failed, attempts)| {
            attempts.insert(attempt_key.as_slice(), attempt_value.as_slice())?;
            match (&next, &next_value) {
                (Settle::Retry(_), Some(v)) => {
                    outbox.insert(entry_key, v.as_slice())?;
                }
                (Settle::Failed(_), Some(v)) => {
                    outbox.remove(entry_key)?;
                    failed.insert(entry_key, v.as_slice())?;
                }
                _ => {
                    outbox.remove(entry_key)?;
                }
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Attempt log of a webhook, oldest first.
    pub fn attempts(&self, tenant: &str, id: &str, offset: usize, limit: usize) -> Result<Vec<Attempt>> {
        self.0
            .trees()?
            .attempts
            .scan_prefix(prefix(&[tenant, id]))
            .skip(offset)
            .take(limit)
            .map(|kv| codec::decode(&kv?.1))
            .collect()
    }

    /// Puts failed events created at or after `since_ms` back into the outbox; returns how many.
    pub fn replay(&self, tenant: &str, id: &str, since_ms: u64, now: u64) -> Result<usize> {
        let t = self.0.trees()?;
        let mut n = 0;
        for kv in t.failed_events.scan_prefix(prefix(&[tenant, id])) {
            let (k, v) = kv?;
            let mut e: OutboxEntry = codec::decode(&v)?;
            if e.created_ms < since_ms {
                continue;
            }
            e.attempts = 0;
            e.next_attempt_ms = now;
            let value = codec::encode(&e)?;
            (&t.outbox, &t.failed_events).transaction(|(outbox, failed)| {
                failed.remove(&k)?;
                outbox.insert(&k, value.as_slice())?;
                Ok(())
            })?;
            n += 1;
        }
        Ok(n)
    }
}

/// What became of an outbox entry after an attempt.
pub enum Settle {
    Delivered,
    Retry(OutboxEntry),
    Failed(OutboxEntry),
}
