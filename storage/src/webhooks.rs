//! Webhooks, their durable outboxes and attempt logs.
//!
//! An event is written to the outbox of each webhook it matches in the
//! transaction of the change it reports ([`Tx::enqueue_event`]), so it is
//! durable exactly when that change is: a crash loses both or neither. The
//! tenant's webhooks are matched as that transaction sees them
//! ([`Tx::webhooks_of`]). The target delivers its outbox in key order (a
//! sequence number from the store's monotonic id generator), so ordering
//! survives restarts. An event whose retries are exhausted moves to the failed tree,
//! from which a replay puts it back.

use crate::keys::{key, prefix, Key};
use crate::leases::Lease;
use crate::store::{all_with_tenant, get, Store};
use crate::{codec, Error, Result, Secret, Tx};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A webhook: where and how events matching its filter are delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Webhook {
    /// ULID, assigned at creation; the first part of its outbox keys.
    pub id: String,
    /// Filter expression the event bus matches every event against.
    pub filter: String,
    /// URL events are POSTed to.
    pub callback_url: String,
    /// `NONE` or `BASIC`.
    pub auth_type: String,
    /// User name of basic auth, when `auth_type` is `BASIC`.
    pub auth_username: Option<String>,
    /// Password of basic auth, sealed under [`Webhook::secret_context`].
    pub auth_password: Option<Secret>,
    /// An inactive webhook matches no events and its outbox is not delivered.
    pub active: bool,
    /// The Standard Webhooks signing secret (`whsec_...`), sealed.
    pub secret: Secret,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// Last change, ms since the epoch.
    pub modified_ms: u64,
    /// The caller that created it.
    pub created_by: String,
    /// The caller that last changed it.
    pub modified_by: String,
    /// Why Herald disabled it (a 410 from the receiver), if it did.
    pub disabled_reason: Option<String>,
}

impl Webhook {
    /// The lease its deliverer holds: one engine delivers a webhook's
    /// outbox at a time, so its events stay in order.
    pub fn lease_name(tenant: &str, id: &str) -> String {
        format!("webhook/{tenant}/{id}")
    }

    /// The sealing context of a webhook's sealed field (`password`, `secret`).
    pub fn secret_context(tenant: &str, id: &str, field: &str) -> String {
        format!("webhook/{tenant}/{id}/{field}")
    }
}

/// One event waiting for delivery to one webhook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// The event's id, shown in the attempt log and sent as `webhook-id`.
    pub event_id: String,
    /// The body to POST (the event JSON).
    pub body: String,
    /// When the event was queued, ms since the epoch.
    pub created_ms: u64,
    /// Attempts made so far.
    pub attempts: u32,
    /// Not before this time (ms).
    pub next_attempt_ms: u64,
}

/// One delivery attempt, as the attempt log shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// The event the attempt was for.
    pub event_id: String,
    /// Attempt number, 1 for the first.
    pub attempt: u32,
    /// When the attempt was made, ms since the epoch.
    pub at_ms: u64,
    /// HTTP status, or 0 when no answer came (refused, timed out).
    pub status: u16,
    /// How long the answer took (ms).
    pub duration_ms: u64,
    /// The first 2 KiB of the answer, or the error.
    pub response: String,
}

/// Webhooks, their outboxes and attempt logs.
pub struct Webhooks<'a>(&'a Store);

/// Each tenant's webhooks as last listed, with the generation of the set
/// they were listed at (see [`Tx::webhooks_of`]): a list is used only by a
/// transaction that reads that generation, so a list another engine made
/// stale is never used. Dropped with the tenant's other caches.
#[derive(Default)]
pub(crate) struct WebhookSets(dashmap::DashMap<String, (u64, Arc<Vec<Webhook>>)>);

impl WebhookSets {
    /// The tenant's list if it was listed at `generation`.
    fn at(&self, tenant: &str, generation: u64) -> Option<Arc<Vec<Webhook>>> {
        self.0.get(tenant).filter(|e| e.0 == generation).map(|e| e.1.clone())
    }

