//! Scheduled sends: an event stored with the time it is to be sent, fired
//! by the engine holding the scheduler's lease (see the engine's
//! `scheduler`).
//!
//! A schedule is `Scheduled` until its time, then `Sending` (with the id its
//! notification will have, chosen before anything is sent), then `Sent` or
//! `Failed`; `Cancelled` if deleted before. A second tree indexes the
//! schedules still to fire (`Scheduled` and `Sending`) by time, so the
//! scheduler finds the due ones with a range scan from the start, whatever
//! the tenant. Every change of state is one transaction, made under the
//! scheduler's lease when the scheduler makes it: an engine that lost the
//! lease cannot fire or finish anything. A schedule left `Sending` by an
//! engine that died is looked at again by the next holder: if its
//! notification's report exists the send happened (a broadcast's report is
//! written when it is accepted), otherwise it is sent again under the same
//! notification id.
//!
//! Each tenant's schedules still to fire are counted in the same
//! transactions, so a cap holds without scanning. Each notification sent
//! for a schedule is linked back to it (its delivery report names it).

use crate::keys::{first_part, key, last_part, prefix, Key};
use crate::leases::Lease;
use crate::store::{get, Store};
use crate::{codec, Result, Tx};
use serde::{Deserialize, Serialize};

/// Where a schedule is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// Waiting for its time.
    Scheduled,
    /// Its time came: being sent as `notification_id`.
    Sending,
    /// Sent: the notification's delivery report says what became of it.
    Sent,
    /// Deleted before it fired.
    Cancelled,
    /// Could not be sent (the recipient was gone, the event no longer valid): `failure` says why.
    Failed,
}

/// One scheduled send.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// A ULID; the key within the tenant.
    pub id: String,
    /// When it is to be sent, ms since the epoch.
    pub send_at_ms: u64,
    /// The spec-000 event to send, as JSON.
    pub event_json: String,
    /// Where it is in its life.
    pub state: State,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
    /// The notification sent for it, chosen when it fires.
    pub notification_id: Option<String>,
    /// When it started sending, ms since the epoch.
    pub fired_ms: Option<u64>,
    /// When it was sent, failed or was cancelled, ms since the epoch.
    pub finished_ms: Option<u64>,
    /// Why it failed.
    pub failure: Option<String>,
}

impl Schedule {
    /// Whether it is still to fire (in the due index).
    pub fn pending(&self) -> bool {
        matches!(self.state, State::Scheduled | State::Sending)
    }
}

/// A schedule due, as the due index names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due {
    /// When it is to fire, ms since the epoch.
    pub send_at_ms: u64,
    /// Its tenant.
    pub tenant: String,
    /// Its id.
    pub id: String,
}

/// Schedules of every tenant.
pub struct Schedules<'a>(&'a Store);

impl Store {
    /// The scheduled sends of this store.
    pub fn schedules(&self) -> Schedules<'_> {
        Schedules(self)
    }
}

fn due_key(send_at_ms: u64, tenant: &str, id: &str) -> Key {
    key(&[&format!("{send_at_ms:020}"), tenant, id])
}

