//! Topic broadcasts: durable fan-out jobs across apps and providers, and their
//! resumption after `kill -9`.

use crate::common;
use crate::common::*;
use herald_sim::{Faults, Provider, ProviderFaults, StatusFault};
use herald_storage::push_tokens::PushProvider;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

fn topic(category: &str) -> Value {
    json!({"category": category, "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"title": "All", "body": "hands"}}})
}

#[tokio::test]
async fn a_topic_reaches_every_valid_client_of_every_app() {
    reaches_every_valid_client(PushWorld::start().await).await;
}

/// The same broadcast cut into partitions of two tokens (several per app,
/// run side by side): every client once, the report's counts the sum.
#[tokio::test]
async fn a_broadcast_in_many_partitions_reaches_each_client_once() {
    reaches_every_valid_client(PushWorld::start_with(|c| c.push.partition_size = 2).await).await;
}

async fn reaches_every_valid_client(w: PushWorld) {
    let mut second = w.creds.app_json.clone();
    second["categories"] = json!(["chat", "tms"]);
    let (st, _) = w.server.call(Method::POST, "/v1/tenants/acme/apps/second", Some(&w.admin), Some(second)).await;
    assert_eq!(st, StatusCode::CREATED);
    let mut only_pay = w.creds.app_json.clone();
    only_pay["categories"] = json!(["payment"]);
    w.server.call(Method::POST, "/v1/tenants/acme/apps/paying", Some(&w.admin), Some(only_pay)).await;
    for i in 0..5 {
        w.client("demo", "user1", &format!("APNS:{}", apns_token(i))).await;
        w.client("second", "user2", &format!("FCM:fcm-{i}")).await;
    }
    w.client("second", "user3", "HPK:hms-1").await;
    w.client("demo", "user3", "FCM:dead-1").await;
    w.client("paying", "user3", "FCM:not-for-chat").await;

    let (st, r) = w.send(topic("chat")).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let entries = r.as_array().unwrap();
    assert_eq!(entries.len(), 3, "one entry per app: {r}");
    let by_app = |name: &str| entries.iter().find(|e| e["metadata"]["appName"] == name).unwrap().clone();
    assert_eq!(by_app("demo")["metadata"]["targeted"], 6);
    assert_eq!(by_app("second")["metadata"]["targeted"], 6);
    assert_eq!(by_app("paying")["isSuccessful"], false);
    assert_eq!(by_app("demo")["topic"], "news");
    let id = entries[0]["notificationId"].as_str().unwrap();
    assert!(entries.iter().all(|e| e["notificationId"] == id));

    let report = w.wait_report(id, 20).await;
    assert_eq!(report["state"], "COMPLETED", "{report}");
    assert_eq!(report["counts"]["targeted"], 12);
    assert_eq!(report["counts"]["sent"], 11, "{report}");
    assert_eq!(report["counts"]["invalid"], 1);
    assert_eq!(report["counts"]["pending"], 0);
    assert_eq!(report["counts"]["resent"], 0, "nothing sent twice without a crash: {report}");
    assert_eq!(report["byProvider"]["apns"]["sent"], 5);
    assert_eq!(report["byProvider"]["fcm"]["sent"], 5);
    assert_eq!(report["byProvider"]["hms"]["sent"], 1);
    let s = w.sims.stats();
    assert_eq!((s.apns.accepted, s.fcm.accepted, s.hms.accepted), (5, 5, 1));
    assert!(s.fcm.by_reason.contains_key("UNREGISTERED"));
    let (_, page) = w
        .server
        .call(Method::GET, &format!("/v1/tenants/acme/push_notification/{id}?page=1&page_size=5"), Some(&w.admin), None)
        .await;
    // A broadcast's report lists the clients it did not reach, beside the counts.
    let clients = page["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 1, "{page}");
    assert_eq!(clients[0]["state"], "INVALID");
}

/// A topic none of the tenant's apps accepts: each app's entry says why,
/// and the broadcast, with nothing to send, completes at once (its job had
/// stayed running for ever, waiting for partitions it never had).
#[tokio::test]
async fn a_topic_no_app_accepts_completes_with_nothing_sent() {
    let w = PushWorld::start().await;
    let mut payments_only = w.creds.app_json.clone();
    payments_only["categories"] = json!(["payment"]);
    let (st, r) = w.server.call(Method::PUT, "/v1/tenants/acme/apps/demo", Some(&w.admin), Some(payments_only)).await;
    assert_eq!(st, StatusCode::OK, "{r}");
    w.client("demo", "user1", &format!("APNS:{}", apns_token(1))).await;

    let (st, r) = w.send(topic("chat")).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let entries = r.as_array().unwrap();
    assert_eq!(entries.len(), 1, "{r}");
    assert_eq!(entries[0]["isSuccessful"], false, "{r}");
    let id = entries[0]["notificationId"].as_str().unwrap();
    let report = w.wait_report(id, 10).await;
    assert_eq!(report["state"], "COMPLETED", "{report}");
    assert_eq!((report["counts"]["targeted"].as_u64(), report["counts"]["sent"].as_u64()), (Some(0), Some(0)));
    assert_eq!(w.sims.stats().apns.accepted, 0);
}

/// Seeds `n` APNs clients of app `demo` straight into a stopped Herald's storage.
fn seed(data_dir: &std::path::Path, n: u64) -> Vec<String> {
    let tokens = seed_clients(data_dir, n, |i| (PushProvider::Apns, apns_token(1_000_000 + i)));
    tokens.into_iter().map(|(_, token)| token).collect()
}

async fn report(http: &reqwest::Client, h: &Herald, token: &str, id: &str) -> Value {
    http.get(format!("{}/v1/tenants/acme/push_notification/{id}", h.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Simulators and a stopped engine's data directory: tenant acme's app
/// `demo` (made through the API) and `n` clients seeded straight into storage.
struct Seeded {
    _dir: tempfile::TempDir,
    sims: herald_sim::Simulators,
    env: Vec<(&'static str, String)>,
    data: std::path::PathBuf,
    http: reqwest::Client,
    tokens: Vec<String>,
}

async fn seeded(n: u64) -> Seeded {
    let dir = tempfile::tempdir().unwrap();
    let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.path().join("certs"))).await.unwrap();
    let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();
    let env = sim_env(&sims, dir.path());
    let data = dir.path().join("data");
    let http = crate::common::http_client();
    let h = Herald::start(&data, &env);
    let token = h.create_tenant(&http, "acme").await;
    let r = http
        .post(format!("{}/v1/tenants/acme/apps/demo", h.base))
        .bearer_auth(&token)
        .json(&creds.app_json)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    h.kill9();
    let tokens = seed(&data, n);
    Seeded { _dir: dir, sims, env, data, http, tokens }
}

/// The report of broadcast `id` once completed, or as it is after `secs`.
async fn completed(http: &reqwest::Client, h: &Herald, token: &str, id: &str, secs: u64) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let r = report(http, h, token, id).await;
        if r["state"] == "COMPLETED" || std::time::Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_broadcast_killed_mid_way_completes_after_restart() {
    const N: u64 = 10_000;
    let Seeded { _dir, sims, env, data, http, tokens } = seeded(N).await;

    // Slow the simulator down so the kill lands mid-broadcast.
    sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(40), max_concurrent_streams: Some(40), ..Default::default() },
        ..Default::default()
    });
    let h = Herald::start(&data, &env);
    let token = h.admin_token(&http).await;
    let answer = h.send(&http, &token, &topic("chat")).await;
    assert_eq!(answer[0]["metadata"]["targeted"], N);
    let id = answer[0]["notificationId"].as_str().unwrap().to_string();
    loop {
        let accepted = sims.stats().apns.accepted;
        if accepted >= N / 10 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    h.kill9();
    let before_restart = sims.stats().apns.accepted;
    assert!(before_restart < N, "the kill landed mid-broadcast ({before_restart} of {N})");

    sims.set_faults(Faults::default());
    let h = Herald::start(&data, &env);
    let token = h.admin_token(&http).await;
    let done = completed(&http, &h, &token, &id, 120).await;
    h.kill9();
    assert_eq!(done["state"], "COMPLETED", "{done}");
    let accepted = sims.accepted(Provider::Apns);
    let missing = tokens.iter().filter(|t| !accepted.contains_key(*t)).count();
    let resent = accepted.values().filter(|c| **c > 1).count();
    println!("broadcast of {N}: {before_restart} accepted before SIGKILL, {missing} missing, {resent} delivered twice after the restart");
    assert_eq!(missing, 0, "every token delivered at least once: {done}");
    assert_eq!(done["counts"]["sent"], N, "every client counted exactly once: {done}");
    assert_eq!(done["counts"]["targeted"], N);
}

/// Apple refuses a newer provider token for 20 minutes after one it has
/// seen. An engine killed right after its first request takes up that
/// request's token on restart: the token was durable before it was sent.
/// (Restarted in a later second, where a token signed anew would be newer
/// than Apple's, so all its sends would be refused.)
#[tokio::test]
async fn the_provider_token_apple_saw_outlives_a_kill() {
    // One read batch (256): nothing the partition writes after its first requests is flushed before the kill.
    const N: u64 = 200;
    let Seeded { _dir, sims, env, data, http, .. } = seeded(N).await;

    // Answers spread over 3 s: Apple has seen the token in the first, while
    // the batch (settled, written and flushed once all are in) is far from done.
    sims.set_faults(Faults {
        apns: ProviderFaults { latency_jitter_ms: Some(3_000), seed: Some(1), ..Default::default() },
        ..Default::default()
    });
    let h = Herald::start(&data, &env);
    let token = h.admin_token(&http).await;
    let id = h.send(&http, &token, &topic("chat")).await[0]["notificationId"].as_str().unwrap().to_string();
    while sims.stats().apns.accepted == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    h.kill9();
    let unix_secs = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let killed_at = unix_secs();
    while unix_secs() == killed_at {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    sims.set_faults(Faults::default());
    let h = Herald::start(&data, &env);
    let token = h.admin_token(&http).await;
    let done = completed(&http, &h, &token, &id, 60).await;
    h.kill9();
    let refusals = sims.stats().apns.by_reason;
    assert_eq!(refusals.get("TooManyProviderTokenUpdates"), None, "the restarted engine signed a new token: {done}");
    assert_eq!(done["state"], "COMPLETED", "{done}");
    assert_eq!(done["counts"]["sent"], N, "{done}");
}

/// A broadcast token outlasts a fault streak longer than an interactive send's
/// five tries (the long fault soak lost 4 of 200 000 tokens to such streaks).
#[tokio::test]
async fn a_broadcast_token_outlasts_a_long_fault_streak() {
    let w = PushWorld::start().await;
    w.client("demo", "kim", "FCM:fcm-streak").await;
    let streak = ProviderFaults {
        status: vec![StatusFault { status: 503, count: Some(7), retry_after: Some(0), ..Default::default() }],
        ..Default::default()
    };
    w.sims.set_faults(Faults { fcm: streak, ..Default::default() });
    let (st, r) = w.send(topic("chat")).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let id = r[0]["notificationId"].as_str().unwrap();
    let report = w.wait_report(id, 30).await;
    assert_eq!(report["counts"]["sent"], 1, "{report}");
    let s = w.sims.stats();
    assert_eq!((s.fcm.rejected, s.fcm.accepted), (7, 1));
}

/// A broadcast that fills every stream of the pool's one shared connection
/// does not hold up an interactive send: it goes out on a connection of its own.
#[tokio::test]
async fn an_interactive_send_does_not_wait_behind_a_running_broadcast() {
    let w = PushWorld::start_with(|c| c.push.limits.max_connections = 1).await;
    for i in 0..40 {
        w.client("demo", &format!("fan{i}"), &format!("APNS:{}", apns_token(7000 + i))).await;
    }
    let vip = w.client("demo", "vip", &format!("APNS:{}", apns_token(9999))).await;
    // Four streams per connection, 250 ms per answer: the broadcast's 41
    // tokens take about 3.5 s through the three bulk streams.
    w.sims.set_faults(Faults {
        apns: ProviderFaults { max_concurrent_streams: Some(4), latency_ms: Some(250), ..Default::default() },
        ..Default::default()
    });
    let (st, r) = w.send(topic("chat")).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let id = r[0]["notificationId"].as_str().unwrap().to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    let (st, r) = w.send(to_client("vip", &vip, json!({"title": "Payment", "body": "received"}))).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    assert_eq!(r[0]["isSuccessful"], true, "{r}");
    let (_, running) =
        w.server.call(Method::GET, &format!("/v1/tenants/acme/push_notification/{id}"), Some(&w.admin), None).await;
    assert_ne!(running["state"], "COMPLETED", "the interactive send was delivered while the broadcast ran: {running}");
    assert!(w.sims.stats().apns.connections >= 2, "the interactive send had a connection of its own");
    assert_eq!(w.wait_report(&id, 30).await["counts"]["sent"], 41);
}

/// Concurrent broadcasts share one budget of notifications in flight
/// (`bulk_in_flight`) rather than each having its own.
#[tokio::test]
async fn broadcasts_share_one_budget_of_notifications_in_flight() {
    const BUDGET: usize = 4;
    const LATENCY_MS: u64 = 200;
    let w = PushWorld::start_with(|c| c.push.bulk_in_flight = BUDGET).await;
    for i in 0..12 {
        w.client("demo", &format!("fan{i}"), &format!("APNS:{}", apns_token(8000 + i))).await;
    }
    w.sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(LATENCY_MS), ..Default::default() },
        ..Default::default()
    });
    let (first, second) = tokio::join!(w.send(topic("chat")), w.send(topic("chat")));
    for (st, r) in [&first, &second] {
        assert_eq!(*st, StatusCode::ACCEPTED, "{r}");
        let report = w.wait_report(r[0]["notificationId"].as_str().unwrap(), 30).await;
        assert_eq!(report["counts"]["sent"], 12, "{report}");
    }
    // A permit comes back only with an answer, which the simulator gives
    // LATENCY_MS after receiving the request: so within any shorter window it
    // received at most BUDGET requests.
    let mut received: Vec<u64> = w.sims.requests(Provider::Apns, 100).iter().map(|r| r.received_ms).collect();
    assert_eq!(received.len(), 24);
    received.sort();
    let most =
        received.iter().map(|&t| received.iter().filter(|&&u| u >= t && u < t + LATENCY_MS * 3 / 4).count()).max();
    assert_eq!(most, Some(BUDGET), "requests received within {} ms: {received:?}", LATENCY_MS * 3 / 4);
}

/// Supervision: a broadcast whose fan-out fails on every restart is given up
/// after the restart limit (`FAILED` with the reason, a `BROADCAST_FAILED`
/// event), and meanwhile another tenant's one-client sends all succeed. The
/// report stays `RUNNING` until its working partition, slower than the
/// restarts, has sent too.
#[tokio::test]
async fn a_broadcast_failing_on_every_restart_ends_failed_while_other_tenants_send() {
    let w = PushWorld::start_with(|c| c.webhooks.allow_private = true).await;
    let s = &w.server;
    // App `zbroken`, a partition of its own: its APNs key cannot be unsealed,
    // so the fan-out fails each time it reaches it.
    let store = &s.running.as_ref().unwrap().engine.store;
    let junk = store.seal(b"junk", "another field's context").unwrap();
    let broken = herald_storage::apps::App {
        name: "zbroken".into(),
        categories: vec!["chat".into()],
        ios_apns_private_key: Some(junk),
        ios_apns_team_id: Some("TEAM123456".into()),
        ios_apns_key_id: Some("KEY1234567".into()),
        ios_bundle_id: Some("com.example.zbroken".into()),
        ..Default::default()
    };
    store.apps().create("acme", &broken).unwrap();
    w.client("demo", "dora", &format!("APN:{}", apns_token(600))).await;
    for i in 0..3 {
        w.client("zbroken", &format!("bob{i}"), &format!("APN:{}", apns_token(700 + i))).await;
    }
    let receiver = common::receiver::Receiver::start(vec![]).await;
    let hook = json!({"filter": "type=push", "callbackUrl": receiver.url});
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/webhooks", Some(&w.admin), Some(hook)).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");

    // Another tenant with a client of its own.
    s.create_tenant("other").await;
    let other = s.admin_token("other").await;
    let (st, b) =
        s.call(Method::POST, "/v1/tenants/other/apps/demo", Some(&other), Some(w.creds.app_json.clone())).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let (client, _) = s.register_client("other", &other, "demo").await;
    let (st, b) = s
        .call(Method::PUT, &format!("/v1/tenants/other/users/olga/clients/{client}"), Some(&other), Some(json!({})))
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let token = json!({"appName": "demo", "pushToken": "FCM:fcm-olga"});
    let (st, b) =
        s.call(Method::PUT, &format!("/v1/tenants/other/clients/{client}/pushtoken"), Some(&other), Some(token)).await;
    assert_eq!(st, StatusCode::OK, "{b}");

    // Demo's one APNs send outlasts zbroken's restarts (about 6 s of backoff);
    // the other tenant sends through FCM, unslowed.
    w.sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(9_000), ..Default::default() },
        ..Default::default()
    });
    let (st, r) = w.send(topic("chat")).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let id = r[0]["notificationId"].as_str().unwrap().to_string();
    let to_other = json!({"category": "chat", "recipient": {"tenantId": "other", "userId": "olga", "astClientId": client}, "payload": {"message": {"body": "hi"}}});
    let (mut sent, mut failed) = (0, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let report = loop {
        let (st, r) = s
            .call(Method::POST, "/v1/tenants/other/push_notification/send", Some(&other), Some(to_other.clone()))
            .await;
        if st == StatusCode::ACCEPTED && r[0]["isSuccessful"] == true {
            sent += 1;
        } else {
            failed += 1;
            eprintln!("other tenant's send: {st} {r}");
        }
        let (_, report) =
            s.call(Method::GET, &format!("/v1/tenants/acme/push_notification/{id}"), Some(&w.admin), None).await;
        if report["state"] != "RUNNING" {
            break report;
        }
        assert!(std::time::Instant::now() < deadline, "the broadcast was never given up: {report}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    eprintln!("other tenant: {sent} sends succeeded, {failed} failed while the broadcast failed; report {report}");
    assert_eq!(report["state"], "FAILED", "{report}");
    assert!(report["completedAt"].is_u64(), "FAILED only once every partition ended: {report}");
    assert!(report["failure"].as_str().unwrap().contains("failed on every restart"), "{report}");
    assert_eq!(report["byApp"]["demo"]["sent"], 1, "the working app was served before the broken one: {report}");
    assert_eq!(failed, 0, "another tenant's sends all succeeded");
    assert!(sent >= 10, "and kept going throughout ({sent})");
    let events = receiver.wait_for(1, 10).await;
    let failed_event = events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&e.body).ok())
        .any(|e| e["event"] == "BROADCAST_FAILED" && e["data"]["notificationId"] == id.as_str());
    assert!(failed_event, "a BROADCAST_FAILED event was delivered");
}

