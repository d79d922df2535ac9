// Tests assert by unwrapping and panicking, and compute with small numbers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

use herald_storage::apps::App;
use herald_storage::push_tokens::{PushProvider, PushToken};
use herald_storage::users::User;
use herald_storage::{Error, Store, StoreOptions};

/// The store of `dir` on the backend under test: sled in `dir`, or with
/// `HERALD_TEST_STORE=postgres` a fresh PostgreSQL database per directory
/// (the same one when `dir` is opened again). Opened again right after a
/// drop, sled's file lock may still be held a moment: see [`reopened`].
fn open(dir: &std::path::Path) -> Store {
    reopened(|| Store::open(&herald_storage::test_options(dir)))
}

fn token(app: &str, t: &str) -> PushToken {
    PushToken { app_name: app.into(), provider: PushProvider::Apns, token: t.into(), is_valid: true, updated_ms: 1 }
}

#[tokio::test]
async fn records_survive_reopen_after_durable() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.apps().create("acme", &App { name: "shop".into(), ..Default::default() }).unwrap();
        s.durable().await.unwrap();
    }
    let s = open(dir.path());
    assert!(s.apps().get("acme", "shop").unwrap().is_some());
    assert!(s.apps().get("other", "shop").unwrap().is_none());
}

#[tokio::test]
async fn concurrent_durable_calls_all_complete() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let mut tasks = Vec::new();
    for i in 0..64 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            s.apps().create("acme", &App { name: format!("a{i}"), ..Default::default() }).unwrap();
            s.durable().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(s.apps().list("acme", 0, 100).unwrap().1, 64);
}

#[test]
fn usernames_are_unique_per_tenant_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let u = User { id: "u1".into(), username: "alice".into(), ..Default::default() };
    s.users().create("a", &u).unwrap();
    let again = User { id: "u2".into(), ..u.clone() };
    assert!(matches!(s.users().create("a", &again), Err(Error::Conflict("user"))));
    s.users().create("b", &again).unwrap();
    assert_eq!(s.users().get_by_name("a", "alice").unwrap().unwrap().id, "u1");
    assert_eq!(s.users().get_by_name("b", "alice").unwrap().unwrap().id, "u2");
}

#[test]
fn token_index_follows_set_move_invalidate_and_remove() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let tokens = s.push_tokens();
    tokens.set("t", "C1", &token("app1", "aa")).unwrap();
    tokens.set("t", "C2", &token("app1", "bb")).unwrap();
    tokens.set("t2", "C3", &token("app1", "cc")).unwrap();
    assert_eq!(tokens.count_valid_of_app("t", "app1").unwrap(), 2);
    let page = tokens.valid_of_app("t", "app1", None, 1).unwrap();
    assert_eq!(page[0].0, "C1");
    let next = tokens.valid_of_app("t", "app1", Some("C1"), 10).unwrap();
    assert_eq!(next.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(), vec!["C2"]);
    // moving C1 to another app moves its index entry
    tokens.set("t", "C1", &token("app2", "aa")).unwrap();
    assert_eq!(tokens.count_valid_of_app("t", "app1").unwrap(), 1);
    assert_eq!(tokens.count_valid_of_app("t", "app2").unwrap(), 1);
    // invalidation of a token the client no longer holds changes nothing
    assert!(!tokens.invalidate("t", "C2", "old", 2).unwrap());
    assert!(tokens.invalidate("t", "C2", "bb", 2).unwrap());
    assert!(!tokens.get("t", "C2").unwrap().unwrap().is_valid);
    assert_eq!(tokens.count_valid_of_app("t", "app1").unwrap(), 0);
    assert!(s.transact(|tx| tx.remove_push_token("t", "C1")).unwrap());
    assert_eq!(tokens.count_valid_of_app("t", "app2").unwrap(), 0);
    assert_eq!(tokens.count_valid_of_app("t2", "app1").unwrap(), 1);
    // The tenant's count is of tokens stored, valid or not.
    assert_eq!((tokens.count_of_tenant("t").unwrap(), tokens.count_of_tenant("t2").unwrap()), (1, 1));
}

/// The counts follow every change of the index, each counted once: a
/// token set again, a token replaced, a client locked and unlocked, a
/// client deleted; they equal what a walk of the index finds.
#[test]
fn token_counts_follow_the_index() {
    use herald_storage::clients::Client;
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let tokens = s.push_tokens();
    let walked = |app: &str| tokens.every_nth_of_app("t", app, None, 1).unwrap().len() as u64;
    let check = |app1: u64, stored: u64| {
        assert_eq!((tokens.count_valid_of_app("t", "app1").unwrap(), walked("app1")), (app1, app1));
        assert_eq!(tokens.count_of_tenant("t").unwrap(), stored);
    };
    for i in 0..100 {
        let id = format!("C{i:02}");
        s.clients().create("t", &Client { id: id.clone(), lock_state: "NONE".into(), ..Client::default() }).unwrap();
        tokens.set("t", &id, &token("app1", "aa")).unwrap();
    }
    check(100, 100);
    tokens.set("t", "C01", &token("app1", "aa")).unwrap();
    tokens.set("t", "C02", &token("app1", "new")).unwrap();
    check(100, 100);
    let c02 = tokens.valid_of_app("t", "app1", Some("C01"), 1).unwrap();
    assert_eq!((c02[0].0.as_str(), c02[0].1.token.as_str()), ("C02", "new"), "a replaced token is listed anew");
    let mut c3 = s.clients().get("t", "C03").unwrap().unwrap();
    c3.lock_state = "LOCKED".into();
    s.transact(|tx| tx.put_client("t", &c3)).unwrap();
    s.transact(|tx| tx.put_client("t", &c3)).unwrap();
    check(99, 100);
    c3.lock_state = "NONE".into();
    s.transact(|tx| tx.put_client("t", &c3)).unwrap();
    check(100, 100);
    assert!(s.transact(|tx| tx.delete_client("t", "C04")).unwrap());
    assert!(tokens.invalidate("t", "C05", "aa", 2).unwrap());
    check(98, 99);
    assert!(s.transact(|tx| tx.remove_push_token("t", "C05")).unwrap());
    check(98, 98);
}

