//! Crash suite: a mixed workload (users, clients and push tokens with updates and
//! deletes, properties, interactive sends, topic broadcasts, webhook events to a
//! slow receiver) against `herald serve`, killed with SIGKILL at random moments.
//! After every restart: the database opens, every write acknowledged since the
//! previous restart is there (and every acknowledged delete still gone), and so is
//! a sample of 400 older ones of each kind (all of them in the CI form); after the
//! last restart every acknowledged write is checked, every broadcast has
//! completed with each token delivered at least once, and every event has reached
//! the receiver at least once.
//!
//! CI runs 5 kills; `HERALD_CRASH_KILLS=100` runs the long form, and
//! `HERALD_CRASH_SEED` replays a run.

use crate::common;
use crate::common::Herald;
use herald_sim::{Faults, Provider, ProviderFaults};
use herald_storage::push_tokens::PushProvider;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Tokens seeded for the broadcasts.
const BROADCAST_TOKENS: u64 = 3000;

/// A small deterministic generator (xorshift64*), so a seed replays a run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What Herald acknowledged with a 2xx.
#[derive(Default, Clone)]
struct Ledger {
    /// (user id, username)
    users: Vec<(String, String)>,
    /// Client ids, each with the push tokens it may have: the last acknowledged one
    /// and one whose update was in flight at the kill ("" stands for none).
    clients: Vec<(String, Vec<String>)>,
    deleted_clients: Vec<String>,
    properties: Vec<String>,
    events: Vec<String>,
    broadcasts: Vec<String>,
    sends_ok: u64,
}

/// A webhook receiver that answers slowly and records every body.
async fn slow_receiver(delay: Duration) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let g = g.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let g = g.clone();
                    async move {
                        use http_body_util::BodyExt;
                        let body = req.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
                        tokio::time::sleep(delay).await;
                        g.lock().unwrap().push(String::from_utf8_lossy(&body).into_owned());
                        Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(
                            bytes::Bytes::from("ok"),
                        )))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (url, got)
}