/// Invariant: a client's self-update never undoes a concurrent lock or
/// unlock: after both, the client is in the state of the lock call, and a
/// broadcast never targets a locked client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_self_update_never_undoes_a_concurrent_lock() {
    let w = PushWorld::start().await;
    let s = &w.server;
    let id = w.client("demo", "carol", "FCM:fcm-carol").await;
    let path = format!("/v1/tenants/acme/clients/{id}");
    for round in 0..40 {
        let lock = round % 2 == 0;
        let update = s.call(Method::PUT, &path, Some(&w.admin), Some(json!({"appVersion": format!("1.{round}")})));
        let (st, b) = if lock {
            let body = json!({"astClientId": id, "lockReason": "stolen"});
            let change = s.call(Method::POST, "/v1/tenants/acme/clients/lock", Some(&w.admin), Some(body));
            let ((st, b), _) = tokio::join!(change, update);
            (st, b)
        } else {
            let unlock = format!("/v1/tenants/acme/clients/{id}/unlock");
            let change = s.call(Method::POST, &unlock, Some(&w.admin), None);
            let ((st, b), _) = tokio::join!(change, update);
            (st, b)
        };
        assert_eq!(st, StatusCode::NO_CONTENT, "round {round}: {b}");
        let (_, detail) = s.call(Method::GET, &path, Some(&w.admin), None).await;
        let expected = if lock { "LOCKED" } else { "NONE" };
        assert_eq!(detail["lockState"], expected, "round {round}: {detail}");
        assert_eq!(detail["appVersion"], format!("1.{round}"), "round {round}: the update stands too");
    }
    // The last round unlocked; lock once more, racing an update, then broadcast.
    let body = json!({"astClientId": id, "lockReason": "stolen"});
    let lock = s.call(Method::POST, "/v1/tenants/acme/clients/lock", Some(&w.admin), Some(body));
    let update = s.call(Method::PUT, &path, Some(&w.admin), Some(json!({"appVersion": "2.0"})));
    let ((st, b), _) = tokio::join!(lock, update);
    assert_eq!(st, StatusCode::NO_CONTENT, "{b}");
    let (st, r) = w.send(topic("chat")).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    assert_eq!(r[0]["metadata"]["targeted"], 0, "a locked client is never targeted: {r}");
}

