//! What this engine claims of the broadcasts that engines sharing a database
//! run together (see `herald_storage::broadcasts`): new jobs to split, jobs
//! whose partitions are all done to complete, and partitions to run, up to
//! [`PushSettings::partitions_per_node`](crate::PushSettings) at a time.
//!
//! One task claims, woken at once when this engine creates a broadcast or
//! ends a partition, and otherwise every `POLL` (500 ms): another engine's new
//! broadcast, or a partition whose engine died (its lease expired), is
//! claimed within that.

use crate::cut_points::CutPoints;
use crate::delivery::Deliverer;
use crate::root::RootMsg;
use crate::tenant::TenantMsg;
use herald_storage::broadcasts::{parse_job_lease, parse_part_lease, JobState, Part};
use herald_storage::deliveries::Job;
use herald_storage::leases::Lease;
use herald_storage::{now_ms, Store};
use ractor::ActorRef;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How often the claimer looks for work nobody told it about.
const POLL: Duration = Duration::from_millis(500);

/// How the claimer is woken, shared with the tenant actors that run the
/// partitions it claims. The partitions this engine runs are those whose
/// lease it still holds a `Lease` of (a fan-out's, or one waiting for its
/// restart): when a fan-out ends, however it ends, its lease goes with it.
#[derive(Default)]
pub struct Claims {
    wake: Notify,
    /// Where the last broadcasts cut their apps' indexes.
    cuts: CutPoints,
}

impl Claims {
    /// Look for work now (a broadcast was created, a partition ended).
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}

/// Starts the claimer; it stops with the root actor.
pub(crate) fn start(deliverer: Arc<Deliverer>, root: ActorRef<RootMsg>) {
    tokio::spawn(async move {
        let claims = deliverer.claims().clone();
        while crate::root::alive(&root) {
            if let Err(e) = claim_all(&deliverer, &root).await {
                tracing::warn!(error = %e, "claiming broadcast work failed; trying again");
            }
            let _ = tokio::time::timeout(POLL, claims.wake.notified()).await;
        }
    });
}

/// Claims every job that needs attention, then partitions while this engine has room.
async fn claim_all(d: &Arc<Deliverer>, root: &ActorRef<RootMsg>) -> Result<(), String> {
    let store = d.store();
    while let Some(lease) = store.leases().claim("job/").map_err(|e| e.to_string())? {
        let work = d.clone();
        let done = d.bulk().spawn_blocking(move || attend(&work, &lease)).await;
        if let Err(e) = done.map_err(|e| e.to_string()).and_then(|r| r) {
            tracing::warn!(error = %e, "a broadcast job could not be split or completed; it is claimed again");
        }
    }
    let most = d.settings().partitions_per_node.max(1);
    // A partition that cannot start (its tenant's actor unavailable, the
    // engine stopping) is released, and its tenant's partitions wait for the
    // next round: claimed again at once it would fail again, a loop that
    // never yields its thread, and the tenants after it would wait for ever.
    let mut unavailable = Vec::new();
    loop {
        let held = store.leases().held_names("part/");
        if held.len() >= most {
            break;
        }
        let Some(lease) = claim_fairly(store, &held, &unavailable).map_err(|e| e.to_string())? else { break };
        let tenant = tenant_prefix(&lease.name).unwrap_or_else(|| lease.name.clone());
        if let Err(e) = run_part(d, root, lease).await {
            tracing::warn!(error = %e, "a claimed partition could not start; its tenant's partitions wait for the next round");
            unavailable.push(tenant);
        }
    }
    Ok(())
}