/// A broadcast's walk of an app's index, page by page, finds every valid
/// token once and in client order, after writes in random order (leaves
/// split), after most are removed (leaves merge), and after a reopen.
#[test]
fn the_index_walk_is_whole_and_ordered_across_splits_and_merges() {
    use herald_storage::clients::Client;
    let dir = tempfile::tempdir().unwrap();
    let walk = |s: &Store| {
        let (mut seen, mut after) = (Vec::new(), None::<String>);
        loop {
            let page = s.push_tokens().valid_of_app("t", "app1", after.as_deref(), 256).unwrap();
            let Some((last, _)) = page.last() else { return seen };
            after = Some(last.clone());
            seen.extend(page.into_iter().map(|(client, t)| (client, t.token)));
        }
    };
    let expected = |keep: &dyn Fn(u32) -> bool| -> Vec<(String, String)> {
        (0..1_000).filter(|i| keep(*i)).map(|i| (format!("C{i:04}"), format!("{i:064x}"))).collect()
    };
    // A fixed shuffle (an LCG over 0..1024, which visits each value once).
    let order: Vec<u32> = (0..1024u32)
        .scan(7u32, |x, _| {
            *x = (x.wrapping_mul(1_103_515_245).wrapping_add(12_345)) % 1024;
            Some(*x)
        })
        .filter(|i| *i < 1_000)
        .collect();
    {
        let s = open(dir.path());
        for &i in &order {
            let id = format!("C{i:04}");
            s.clients()
                .create("t", &Client { id: id.clone(), lock_state: "NONE".into(), ..Client::default() })
                .unwrap();
            s.push_tokens().set("t", &id, &token("app1", &format!("{i:064x}"))).unwrap();
        }
        s.push_tokens().set("t", "other-app", &token("app2", "bb")).unwrap();
        assert_eq!(walk(&s), expected(&|_| true));
        for &i in order.iter().filter(|i| *i % 4 != 0) {
            assert!(s.transact(|tx| tx.remove_push_token("t", &format!("C{i:04}"))).unwrap());
        }
        assert_eq!(walk(&s), expected(&|i| i % 4 == 0));
        s.close().unwrap();
    }
    let s = open(dir.path());
    assert_eq!(walk(&s), expected(&|i| i % 4 == 0));
    assert_eq!(s.push_tokens().count_valid_of_app("t", "app1").unwrap(), 250);
}

/// A send's and a token check's reads, each set in one round trip: every
/// value from its own tree, in order, and nothing of another tenant.
#[tokio::test]
async fn request_reads_read_each_record_of_their_tenant_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let client = |id: &str, lock: &str| herald_storage::clients::Client {
        id: id.into(),
        app_name: "shop".into(),
        lock_state: lock.into(),
        not_before_ms: 7_000,
        ..Default::default()
    };
    s.clients().create("t", &client("C1", "NONE")).unwrap();
    s.clients().create("t", &client("C2", "LOCKED")).unwrap();
    s.push_tokens().set("t", "C1", &token("shop", "aa")).unwrap();
    let link = herald_storage::links::Link {
        user_id: "alice".into(),
        client_id: "C1".into(),
        mloa: "none".into(),
        linked_on: 1,
        mloa_updated_on: 1,
    };
    s.transact(|tx| tx.put_link("t", &link)).unwrap();

    let (reach, linked) = s.reach_linked("t", "alice", "C1").await.unwrap();
    let state = reach.state.unwrap();
    assert_eq!((state.app_name.as_str(), state.locked, state.not_before_ms), ("shop", false, 7_000));
    assert_eq!(reach.token.unwrap().token, "aa");
    assert!(linked);
    assert!(!s.reach_linked("t", "bob", "C1").await.unwrap().1, "another user is not linked");
    let (reach, linked) = s.reach_linked("u", "alice", "C1").await.unwrap();
    assert!(reach.state.is_none() && reach.token.is_none() && !linked, "another tenant sees nothing");

    let ids = ["C2", "C9", "C1"].map(String::from);
    let reaches = s.reach("t", &ids).await.unwrap();
    assert_eq!(reaches.len(), 3);
    assert!(reaches[0].state.as_ref().unwrap().locked && reaches[0].token.is_none(), "C2: locked, no token");
    assert!(reaches[1].state.is_none() && reaches[1].token.is_none(), "C9: unknown");
    assert_eq!(reaches[2].token.as_ref().unwrap().token, "aa", "C1, in the order asked");
    assert!(s.reach("t", &[]).await.unwrap().is_empty());

    s.transact(|tx| tx.end_session("t", "s1", u64::MAX)).unwrap();
    s.transact(|tx| tx.revoke_tokens("t", "alice")).unwrap();
    let (ended, revoked_before) = s.user_token_standing("t", "s1", "alice").await.unwrap();
    assert!(ended && revoked_before > 0);
    assert_eq!(s.user_token_standing("t", "s2", "bob").await.unwrap(), (false, 0));
    assert_eq!(s.user_token_standing("u", "s1", "alice").await.unwrap(), (false, 0), "another tenant's");
    let (ended, state) = s.client_token_standing("t", "s1", "C2").await.unwrap();
    assert!(ended && state.unwrap().locked);
    assert_eq!(s.client_token_standing("u", "s1", "C2").await.unwrap(), (false, None), "another tenant's");
}

#[test]
fn links_are_indexed_both_ways_and_move_the_generation() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let link = |user: &str| herald_storage::links::Link {
        user_id: user.into(),
        client_id: "C1".into(),
        mloa: "none".into(),
        linked_on: 1,
        mloa_updated_on: 1,
    };
    for user in ["alice", "bob"] {
        s.transact(|tx| tx.put_link("t", &link(user))).unwrap();
    }
    assert_eq!(s.links().of_user("t", "alice").unwrap().len(), 1);
    assert_eq!(s.links().user_ids_of_client("t", "C1").unwrap(), vec!["alice", "bob"]);
    assert!(s.links().of_client("u", "C1").unwrap().is_empty(), "another tenant sees nothing");
    assert!(s.links().exists("t", "alice", "C1").unwrap());
    assert!(!s.links().exists("u", "alice", "C1").unwrap(), "another tenant's link");
    assert!(!s.links().exists("t", "ali", "C1").unwrap(), "a prefix of a user id is not that user");
    assert_eq!(s.links().generation("t", "C1").unwrap(), 2, "two links made");
    assert!(s.transact(|tx| tx.remove_link("t", "alice", "C1")).unwrap());
    assert_eq!(s.links().user_ids_of_client("t", "C1").unwrap(), vec!["bob"]);
    assert!(!s.links().exists("t", "alice", "C1").unwrap(), "unlinked");
    assert_eq!(s.links().generation("t", "C1").unwrap(), 2, "an unlink does not move it");
}