/// The value of `herald_actors_live{kind=...}` in a `/metrics` text.
fn live_actors(metrics: &str, kind: &str) -> f64 {
    let prefix = format!("herald_actors_live{{kind=\"{kind}\"}} ");
    metrics.lines().find_map(|l| l.strip_prefix(prefix.as_str())).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0)
}

/// The value of `herald_pool_connections{provider="apns"}` in a `/metrics` text.
fn apns_connections(metrics: &str) -> f64 {
    let prefix = "herald_pool_connections{provider=\"apns\"} ";
    metrics.lines().find_map(|l| l.strip_prefix(prefix)).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0)
}

/// A tenant's actor stops once idle (`--tenant-idle-stop-s`), which the
/// `herald_actors_live` gauge shows, taking its provider connections with it
/// (it owns its channels and pools); the next send starts it again.
#[tokio::test]
async fn an_idle_tenant_actor_stops_and_the_next_send_starts_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.path().join("certs"))).await.unwrap();
    let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();
    let mut env = sim_env(&sims, dir.path());
    env.push(("HERALD_TENANT_IDLE_STOP_S", "2".into()));
    let data = dir.path().join("data");
    let http = crate::common::http_client();
    acme_with_apns_clients(&data, &env, &creds, 5, 900).await;
    let h = Herald::start(&data, &env);
    let admin = h.login(&http, "acme").await;
    let metrics = || async { http.get(format!("{}/metrics", h.base)).send().await.unwrap().text().await.unwrap() };
    for round in 0..2 {
        let r = http.post(format!("{}/v1/tenants/acme/push_notification/send", h.base)).bearer_auth(&admin);
        let answer: Value = r.json(&topic("chat")).send().await.unwrap().json().await.unwrap();
        let id = answer[0]["notificationId"].as_str().unwrap().to_string();
        assert_eq!(live_actors(&metrics().await, "tenant"), 1.0, "round {round}: the send started the tenant's actor");
        let done = report_when_done(&http, &h, &admin, &id).await;
        assert_eq!(done["counts"]["sent"], 5, "round {round}: the send works: {done}");
        assert!(apns_connections(&metrics().await) >= 1.0, "round {round}: the send connected to APNs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while live_actors(&metrics().await, "tenant") > 0.0 || apns_connections(&metrics().await) > 0.0 {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: the idle tenant's actor or its pool lived on"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(live_actors(&metrics().await, "root"), 1.0);
    }
}

