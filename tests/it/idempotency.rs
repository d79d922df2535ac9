//! `Idempotency-Key` on the send routes: a retry with the key of a send
//! already made gets its answer again and sends nothing, whether it comes
//! at once, concurrently, after a kill -9, or to another engine sharing the
//! database; the simulators count what was delivered.

use crate::common::*;
use herald_sim::Provider;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const SEND: &str = "/v1/tenants/acme/push_notification/send";
const BATCH: &str = "/v1/tenants/acme/push_notification/send-batch";

/// Posts `body` to `path` of `base` with `key`; status, whether replayed, and body.
async fn post(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    token: &str,
    key: &str,
    body: &Value,
) -> (StatusCode, bool, Value) {
    let r = http.post(format!("{base}{path}")).bearer_auth(token).header("Idempotency-Key", key).json(body);
    let r = r.send().await.unwrap();
    let status = r.status();
    let replayed = match r.headers().get("idempotency-replayed") {
        Some(v) => {
            assert_eq!(v, "true");
            true
        }
        None => false,
    };
    (status, replayed, r.json().await.unwrap_or(Value::Null))
}

/// The Done-when test: 50 requests with one key at the same moment, one
/// delivery. Every request answers 202 with the same notification, all but
/// one marked replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_requests_with_one_key_deliver_once() {
    let w = PushWorld::start().await;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    let body = to_client("alice", &client, json!({"body": "once"}));
    let sends = (0..50).map(|_| {
        let (http, base, admin, body) = (w.server.http.clone(), w.server.base.clone(), w.admin.clone(), body.clone());
        tokio::spawn(async move { post(&http, &base, SEND, &admin, "order-4711", &body).await })
    });
    let answers: Vec<_> = futures::future::join_all(sends).await.into_iter().map(Result::unwrap).collect();
    assert!(answers.iter().all(|(st, _, _)| *st == StatusCode::ACCEPTED), "{answers:?}");
    assert_eq!(answers.iter().filter(|(_, replayed, _)| !replayed).count(), 1, "one ran, 49 were replayed");
    let first = &answers[0].2;
    assert!(answers.iter().all(|(_, _, b)| b == first), "the same answer to each");
    assert_eq!(first[0]["results"][0]["result"], "SENT", "{first}");
    assert_eq!(w.sims.stats().apns.accepted, 1, "delivered once");
    assert_eq!(w.sims.requests(Provider::Apns, 10).len(), 1);
}

/// A retry arriving while the first request still waits for the provider
/// waits for its answer, then replays it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_while_the_first_runs_waits_for_its_answer() {
    let w = PushWorld::start().await;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    w.sims.set_faults(serde_json::from_value(json!({ "apns": { "latency_ms": 600 } })).unwrap());
    let body = to_client("alice", &client, json!({"body": "slow"}));
    let (http, base, admin) = (w.server.http.clone(), w.server.base.clone(), w.admin.clone());
    let b2 = body.clone();
    let first = tokio::spawn(async move { post(&http, &base, SEND, &admin, "slow-1", &b2).await });
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let started = std::time::Instant::now();
    let (st, replayed, again) = post(&w.server.http, &w.server.base, SEND, &w.admin, "slow-1", &body).await;
    let waited = started.elapsed();
    let (st1, replayed1, first) = first.await.unwrap();
    assert_eq!((st1, replayed1), (StatusCode::ACCEPTED, false), "{first}");
    assert_eq!((st, replayed, &again), (StatusCode::ACCEPTED, true, &first));
    assert!(waited >= std::time::Duration::from_millis(300), "it waited for the first: {waited:?}");
    assert_eq!(w.sims.stats().apns.accepted, 1);
}