    pub(crate) fn forget(&self, tenant: &str) {
        self.0.remove(tenant);
    }
}

impl Store {
    /// Lists a tenant's webhooks for [`Tx::webhooks_of`], outside any
    /// transaction: kept only when the set's generation is the same before
    /// and after (no write of a webhook in between).
    pub(crate) fn list_webhook_set(&self, tenant: &str) -> Result<()> {
        let t = self.trees()?;
        let k = set_generation_key(tenant);
        let before: u64 = get(&t.generations, &k)?.unwrap_or(0);
        let list = self.webhooks().list(tenant)?;
        if get::<u64>(&t.generations, &k)?.unwrap_or(0) == before {
            self.inner.webhook_sets.0.insert(tenant.to_string(), (before, Arc::new(list)));
        }
        Ok(())
    }
}

impl Store {
    /// The webhooks of this store.
    pub fn webhooks(&self) -> Webhooks<'_> {
        Webhooks(self)
    }
}

/// Sequence numbers sort as text: fixed width.
fn seq_part(seq: u64) -> String {
    format!("{seq:020}")
}

fn records_generation_key(tenant: &str, id: &str) -> Key {
    key(&[tenant, "webhook-records", id])
}

/// The generation of a tenant's set of webhooks: moved on by every write of
/// one of them, read by every transaction that matches events against them.
fn set_generation_key(tenant: &str) -> Key {
    key(&[tenant, "webhook-set"])
}

/// The outbox, failed events and attempt log of a webhook, listed outside a
/// transaction to be deleted inside one: every entry added to them moves the
/// webhook's record generation on, which the transaction checks
/// ([`Tx::webhook_records_unchanged`]).
#[derive(Clone, Debug)]
pub struct WebhookRecords {
    tenant: String,
    id: String,
    generation: u64,
    keys: Vec<(WebhookTree, Vec<u8>)>,
}

#[derive(Clone, Copy, Debug)]
enum WebhookTree {
    Outbox,
    Failed,
    Attempts,
}