/// Polls a broadcast's report until it is no longer running (at most 30 s).
async fn report_when_done(http: &reqwest::Client, h: &Herald, token: &str, id: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let r = report(http, h, token, id).await;
        if r["state"] != "RUNNING" || std::time::Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A tenant with requests keeps its actor, and what the engine caches of it
/// (its signing key here) lives no longer than that actor: once the tenant is
/// idle both go, and its next request brings both back.
#[tokio::test]
async fn a_tenants_caches_live_no_longer_than_its_actor() {
    let s = TestServer::start_with(|c| c.push.tenant_idle_stop = Some(std::time::Duration::from_secs(1))).await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let engine = s.running.as_ref().unwrap().engine.clone();
    for round in 0..2 {
        let (st, _) = s.call(Method::GET, "/v1/tenants/acme/apps", Some(&admin), None).await;
        assert_eq!(st, StatusCode::OK, "round {round}");
        assert!(engine.keys.holds("acme"), "round {round}: the request cached the tenant's key");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while engine.keys.holds("acme") {
            assert!(std::time::Instant::now() < deadline, "round {round}: the idle tenant's key stayed cached");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    s.shutdown().await;
}

/// A one-client send in flight counts as its tenant's activity: the actor
/// (and with it the channels the send goes through and the tenant's caches)
/// does not stop idle under a send slower than the idle period, and stops
/// once the send has ended.
#[tokio::test]
async fn a_send_in_flight_keeps_its_tenant_actor_from_stopping_idle() {
    let w = PushWorld::start_with(|c| c.push.tenant_idle_stop = Some(std::time::Duration::from_secs(1))).await;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    let engine = w.server.running.as_ref().unwrap().engine.clone();
    w.sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(3_000), ..Default::default() },
        ..Default::default()
    });
    let body = to_client("alice", &client, json!({"body": "slow"}));
    let send = w.server.call(Method::POST, "/v1/tenants/acme/push_notification/send", Some(&w.admin), Some(body));
    let watch = async {
        // Twice the idle period into the send, the tenant's caches are still there.
        tokio::time::sleep(std::time::Duration::from_millis(2_000)).await;
        engine.keys.holds("acme")
    };
    let ((st, answer), held) = tokio::join!(send, watch);
    assert_eq!(st, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer[0]["isSuccessful"], true, "the slow send went through: {answer}");
    assert!(held, "the tenant's actor stopped idle under a send in flight");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.keys.holds("acme") {
        assert!(std::time::Instant::now() < deadline, "the tenant's actor did not stop once the send ended");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// HMS takes up to 1000 tokens per request: a broadcast to 10 000 HMS tokens,
/// 1 % of them dead, is ten requests (and one for the access token); the
/// partial answers mark exactly the dead tokens invalid, retry nothing, and
/// the report counts every other token sent.
#[tokio::test]
async fn an_hms_broadcast_goes_in_requests_of_a_thousand_tokens() {
    const N: u64 = 10_000;
    let ChildWorld { sims, creds, env, data, dir: _dir } = ChildWorld::start().await;
    let http = crate::common::http_client();
    let dead = |i: u64| i % 100 == 37;
    let seeded = acme_with_clients(&data, &env, &creds, N, |i| {
        (PushProvider::Hpk, if dead(i) { format!("dead-hms-{i}") } else { format!("hms-{i}") })
    })
    .await;

    let h = Herald::start(&data, &env);
    let token = h.admin_token(&http).await;
    sims.reset();
    let answer = h.send(&http, &token, &topic("chat")).await;
    let done = h.wait_report(&http, &token, answer[0]["notificationId"].as_str().unwrap(), 60).await;
    assert_eq!(done["state"], "COMPLETED", "{done}");
    let stats = sims.stats().hms;
    println!(
        "HMS broadcast of {N} tokens: {} requests to the simulator ({} token grants), {} accepted, {} rejected",
        stats.requests, stats.token_grants, stats.accepted, stats.rejected
    );
    let sizes: Vec<usize> = sims
        .requests(Provider::Hms, 100)
        .iter()
        .filter_map(|q| q.body["message"]["token"].as_array().map(Vec::len))
        .collect();
    println!("HMS requests' token counts: {sizes:?}");
    assert!(stats.requests <= 11, "{N} tokens in batches of 1000, plus the access token: {stats:?}");
    assert_eq!((stats.accepted, stats.rejected), (N - N / 100, N / 100), "{stats:?}");
    assert_eq!(done["counts"]["targeted"], N);
    assert_eq!(done["counts"]["sent"], N - N / 100, "{done}");
    assert_eq!(done["counts"]["invalid"], N / 100, "{done}");
    assert_eq!(done["counts"]["failed"], 0, "{done}");
    assert_eq!(done["byProvider"]["hms"]["sent"], N - N / 100, "{done}");
    h.kill9();

    // Exactly the dead tokens are invalid.
    let store = herald_storage::Store::open(&herald_storage::test_options(&data)).unwrap();
    for (i, (client, token)) in seeded.iter().enumerate() {
        let stored = store.push_tokens().get("acme", client).unwrap().unwrap();
        assert_eq!(stored.is_valid, !dead(i as u64), "{token}");
    }
}

/// A broadcast runs on threads of its own, batch work `--bulk-nice` steps
/// below the engine's priority, so sends with a caller waiting go first on busy cores:
/// the broadcast takes more CPU on its threads than on the engine's workers,
/// where those sends run. (Not "most of the process's CPU": that total also
/// counts threads that ended meanwhile, such as the index check of a store
/// left unclean; on a loaded CI machine the rest came to 11 of 21 ticks once.)
#[tokio::test]
async fn a_broadcast_runs_on_threads_of_lower_priority() {
    const SCHED_NORMAL: i64 = 0;
    const SCHED_BATCH: i64 = 3;
    const N: u64 = 10_000;
    let w = ChildWorld::start().await;
    let mut env = w.env.clone();
    env.push(("HERALD_BULK_NICE", "7".into()));
    acme_with_apns_clients(&w.data, &env, &w.creds, N, 0).await;
    let http = http_client();
    let h = Herald::start(&w.data, &env);
    let pid = h.child.id();
    let token = h.admin_token(&http).await;
    let own = rustix::process::getpriority_process(rustix::process::Pid::from_raw(pid as i32)).unwrap();
    let before = ticks_by_thread_name(pid);
    let answer = h.send(&http, &token, &topic("chat")).await;
    assert_eq!(answer[0]["metadata"]["targeted"], N, "{answer}");
    let id = answer[0]["notificationId"].as_str().unwrap();
    assert_eq!(h.wait_report(&http, &token, id, 60).await["counts"]["sent"], N);
    let spent = ticks_since(pid, &before);

    let threads = thread_stats(pid);
    let bulk: Vec<(i64, i64)> =
        threads.iter().filter(|t| t.name == "herald-bulk").map(|t| (t.nice, t.policy)).collect();
    assert!(!bulk.is_empty(), "the engine has broadcast threads");
    assert!(
        bulk.iter().all(|t| *t == (i64::from((own + 7).min(19)), SCHED_BATCH)),
        "(nice, policy) {bulk:?}, engine at nice {own}"
    );
    let workers: Vec<i64> = threads.iter().filter(|t| t.name == "tokio-rt-worker").map(|t| t.policy).collect();
    assert!(workers.iter().all(|p| *p == SCHED_NORMAL), "the engine's workers keep the normal policy: {workers:?}");
    let of = |name: &str| spent.get(name).copied().unwrap_or(0);
    println!("broadcast of {N}: CPU ticks by thread name {spent:?}");
    assert!(
        of("herald-bulk") > of("tokio-rt-worker"),
        "more of the broadcast's CPU on the broadcast threads than on the engine's workers: {spent:?}"
    );
    h.kill9();
}