#[test]
fn user_directory_follows_every_write_even_concurrent_ones() {
    use herald_storage::users::{Index, Source};
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let user = |i: usize, first: &str| User {
        id: format!("id{i}"),
        username: format!("user{i}"),
        first_name: Some(first.into()),
        realm_roles: vec!["member".into()],
        ..Default::default()
    };
    for i in 0..10 {
        s.users().create("acme", &user(i, "Ann")).unwrap();
    }
    s.users().create("other", &user(0, "Ann")).unwrap();
    let names = |source| -> Vec<String> {
        s.users().select("acme", source, |_| true).unwrap().iter().map(|r| r.username().to_owned()).collect()
    };
    // Loaded on first use; only this tenant's rows.
    assert_eq!(names(Source::All).len(), 10);
    // A rename and a new first name replace the old row.
    let mut u = user(3, "Zoe");
    u.username = "renamed".into();
    s.users().update("acme", &u).unwrap();
    let all = names(Source::All);
    assert!(all.contains(&"renamed".to_string()) && !all.contains(&"user3".to_string()), "{all:?}");
    let zoe = s.users().select("acme", Source::All, |r| r.first_name() == "zoe").unwrap();
    assert_eq!(zoe.len(), 1);
    // Substring search over the search buffer, rebuilt after each write.
    assert_eq!(names(Source::Containing("ann")).len(), 9);
    assert_eq!(names(Source::Containing("renamed")), ["renamed"]);
    let mut u = user(4, "Annabel");
    u.username = "zed".into();
    s.users().update("acme", &u).unwrap();
    assert_eq!(names(Source::Containing("zed")), ["zed"]);
    assert_eq!(names(Source::Containing("user4")), Vec::<String>::new());
    assert_eq!(names(Source::Containing("ann")).len(), 9, "one hit per user, not per match");
    assert_eq!(names(Source::Containing("user1\nuser2")), Vec::<String>::new(), "never across rows");
    assert_eq!(names(Source::Index(Index::Role("member"))).len(), 10);

    // Concurrent updates of one user: the row ends as the last committed record.
    std::thread::scope(|sc| {
        for t in 0..8 {
            let s = s.clone();
            sc.spawn(move || {
                for n in 0..50 {
                    s.users().update("acme", &user(5, &format!("t{t}n{n}"))).unwrap();
                }
            });
        }
    });
    let stored = s.users().get("acme", "id5").unwrap().unwrap().first_name.unwrap().to_lowercase();
    let row = s.users().select("acme", Source::All, |r| r.id == "id5").unwrap();
    assert_eq!(row[0].first_name(), stored);
}

/// `open()` once the database's previous handle let go of its file lock:
/// sled releases it when its background threads finish, which under load can
/// be a moment after the last handle (a `Store` or a `sled::Db`) was dropped.
fn reopened<T, E: std::fmt::Debug>(open: impl Fn() -> Result<T, E>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match open() {
            Ok(x) => return x,
            Err(e) if format!("{e:?}").contains("could not acquire lock") && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) => panic!("reopening the database: {e:?}"),
        }
    }
}

#[tokio::test]
async fn delivery_records_of_an_older_data_dir_move_to_their_own_database() {
    use herald_storage::deliveries::{Job, Report};
    if herald_storage::test_on_postgres() {
        return; // A sled data directory's layout: nothing of it exists on PostgreSQL.
    }
    let dir = tempfile::tempdir().unwrap();
    let report = Report { id: "n1".into(), kind: "topic".into(), ..Report::default() };
    let job = Job {
        id: "n1".into(),
        tenant: "acme".into(),
        notification_json: "{}".into(),
        apps: vec![],
        created_ms: 1,
        read_mark: None,
        parts: 0,
        max_per_second: None,
    };
    {
        let s = open(dir.path());
        s.deliveries().create_job(&job, &report, &[]).unwrap();
        s.apps().create("acme", &App { name: "shop".into(), ..Default::default() }).unwrap();
        s.durable().await.unwrap();
    }
    // Rewrite the directory in the one-database layout of earlier releases.
    {
        let old = sled::Config::new().path(dir.path().join("db")).use_compression(true).compression_factor(5);
        let (old, deliveries) = (reopened(|| old.open()), reopened(|| sled::open(dir.path().join("deliveries"))));
        for name in ["jobs", "reports", "outcomes"] {
            let (from, to) = (deliveries.open_tree(name).unwrap(), old.open_tree(name).unwrap());
            for kv in from.iter() {
                let (k, v) = kv.unwrap();
                to.insert(k, v).unwrap();
            }
        }
        old.flush().unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("deliveries")).unwrap();

    let s = reopened(|| Store::open(&StoreOptions::new(dir.path().to_path_buf())));
    assert_eq!(s.deliveries().report("acme", "n1").unwrap(), Some(report));
    assert_eq!(s.deliveries().unfinished_jobs().unwrap(), vec![job]);
    assert!(s.apps().get("acme", "shop").unwrap().is_some());
    drop(s);
    let old = sled::Config::new().path(dir.path().join("db")).use_compression(true).compression_factor(5);
    let old = reopened(|| old.open());
    assert!(!old.tree_names().iter().any(|n| n.as_ref() == b"jobs"), "the old trees are dropped");
}