impl Webhooks<'_> {
    /// One webhook; `None` when absent.
    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Webhook>> {
        get(&self.0.trees()?.webhooks, &key(&[tenant, id]))
    }

    /// Changes a webhook in one transaction: `change` sees the record as
    /// stored at that moment (it may run again if the transaction retries, so
    /// it must only compute) and says whether to write it. Answers the record
    /// as it now stands, or `None` when there is no such webhook.
    pub fn change(&self, tenant: &str, id: &str, change: impl Fn(&mut Webhook) -> bool) -> Result<Option<Webhook>> {
        self.0.transact(|tx| {
            let Some(mut w) = tx.webhook(tenant, id)? else { return Ok(None) };
            if change(&mut w) {
                tx.put_webhook(tenant, &w)?;
            }
            Ok(Some(w))
        })
    }

    /// Every webhook of the tenant, in id order.
    pub fn list(&self, tenant: &str) -> Result<Vec<Webhook>> {
        self.0.trees()?.webhooks.scan_prefix(prefix(&[tenant])).map(|kv| codec::decode(&kv?.1)).collect()
    }

    /// Every webhook of every tenant, as (tenant, webhook).
    pub fn all(&self) -> Result<Vec<(String, Webhook)>> {
        all_with_tenant(&self.0.trees()?.webhooks)
    }

    /// Lists the outbox, failed events and attempt log of a webhook (see
    /// [`WebhookRecords`]), its record generation read first.
    pub fn records(&self, tenant: &str, id: &str) -> Result<WebhookRecords> {
        let t = self.0.trees()?;
        let generation = get(&t.generations, &records_generation_key(tenant, id))?.unwrap_or(0);
        let p = prefix(&[tenant, id]);
        let mut keys = Vec::new();
        for (which, tree) in [
            (WebhookTree::Outbox, &t.outbox),
            (WebhookTree::Failed, &t.failed_events),
            (WebhookTree::Attempts, &t.attempts),
        ] {
            for k in tree.scan_prefix(&p).keys() {
                keys.push((which, k?.to_vec()));
            }
        }
        Ok(WebhookRecords { tenant: tenant.to_string(), id: id.to_string(), generation, keys })
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

    /// The failed events of a webhook, in order, with their keys.
    pub fn failed(&self, tenant: &str, id: &str) -> Result<Vec<(Vec<u8>, OutboxEntry)>> {
        self.0
            .trees()?
            .failed_events
            .scan_prefix(prefix(&[tenant, id]))
            .map(|kv| {
                let (k, v) = kv?;
                Ok((k.to_vec(), codec::decode(&v)?))
            })
            .collect()
    }

    /// Entries waiting in a webhook's outbox; 0 while the database is being reopened (a gauge).
    pub fn outbox_depth(&self, tenant: &str, id: &str) -> usize {
        // A gauge: 0 while the database is being reopened.
        self.0
            .trees()
            .and_then(|t| t.outbox.count_prefix(prefix(&[tenant, id])))
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Records an attempt and the entry's next state: delivered (removed),
    /// retried later (updated) or failed for good (moved to the failed
    /// tree), in one transaction; nothing when the webhook was deleted
    /// meanwhile. Refused with [`Error::Fenced`] when
    /// `lease` (the webhook's, which its deliverer holds) moved on.
    pub fn settle(
        &self,
        lease: &Lease,
        (tenant, id): (&str, &str),
        entry_key: &[u8],
        attempt: &Attempt,
        next: Settle,
    ) -> Result<()> {
        let attempt_key = key(&[tenant, id, &seq_part(self.0.trees()?.generate_id()?)]);
        self.0.transact(|tx| {
            tx.fence(self.0, lease)?;
            if tx.webhook(tenant, id)?.is_none() {
                return Ok(());
            }
            tx.moved_records(tenant, id)?;
            tx.put(&tx.t.attempts, &attempt_key, attempt)?;
            match &next {
                Settle::Retry(e) => tx.put(&tx.t.outbox, entry_key, e)?,
                Settle::Failed(e) => {
                    tx.remove(&tx.t.outbox, entry_key)?;
                    tx.put(&tx.t.failed_events, entry_key, e)?;
                }
                Settle::Delivered => {
                    tx.remove(&tx.t.outbox, entry_key)?;
                }
            }
            Ok(())
        })
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
}

impl Tx<'_> {
    /// One webhook, read inside the transaction.
    pub fn webhook(&self, tenant: &str, id: &str) -> Result<Option<Webhook>> {
        self.get(&self.t.webhooks, &key(&[tenant, id]))
    }

    /// Stores a new webhook; `Conflict("webhook")` when its id is taken.
    pub fn insert_webhook(&self, tenant: &str, w: &Webhook) -> Result<()> {
        let k = key(&[tenant, &w.id]);
        if self.has(&self.t.webhooks, &k)? {
            return Err(Error::Conflict("webhook"));
        }
        self.moved_webhook_set(tenant)?;
        self.put(&self.t.webhooks, &k, w)
    }

    /// Stores a webhook over its previous record.
    pub fn put_webhook(&self, tenant: &str, w: &Webhook) -> Result<()> {
        self.moved_webhook_set(tenant)?;
        self.put(&self.t.webhooks, &key(&[tenant, &w.id]), w)
    }

    /// Removes a webhook; whether it was there. Its records go with
    /// [`Tx::remove_webhook_records`].
    pub fn delete_webhook(&self, tenant: &str, id: &str) -> Result<bool> {
        self.moved_webhook_set(tenant)?;
        self.remove(&self.t.webhooks, &key(&[tenant, id]))
    }

    /// The tenant's webhooks as this transaction sees them, in id order: a
    /// webhook written concurrently is in the list, or its write commits
    /// after this transaction. Sled can neither scan inside a transaction nor
    /// read outside one while it runs (every transaction holds its global
    /// lock), so the list is the one last listed outside (`WebhookSets`),
    /// used only while its generation is the one read here; otherwise the
    /// store lists it again and runs the transaction again.
    pub fn webhooks_of(&self, tenant: &str) -> Result<Arc<Vec<Webhook>>> {
        let seen: u64 = self.get(&self.t.generations, &set_generation_key(tenant))?.unwrap_or(0);
        match self.webhook_sets.at(tenant, seen) {
            Some(list) => Ok(list),
            None => {
                self.stale_set.replace(Some(tenant.to_string()));
                Err(Error::Unavailable(format!("the webhooks of tenant {tenant} changed; listing them again")))
            }
        }
    }

    /// Queues `entry` in webhook `id`'s outbox with this transaction; its
    /// target is woken once the transaction commits (see
    /// [`Store::on_outbox_write`]).
    pub fn enqueue_event(&self, tenant: &str, id: &str, entry: &OutboxEntry) -> Result<()> {
        let k = key(&[tenant, id, &seq_part(self.generate_id()?)]);
        self.moved_records(tenant, id)?;
        self.put(&self.t.outbox, &k, entry)?;
        self.outbox_writes.borrow_mut().push((tenant.to_string(), id.to_string()));
        Ok(())
    }

    /// Whether no entry was added to the webhook's outbox, failed events or
    /// attempt log since `r` was listed: check it before [`Tx::remove_webhook_records`].
    pub fn webhook_records_unchanged(&self, r: &WebhookRecords) -> Result<bool> {
        let now: u64 = self.get(&self.t.generations, &records_generation_key(&r.tenant, &r.id))?.unwrap_or(0);
        Ok(now == r.generation)
    }

    /// Removes the listed outbox entries, failed events and attempts.
    pub fn remove_webhook_records(&self, r: &WebhookRecords) -> Result<()> {
        for (which, k) in &r.keys {
            let tree = match which {
                WebhookTree::Outbox => &self.t.outbox,
                WebhookTree::Failed => &self.t.failed_events,
                WebhookTree::Attempts => &self.t.attempts,
            };
            self.remove(tree, k)?;
        }
        Ok(())
    }

    /// Moves the failed event under `entry_key` back into the outbox as
    /// `entry`; false when it is no longer a failed event.
    pub fn requeue_failed(&self, tenant: &str, id: &str, entry_key: &[u8], entry: &OutboxEntry) -> Result<bool> {
        if !self.remove(&self.t.failed_events, entry_key)? {
            return Ok(false);
        }
        self.moved_records(tenant, id)?;
        self.put(&self.t.outbox, entry_key, entry)?;
        Ok(true)
    }

    /// Moves the tenant's webhook set's generation on (one of them was written).
    fn moved_webhook_set(&self, tenant: &str) -> Result<()> {
        let k = set_generation_key(tenant);
        let next = self.get::<u64>(&self.t.generations, &k)?.unwrap_or(0).wrapping_add(1);
        self.put(&self.t.generations, &k, &next)
    }

    /// Moves the webhook's record generation on (an entry was added).
    fn moved_records(&self, tenant: &str, id: &str) -> Result<()> {
        let k = records_generation_key(tenant, id);
        let next = self.get::<u64>(&self.t.generations, &k)?.unwrap_or(0).wrapping_add(1);
        self.put(&self.t.generations, &k, &next)
    }
}

/// What became of an outbox entry after an attempt.
pub enum Settle {
    /// The receiver accepted it: the entry is removed.
    Delivered,
    /// Try again later: the entry is stored with its new attempt count and time.
    Retry(OutboxEntry),
    /// Retries exhausted: the entry moves to the failed tree, for a replay.
    Failed(OutboxEntry),
}