/// Claims a free partition of a tenant running none here, else of those
/// running the fewest (`held`: the partitions this engine runs), so that
/// one tenant's large broadcast does not take every slot while another
/// tenant's waits for it to end; among equals, in lease-name order. Never
/// one whose name starts with any of `skip`.
fn claim_fairly(store: &Store, held: &[String], skip: &[String]) -> herald_storage::Result<Option<Lease>> {
    let mut running: BTreeMap<String, usize> = BTreeMap::new();
    for tenant in held.iter().filter_map(|n| tenant_prefix(n)) {
        let n = running.entry(tenant).or_default();
        *n = n.saturating_add(1);
    }
    let mut levels: Vec<usize> = running.values().copied().collect();
    levels.sort_unstable();
    levels.dedup();
    // Every running tenant avoided first; then those above each level in
    // turn, up to the highest, which avoids none.
    let avoided = |above: Option<usize>| -> Vec<String> {
        let busy = running.iter().filter(|(_, n)| above.is_none_or(|l| **n > l)).map(|(t, _)| t.clone());
        busy.chain(skip.iter().cloned()).collect()
    };
    for above in std::iter::once(None).chain(levels.into_iter().map(Some)) {
        if let Some(lease) = store.leases().claim_avoiding("part/", &avoided(above))? {
            return Ok(Some(lease));
        }
    }
    Ok(None)
}

/// `part/<tenant>/`: the start of every partition lease of the tenant of `name`.
fn tenant_prefix(name: &str) -> Option<String> {
    parse_part_lease(name).map(|(tenant, _, _)| format!("part/{tenant}/"))
}

/// Hands a claimed partition to its tenant's actor, or drops the lease of
/// one whose job is gone or that is already done.
async fn run_part(d: &Arc<Deliverer>, root: &ActorRef<RootMsg>, lease: Lease) -> Result<(), String> {
    let store = d.store();
    let Some((tenant, job_id, n)) = parse_part_lease(&lease.name) else {
        return Err(format!("unexpected lease {}", lease.name));
    };
    let job = store.broadcasts().job(&tenant, &job_id).map_err(|e| e.to_string())?;
    let part = store.broadcasts().part(&tenant, &job_id, n).map_err(|e| e.to_string())?;
    let (Some(job), Some(part)) = (job, part.filter(|p| !p.done)) else {
        tracing::debug!(lease = lease.name, "a claimed partition has nothing left to do; its lease is dropped");
        return store.broadcasts().drop_lease(&lease).map_err(|e| e.to_string());
    };
    let answer = root.call(|reply| RootMsg::Tenant(tenant.clone(), reply), Some(Duration::from_secs(10))).await;
    let Ok(ractor::rpc::CallResult::Success(Ok(crate::root::Running { actor, .. }))) = answer else {
        let _ = store.leases().release(&lease);
        return Err(format!("the actor of tenant {tenant} is unavailable"));
    };
    actor.cast(TenantMsg::Part(Box::new((lease, job, n, part)))).map_err(|e| e.to_string())
}

/// Does what a job's lease was claimed for: split it, complete it, or park it.
fn attend(d: &Deliverer, lease: &Lease) -> Result<(), String> {
    let store = d.store();
    let Some((tenant, id)) = parse_job_lease(&lease.name) else {
        return Err(format!("unexpected lease {}", lease.name));
    };
    let fenced = |e: herald_storage::Error| match e {
        // A partition ended since the claim and freed the lease: claimed again.
        herald_storage::Error::Fenced(_) => Ok(()),
        e => Err(e.to_string()),
    };
    match store.broadcasts().job_state(&tenant, &id).map_err(|e| e.to_string())? {
        JobState::Gone => store.broadcasts().drop_lease(lease).or_else(fenced),
        JobState::Running => store.broadcasts().park(lease).or_else(fenced),
        JobState::Unsplit(job) => {
            let parts = split(store, &d.claims().cuts, &job, d.settings().partition_size).map_err(|e| e.to_string())?;
            store.broadcasts().split(lease, &job, &parts).or_else(fenced)?;
            tracing::info!(tenant, job = id, partitions = parts.len(), "broadcast split into partitions");
            d.claims().wake();
            Ok(())
        }
        JobState::Done(job, mut report) => {
            report.completed_ms = Some(now_ms());
            let total = report.total();
            let targeted: u64 = report.targeted.values().sum();
            let mut counts = serde_json::json!({ "notificationId": id, "targeted": targeted, "sent": total.sent, "invalid": total.invalid, "failed": total.failed });
            let (event, data) = match (&report.failure, report.cancelled_ms) {
                (Some(reason), _) => (
                    "BROADCAST_FAILED",
                    serde_json::json!({ "notificationId": id, "reason": reason, "targeted": targeted, "sent": total.sent }),
                ),
                (None, Some(at)) => {
                    counts["cancelledAt"] = at.into();
                    ("BROADCAST_CANCELLED", counts)
                }
                (None, None) => ("BROADCAST_COMPLETED", counts),
            };
            // The event before the completion: the job's report and the
            // outbox are in two databases on sled. Until the completion
            // commits, the job is done again (by this engine or another) and
            // the event queued again under the same id, which receivers
            // deduplicate: delivered at least once, never lost.
            let event = crate::webhooks::Event {
                id: format!("{id}-{}", event.to_ascii_lowercase()),
                tenant: tenant.clone(),
                kind: "push".into(),
                event: event.into(),
                data,
            };
            store.transact(|tx| crate::webhooks::queue(tx, &event)).map_err(|e| e.to_string())?;
            store.flush_now().map_err(|e| e.to_string())?;
            store.broadcasts().complete(lease, &job, &report).or_else(fenced)?;
            crate::telemetry::tenant(&tenant).fanout_jobs_completed.increment(1);
            tracing::info!(tenant, job = id, sent = total.sent, resent = report.resent, "broadcast complete");
            Ok(())
        }
    }
}