#[test]
fn a_send_is_one_record_read_back_as_report_and_paged_outcomes() {
    use herald_storage::deliveries::{ClientOutcome, Report, State};
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let outcome = |state| ClientOutcome { app: "shop".into(), provider: "fcm".into(), state, code: 200, message: None };
    let outcomes: Vec<_> = ["c1", "c2", "c3"].iter().map(|c| (c.to_string(), outcome(State::Sent))).collect();
    let mut report = Report { id: "n1".into(), kind: "user".into(), recipient: "kim".into(), ..Report::default() };
    outcomes.iter().for_each(|(_, o)| report.record(o));
    s.deliveries().finish_send("acme", &report, &outcomes).unwrap();

    assert_eq!(s.deliveries().report("acme", "n1").unwrap(), Some(report));
    assert_eq!(s.deliveries().outcomes("acme", "n1", 1, 5).unwrap(), outcomes[1..].to_vec());
    assert!(s.deliveries().report("other", "n1").unwrap().is_none(), "another tenant sees nothing");
    assert!(s.deliveries().outcomes("other", "n1", 0, 5).unwrap().is_empty());
}

/// The sends of a batch are one record keyed by the last of their
/// consecutive ids: each id finds its own send, a gap (an event refused)
/// or an id next to the batch finds nothing, another tenant sees nothing;
/// retention counts and deletes the record's reports together.
#[test]
fn a_batch_is_one_record_that_finds_each_of_its_sends() {
    use herald_storage::deliveries::{BatchRecord, ClientOutcome, Report, SendRecord, State};
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    tenant(&s, "acme");
    tenant(&s, "other");
    let first = ulid::Ulid::from_parts(1_000_000, 40);
    let id = |i: u128| ulid::Ulid(first.0 + i).to_string();
    let send = |i: u128| {
        let outcome =
            ClientOutcome { app: "shop".into(), provider: "apns".into(), state: State::Sent, code: 200, message: None };
        let mut report = Report {
            id: id(i),
            kind: "client".into(),
            recipient: format!("u{i}/c{i}"),
            created_ms: 1_000_000,
            ..Report::default()
        };
        report.record(&outcome);
        (id(i), SendRecord { report, outcomes: vec![(format!("c{i}"), outcome)] })
    };
    // Events 0 to 4, event 2 refused before it was sent.
    let record = BatchRecord::of([0, 1, 3, 4].map(send).to_vec()).unwrap();
    assert_eq!((record.sends.len(), record.reports), (5, 4));
    s.deliveries().finish_batch("acme", &record).unwrap();
    // A single send right after the batch, and a young batch.
    let (after, report_after) = send(5);
    s.deliveries().finish_send("acme", &report_after.report, &report_after.outcomes).unwrap();
    let young = ulid::Ulid::from_parts(3_000_000, 9);
    let mut young_send = send(0);
    young_send.0 = young.to_string();
    young_send.1.report.created_ms = 3_000_000;
    s.deliveries().finish_batch("acme", &BatchRecord::of(vec![young_send]).unwrap()).unwrap();

    for i in [0, 1, 3, 4] {
        let report = s.deliveries().report("acme", &id(i)).unwrap().unwrap();
        assert_eq!(report.recipient, format!("u{i}/c{i}"));
        assert_eq!(s.deliveries().outcomes("acme", &id(i), 0, 5).unwrap()[0].0, format!("c{i}"));
        assert!(s.deliveries().report("other", &id(i)).unwrap().is_none(), "another tenant sees nothing");
    }
    assert!(s.deliveries().report("acme", &id(2)).unwrap().is_none(), "the refused event has no report");
    assert!(s.deliveries().outcomes("acme", &id(2), 0, 5).unwrap().is_empty());
    assert_eq!(s.deliveries().report("acme", &after).unwrap().unwrap().recipient, "u5/c5", "the single send after it");
    assert!(s.deliveries().report("acme", &ulid::Ulid(first.0 - 1).to_string()).unwrap().is_none(), "the id before");
    assert!(s.deliveries().report("acme", "not-a-ulid").unwrap().is_none());
    assert_eq!(s.stored_reports().unwrap(), 6, "four in the batch, the single send, the young batch's one");

    let swept = s.sweep_reports(2_000_000).unwrap();
    assert_eq!(swept.reports, 5, "the old batch's four reports and the old single send");
    assert!(s.deliveries().report("acme", &id(0)).unwrap().is_none());
    assert!(s.deliveries().report("acme", &young.to_string()).unwrap().is_some(), "the young batch stays");
    assert_eq!(s.stored_reports().unwrap(), 1);

    // Ids that are not increasing ULIDs give the sends back, for records of their own.
    let unordered = vec![send(3), send(1)];
    assert_eq!(BatchRecord::of(unordered.clone()).unwrap_err(), unordered);
    assert!(BatchRecord::of(vec![send(0), send(5000)]).is_err(), "too far apart for one record");
    assert!(BatchRecord::of(vec![("n1".into(), send(0).1)]).is_err(), "not a ULID");
}

/// Runs a broadcast job through its life in storage: split into one
/// partition of app `a`, one batch of `outcomes` committed under the
/// partition's lease, and, when `finish`, the partition done and the job
/// completed at `completed_ms`.
fn broadcast(s: &Store, job: &Job, report: &Report, outcomes: Vec<(String, ClientOutcome)>, finish: Option<u64>) {
    s.deliveries().create_job(job, report, &[]).unwrap();
    let job_lease = broadcasts::job_lease(&job.tenant, &job.id);
    let lease = s.leases().acquire(&job_lease).unwrap().expect("a new job's lease is free");
    let JobState::Unsplit(unsplit) = s.broadcasts().job_state(&job.tenant, &job.id).unwrap() else { panic!("unsplit") };
    s.broadcasts().split(&lease, &unsplit, &[Part { app: "a".into(), ..Part::default() }]).unwrap();
    assert!(s.leases().acquire(&job_lease).unwrap().is_none(), "parked while its partitions run");
    let part_lease = s.leases().acquire(&broadcasts::part_lease(&job.tenant, &job.id, 0)).unwrap().unwrap();
    let mut part = Part { app: "a".into(), ..Part::default() };
    outcomes.iter().for_each(|(_, o)| part.counts.record(o));
    part.cursor = outcomes.last().map(|(c, _)| c.clone());
    let at = (job.tenant.as_str(), job.id.as_str(), 0);
    s.broadcasts().commit(&part_lease, at, &part, outcomes).unwrap();
    let Some(completed_ms) = finish else { return };
    s.broadcasts().finish(&part_lease, at, &part).unwrap();
    let lease = s.leases().acquire(&job_lease).unwrap().expect("a partition done frees the job's lease");
    let JobState::Done(done, mut report) = s.broadcasts().job_state(&job.tenant, &job.id).unwrap() else {
        panic!("done")
    };
    report.completed_ms = Some(completed_ms);
    s.broadcasts().complete(&lease, &done, &report).unwrap();
}

