//! Idempotency keys of the send routes: per tenant, what the first request
//! with a key answered, so that a retry gets the same answer and sends
//! nothing again.
//!
//! A key is claimed by writing a `Running` marker in a transaction, so that
//! among concurrent requests with one key, on one engine or on several
//! sharing a database, exactly one runs; the others wait for its answer by
//! reading the record again. The marker names the engine and the process
//! (`boot`) running it: a marker left by a process that died is taken over by
//! the next request once it is stale, or at once by the same engine after a
//! restart (its boot differs). A run that outlasts the staleness (a topic
//! send queuing a large broadcast) renews its marker while it works, so a
//! live run is never taken over. The answer replaces the marker.
//!
//! Records are keyed by the SHA-256 of the key (any visible ASCII, up to 255
//! characters: the digest keeps storage keys short and uniform) and expire
//! after a fixed time from the first request; a second tree indexes them by
//! expiry so the sweeper deletes them with a range scan, as nonces.

use crate::keys::{key, key_bytes, Key};
use crate::store::{get, Store};
use crate::{Result, Tx};
use serde::{Deserialize, Serialize};

/// What is stored under a key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// SHA-256 of the request (route and body): a retry must match it.
    pub fingerprint: Vec<u8>,
    /// When the first request came, ms since the epoch.
    pub created_ms: u64,
    /// When the record is forgotten (the key may be used afresh), ms since the epoch.
    pub expires_ms: u64,
    /// Still running, or answered.
    pub progress: Progress,
}

/// How far the first request with a key got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Progress {
    /// Running on engine `node`, in its process `boot`, last heard of at `started_ms`.
    Running {
        /// The node id of the engine running it.
        node: String,
        /// Unique to one run of that engine's process.
        boot: String,
        /// When it was claimed or last renewed, ms since the epoch: the
        /// marker is stale this long after. With node and boot, it names
        /// the claim.
        started_ms: u64,
    },
    /// Answered with this HTTP status and JSON body.
    Answered {
        /// The HTTP status of the answer.
        status: u16,
        /// The body of the answer, as sent.
        body: Vec<u8>,
    },
}

/// A request asking to run under a key.
#[derive(Clone, Debug)]
pub struct Claim<'a> {
    /// The tenant the key belongs to.
    pub tenant: &'a str,
    /// The key as the caller sent it.
    pub key: &'a str,
    /// SHA-256 of the request (see [`Record::fingerprint`]).
    pub fingerprint: &'a [u8],
    /// This engine's node id.
    pub node: &'a str,
    /// This engine process's boot id.
    pub boot: &'a str,
    /// Now, ms since the epoch.
    pub now_ms: u64,
    /// How long an answer is kept, ms.
    pub ttl_ms: u64,
    /// After how long a `Running` marker is taken to be a dead engine's, ms.
    pub stale_ms: u64,
}

/// What a request with a key is to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Begin {
    /// Run: the key is now claimed by this request (its `started_ms` is the claim's `now_ms`).
    Run,
    /// Answer this, the first request's answer, and do nothing else.
    Replay {
        /// The first answer's status.
        status: u16,
        /// The first answer's body.
        body: Vec<u8>,
    },
    /// The first request is still running: wait for its answer.
    Wait,
    /// The key was used with another request.
    Mismatch,
}

/// Reads and the expiry sweep of idempotency records; claims and answers go through transactions.
pub struct Idempotency<'a>(&'a Store);

impl Store {
    /// The idempotency records of this store.
    pub fn idempotency(&self) -> Idempotency<'_> {
        Idempotency(self)
    }
}

/// The storage key of an idempotency key (hex SHA-256).
fn digest(value: &str) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, value.as_bytes()))
}

fn record_key(tenant: &str, k: &str) -> Key {
    key(&[tenant, &digest(k)])
}

fn expiry_key(expires_ms: u64, tenant: &str, k: &str) -> Key {
    key(&[&format!("{expires_ms:020}"), tenant, &digest(k)])
}