/// Cuts each app of a job still to do into partitions of `size` tokens (at
/// least one per app): ranges of its token index, from the app's cursor of
/// a job stored before partitions. The read mark of such a job goes to the
/// partitions of its app in progress. An app cut from its start is cut where
/// its last broadcast was, while that still serves (see `cut_points`).
pub(crate) fn split(store: &Store, cuts: &CutPoints, job: &Job, size: u64) -> herald_storage::Result<Vec<Part>> {
    let mut parts = Vec::new();
    let in_progress = job.apps.iter().position(|a| !a.done);
    for (i, app) in job.apps.iter().enumerate().filter(|(_, a)| !a.done) {
        let read_mark = if Some(i) == in_progress { job.read_mark.clone() } else { None };
        let mut after = app.cursor.clone();
        let ends = match after {
            Some(_) => store.push_tokens().every_nth_of_app(&job.tenant, &app.app, after.as_deref(), size)?,
            None => cut(store, cuts, &job.tenant, &app.app, size)?,
        };
        for until in ends {
            let next = Some(until.clone());
            parts.push(Part {
                app: app.app.clone(),
                after,
                until: Some(until),
                read_mark: read_mark.clone(),
                ..Part::default()
            });
            after = next;
        }
        parts.push(Part { app: app.app.clone(), after, until: None, read_mark, ..Part::default() });
    }
    Ok(parts)
}

/// Where `app`'s whole index is cut into partitions of `size` tokens: where
/// it was last, or found by a walk of the index.
fn cut(store: &Store, cuts: &CutPoints, tenant: &str, app: &str, size: u64) -> herald_storage::Result<Vec<String>> {
    let tokens = store.push_tokens().count_valid_of_app(tenant, app)?;
    if let Some(ends) = cuts.get(tenant, app, size, tokens, std::time::Instant::now()) {
        return Ok(ends);
    }
    let ends = store.push_tokens().every_nth_of_app(tenant, app, None, size)?;
    cuts.put(tenant, app, size, tokens, &ends);
    Ok(ends)
}

#[cfg(test)]
mod tests {
    use super::*;
    use herald_storage::clients::Client;
    use herald_storage::deliveries::JobApp;
    use herald_storage::push_tokens::{PushProvider, PushToken};

    fn store_with_tokens(dir: &std::path::Path, apps: &[(&str, usize)]) -> Store {
        let store = Store::open(&herald_storage::StoreOptions::new(dir)).unwrap();
        for (app, n) in apps {
            for i in 0..*n {
                add_token(&store, app, &format!("{app}-c{i:03}"));
            }
        }
        store
    }