use herald_storage::broadcasts::{self, JobState, Part};
use herald_storage::deliveries::{ClientOutcome, Job, JobApp, Report, State};

fn a_job(id: &str, at: u64) -> Job {
    Job {
        id: id.into(),
        tenant: "acme".into(),
        notification_json: "{}".into(),
        apps: vec![JobApp { app: "a".into(), cursor: None, done: false }],
        created_ms: at,
        read_mark: None,
        parts: 0,
        max_per_second: None,
    }
}

/// A job created with its partitions (as a topic send creates it, having
/// read the token index once for both the count and the cut) is running at
/// once: its partitions are offered, and its own lease stays parked, so no
/// engine reads the index again to split it.
#[tokio::test]
async fn a_job_created_with_its_partitions_is_not_split_again() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let job = a_job("n1", 1);
    let parts = [("a", None, Some("c5")), ("a", Some("c5"), None)].map(|(app, after, until)| Part {
        app: app.into(),
        after: after.map(Into::into),
        until: until.map(Into::into),
        ..Part::default()
    });
    let report = Report { id: "n1".into(), kind: "topic".into(), ..Report::default() };
    s.deliveries().create_job(&job, &report, &parts).unwrap();
    assert!(matches!(s.broadcasts().job_state("acme", "n1").unwrap(), JobState::Running));
    assert_eq!(s.broadcasts().job("acme", "n1").unwrap().unwrap().parts, 2);
    assert_eq!(s.broadcasts().parts("acme", "n1").unwrap(), parts);
    assert!(s.leases().acquire(&broadcasts::job_lease("acme", "n1")).unwrap().is_none(), "the job's lease is parked");
    for n in 0..2 {
        assert!(
            s.leases().acquire(&broadcasts::part_lease("acme", "n1", n)).unwrap().is_some(),
            "partition {n} offered"
        );
    }
    assert_eq!(s.deliveries().report("acme", "n1").unwrap().unwrap().kind, "topic");
}

/// A broadcast's partitions carry its counts while it runs (resends
/// included), and its completed report keeps them once the job is gone.
#[tokio::test]
async fn a_broadcast_reports_its_partitions_counts_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let failed =
        ClientOutcome { app: "a".into(), provider: "apns".into(), state: State::Failed, code: 500, message: None };
    let report = Report { id: "n1".into(), kind: "topic".into(), ..Report::default() };
    broadcast(&s, &a_job("n1", 1), &report, vec![("c2".into(), failed.clone())], None);
    let running = s.deliveries().report("acme", "n1").unwrap().unwrap();
    assert_eq!((running.total().failed, running.completed_ms), (1, None));
    assert_eq!(s.deliveries().outcomes("acme", "n1", 0, 5).unwrap(), vec![("c2".to_string(), failed.clone())]);

    broadcast(&s, &a_job("n2", 1), &report, vec![("c2".into(), failed.clone())], Some(9));
    let done = s.deliveries().report("acme", "n2").unwrap().unwrap();
    assert_eq!((done.total().failed, done.completed_ms), (1, Some(9)));
    assert!(s.broadcasts().job("acme", "n2").unwrap().is_none(), "the job is gone");
    assert!(s.broadcasts().parts("acme", "n2").unwrap().is_empty(), "and its partitions");
    assert!(s.deliveries().report("other", "n2").unwrap().is_none(), "another tenant sees nothing");
}

/// A write under a lease that moved on (its holder paused past it, another
/// took it) is refused, and so is a check of it; the new holder's goes through.
#[test]
fn a_write_under_a_lease_that_moved_on_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let report = Report { id: "n1".into(), kind: "topic".into(), ..Report::default() };
    broadcast(&s, &a_job("n1", 1), &report, Vec::new(), None);
    let name = broadcasts::part_lease("acme", "n1", 0);
    let old = s.leases().acquire(&name).unwrap();
    assert!(old.is_none(), "held already by the partition's run above");
    // As if the holder's lease expired and another engine took it.
    s.leases().free_all_mine().unwrap();
    let new = s.leases().acquire(&name).unwrap().unwrap();
    let stale = herald_storage::leases::Lease { epoch: new.epoch - 1, ..new.clone() };
    assert!(!s.leases().holds(&stale).unwrap());
    assert!(s.leases().holds(&new).unwrap());
    let part = Part { app: "a".into(), cursor: Some("z".into()), ..Part::default() };
    let refused = s.broadcasts().commit(&stale, ("acme", "n1", 0), &part, Vec::new());
    assert!(matches!(refused, Err(Error::Fenced(ref n)) if *n == name), "{refused:?}");
    assert_eq!(s.broadcasts().part("acme", "n1", 0).unwrap().unwrap().cursor, None, "nothing written");
    s.broadcasts().commit(&new, ("acme", "n1", 0), &part, Vec::new()).unwrap();
    assert_eq!(s.broadcasts().part("acme", "n1", 0).unwrap().unwrap().cursor.as_deref(), Some("z"));
}

/// The heartbeat renews the leases the engine still holds a `Lease` of; one
/// whose holder dropped it (its work died) expires, and can be taken again.
#[test]
fn a_lease_nobody_holds_any_more_expires() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = herald_storage::test_options(dir.path());
    opts.lease_ttl = std::time::Duration::from_millis(300);
    let s = Store::open(&opts).unwrap();
    let kept = s.leases().acquire("kept").unwrap().unwrap();
    drop(s.leases().acquire("dropped").unwrap().unwrap());
    for _ in 0..8 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(s.leases().heartbeat().unwrap(), 1, "only the kept lease is renewed");
    }
    assert_eq!(s.leases().holder("kept").unwrap().as_deref(), Some(s.node_id()));
    assert_eq!(s.leases().holder("dropped").unwrap(), None, "expired");
    assert!(s.leases().acquire("dropped").unwrap().is_some(), "and free to take");
    assert!(s.leases().holds(&kept).unwrap());
}