/// Whether `p` is a claim made by `(node, boot)` at `started`.
fn claimed_by(p: &Progress, node: &str, boot: &str, started: u64) -> bool {
    matches!(p, Progress::Running { node: n, boot: b, started_ms } if n == node && b == boot && *started_ms == started)
}

impl Idempotency<'_> {
    /// The record of `key` of `tenant`, if any (expired or not).
    pub fn get(&self, tenant: &str, k: &str) -> Result<Option<Record>> {
        get(&self.0.trees()?.idempotency, &record_key(tenant, k))
    }

    /// Claims `c.key` for the request, or says why not (one transaction).
    pub fn begin(&self, c: &Claim<'_>) -> Result<Begin> {
        self.0.transact(|tx| tx.begin_idempotent(c))
    }

    /// Stores the answer of the request that claimed `key` at `started_ms`
    /// (see [`Begin::Run`]) in place of its marker; `false` when the claim
    /// was taken over meanwhile (the record is then left alone).
    pub fn answer(
        &self,
        (tenant, k): (&str, &str),
        (node, boot, started_ms): (&str, &str, u64),
        status: u16,
        body: &[u8],
    ) -> Result<bool> {
        let rk = record_key(tenant, k);
        self.0.transact(|tx| {
            let Some(mut r) = tx.get::<Record>(&tx.t.idempotency, &rk)? else { return Ok(false) };
            if !claimed_by(&r.progress, node, boot, started_ms) {
                return Ok(false);
            }
            r.progress = Progress::Answered { status, body: body.to_vec() };
            tx.put(&tx.t.idempotency, &rk, &r)?;
            Ok(true)
        })
    }

    /// Renews the claim stamped `started_ms` to `now_ms` (see
    /// [`Progress::Running`]): the stamp that names it from now on, or `None`
    /// when it was taken over meanwhile (the record is then left alone).
    pub fn renew(
        &self,
        (tenant, k): (&str, &str),
        (node, boot, started_ms): (&str, &str, u64),
        now_ms: u64,
    ) -> Result<Option<u64>> {
        let rk = record_key(tenant, k);
        // A clock stepped back does not age the claim.
        let stamp = now_ms.max(started_ms);
        self.0.transact(|tx| {
            let Some(mut r) = tx.get::<Record>(&tx.t.idempotency, &rk)? else { return Ok(None) };
            if !claimed_by(&r.progress, node, boot, started_ms) {
                return Ok(None);
            }
            r.progress = Progress::Running { node: node.to_string(), boot: boot.to_string(), started_ms: stamp };
            tx.put(&tx.t.idempotency, &rk, &r)?;
            Ok(Some(stamp))
        })
    }

    /// Gives up the claim made at `started_ms` (the request failed in a way
    /// a retry may cure): the key is free again.
    pub fn abandon(&self, (tenant, k): (&str, &str), (node, boot, started_ms): (&str, &str, u64)) -> Result<()> {
        let rk = record_key(tenant, k);
        self.0.transact(|tx| {
            let Some(r) = tx.get::<Record>(&tx.t.idempotency, &rk)? else { return Ok(()) };
            if claimed_by(&r.progress, node, boot, started_ms) {
                tx.remove(&tx.t.idempotency, &rk)?;
                tx.remove(&tx.t.idempotency_expiry, &expiry_key(r.expires_ms, tenant, k))?;
            }
            Ok(())
        })
    }

    /// Deletes every record expired by `now`; how many. A record claimed
    /// afresh after its predecessor expired has another expiry and stays.
    pub fn sweep(&self, now: u64) -> Result<usize> {
        let t = self.0.trees()?;
        let end = format!("{now:020}");
        let mut n: usize = 0;
        loop {
            let batch =
                t.idempotency_expiry.range_below(end.as_bytes()).keys().take(256).collect::<Result<Vec<_>>>()?;
            if batch.is_empty() {
                return Ok(n);
            }
            self.0.transact(|tx| {
                for k in &batch {
                    let parts: Vec<&[u8]> = k.split(|b| *b == 0).collect();
                    if let [expires, tenant, digest] = parts.as_slice() {
                        let rk = key_bytes(&[*tenant, *digest]);
                        let r: Option<Record> = tx.get(&tx.t.idempotency, &rk)?;
                        if r.is_some_and(|r| format!("{:020}", r.expires_ms).as_bytes() == *expires) {
                            tx.remove(&tx.t.idempotency, &rk)?;
                        }
                    }
                    tx.remove(&tx.t.idempotency_expiry, k)?;
                }
                Ok::<_, crate::Error>(())
            })?;
            n = n.saturating_add(batch.len());
        }
    }

    /// Records stored, for the gauge.
    pub fn stored(&self) -> Result<u64> {
        self.0.trees()?.idempotency.count_prefix([])
    }
}