    fn add_token(store: &Store, app: &str, id: &str) {
        let client = Client { id: id.into(), app_name: app.into(), lock_state: "NONE".into(), ..Client::default() };
        store.clients().create("t", &client).unwrap();
        let token = PushToken {
            app_name: app.into(),
            provider: PushProvider::Apns,
            // One token per client: the id's bytes in hex.
            token: format!("{:0>64}", id.bytes().map(|b| format!("{b:02x}")).collect::<String>()),
            is_valid: true,
            updated_ms: 1,
        };
        store.push_tokens().set("t", id, &token).unwrap();
    }

    fn job(apps: Vec<JobApp>, read_mark: Option<&str>) -> Job {
        Job {
            id: "n1".into(),
            tenant: "t".into(),
            notification_json: "{}".into(),
            apps,
            created_ms: 1,
            read_mark: read_mark.map(str::to_string),
            parts: 0,
            max_per_second: None,
        }
    }

    /// A broadcast of `tenant` to `apps` apps without tokens, created and
    /// split (one partition per app); answers how many partitions it has.
    fn split_job(store: &Store, tenant: &str, apps: usize) -> usize {
        let apps = (0..apps).map(|i| JobApp { app: format!("app{i}"), cursor: None, done: false }).collect();
        let job = Job { tenant: tenant.into(), ..job(apps, None) };
        let report = herald_storage::deliveries::Report { id: job.id.clone(), ..Default::default() };
        let parts = split(store, &CutPoints::default(), &job, 10).unwrap();
        store.deliveries().create_job(&job, &report, &parts).unwrap();
        parts.len()
    }