struct World {
    http: reqwest::Client,
    env: Vec<(&'static str, String)>,
    data: std::path::PathBuf,
}

impl World {
    /// Starts Herald and checks the database opened cleanly.
    async fn start(&self) -> Herald {
        let h = Herald::start(&self.data, &self.env);
        let r = self.http.get(format!("{}/readyz", h.base)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "storage answers after the restart");
        h
    }
}

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> Option<(StatusCode, Value)> {
    let mut req = http.request(method, url).bearer_auth(token).timeout(Duration::from_secs(30));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.ok()?;
    let st = r.status();
    let v = r.json::<Value>().await.ok().unwrap_or(Value::Null);
    Some((st, v))
}

/// One task of the workload: writes until Herald stops answering.
async fn writer(
    kind: u8,
    round: usize,
    base: String,
    token: String,
    ledger: Arc<Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
) {
    let http = crate::common::http_client();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        use reqwest::Method as M;
        match kind {
            0 => {
                let name = format!("u{round}x{i}");
                let Some((st, b)) = call(
                    &http,
                    M::POST,
                    format!("{base}/auth/realms/acme/users"),
                    &token,
                    Some(json!({"username": name})),
                )
                .await
                else {
                    return;
                };
                assert!(st.is_success(), "{st} {b}");
                ledger.lock().unwrap().users.push((b["data"]["id"].as_str().unwrap().to_string(), name));
            }
            1 => {
                let Some((st, b)) = call(
                    &http,
                    M::POST,
                    format!("{base}/v1/tenants/acme/clients"),
                    &token,
                    Some(json!({"appName": "demo", "platform": "android"})),
                )
                .await
                else {
                    return;
                };
                assert_eq!(st, StatusCode::CREATED, "{b}");
                let id = b["astClientId"].as_str().unwrap().to_string();
                ledger.lock().unwrap().clients.push((id.clone(), vec![String::new()]));
                let may_have = |push: &str, acknowledged: bool| {
                    let mut l = ledger.lock().unwrap();
                    if let Some(c) = l.clients.iter_mut().find(|c| c.0 == id) {
                        if acknowledged {
                            c.1.clear();
                        }
                        c.1.push(push.trim_start_matches("FCM:").to_string());
                    }
                };
                for version in 0..2 {
                    let push = format!("FCM:crash-{round}-{i}-v{version}");
                    may_have(&push, false);
                    let Some((st, b)) = call(
                        &http,
                        M::PUT,
                        format!("{base}/v1/tenants/acme/clients/{id}/pushtoken"),
                        &token,
                        Some(json!({"appName": "demo", "pushToken": push})),
                    )
                    .await
                    else {
                        return;
                    };
                    assert_eq!(st, StatusCode::OK, "{b}");
                    may_have(&push, true);
                }
                if i % 3 == 0 {
                    // In flight, the client may or may not exist after a kill: checked once acknowledged.
                    ledger.lock().unwrap().clients.retain(|c| c.0 != id);
                    let Some((st, b)) =
                        call(&http, M::DELETE, format!("{base}/v1/tenants/acme/clients/{id}"), &token, None).await
                    else {
                        return;
                    };
                    assert!(st.is_success(), "{st} {b}");
                    ledger.lock().unwrap().deleted_clients.push(id);
                }
            }
            2 => {
                // Spread over users: a read-back filters one user's list, which the
                // long form would otherwise make quadratic (tens of thousands on bob).
                let (user, name) = (format!("prop{round}u{}", i % 32), format!("pr{round}n{i}"));
                let body = json!({"name": name, "type": "UTF8STRING", "value": "v"});
                let Some((st, b)) =
                    call(&http, M::POST, format!("{base}/v1/tenants/acme/users/{user}/properties"), &token, Some(body))
                        .await
                else {
                    return;
                };
                assert!(st.is_success(), "{st} {b}");
                ledger.lock().unwrap().properties.push(format!("{user}/{name}"));
            }
            3 => {
                let marker = format!("crash-event-{round}-{i}");
                let body = json!({"type": "domain", "event": "CRASH_TEST", "data": {"marker": marker}});
                let Some((st, b)) =
                    call(&http, M::POST, format!("{base}/v1/tenants/acme/events"), &token, Some(body)).await
                else {
                    return;
                };
                assert_eq!(st, StatusCode::ACCEPTED, "{b}");
                ledger.lock().unwrap().events.push(marker);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            _ => {
                let body = json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "bob"}, "payload": {"message": {"body": format!("{round}-{i}")}}});
                let Some((st, b)) =
                    call(&http, M::POST, format!("{base}/v1/tenants/acme/push_notification/send"), &token, Some(body))
                        .await
                else {
                    return;
                };
                assert_eq!(st, StatusCode::ACCEPTED, "{b}");
                if b[0]["isSuccessful"] == true {
                    ledger.lock().unwrap().sends_ok += 1;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// The newest items of `v` (from `since` on) and up to `older` random earlier ones.
fn pick<T: Clone>(v: &[T], since: usize, older: usize, rng: &mut Rng) -> Vec<T> {
    let since = since.min(v.len());
    let mut out: Vec<T> = v[since..].to_vec();
    if since <= older {
        out.extend_from_slice(&v[..since]);
    } else {
        out.extend((0..older).map(|_| v[rng.below(since as u64) as usize].clone()));
    }
    out
}

/// What a restart reads back: everything acknowledged since the last restart, and
/// a sample of at most `older` earlier writes of each kind (all of them in CI's
/// short form), so the long form does not grow quadratic.
fn to_check(l: &Ledger, before: &Ledger, older: usize, rng: &mut Rng) -> Ledger {
    Ledger {
        users: pick(&l.users, before.users.len(), older, rng),
        clients: pick(&l.clients, before.clients.len(), older, rng),
        deleted_clients: pick(&l.deleted_clients, before.deleted_clients.len(), older, rng),
        properties: pick(&l.properties, before.properties.len(), older, rng),
        broadcasts: l.broadcasts.clone(),
        ..Ledger::default()
    }
}

/// Reads back every acknowledged write; returns how many were checked.
async fn verify(http: &reqwest::Client, base: &str, token: &str, l: &Ledger) -> usize {
    use reqwest::Method as M;
    let mut checked = 0;
    for (id, name) in &l.users {
        let (st, b) = call(http, M::GET, format!("{base}/auth/realms/acme/users/id/{id}"), token, None).await.unwrap();
        assert_eq!(st, StatusCode::OK, "acknowledged user {name} lost: {b}");
        checked += 1;
    }
    for (id, push) in &l.clients {
        let (st, b) = call(http, M::GET, format!("{base}/v1/tenants/acme/clients/{id}"), token, None).await.unwrap();
        assert_eq!(st, StatusCode::OK, "acknowledged client {id} lost: {b}");
        if push != &[String::new()] {
            let (st, b) = call(http, M::GET, format!("{base}/v1/tenants/acme/clients/{id}/pushtoken"), token, None)
                .await
                .unwrap();
            let found = if st == StatusCode::NOT_FOUND { "" } else { b["pushToken"].as_str().unwrap_or("?") };
            assert!(push.iter().any(|p| p == found), "push token of {id}: {st} {b}, acknowledged {push:?}");
        }
        checked += 1;
    }
    for id in &l.deleted_clients {
        let (st, b) = call(http, M::GET, format!("{base}/v1/tenants/acme/clients/{id}"), token, None).await.unwrap();
        assert_eq!(st, StatusCode::NOT_FOUND, "acknowledged delete of {id} undone: {b}");
        checked += 1;
    }
    for property in &l.properties {
        let (user, name) = property.split_once('/').unwrap();
        let url = format!("{base}/v1/tenants/acme/users/{user}/properties?filter=name={name}");
        let (st, b) = call(http, M::GET, url, token, None).await.unwrap();
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(b.as_array().map(Vec::len), Some(1), "acknowledged property {name} lost: {b}");
        checked += 1;
    }
    for id in &l.broadcasts {
        let (st, b) =
            call(http, M::GET, format!("{base}/v1/tenants/acme/push_notification/{id}"), token, None).await.unwrap();
        assert_eq!(st, StatusCode::OK, "acknowledged broadcast {id} lost: {b}");
        checked += 1;
    }
    checked
}

/// Seeds the broadcast's APNs clients straight into a stopped Herald's storage.
fn seed(data: &std::path::Path) -> Vec<String> {
    let tokens =
        common::seed_clients(data, BROADCAST_TOKENS, |i| (PushProvider::Apns, common::apns_token(5_000_000 + i)));
    tokens.into_iter().map(|(_, token)| token).collect()
}

#[tokio::test]
async fn acknowledged_work_survives_random_sigkills() {
    let kills: usize = std::env::var("HERALD_CRASH_KILLS").ok().and_then(|k| k.parse().ok()).unwrap_or(5);
    let seed_value: u64 = std::env::var("HERALD_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    println!("crash suite: {kills} kills, seed {seed_value} (HERALD_CRASH_SEED replays)");
    let mut rng = Rng(seed_value);
    let started = Instant::now();

    let dir = tempfile::tempdir().unwrap();
    let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.path().join("certs"))).await.unwrap();
    let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();
    let (hook_url, received) = slow_receiver(Duration::from_millis(20)).await;
    let mut env = common::sim_env(&sims, dir.path());
    env.push(("HERALD_WEBHOOK_ALLOW_PRIVATE", "true".into()));
    env.push(("HERALD_WEBHOOK_RETRY_SCHEDULE", "0,1,1,1,1,1,1,1,1,1,1,1".into()));
    let world = World { http: crate::common::http_client(), env, data: dir.path().join("data") };
    let http = world.http.clone();

    // Tenant, app, webhook and bob's FCM client through the API; broadcast clients into storage.
    let h = world.start().await;
    let token = h.create_tenant(&world.http, "acme").await;
    use reqwest::Method as M;
    let base = h.base.clone();
    let (st, b) =
        call(&http, M::POST, format!("{base}/v1/tenants/acme/apps/demo"), &token, Some(creds.app_json.clone()))
            .await
            .unwrap();
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let (st, b) = call(
        &http,
        M::POST,
        format!("{base}/v1/tenants/acme/webhooks"),
        &token,
        Some(json!({"filter": "type=domain", "callbackUrl": hook_url})),
    )
    .await
    .unwrap();
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let (st, b) = call(
        &http,
        M::POST,
        format!("{base}/v1/tenants/acme/clients"),
        &token,
        Some(json!({"appName": "demo", "platform": "android"})),
    )
    .await
    .unwrap();
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let bob = b["astClientId"].as_str().unwrap().to_string();
    for (method, path, body) in [
        (M::PUT, format!("/v1/tenants/acme/users/bob/clients/{bob}"), json!({})),
        (
            M::PUT,
            format!("/v1/tenants/acme/clients/{bob}/pushtoken"),
            json!({"appName": "demo", "pushToken": "FCM:bob-interactive"}),
        ),
    ] {
        let (st, b) = call(&http, method, format!("{base}{path}"), &token, Some(body)).await.unwrap();
        assert_eq!(st, StatusCode::OK, "{b}");
    }
    h.kill9();
    let broadcast_tokens = seed(&world.data);
    // A slow APNs so broadcasts span kills.
    sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(20), max_concurrent_streams: Some(20), ..Default::default() },
        ..Default::default()
    });

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let broadcast_every = (kills / 3).max(2);
    let mut checked = 0;
    let mut verified_up_to = Ledger::default();
    for round in 0..kills {
        let h = world.start().await;
        let token = h.admin_token(&world.http).await;
        let snapshot = ledger.lock().unwrap().clone();
        let sample = to_check(&snapshot, &verified_up_to, 400, &mut rng);
        checked += verify(&http, &h.base, &token, &sample).await;
        verified_up_to = snapshot;
        if round % broadcast_every == 0 {
            let body = json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": format!("broadcast {round}")}}});
            let (st, b) =
                call(&http, M::POST, format!("{}/v1/tenants/acme/push_notification/send", h.base), &token, Some(body))
                    .await
                    .unwrap();
            assert_eq!(st, StatusCode::ACCEPTED, "{b}");
            let id = b
                .as_array()
                .and_then(|a| a.iter().find(|e| e["metadata"]["appName"] == "demo"))
                .map(|e| e["notificationId"].as_str().unwrap().to_string())
                .unwrap();
            ledger.lock().unwrap().broadcasts.push(id);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = (0..5u8)
            .map(|kind| tokio::spawn(writer(kind, round, h.base.clone(), token.clone(), ledger.clone(), stop.clone())))
            .collect();
        tokio::time::sleep(Duration::from_millis(300 + rng.below(1200))).await;
        h.kill9();
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await.unwrap();
        }
        let l = ledger.lock().unwrap();
        println!(
            "kill {}: {} users, {} clients (+{} deleted), {} properties, {} events, {} broadcasts acknowledged so far",
            round + 1,
            l.users.len(),
            l.clients.len(),
            l.deleted_clients.len(),
            l.properties.len(),
            l.events.len(),
            l.broadcasts.len()
        );
    }

    // The last restart: everything is there, broadcasts complete, events drain.
    sims.set_faults(Faults::default());
    let h = world.start().await;
    let token = h.admin_token(&world.http).await;
    let l = std::mem::take(&mut *ledger.lock().unwrap());
    let found = verify(&http, &h.base, &token, &l).await;
    checked += found;
    let deadline = Instant::now() + Duration::from_secs(180);
    for id in &l.broadcasts {
        loop {
            let (_, r) =
                call(&http, M::GET, format!("{}/v1/tenants/acme/push_notification/{id}", h.base), &token, None)
                    .await
                    .unwrap();
            if r["state"] == "COMPLETED" {
                break;
            }
            assert!(Instant::now() < deadline, "broadcast {id} did not complete: {r}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let accepted = sims.accepted(Provider::Apns);
    let short =
        broadcast_tokens.iter().filter(|t| accepted.get(*t).copied().unwrap_or(0) < l.broadcasts.len() as u64).count();
    let deliveries: u64 = broadcast_tokens.iter().map(|t| accepted.get(t).copied().unwrap_or(0)).sum();
    let delivered_events = loop {
        let bodies = received.lock().unwrap().clone();
        let missing = l.events.iter().filter(|m| !bodies.iter().any(|b| b.contains(m.as_str()))).count();
        if missing == 0 || Instant::now() > deadline {
            break l.events.len() - missing;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let bob_accepted = sims.accepted(Provider::Fcm).get("bob-interactive").copied().unwrap_or(0);
    h.kill9();
    let writes = l.users.len() + l.clients.len() + l.deleted_clients.len() + l.properties.len() + l.broadcasts.len();
    println!(
        "crash suite: {kills} SIGKILLs survived in {:.0?}; writes acknowledged {writes}, found {found} (read-backs over all restarts: {checked}); \
         events published {}, delivered {delivered_events} ({} deliveries in all); broadcasts {} x {BROADCAST_TOKENS} tokens, {short} tokens short, {deliveries} deliveries; \
         interactive sends acknowledged {}, accepted by FCM {bob_accepted}",
        started.elapsed(),
        l.events.len(),
        received.lock().unwrap().len(),
        l.broadcasts.len(),
        l.sends_ok,
    );
    assert_eq!(found, writes, "every acknowledged write found");
    assert_eq!(short, 0, "every broadcast token delivered at least once per broadcast");
    assert_eq!(delivered_events, l.events.len(), "every acknowledged event delivered at least once");
    assert!(bob_accepted >= l.sends_ok, "every successful interactive send reached the provider");
}