/// The case keys are for: the caller times out and hangs up while the send
/// waits for the provider; the send still completes, and the retry gets its
/// answer without sending again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_the_caller_timed_out_gets_the_answer() {
    let w = PushWorld::start().await;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    w.sims.set_faults(serde_json::from_value(json!({ "apns": { "latency_ms": 800 } })).unwrap());
    let body = to_client("alice", &client, json!({"body": "timed out"}));
    let url = format!("{}{SEND}", w.server.base);
    let r = w.server.http.post(&url).bearer_auth(&w.admin).header("Idempotency-Key", "t-1").json(&body);
    let gave_up = r.timeout(std::time::Duration::from_millis(200)).send().await;
    assert!(gave_up.is_err(), "the caller hung up first");
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    assert_eq!(w.sims.stats().apns.accepted, 1, "the send went on without its caller");
    let (st, replayed, b) = post(&w.server.http, &w.server.base, SEND, &w.admin, "t-1", &body).await;
    assert_eq!((st, replayed), (StatusCode::ACCEPTED, true), "{b}");
    assert_eq!(b[0]["results"][0]["result"], "SENT", "{b}");
    assert_eq!(w.sims.stats().apns.accepted, 1, "not sent again");
}

/// A replay answers the first status and body, marked, and sends nothing;
/// the same key with another body is a 422 naming the header; another key
/// sends again; keys are per tenant and per route; a bad key is a 400
/// naming the header; a request without a key is not affected.
#[tokio::test]
async fn a_replay_is_the_first_answer_and_a_reused_key_is_refused() {
    let w = PushWorld::start().await;
    let s = &w.server;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    let (http, base, admin) = (&s.http, s.base.as_str(), w.admin.as_str());
    let body = to_client("alice", &client, json!({"body": "hello"}));
    let (st, replayed, first) = post(http, base, SEND, admin, "k-1", &body).await;
    assert_eq!((st, replayed), (StatusCode::ACCEPTED, false), "{first}");
    // Key order and spacing do not make another request; the quoted form is the same key.
    let reordered: Value =
        serde_json::from_str(&format!(" {} ", serde_json::to_string_pretty(&body).unwrap())).unwrap();
    let (st, replayed, again) = post(http, base, SEND, admin, "\"k-1\"", &reordered).await;
    assert_eq!((st, replayed, &again), (StatusCode::ACCEPTED, true, &first));
    assert_eq!(w.sims.stats().apns.accepted, 1);

    let other = to_client("alice", &client, json!({"body": "changed"}));
    let (st, _, b) = post(http, base, SEND, admin, "k-1", &other).await;
    assert_eq!((st, field(&b)), (StatusCode::UNPROCESSABLE_ENTITY, "Idempotency-Key".to_string()), "{b}");
    assert_eq!(b["subsystem"], 516);
    let (st, _, b) = post(http, base, BATCH, admin, "k-1", &json!({"events": [body.clone()]})).await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "the key of a send is not a batch's: {b}");
    let (st, replayed, b) = post(http, base, SEND, admin, "k-2", &body).await;
    assert_eq!((st, replayed), (StatusCode::ACCEPTED, false));
    assert_ne!(b[0]["notificationId"], first[0]["notificationId"]);
    assert_eq!(w.sims.stats().apns.accepted, 2, "a new key sends");
    let (st, b) = s.call(Method::POST, SEND, Some(admin), Some(body.clone())).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    assert_eq!(w.sims.stats().apns.accepted, 3, "no key, no idempotency");

    // Another tenant's same key is its own.
    let globex = s.tenant_with_app("globex", "shop").await;
    let to_nobody = json!({"category": "chat", "recipient": {"tenantId": "globex", "userId": "nobody"}, "payload": {"message": {"body": "x"}}});
    let path = "/v1/tenants/globex/push_notification/send";
    let (st, replayed, b) = post(http, base, path, &globex, "k-1", &to_nobody).await;
    assert_eq!((st, replayed), (StatusCode::NOT_FOUND, false), "{b}");
    // A refusal for the request itself is the answer too.
    let (st, replayed, again) = post(http, base, path, &globex, "k-1", &to_nobody).await;
    assert_eq!((st, replayed, again), (StatusCode::NOT_FOUND, true, b));

    for bad in ["", "has space", &"k".repeat(256), "clé"] {
        let r = http.post(format!("{base}{SEND}")).bearer_auth(admin).header("Idempotency-Key", bad.as_bytes());
        let r = r.json(&body).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        let b: Value = r.json().await.unwrap();
        assert_eq!(field(&b), "Idempotency-Key", "{b}");
    }
    let r = http
        .post(format!("{base}{SEND}"))
        .bearer_auth(admin)
        .header("Idempotency-Key", "a")
        .header("Idempotency-Key", "b");
    assert_eq!(r.json(&body).send().await.unwrap().status(), StatusCode::BAD_REQUEST, "given twice");
    assert_eq!(w.sims.stats().apns.accepted, 3, "nothing refused was sent");
}