    /// Two tenants' broadcasts of six partitions each, the first tenant's
    /// first in lease-name order: four slots go two to each, and a slot
    /// freed by the second goes back to it (it then runs the fewest).
    #[test]
    fn partitions_are_claimed_in_turn_by_tenant() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_tokens(dir.path(), &[]);
        for tenant in ["a", "b"] {
            assert_eq!(split_job(&store, tenant, 6), 6);
        }
        let tenant_of = |l: &Lease| parse_part_lease(&l.name).unwrap().0;
        let mut held: Vec<Lease> = Vec::new();
        for _ in 0..4 {
            let names: Vec<String> = held.iter().map(|l| l.name.clone()).collect();
            held.push(claim_fairly(&store, &names, &[]).unwrap().unwrap());
        }
        let tenants: Vec<String> = held.iter().map(tenant_of).collect();
        assert_eq!(tenants, ["a", "b", "a", "b"]);
        // One of b's ends: b runs the fewest, and gets the slot.
        held.remove(1);
        let names: Vec<String> = held.iter().map(|l| l.name.clone()).collect();
        assert_eq!(tenant_of(&claim_fairly(&store, &names, &[]).unwrap().unwrap()), "b");
    }

    /// An actor of the root's type that is stopped before it is used: the
    /// root of an engine that is stopping.
    struct Stopped;

    impl ractor::Actor for Stopped {
        type Msg = RootMsg;
        type State = ();
        type Arguments = ();

        async fn pre_start(&self, _: ActorRef<RootMsg>, _: ()) -> Result<(), ractor::ActorProcessingErr> {
            Ok(())
        }
    }

    /// With the root actor gone (the engine stopping), a claimed partition
    /// cannot start: the claimer releases it and passes over its tenant until
    /// the next round. It used to claim the same partition again at once, a
    /// loop that never yielded its worker thread (the runtime could not even
    /// shut down) and left every other tenant's partitions waiting.
    #[test]
    fn a_partition_that_cannot_start_is_released_and_its_tenant_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_tokens(dir.path(), &[]);
        for tenant in ["a", "b"] {
            assert_eq!(split_job(&store, tenant, 2), 2);
        }
        let bus = Arc::new(crate::webhooks::EventBus::new(store.clone()));
        let d = Arc::new(Deliverer::new(store.clone(), crate::PushSettings::default(), bus).unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let round = rt.block_on(async {
                let (root, handle) = ractor::Actor::spawn(None, Stopped, ()).await.unwrap();
                root.stop(None);
                handle.await.unwrap();
                claim_all(&d, &root).await
            });
            let _ = tx.send(round);
        });
        let round = rx.recv_timeout(Duration::from_secs(30)).expect("the claimer's round ended");
        assert_eq!(round, Ok(()));
        // Every partition is free again; one of each tenant's was claimed once
        // (epoch 1, taken again now: 2), the other never.
        let mut epochs: Vec<(String, u64)> = std::iter::from_fn(|| store.leases().claim("part/").unwrap())
            .map(|l| (parse_part_lease(&l.name).unwrap().0, l.epoch))
            .collect();
        epochs.sort();
        assert_eq!(epochs, [("a".into(), 1), ("a".into(), 2), ("b".into(), 1), ("b".into(), 2)]);
    }

    /// Ranges of `size` tokens, the last open-ended, one at least per app
    /// (an app without tokens too), covering each app exactly once.
    #[test]
    fn a_new_job_is_cut_into_ranges_of_the_partition_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_tokens(dir.path(), &[("a", 25), ("b", 0)]);
        let apps = ["a", "b"].map(|a| JobApp { app: a.into(), cursor: None, done: false }).to_vec();
        let parts = split(&store, &CutPoints::default(), &job(apps, None), 10).unwrap();
        let ranges: Vec<_> = parts.iter().map(|p| (p.app.as_str(), p.after.as_deref(), p.until.as_deref())).collect();
        assert_eq!(
            ranges,
            vec![
                ("a", None, Some("a-c009")),
                ("a", Some("a-c009"), Some("a-c019")),
                ("a", Some("a-c019"), None),
                ("b", None, None),
            ]
        );
        assert!(parts.iter().all(|p| p.read_mark.is_none() && p.cursor.is_none() && !p.done));
    }

    /// A job stored before partitions resumes where it was: apps done are
    /// left out, the app in progress starts after its cursor and keeps the
    /// job's read mark (so what it may have sent counts as resent).
    #[test]
    fn a_job_from_before_partitions_is_split_from_its_cursors() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_tokens(dir.path(), &[("a", 5), ("b", 12), ("c", 3)]);
        let apps = vec![
            JobApp { app: "a".into(), cursor: Some("a-c004".into()), done: true },
            JobApp { app: "b".into(), cursor: Some("b-c003".into()), done: false },
            JobApp { app: "c".into(), cursor: None, done: false },
        ];
        let parts = split(&store, &CutPoints::default(), &job(apps, Some("b-c007")), 5).unwrap();
        let ranges: Vec<_> = parts
            .iter()
            .map(|p| (p.app.as_str(), p.after.as_deref(), p.until.as_deref(), p.read_mark.as_deref()))
            .collect();
        assert_eq!(
            ranges,
            vec![
                ("b", Some("b-c003"), Some("b-c008"), Some("b-c007")),
                ("b", Some("b-c008"), None, Some("b-c007")),
                ("c", None, None, None),
            ]
        );
    }

    /// The next broadcast of an app is cut where the last one was while the
    /// app's index holds within a tenth of the tokens it held then (a walk
    /// would now cut elsewhere), and walked again past that.
    #[test]
    fn an_app_is_cut_again_where_its_last_broadcast_was() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_tokens(dir.path(), &[("a", 25)]);
        let cuts = CutPoints::default();
        let ends = |cuts: &CutPoints| {
            let apps = vec![JobApp { app: "a".into(), cursor: None, done: false }];
            let parts = split(&store, cuts, &job(apps, None), 10).unwrap();
            parts.iter().filter_map(|p| p.until.clone()).collect::<Vec<_>>()
        };
        assert_eq!(ends(&cuts), ["a-c009", "a-c019"]);
        // Two tokens more (25 to 27), both before the cut points.
        add_token(&store, "a", "a-b000");
        add_token(&store, "a", "a-b001");
        assert_eq!(ends(&CutPoints::default()), ["a-c007", "a-c017"], "where a walk cuts now");
        assert_eq!(ends(&cuts), ["a-c009", "a-c019"], "where the last broadcast cut");
        // One more: over a tenth more than when the index was walked.
        add_token(&store, "a", "a-b002");
        assert_eq!(ends(&cuts), ["a-c006", "a-c016"]);
    }
}