impl Tx<'_> {
    /// [`Idempotency::begin`] inside a transaction.
    fn begin_idempotent(&self, c: &Claim<'_>) -> Result<Begin> {
        let rk = record_key(c.tenant, c.key);
        if let Some(r) = self.get::<Record>(&self.t.idempotency, &rk)? {
            let live = r.expires_ms > c.now_ms;
            if live && r.fingerprint != c.fingerprint {
                return Ok(Begin::Mismatch);
            }
            match &r.progress {
                Progress::Answered { status, body } if live => {
                    return Ok(Begin::Replay { status: *status, body: body.clone() })
                }
                Progress::Running { node, boot, started_ms } if live => {
                    let restarted = node == c.node && boot != c.boot;
                    let stale = started_ms.saturating_add(c.stale_ms) <= c.now_ms;
                    if !restarted && !stale {
                        return Ok(Begin::Wait);
                    }
                    // Its engine died: this request runs it again, under the same expiry.
                    let progress =
                        Progress::Running { node: c.node.to_string(), boot: c.boot.to_string(), started_ms: c.now_ms };
                    self.put(&self.t.idempotency, &rk, &Record { progress, ..r })?;
                    return Ok(Begin::Run);
                }
                _ => {
                    self.remove(&self.t.idempotency_expiry, &expiry_key(r.expires_ms, c.tenant, c.key))?;
                }
            }
        }
        let expires_ms = c.now_ms.saturating_add(c.ttl_ms);
        let record = Record {
            fingerprint: c.fingerprint.to_vec(),
            created_ms: c.now_ms,
            expires_ms,
            progress: Progress::Running { node: c.node.to_string(), boot: c.boot.to_string(), started_ms: c.now_ms },
        };
        self.put(&self.t.idempotency, &rk, &record)?;
        self.put(&self.t.idempotency_expiry, &expiry_key(expires_ms, c.tenant, c.key), &())?;
        Ok(Begin::Run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim<'a>(key: &'a str, fp: &'a [u8], boot: &'a str, now_ms: u64) -> Claim<'a> {
        Claim { tenant: "acme", key, fingerprint: fp, node: "n1", boot, now_ms, ttl_ms: 1000, stale_ms: 100 }
    }

    /// One claim runs; the same request waits, then replays the answer;
    /// another request with the key is refused; the key is per tenant.
    #[test]
    fn a_key_runs_once_then_replays() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        let ids = store.idempotency();
        assert_eq!(ids.begin(&claim("k1", b"a", "b1", 10)).unwrap(), Begin::Run);
        assert_eq!(ids.begin(&claim("k1", b"a", "b1", 20)).unwrap(), Begin::Wait);
        assert_eq!(ids.begin(&claim("k1", b"other", "b1", 20)).unwrap(), Begin::Mismatch);
        assert!(!ids.answer(("acme", "k1"), ("n1", "b1", 11), 202, b"[]").unwrap(), "not that claim");
        assert!(ids.answer(("acme", "k1"), ("n1", "b1", 10), 202, b"[1]").unwrap());
        let replay = Begin::Replay { status: 202, body: b"[1]".to_vec() };
        assert_eq!(ids.begin(&claim("k1", b"a", "b1", 30)).unwrap(), replay);
        assert_eq!(ids.begin(&claim("k1", b"b", "b1", 30)).unwrap(), Begin::Mismatch);
        let other_tenant = Claim { tenant: "globex", ..claim("k1", b"b", "b1", 30) };
        assert_eq!(ids.begin(&other_tenant).unwrap(), Begin::Run);
    }

    /// A marker left by a dead process is taken over: at once by the same
    /// engine restarted, by anyone once stale; an abandoned claim frees the key.
    #[test]
    fn dead_claims_are_taken_over_and_abandoned_ones_freed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        let ids = store.idempotency();
        assert_eq!(ids.begin(&claim("k", b"a", "b1", 10)).unwrap(), Begin::Run);
        assert_eq!(ids.begin(&claim("k", b"a", "b2", 20)).unwrap(), Begin::Run, "restarted: boot b2");
        let elsewhere = Claim { node: "n2", ..claim("k", b"a", "b9", 50) };
        assert_eq!(ids.begin(&elsewhere).unwrap(), Begin::Wait);
        let later = Claim { node: "n2", ..claim("k", b"a", "b9", 120) };
        assert_eq!(ids.begin(&later).unwrap(), Begin::Run, "stale after 100 ms");
        ids.abandon(("acme", "k"), ("n2", "b9", 120)).unwrap();
        assert_eq!(ids.get("acme", "k").unwrap(), None);
        assert_eq!(ids.begin(&claim("k", b"z", "b1", 130)).unwrap(), Begin::Run, "free again, any body");
    }

    /// A renewed claim is not stale until its renewal is, and is named by
    /// its new stamp; a claim taken over is not renewed.
    #[test]
    fn a_renewed_claim_is_not_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        let ids = store.idempotency();
        assert_eq!(ids.begin(&claim("k", b"a", "b1", 10)).unwrap(), Begin::Run);
        assert_eq!(ids.renew(("acme", "k"), ("n1", "b1", 10), 90).unwrap(), Some(90));
        let elsewhere = |now| Claim { node: "n2", ..claim("k", b"a", "b9", now) };
        assert_eq!(ids.begin(&elsewhere(150)).unwrap(), Begin::Wait, "stale at 110 unless renewed");
        assert_eq!(ids.renew(("acme", "k"), ("n1", "b1", 90), 50).unwrap(), Some(90), "the clock stepped back");
        assert!(!ids.answer(("acme", "k"), ("n1", "b1", 10), 202, b"[]").unwrap(), "named by its new stamp");
        assert_eq!(ids.begin(&elsewhere(190)).unwrap(), Begin::Run, "stale 100 ms after its renewal");
        assert_eq!(ids.renew(("acme", "k"), ("n1", "b1", 90), 200).unwrap(), None, "taken over");
        assert!(ids.answer(("acme", "k"), ("n2", "b9", 190), 202, b"[2]").unwrap());
        assert_eq!(ids.renew(("acme", "k"), ("n2", "b9", 190), 210).unwrap(), None, "answered");
    }

    /// Past its expiry a key is used afresh; the sweep deletes expired
    /// records and keeps one claimed again under a new expiry.
    #[test]
    fn expired_records_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&crate::test_options(dir.path())).unwrap();
        let ids = store.idempotency();
        assert_eq!(ids.begin(&claim("old", b"a", "b1", 10)).unwrap(), Begin::Run);
        assert!(ids.answer(("acme", "old"), ("n1", "b1", 10), 202, b"[]").unwrap());
        assert_eq!(ids.begin(&claim("gone", b"a", "b1", 10)).unwrap(), Begin::Run);
        assert_eq!(ids.begin(&claim("old", b"other", "b1", 1010)).unwrap(), Begin::Run, "expired at 1010");
        assert_eq!(ids.sweep(1500).unwrap(), 1, "the expiry entry of `gone`; `old`'s was replaced");
        assert_eq!(ids.get("acme", "gone").unwrap(), None);
        assert!(ids.get("acme", "old").unwrap().is_some());
        assert_eq!(ids.sweep(2011).unwrap(), 1);
        assert_eq!(ids.stored().unwrap(), 0);
    }
}