/// A batch with a key: sent once, its whole answer replayed (its failed
/// entries included).
#[tokio::test]
async fn a_batch_with_a_key_is_sent_once() {
    let w = PushWorld::start().await;
    let s = &w.server;
    let carol = w.client("demo", "carol", &format!("APNS:{}", apns_token(1))).await;
    w.client("demo", "dora", "FCM:fcm-dora").await;
    let to_user = |user: &str| json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": user}, "payload": {"message": {"body": "b"}}});
    let batch =
        json!({"events": [to_client("carol", &carol, json!({"body": "a"})), to_user("dora"), to_user("nobody")]});
    let (st, replayed, first) = post(&s.http, &s.base, BATCH, &w.admin, "batch-1", &batch).await;
    assert_eq!((st, replayed), (StatusCode::ACCEPTED, false), "{first}");
    assert_eq!(first["results"][2]["code"], 404, "{first}");
    let (st, replayed, again) = post(&s.http, &s.base, BATCH, &w.admin, "batch-1", &batch).await;
    assert_eq!((st, replayed, &again), (StatusCode::ACCEPTED, true, &first));
    let stats = w.sims.stats();
    assert_eq!((stats.apns.accepted, stats.fcm.accepted), (1, 1), "each event once");
}

/// The stored answer is durable: after a kill -9 a retry is still a replay.
#[tokio::test]
async fn a_kept_answer_survives_kill_9() {
    let world = ChildWorld::start().await;
    let clients = acme_with_apns_clients(&world.data, &world.env, &world.creds, 1, 1).await;
    let http = crate::common::http_client();
    let h = Herald::start(&world.data, &world.env);
    let admin = h.admin_token(&http).await;
    let (client, _) = &clients[0];
    let link = http.put(format!("{}/v1/tenants/acme/users/alice/clients/{client}", h.base)).bearer_auth(&admin);
    assert_eq!(link.json(&json!({})).send().await.unwrap().status(), StatusCode::OK);
    let body = to_client("alice", client, json!({"body": "durable"}));
    let (st, replayed, first) = post(&http, &h.base, SEND, &admin, "crash-1", &body).await;
    assert_eq!((st, replayed), (StatusCode::ACCEPTED, false), "{first}");
    h.kill9();

    let h = Herald::start(&world.data, &world.env);
    let admin = h.admin_token(&http).await;
    let (st, replayed, again) = post(&http, &h.base, SEND, &admin, "crash-1", &body).await;
    assert_eq!((st, replayed, &again), (StatusCode::ACCEPTED, true, &first));
    assert_eq!(world.sims.stats().apns.accepted, 1, "not sent again after the restart");
}