/// A claim can pass over the leases under some prefixes (the partitions of
/// tenants already running the most); `_` in a prefix is no wildcard.
#[test]
fn a_claim_passes_over_the_prefixes_it_avoids() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    for name in ["part/a_b/1", "part/axb/1", "part/c/1"] {
        let lease = s.leases().acquire(name).unwrap().unwrap();
        s.leases().release(&lease).unwrap();
    }
    let claimed = s.leases().claim_avoiding("part/", &["part/a_b/".to_string()]).unwrap().unwrap();
    assert_eq!(claimed.name, "part/axb/1");
    let avoid = ["part/c/".to_string(), "part/a_b/".to_string()];
    assert!(s.leases().claim_avoiding("part/", &avoid).unwrap().is_none(), "the rest is avoided");
    assert_eq!(s.leases().claim("part/").unwrap().unwrap().name, "part/a_b/1", "without avoiding, in name order");
}

/// On sled leases live in memory: a reopened store offers the partitions
/// of unfinished broadcasts again.
#[tokio::test]
async fn a_reopened_sled_store_offers_unfinished_partitions() {
    if herald_storage::test_on_postgres() {
        return; // PostgreSQL keeps leases in the database.
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        let report = Report { id: "n1".into(), kind: "topic".into(), ..Report::default() };
        broadcast(&s, &a_job("n1", 1), &report, Vec::new(), None);
        s.durable().await.unwrap();
    }
    let s = open(dir.path());
    let claimed = s.leases().claim("part/").unwrap().unwrap();
    assert_eq!(claimed.name, broadcasts::part_lease("acme", "n1", 0));
}

/// A tenant record for tests that list tenants (retention goes tenant by tenant).
fn tenant(s: &Store, id: &str) {
    let t = herald_storage::tenants::Tenant {
        id: id.into(),
        created_ms: 1,
        signing_key: s.seal(b"k", "test").unwrap(),
        key_id: "k1".into(),
    };
    let admin = User { id: format!("{id}-admin"), username: "admin".into(), ..User::default() };
    s.transact(|tx| tx.insert_tenant(&t, &admin)).unwrap();
}

#[test]
fn retention_deletes_old_reports_outcomes_and_attempts_and_keeps_the_rest() {
    use herald_storage::webhooks::{Attempt, OutboxEntry, Settle, Webhook};
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    tenant(&s, "acme");
    tenant(&s, "other");
    let (old, young, cutoff) = (1_000_000u64, 3_000_000u64, 2_000_000u64);
    let id_at = |ms: u64| ulid::Ulid::from_parts(ms, 7).to_string();
    let outcome =
        || ClientOutcome { app: "a".into(), provider: "apns".into(), state: State::Failed, code: 500, message: None };
    let report = |id: &str, kind: &str, at: u64, completed: Option<u64>| Report {
        id: id.into(),
        kind: kind.into(),
        created_ms: at,
        completed_ms: completed,
        ..Report::default()
    };
    for t in ["acme", "other"] {
        for (i, at) in [old, old + 1, young].into_iter().enumerate() {
            let id = id_at(at + i as u64);
            s.deliveries().finish_send(t, &report(&id, "client", at, Some(at)), &[("c1".into(), outcome())]).unwrap();
        }
    }
    // Broadcasts: an old finished one (with outcomes), an old one still running, a young one.
    let (done_old, running_old, done_young) = (id_at(old + 10), id_at(old + 11), id_at(young + 10));
    for (id, at, finished) in [(&done_old, old, true), (&running_old, old, false), (&done_young, young, true)] {
        let outcomes: Vec<(String, ClientOutcome)> = (0..1200).map(|c| (format!("c{c:05}"), outcome())).collect();
        broadcast(&s, &a_job(id, at), &report(id, "topic", at, None), outcomes, finished.then_some(at + 5));
    }
    // Webhook attempts: two old, one young.
    let hook = a_webhook(&s, "01WEBHOOK");
    s.transact(|tx| tx.insert_webhook("acme", &hook)).unwrap();
    let entry = OutboxEntry { event_id: "e".into(), body: "{}".into(), created_ms: 1, attempts: 0, next_attempt_ms: 0 };
    s.transact(|tx| tx.enqueue_event("acme", &hook.id, &entry)).unwrap();
    let (entry_key, _) = s.webhooks().pending("acme", &hook.id, 1).unwrap().remove(0);
    let lease = s.leases().acquire(&Webhook::lease_name("acme", &hook.id)).unwrap().unwrap();
    for at in [old, old + 1, young] {
        let attempt = Attempt {
            event_id: "e".into(),
            attempt: 1,
            at_ms: at,
            status: 500,
            duration_ms: 1,
            response: String::new(),
        };
        s.webhooks().settle(&lease, ("acme", &hook.id), &entry_key, &attempt, Settle::Retry(entry.clone())).unwrap();
    }
    assert_eq!(s.stored_reports().unwrap(), 9);

    let swept = s.sweep_reports(cutoff).unwrap();
    assert_eq!((swept.reports, swept.outcomes), (5, 1200), "two old sends per tenant and the old finished broadcast");
    for t in ["acme", "other"] {
        assert!(s.deliveries().report(t, &id_at(old)).unwrap().is_none());
        assert!(s.deliveries().report(t, &id_at(young + 2)).unwrap().is_some(), "a young send stays");
    }
    assert!(s.deliveries().report("acme", &done_old).unwrap().is_none());
    assert!(s.deliveries().outcomes("acme", &done_old, 0, 10).unwrap().is_empty(), "its outcomes went with it");
    assert!(s.deliveries().report("acme", &running_old).unwrap().is_some(), "a running broadcast keeps its report");
    assert_eq!(s.deliveries().outcomes("acme", &running_old, 0, 5000).unwrap().len(), 1200);
    assert!(s.deliveries().report("acme", &done_young).unwrap().is_some());
    assert_eq!(s.stored_reports().unwrap(), 4);
    assert_eq!(
        s.sweep_reports(cutoff).unwrap(),
        herald_storage::retention::Swept::default(),
        "a second pass finds nothing"
    );

    assert_eq!(s.stored_attempts().unwrap(), 3);
    assert_eq!(s.sweep_attempts(cutoff).unwrap().attempts, 2);
    let left = s.webhooks().attempts("acme", &hook.id, 0, 10).unwrap();
    assert_eq!(left.iter().map(|a| a.at_ms).collect::<Vec<_>>(), vec![young]);
}

