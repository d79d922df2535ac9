//! Events are written in the transaction of the change they report: a
//! change that committed has its event, through any number of SIGKILLs, and
//! a change that did not commit has none.

use crate::common::*;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `astClientId` of every event named `name` the receiver got.
fn clients_in(received: &[receiver::Received], name: &str) -> BTreeSet<String> {
    received
        .iter()
        .filter_map(|r| serde_json::from_str::<Value>(&r.body).ok())
        .filter(|e| e["event"] == name)
        .filter_map(|e| e["data"]["astClientId"].as_str().map(String::from))
        .collect()
}

/// Waits (up to `secs`) until the receiver got `name` for every client of `want`.
async fn until_events(r: &receiver::Receiver, name: &str, want: &BTreeSet<String>, secs: u64) -> BTreeSet<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let got = clients_in(&r.received(), name);
        if want.is_subset(&got) || std::time::Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Locks `client` until Herald acknowledges it (204) or says it is locked
/// already (406); `false` when Herald stopped answering first.
async fn lock(http: &reqwest::Client, base: &str, token: &str, client: &str) -> bool {
    let body = json!({"astClientId": client, "lockReason": "stolen"});
    let sent = http
        .post(format!("{base}/v1/tenants/acme/clients/lock"))
        .bearer_auth(token)
        .json(&body)
        .timeout(Duration::from_secs(20))
        .send()
        .await;
    match sent.map(|r| r.status()) {
        Ok(StatusCode::NO_CONTENT) | Ok(StatusCode::NOT_ACCEPTABLE) => true,
        Ok(other) => panic!("locking {client}: {other}"),
        Err(_) => false,
    }
}