/// Two engines sharing a fresh PostgreSQL database (`b` with `b_extra` in
/// its environment), tenant `acme` with app `demo`, and one APNs client of
/// user alice: the engines, the tenant admin's token and the client's id.
/// `None` when PostgreSQL is not installed, or in the PostgreSQL suite (the
/// engines start their own database).
async fn two_engines_one_client(
    world: &ChildWorld,
    http: &reqwest::Client,
    b_extra: &[(&'static str, String)],
) -> Option<(Herald, Herald, String, String)> {
    if herald_storage::test_on_postgres() || !herald_pgtemp::installed() {
        return None;
    }
    let url = herald_pgtemp::shared().unwrap().create_database().unwrap();
    let a = Herald::start(&world.dir.path().join("a"), &world.node_env(&url, "node-a", &[]));
    let b = Herald::start(&world.dir.path().join("b"), &world.node_env(&url, "node-b", b_extra));
    let admin = a.create_tenant(http, "acme").await;
    let r = http.post(format!("{}/v1/tenants/acme/apps/demo", a.base)).bearer_auth(&admin).json(&world.creds.app_json);
    assert_eq!(r.send().await.unwrap().status(), StatusCode::CREATED);
    let r = http.post(format!("{}/v1/tenants/acme/clients", a.base)).bearer_auth(&admin);
    let client: Value =
        r.json(&json!({"appName": "demo", "platform": "ios"})).send().await.unwrap().json().await.unwrap();
    let client = client["astClientId"].as_str().unwrap().to_string();
    let link = http.put(format!("{}/v1/tenants/acme/users/alice/clients/{client}", a.base)).bearer_auth(&admin);
    assert_eq!(link.json(&json!({})).send().await.unwrap().status(), StatusCode::OK);
    let token = http.put(format!("{}/v1/tenants/acme/clients/{client}/pushtoken", a.base)).bearer_auth(&admin);
    let token = token.json(&json!({"appName": "demo", "pushToken": format!("APNS:{}", apns_token(7))}));
    assert_eq!(token.send().await.unwrap().status(), StatusCode::OK);
    Some((a, b, admin, client))
}

/// Two engines sharing one PostgreSQL: the same key sent to both at once
/// is delivered once, and each answers the same notification. Runs in the
/// sled suite when PostgreSQL is installed (like `multinode`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_key_through_two_engines_is_delivered_once() {
    let world = ChildWorld::start().await;
    let http = crate::common::http_client();
    let Some((a, b, admin, client)) = two_engines_one_client(&world, &http, &[]).await else { return };

    let body = to_client("alice", &client, json!({"body": "one of two"}));
    let sends = (0..20).map(|i| {
        let base = if i % 2 == 0 { a.base.clone() } else { b.base.clone() };
        let (http, admin, body) = (http.clone(), admin.clone(), body.clone());
        tokio::spawn(async move { post(&http, &base, SEND, &admin, "shared-key", &body).await })
    });
    let answers: Vec<_> = futures::future::join_all(sends).await.into_iter().map(Result::unwrap).collect();
    assert!(answers.iter().all(|(st, _, b)| *st == StatusCode::ACCEPTED && *b == answers[0].2), "{answers:?}");
    assert_eq!(answers.iter().filter(|(_, replayed, _)| !replayed).count(), 1);
    assert_eq!(world.sims.stats().apns.accepted, 1, "delivered once across the engines");
}

/// A retry that waits past its send deadline for the request holding its
/// key gets 409 with `Retry-After`, and sends nothing; once the first has
/// answered, the same retry is its replay. The first runs on an engine with
/// the default 10 s deadline against a provider answering in 4 s, the retry
/// (a second later, so the first surely holds the key) on one whose
/// deadline is 1 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_past_its_deadline_while_the_first_runs_gets_409_then_the_replay() {
    let world = ChildWorld::start().await;
    let http = crate::common::http_client();
    let short = [("HERALD_SEND_DEADLINE_MS", "1000".to_string())];
    let Some((a, b, admin, client)) = two_engines_one_client(&world, &http, &short).await else { return };
    let faults = herald_sim::ProviderFaults { latency_ms: Some(4000), ..Default::default() };
    world.sims.set_faults(herald_sim::Faults { apns: faults, ..Default::default() });

    let body = to_client("alice", &client, json!({"body": "slow"}));
    let first = {
        let (http, base, admin, body) = (http.clone(), a.base.clone(), admin.clone(), body.clone());
        tokio::spawn(async move { post(&http, &base, SEND, &admin, "slow-key", &body).await })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let asked = Instant::now();
    let r = http.post(format!("{}{SEND}", b.base)).bearer_auth(&admin).header("Idempotency-Key", "slow-key");
    let r = r.json(&body).send().await.unwrap();
    let waited = asked.elapsed();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(r.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let refusal: Value = r.json().await.unwrap();
    assert!(refusal["message"].as_str().unwrap().contains("Idempotency-Key"), "{refusal}");
    assert!(waited >= Duration::from_millis(900), "answered after {waited:?}, before its deadline");
    assert_eq!(world.sims.stats().apns.accepted, 0, "the first is still with the provider");

    let (st, replayed, first) = first.await.unwrap();
    assert_eq!((st, replayed), (StatusCode::ACCEPTED, false), "{first}");
    let (st, replayed, again) = post(&http, &b.base, SEND, &admin, "slow-key", &body).await;
    assert_eq!((st, replayed, &again), (StatusCode::ACCEPTED, true, &first));
    assert_eq!(world.sims.stats().apns.accepted, 1, "sent once");
}