/// PostgreSQL only: what the schema's version guards.
mod schema {
    use super::*;

    fn on_postgres(dir: &std::path::Path) -> Option<String> {
        herald_storage::test_options(dir).store_url
    }

    /// The engine's schema version: one per migration file.
    fn schema_version() -> i32 {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/pg/migrations");
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sql"))
            .count() as i32
    }

    #[test]
    fn an_engine_refuses_a_database_migrated_by_a_newer_one() {
        let dir = tempfile::tempdir().unwrap();
        let Some(url) = on_postgres(dir.path()) else { return };
        drop(open(dir.path()));
        let db = url.rsplit('/').next().unwrap();
        let cluster = herald_pgtemp::shared().unwrap();
        cluster.psql(db, "UPDATE herald_schema SET version = 99").unwrap();
        let refused = Store::open(&herald_storage::test_options(dir.path())).err().expect("refused");
        let engine = schema_version();
        assert!(matches!(refused, Error::SchemaTooNew { database: 99, engine: e } if e == engine), "{refused}");
        let text = refused.to_string();
        assert!(text.contains("99") && text.contains(&engine.to_string()), "names both versions: {text}");
    }

    #[test]
    fn engines_starting_together_migrate_once() {
        let dir = tempfile::tempdir().unwrap();
        let Some(url) = on_postgres(dir.path()) else { return };
        let opts = herald_storage::test_options(dir.path());
        std::thread::scope(|scope| {
            let starts: Vec<_> = (0..4).map(|_| scope.spawn(|| Store::open(&opts).map(drop))).collect();
            for s in starts {
                s.join().unwrap().unwrap();
            }
        });
        let db = url.rsplit('/').next().unwrap();
        let cluster = herald_pgtemp::shared().unwrap();
        let found = cluster.psql(db, "SELECT count(*) || ' ' || max(version) FROM herald_schema").unwrap();
        assert_eq!(found, format!("1 {}", schema_version()));
    }

    #[test]
    fn an_engine_with_another_master_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        if on_postgres(dir.path()).is_none() {
            return;
        }
        drop(open(dir.path()));
        let other = tempfile::tempdir().unwrap();
        let opts = StoreOptions {
            master_key_file: Some(other.path().join("other.key")),
            ..herald_storage::test_options(dir.path())
        };
        let refused = Store::open(&opts).err().expect("refused");
        assert!(refused.to_string().contains("master key"), "{refused}");
    }
}

/// Concurrent creations in one tenant insert at the end of the same index
/// pages: on PostgreSQL their serializable transactions conflict and run
/// again. Every one of them must still commit.
#[test]
fn sixteen_writers_creating_clients_in_one_tenant_all_commit() {
    use herald_storage::clients::Client;
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let per_writer = 150;
    std::thread::scope(|scope| {
        for _ in 0..16 {
            let s = &s;
            scope.spawn(move || {
                for _ in 0..per_writer {
                    let id = ulid::Ulid::generate().to_string();
                    let client = Client {
                        id: id.clone(),
                        app_name: "shop".into(),
                        lock_state: "NONE".into(),
                        ..Client::default()
                    };
                    s.clients().create("acme", &client).unwrap();
                    s.push_tokens().set("acme", &id, &token("shop", &id)).unwrap();
                }
            });
        }
    });
    assert_eq!(s.push_tokens().count_valid_of_app("acme", "shop").unwrap(), 16 * per_writer);
}

/// `close` leaves a snapshot of sled's page table covering every write, so
/// the next start reads it rather than replaying the log (sled 0.34 writes
/// one only as it opens); a sled store refuses work after it, and what it
/// held opens again (on either backend).
#[tokio::test]
async fn a_closed_store_leaves_a_snapshot_covering_its_writes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.apps().create("acme", &App { name: "first".into(), ..Default::default() }).unwrap();
        s.durable().await.unwrap();
    }
    // Opened again: sled's snapshot covers what the first run wrote.
    let s = open(dir.path());
    let at_open = (!herald_storage::test_on_postgres()).then(|| herald_storage::test_newest_snapshot(dir.path()));
    assert_ne!(at_open.as_deref(), Some(""), "sled wrote a snapshot as it opened");
    for i in 0..200 {
        s.apps().create("acme", &App { name: format!("app{i}"), ..Default::default() }).unwrap();
    }
    s.durable().await.unwrap();
    s.close().unwrap();
    if at_open.is_some() {
        assert!(matches!(s.apps().get("acme", "app1"), Err(Error::Unavailable(_))), "closed for good");
    }
    s.close().unwrap();
    drop(s);
    if let Some(at_open) = at_open {
        assert!(
            herald_storage::test_newest_snapshot(dir.path()) > at_open,
            "a snapshot newer than the start's: {at_open}"
        );
    }
    let s = open(dir.path());
    assert_eq!(s.apps().list("acme", 0, 1000).unwrap().1, 201);
}

/// A one-client send's record as the push engine hands it in.
fn send_record(id: &str, client: &str) -> herald_storage::deliveries::SendRecord {
    use herald_storage::deliveries::{ClientOutcome, Report, SendRecord, State};
    let outcome =
        ClientOutcome { app: "shop".into(), provider: "apns".into(), state: State::Sent, code: 200, message: None };
    let mut report =
        Report { id: id.into(), kind: "client".into(), recipient: format!("u/{client}"), ..Report::default() };
    report.record(&outcome);
    SendRecord { report, outcomes: vec![(client.into(), outcome)] }
}