/// 300 device clients, a webhook subscribed to `CLIENT_LOCKED`, 16 workers
/// locking 240 of them while `herald serve` is SIGKILLed four times and
/// restarted, each lock retried until acknowledged or refused as done
/// (406). Every locked client's event reaches the receiver (none lost
/// between the lock's commit and its event), and none of the 60 clients
/// never locked has one. Before events joined the operation's transaction,
/// PostgreSQL lost about a third of the events in flight at each kill.
#[tokio::test]
async fn every_committed_lock_has_its_event_through_sigkills() {
    const CLIENTS: u64 = 300;
    const LOCKED: usize = 240;
    let ChildWorld { sims: _sims, creds, mut env, data, dir: _dir } = ChildWorld::start().await;
    env.push(("HERALD_WEBHOOK_ALLOW_PRIVATE", "true".into()));
    env.push(("HERALD_WEBHOOK_RETRY_SCHEDULE", "0,1,1,1,1,1,1,1,1,1".into()));
    let http = http_client();
    let receiver = receiver::Receiver::start(vec![]).await;
    let clients: Vec<String> =
        acme_with_apns_clients(&data, &env, &creds, CLIENTS, 1).await.into_iter().map(|(id, _)| id).collect();
    let h = Herald::start(&data, &env);
    let token = h.admin_token(&http).await;
    let hook = json!({"filter": "event=CLIENT_LOCKED", "callbackUrl": receiver.url});
    let r = http.post(format!("{}/v1/tenants/acme/webhooks", h.base)).bearer_auth(&token).json(&hook).send().await;
    assert_eq!(r.unwrap().status(), StatusCode::CREATED);
    h.kill9();

    let to_lock: Vec<String> = clients[..LOCKED].to_vec();
    let left = Arc::new(Mutex::new(to_lock.clone()));
    let acknowledged = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for kill in 0..=4 {
        let h = Herald::start(&data, &env);
        let token = h.admin_token(&http).await;
        let workers: Vec<_> = (0..16)
            .map(|_| {
                let (left, http, base, token) = (left.clone(), http.clone(), h.base.clone(), token.clone());
                let acknowledged = acknowledged.clone();
                tokio::spawn(async move {
                    loop {
                        let Some(client) = left.lock().unwrap().pop() else { return };
                        if !lock(&http, &base, &token, &client).await {
                            left.lock().unwrap().push(client);
                            return;
                        }
                        acknowledged.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                })
            })
            .collect();
        if kill < 4 {
            // Killed while locks are in flight: after a fifth more of them.
            let at = LOCKED * (kill + 1) / 5;
            for _ in 0..600 {
                if acknowledged.load(std::sync::atomic::Ordering::Relaxed) >= at {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            h.kill9();
            for w in workers {
                w.await.unwrap();
            }
            println!("kill {}: {} locks left", kill + 1, left.lock().unwrap().len());
        } else {
            for w in workers {
                w.await.unwrap();
            }
            assert!(left.lock().unwrap().is_empty(), "every lock acknowledged after the last start");
            let want: BTreeSet<String> = to_lock.iter().cloned().collect();
            let got = until_events(&receiver, "CLIENT_LOCKED", &want, 60).await;
            let lost: Vec<_> = want.difference(&got).collect();
            assert!(lost.is_empty(), "{} of {LOCKED} locks have no CLIENT_LOCKED: {lost:?}", lost.len());
            let never: BTreeSet<String> = clients[LOCKED..].iter().cloned().collect();
            assert!(got.is_disjoint(&never), "an event for a client never locked");
            h.kill9();
        }
    }
}

/// A broadcast that meets dead tokens, SIGKILLed while it runs: every token
/// the store shows invalid afterwards has its `PUSH_TOKEN_INVALIDATED`.
#[tokio::test]
async fn every_token_marked_invalid_has_its_event_through_sigkills() {
    use herald_sim::{Faults, ProviderFaults};
    use herald_storage::push_tokens::PushProvider;
    const N: u64 = 3_000;
    let ChildWorld { sims, creds, mut env, data, dir: _dir } = ChildWorld::start().await;
    env.push(("HERALD_WEBHOOK_ALLOW_PRIVATE", "true".into()));
    env.push(("HERALD_WEBHOOK_RETRY_SCHEDULE", "0,1,1,1,1,1,1,1,1,1".into()));
    let http = http_client();
    let receiver = receiver::Receiver::start(vec![]).await;
    // Every third token is dead.
    let seeded = acme_with_clients(&data, &env, &creds, N, |i| {
        let token = if i % 3 == 0 { format!("dead-{i}") } else { format!("fcm-{i}") };
        (PushProvider::Fcm, token)
    })
    .await;
    let h = Herald::start(&data, &env);
    let token = h.admin_token(&http).await;
    let hook = json!({"filter": "event=PUSH_TOKEN_INVALIDATED", "callbackUrl": receiver.url});
    let r = http.post(format!("{}/v1/tenants/acme/webhooks", h.base)).bearer_auth(&token).json(&hook).send().await;
    assert_eq!(r.unwrap().status(), StatusCode::CREATED);
    // Slow answers, so the broadcast spans the kills.
    sims.set_faults(Faults {
        fcm: ProviderFaults { latency_ms: Some(20), max_concurrent_streams: Some(50), ..Default::default() },
        ..Default::default()
    });
    let topic = json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": "b"}}});
    let answer = h.send(&http, &token, &topic).await;
    let id = answer[0]["notificationId"].as_str().unwrap().to_string();
    let mut h = h;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        h.kill9();
        h = Herald::start(&data, &env);
    }
    let token = h.admin_token(&http).await;
    let done = h.wait_report(&http, &token, &id, 120).await;
    assert_eq!(done["state"], "COMPLETED", "{done}");
    h.kill9();

    let store = herald_storage::Store::open(&herald_storage::test_options(&data)).unwrap();
    let invalid: BTreeSet<String> = seeded
        .iter()
        .filter(|(client, _)| !store.push_tokens().get("acme", client).unwrap().unwrap().is_valid)
        .map(|(client, _)| client.clone())
        .collect();
    drop(store);
    assert_eq!(invalid.len() as u64, N / 3, "every dead token marked invalid");
    // Started again to deliver what the last kill left in the outbox.
    let h = Herald::start(&data, &env);
    let got = until_events(&receiver, "PUSH_TOKEN_INVALIDATED", &invalid, 60).await;
    let lost: Vec<_> = invalid.difference(&got).collect();
    assert!(lost.is_empty(), "{} invalid tokens have no PUSH_TOKEN_INVALIDATED: {lost:?}", lost.len());
    assert!(got.is_subset(&invalid), "an event for a token still valid");
    h.kill9();
}