impl Schedules<'_> {
    /// Stores a new schedule `Scheduled`; `false` (nothing stored) when its
    /// tenant already has `max_pending` schedules still to fire.
    pub fn create(&self, tenant: &str, s: &Schedule, max_pending: u64) -> Result<bool> {
        self.0.transact(|tx| {
            let pending = tx.pending_schedules(tenant)?;
            if pending >= max_pending {
                return Ok(false);
            }
            tx.put(&tx.t.schedules, &key(&[tenant, &s.id]), s)?;
            tx.put(&tx.t.schedules_due, &due_key(s.send_at_ms, tenant, &s.id), &())?;
            tx.put(&tx.t.schedule_counts, tenant.as_bytes(), &pending.saturating_add(1))?;
            Ok(true)
        })
    }

    /// The schedule `id` of `tenant`.
    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<Schedule>> {
        get(&self.0.trees()?.schedules, &key(&[tenant, id]))
    }

    /// The schedules of `tenant` in `state` (every state when `None`), in
    /// the order they were created, from the `offset`th on, `limit` at most.
    pub fn list(&self, tenant: &str, state: Option<State>, offset: usize, limit: usize) -> Result<Vec<Schedule>> {
        self.0
            .trees()?
            .schedules
            .scan_prefix(prefix(&[tenant]))
            .map(|kv| codec::decode::<Schedule>(&kv?.1))
            .filter(|s| !matches!((s, state), (Ok(s), Some(want)) if s.state != want))
            .skip(offset)
            .take(limit)
            .collect()
    }

    /// Schedules still to fire of `tenant`.
    pub fn pending(&self, tenant: &str) -> Result<u64> {
        Ok(get(&self.0.trees()?.schedule_counts, tenant.as_bytes())?.unwrap_or(0))
    }

    /// Cancels a `Scheduled` schedule; answers the schedule as it is after
    /// (unchanged when it had fired or was cancelled already), `None` when unknown.
    pub fn cancel(&self, tenant: &str, id: &str, now_ms: u64) -> Result<Option<Schedule>> {
        let k = key(&[tenant, id]);
        self.0.transact(|tx| {
            let Some(mut s) = tx.get::<Schedule>(&tx.t.schedules, &k)? else { return Ok(None) };
            if s.state != State::Scheduled {
                return Ok(Some(s));
            }
            s.state = State::Cancelled;
            s.finished_ms = Some(now_ms);
            tx.put(&tx.t.schedules, &k, &s)?;
            tx.unindex_schedule(tenant, &s)?;
            Ok(Some(s))
        })
    }

    /// Up to `limit` schedules to fire by `now_ms` (sending ones included), earliest first.
    pub fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<Due>> {
        let end = format!("{:020}", now_ms.saturating_add(1));
        self.0
            .trees()?
            .schedules_due
            .range_below(end.as_bytes())
            .keys()
            .take(limit)
            .map(|k| {
                let k = k?;
                let rest = k.iter().position(|b| *b == 0).map_or(&k[..], |i| &k[i.saturating_add(1)..]);
                let send_at_ms = first_part(&k).parse().unwrap_or(0);
                Ok(Due { send_at_ms, tenant: first_part(rest), id: last_part(rest) })
            })
            .collect()
    }

    /// Under the scheduler's lease: marks a due `Scheduled` schedule
    /// `Sending` as `notification_id` (linked back to it), and answers it;
    /// a `Sending` one is answered as it is (its sender died: see the
    /// module's documentation). `None`, with its stale index entry removed,
    /// when it is gone or finished.
    pub fn fire(&self, lease: &Lease, due: &Due, notification_id: &str, now_ms: u64) -> Result<Option<Schedule>> {
        let k = key(&[&due.tenant, &due.id]);
        self.0.transact(|tx| {
            tx.fence(self.0, lease)?;
            let Some(mut s) = tx.get::<Schedule>(&tx.t.schedules, &k)? else {
                tx.remove(&tx.t.schedules_due, &due_key(due.send_at_ms, &due.tenant, &due.id))?;
                return Ok(None);
            };
            match s.state {
                State::Sending => Ok(Some(s)),
                State::Scheduled => {
                    s.state = State::Sending;
                    s.notification_id = Some(notification_id.to_string());
                    s.fired_ms = Some(now_ms);
                    tx.put(&tx.t.schedules, &k, &s)?;
                    tx.put_raw(&tx.t.schedule_links, &key(&[&due.tenant, notification_id]), due.id.as_bytes())?;
                    Ok(Some(s))
                }
                State::Sent | State::Cancelled | State::Failed => {
                    tx.remove(&tx.t.schedules_due, &due_key(due.send_at_ms, &due.tenant, &due.id))?;
                    Ok(None)
                }
            }
        })
    }

    /// Under the scheduler's lease: a `Sending` schedule is `Sent`, or
    /// `Failed` with `failure`; it leaves the due index.
    pub fn finish(&self, lease: &Lease, due: &Due, failure: Option<String>, now_ms: u64) -> Result<()> {
        let k = key(&[&due.tenant, &due.id]);
        self.0.transact(|tx| {
            tx.fence(self.0, lease)?;
            let Some(mut s) = tx.get::<Schedule>(&tx.t.schedules, &k)? else { return Ok(()) };
            if s.state != State::Sending {
                return Ok(());
            }
            s.state = if failure.is_some() { State::Failed } else { State::Sent };
            s.failure.clone_from(&failure);
            s.finished_ms = Some(now_ms);
            tx.put(&tx.t.schedules, &k, &s)?;
            tx.unindex_schedule(&due.tenant, &s)
        })
    }

    /// The schedule a notification was sent for, if any.
    pub fn of_notification(&self, tenant: &str, notification_id: &str) -> Result<Option<String>> {
        let v = self.0.trees()?.schedule_links.get(key(&[tenant, notification_id]))?;
        Ok(v.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Deletes the finished schedules (sent, failed, cancelled) of every
    /// tenant that finished before `cutoff_ms`, with their links; how many.
    pub fn sweep(&self, cutoff_ms: u64) -> Result<u64> {
        let mut swept = 0u64;
        let bound = ulid::Ulid::from_parts(cutoff_ms, 0).to_string();
        // Every tenant that ever scheduled a send has a count.
        let tenants = self.0.trees()?.schedule_counts.iter().keys().collect::<Result<Vec<_>>>()?;
        for tenant in tenants {
            let tenant = String::from_utf8_lossy(&tenant).into_owned();
            let t = self.0.trees()?;
            // Created before the cutoff at least: a range of ULIDs.
            let end = key(&[&tenant, &bound]);
            let mut old = Vec::new();
            for kv in t.schedules.range_from(prefix(&[&tenant])) {
                let (k, v) = kv?;
                if k.as_ref() >= end.as_slice() {
                    break;
                }
                let s: Schedule = codec::decode(&v)?;
                if !s.pending() && s.finished_ms.is_some_and(|f| f < cutoff_ms) {
                    old.push(s);
                }
            }
            for chunk in old.chunks(256) {
                self.0.transact(|tx| {
                    for s in chunk {
                        tx.remove(&tx.t.schedules, &key(&[&tenant, &s.id]))?;
                        if let Some(n) = &s.notification_id {
                            tx.remove(&tx.t.schedule_links, &key(&[&tenant, n]))?;
                        }
                    }
                    Ok::<_, crate::Error>(())
                })?;
                swept = swept.saturating_add(chunk.len() as u64);
            }
        }
        Ok(swept)
    }
}

impl Tx<'_> {
    fn pending_schedules(&self, tenant: &str) -> Result<u64> {
        Ok(self.get::<u64>(&self.t.schedule_counts, tenant.as_bytes())?.unwrap_or(0))
    }

    /// A schedule that no longer fires leaves the due index and its tenant's count.
    fn unindex_schedule(&self, tenant: &str, s: &Schedule) -> Result<()> {
        self.remove(&self.t.schedules_due, &due_key(s.send_at_ms, tenant, &s.id))?;
        let pending = self.pending_schedules(tenant)?.saturating_sub(1);
        self.put(&self.t.schedule_counts, tenant.as_bytes(), &pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(id: &str, at: u64) -> Schedule {
        Schedule {
            id: id.into(),
            send_at_ms: at,
            event_json: "{}".into(),
            state: State::Scheduled,
            created_ms: 1,
            notification_id: None,
            fired_ms: None,
            finished_ms: None,
            failure: None,
        }
    }

    fn open(dir: &std::path::Path) -> Store {
        Store::open(&crate::test_options(dir)).unwrap()
    }

    /// Due schedules come earliest first across tenants; firing marks one
    /// sending (once: a second fire answers it as is) and links its
    /// notification; finishing takes it out of the due index and the count;
    /// a cancelled one never fires.
    #[test]
    fn schedules_fire_in_time_order_once_and_cancelled_ones_never() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let s = store.schedules();
        assert!(s.create("acme", &schedule("01A", 300), 10).unwrap());
        assert!(s.create("globex", &schedule("01B", 100), 10).unwrap());
        assert!(s.create("acme", &schedule("01C", 200), 10).unwrap());
        assert!(s.create("acme", &schedule("01D", 5000), 10).unwrap());
        assert_eq!(s.pending("acme").unwrap(), 3);
        let due = s.due(300, 10).unwrap();
        let names: Vec<_> = due.iter().map(|d| (d.tenant.as_str(), d.id.as_str())).collect();
        assert_eq!(names, [("globex", "01B"), ("acme", "01C"), ("acme", "01A")]);

        assert_eq!(s.cancel("acme", "01C", 250).unwrap().unwrap().state, State::Cancelled);
        assert_eq!(s.cancel("acme", "01C", 260).unwrap().unwrap().finished_ms, Some(250), "unchanged");
        let lease = store.leases().acquire("scheduler").unwrap().unwrap();
        let d = Due { send_at_ms: 300, tenant: "acme".into(), id: "01A".into() };
        let fired = s.fire(&lease, &d, "N1", 310).unwrap().unwrap();
        assert_eq!((fired.state, fired.notification_id.as_deref()), (State::Sending, Some("N1")));
        let again = s.fire(&lease, &d, "N2", 320).unwrap().unwrap();
        assert_eq!(again.notification_id.as_deref(), Some("N1"), "a sending schedule keeps its notification");
        assert_eq!(s.of_notification("acme", "N1").unwrap().as_deref(), Some("01A"));
        assert_eq!(s.due(400, 10).unwrap().len(), 2, "sending ones stay due until finished");
        s.finish(&lease, &d, None, 330).unwrap();
        assert_eq!(s.get("acme", "01A").unwrap().unwrap().state, State::Sent);
        assert_eq!(s.cancel("acme", "01A", 340).unwrap().unwrap().state, State::Sent, "too late to cancel");
        let names: Vec<_> = s.due(400, 10).unwrap().into_iter().map(|d| d.id).collect();
        assert_eq!(names, ["01B"]);
        assert_eq!(s.pending("acme").unwrap(), 1);
        let cancelled = Due { send_at_ms: 200, tenant: "acme".into(), id: "01C".into() };
        assert_eq!(s.fire(&lease, &cancelled, "N3", 400).unwrap(), None);

        let sent = s.list("acme", Some(State::Sent), 0, 10).unwrap();
        assert_eq!(sent.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["01A"]);
        assert_eq!(s.list("acme", None, 1, 10).unwrap().len(), 2);
    }

    /// The cap counts schedules still to fire: a tenant at it is refused
    /// until one fires or is cancelled.
    #[test]
    fn a_tenant_at_its_cap_is_refused_until_one_finishes() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let s = store.schedules();
        assert!(s.create("acme", &schedule("01A", 10), 2).unwrap());
        assert!(s.create("acme", &schedule("01B", 10), 2).unwrap());
        assert!(!s.create("acme", &schedule("01C", 10), 2).unwrap());
        assert!(s.create("globex", &schedule("01C", 10), 2).unwrap(), "per tenant");
        s.cancel("acme", "01A", 5).unwrap();
        assert!(s.create("acme", &schedule("01C", 10), 2).unwrap());
    }

    /// Firing refuses an engine that lost the scheduler's lease.
    #[test]
    fn only_the_lease_holder_fires() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let s = store.schedules();
        assert!(s.create("acme", &schedule("01A", 10), 2).unwrap());
        let lease = store.leases().acquire("scheduler").unwrap().unwrap();
        store.leases().release(&lease).unwrap();
        let _other = store.leases().acquire("scheduler").unwrap().unwrap();
        let d = Due { send_at_ms: 10, tenant: "acme".into(), id: "01A".into() };
        assert!(matches!(s.fire(&lease, &d, "N1", 20), Err(crate::Error::Fenced(_))));
        assert_eq!(s.get("acme", "01A").unwrap().unwrap().state, State::Scheduled);
    }

    /// Finished schedules older than the cutoff go with their links; pending ones stay.
    #[test]
    fn finished_schedules_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let s = store.schedules();
        let old = ulid::Ulid::from_parts(1_000, 1).to_string();
        let kept = ulid::Ulid::from_parts(1_000, 2).to_string();
        assert!(s.create("acme", &schedule(&old, 10), 5).unwrap());
        assert!(s.create("acme", &schedule(&kept, 10_000), 5).unwrap());
        let lease = store.leases().acquire("scheduler").unwrap().unwrap();
        let d = Due { send_at_ms: 10, tenant: "acme".into(), id: old.clone() };
        s.fire(&lease, &d, "N1", 2_000).unwrap();
        s.finish(&lease, &d, Some("gone".into()), 2_000).unwrap();
        assert_eq!(s.sweep(2_000).unwrap(), 0, "finished at the cutoff: kept");
        assert_eq!(s.sweep(3_000).unwrap(), 1);
        assert_eq!(s.get("acme", &old).unwrap(), None);
        assert_eq!(s.of_notification("acme", "N1").unwrap(), None);
        assert!(s.get("acme", &kept).unwrap().is_some());
    }
}