/// Sends handed in are read back at once, before they are written; on sled
/// each tenant's run of close ids is written as one record (a lone id as
/// its own), on PostgreSQL each at once; a tenant sees none of another's,
/// even with their ids between its own; and they are still there after the
/// store closes and opens again.
#[tokio::test]
async fn sends_handed_in_are_read_at_once_and_written_together() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    // Written once the test waits for them, not when its millisecond ends.
    s.test_hold_send_records(true).unwrap();
    let first = ulid::Ulid::generate();
    let ids: Vec<String> = (0..40).map(|i| ulid::Ulid(first.0 + 2 * i).to_string()).collect();
    let lone = ulid::Ulid(first.0 + 10_000).to_string();
    for (i, id) in ids.iter().chain([&lone]).enumerate() {
        s.deliveries().record_send("acme", send_record(id, &format!("c{i}"))).await.unwrap();
        let report = s.deliveries().report("acme", id).unwrap().expect("read back at once");
        assert_eq!(report.recipient, format!("u/c{i}"));
        assert_eq!(s.deliveries().outcomes("acme", id, 0, 5).unwrap()[0].0, format!("c{i}"));
        assert!(s.deliveries().report("other", id).unwrap().is_none(), "another tenant sees nothing");
    }
    // Another tenant's sends, their ids between the first tenant's.
    let others: Vec<String> = (0..5).map(|i| ulid::Ulid(first.0 + 2 * i + 1).to_string()).collect();
    for id in &others {
        s.deliveries().record_send("other", send_record(id, "theirs")).await.unwrap();
        assert!(s.deliveries().report("acme", id).unwrap().is_none(), "the first tenant sees none of them");
    }
    s.durable().await.unwrap();
    let records = s.test_send_records().unwrap();
    if herald_storage::test_on_postgres() {
        assert_eq!(records, (46, 0), "each send in its own record");
    } else {
        assert_eq!(records, (1, 2), "each tenant's run in one record, the lone send in its own");
    }
    for id in &others {
        assert_eq!(s.deliveries().report("other", id).unwrap().unwrap().recipient, "u/theirs");
        assert!(s.deliveries().report("acme", id).unwrap().is_none(), "still none of them once written");
    }
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(s.deliveries().report("acme", id).unwrap().unwrap().recipient, format!("u/c{i}"));
    }
    assert_eq!(s.stored_reports().unwrap(), 46);

    let more = ulid::Ulid(first.0 + 20_000).to_string();
    s.deliveries().record_send("acme", send_record(&more, "c-last")).await.unwrap();
    s.close().unwrap();
    let late_id = ulid::Ulid(first.0 + 30_000).to_string();
    let late = s.deliveries().record_send("acme", send_record(&late_id, "late")).await;
    assert_eq!(late.is_err(), !herald_storage::test_on_postgres(), "refused once closed (sled)");
    drop(s);
    let s = open(dir.path());
    for id in ids.iter().chain([&lone, &more]) {
        assert!(s.deliveries().report("acme", id).unwrap().is_some(), "{id} after closing");
    }
}

/// Runs gathered while other sends were in flight interleave: records
/// {0, 2} and {1, 3}. Each id is found in whichever holds it.
#[test]
fn interleaved_records_each_find_their_sends() {
    use herald_storage::deliveries::BatchRecord;
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let first = ulid::Ulid::from_parts(1_000_000, 40);
    let id = |i: u128| ulid::Ulid(first.0 + i).to_string();
    let record = |of: [u128; 2]| BatchRecord::of(of.map(|i| (id(i), send_record(&id(i), &format!("c{i}")))).to_vec());
    s.deliveries().finish_batch("acme", &record([0, 2]).unwrap()).unwrap();
    s.deliveries().finish_batch("acme", &record([1, 3]).unwrap()).unwrap();
    for i in 0..4 {
        let report = s.deliveries().report("acme", &id(i)).unwrap();
        assert_eq!(report.map(|r| r.recipient), Some(format!("u/c{i}")), "send {i}");
    }
    assert!(s.deliveries().report("acme", &id(4)).unwrap().is_none());
}

/// A webhook of tenant `acme` taking every event.
fn a_webhook(s: &Store, id: &str) -> herald_storage::webhooks::Webhook {
    herald_storage::webhooks::Webhook {
        id: id.into(),
        filter: "*".into(),
        callback_url: "http://127.0.0.1:9/".into(),
        auth_type: "NONE".into(),
        auth_username: None,
        auth_password: None,
        active: true,
        secret: s.seal(b"whsec", "w").unwrap(),
        created_ms: 1,
        modified_ms: 1,
        created_by: "t".into(),
        modified_by: "t".into(),
        disabled_reason: None,
    }
}

/// Events queued in a transaction: exactly those of the run that commits.
/// The first transaction after a webhook is written runs twice (its list
/// of the tenant's webhooks is stale, so it is listed again) and queues its
/// event once; a transaction that fails queues nothing; a webhook written
/// after a list is seen by the next transaction; the targets are told of
/// committed writes only.
#[test]
fn events_queue_with_the_transaction_that_commits_only() {
    use herald_storage::webhooks::OutboxEntry;
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let woken = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let w = woken.clone();
    s.on_outbox_write(move |t, id| w.lock().unwrap().push(format!("{t}/{id}")));
    s.transact(|tx| tx.insert_webhook("acme", &a_webhook(&s, "01A"))).unwrap();
    let entry = OutboxEntry { event_id: "e".into(), body: "{}".into(), created_ms: 1, attempts: 0, next_attempt_ms: 0 };
    let runs = std::sync::atomic::AtomicU32::new(0);
    let queue = |tx: &herald_storage::Tx| {
        runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for hook in tx.webhooks_of("acme")?.iter() {
            tx.enqueue_event("acme", &hook.id, &entry)?;
        }
        Ok::<_, Error>(())
    };
    s.transact(queue).unwrap();
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 2, "run again once its list was made");
    assert_eq!(s.webhooks().pending("acme", "01A", 10).unwrap().len(), 1, "queued once");

    let failed: Result<(), Error> = s.transact(|tx| {
        queue(tx)?;
        Err(Error::Conflict("refused"))
    });
    assert!(failed.is_err());
    assert_eq!(s.webhooks().pending("acme", "01A", 10).unwrap().len(), 1, "a failed transaction queues nothing");

    s.transact(|tx| tx.insert_webhook("acme", &a_webhook(&s, "01B"))).unwrap();
    s.transact(queue).unwrap();
    assert_eq!(s.webhooks().pending("acme", "01A", 10).unwrap().len(), 2);
    assert_eq!(s.webhooks().pending("acme", "01B", 10).unwrap().len(), 1, "the new webhook is matched");
    assert_eq!(*woken.lock().unwrap(), ["acme/01A", "acme/01A", "acme/01B"]);
    assert!(s.transact(|tx| tx.webhooks_of("other")).unwrap().is_empty(), "no webhook of another tenant");
}
