//! Provider faults injected by the simulators: dead tokens, 429/503, GOAWAY,
//! oversize payloads, provider-token hygiene, actor supervision.

mod common;
use common::*;
use herald_sim::{Faults, ProviderFaults, StatusFault};
use reqwest::{Method, StatusCode};
use serde_json::json;

fn to_user(user: &str, body: &str) -> serde_json::Value {
    json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": user}, "payload": {"message": {"body": body}}})
}

#[tokio::test]
async fn dead_tokens_become_invalid_and_are_skipped() {
    let w = PushWorld::start().await;
    let a = w.client("demo", "gina", &format!("APNS:dead{}", "0".repeat(60))).await;
    let f = w.client("demo", "gina", "FCM:dead-fcm").await;
    let h = w.client("demo", "gina", "HPK:dead-hms").await;
    let ok = w.client("demo", "gina", "FCM:live-fcm").await;
    let (st, r) = w.send(to_user("gina", "1")).await;
    assert_eq!(st, StatusCode::ACCEPTED);
    for e in r.as_array().unwrap() {
        let id = e["astClientId"].as_str().unwrap();
        assert_eq!(e["isSuccessful"], id == ok, "{e}");
    }
    for id in [&a, &f, &h] {
        let (_, t) =
            w.server.call(Method::GET, &format!("/v1/tenants/acme/clients/{id}/pushtoken"), Some(&w.admin), None).await;
        assert_eq!(t["isValid"], false, "{t}");
    }
    let (_, t) =
        w.server.call(Method::GET, &format!("/v1/tenants/acme/clients/{ok}/pushtoken"), Some(&w.admin), None).await;
    assert_eq!(t["isValid"], true);
    let before = w.sims.stats();
    let (_, r) = w.send(to_user("gina", "2")).await;
    let after = w.sims.stats();
    assert_eq!(
        after.apns.requests + after.hms.requests,
        before.apns.requests + before.hms.requests,
        "invalid tokens are not sent again"
    );
    assert_eq!(after.fcm.accepted, before.fcm.accepted + 1);
    let skipped = r.as_array().unwrap().iter().filter(|e| e["results"][0]["result"]["code"] == 410).count();
    assert_eq!(skipped, 3, "{r}");
}

#[tokio::test]
async fn throttling_and_unavailability_are_retried_until_success() {
    let w = PushWorld::start().await;
    let a = w.client("demo", "hank", &format!("APNS:{}", apns_token(9))).await;
    w.client("demo", "hank", "FCM:fcm-hank").await;
    w.client("demo", "hank", "HPK:hms-hank").await;
    let fault = |status| ProviderFaults {
        status: vec![StatusFault { status, count: Some(2), retry_after: Some(0), ..Default::default() }],
        ..Default::default()
    };
    w.sims.set_faults(Faults { apns: fault(429), fcm: fault(503), hms: fault(429) });
    let (st, r) = w.send(to_user("hank", "retry me")).await;
    assert_eq!(st, StatusCode::ACCEPTED);
    assert!(r.as_array().unwrap().iter().all(|e| e["isSuccessful"] == true), "{r}");
    let s = w.sims.stats();
    assert_eq!((s.apns.accepted, s.fcm.accepted, s.hms.accepted), (1, 1, 1));
    assert_eq!((s.apns.rejected, s.fcm.rejected, s.hms.rejected), (2, 2, 2));
    // A fault that never clears ends in a per-client error, not a hang.
    w.sims.set_faults(Faults {
        apns: ProviderFaults {
            status: vec![StatusFault { status: 500, retry_after: Some(0), ..Default::default() }],
            ..Default::default()
        },
        ..Default::default()
    });
    let (_, r) = w.send(to_client("hank", &a, json!({"body": "x"}))).await;
    assert_eq!(r[0]["isSuccessful"], false);
    assert_eq!(r[0]["results"][0]["result"]["code"], 500);
}

#[tokio::test]
async fn goaway_loses_nothing_and_provider_tokens_stay_valid() {
    let w = PushWorld::start().await;
    w.sims.set_faults(Faults {
        apns: ProviderFaults { goaway_after_streams: Some(3), ..Default::default() },
        ..Default::default()
    });
    let mut clients = Vec::new();
    for i in 0..20 {
        clients.push(w.client("demo", "ivan", &format!("APNS:{}", apns_token(100 + i))).await);
    }
    // Each round finds its connection gone away after the previous round.
    for round in 0..4 {
        let (st, r) = w.send(to_user("ivan", &format!("round {round}"))).await;
        assert_eq!(st, StatusCode::ACCEPTED);
        assert_eq!(r.as_array().unwrap().iter().filter(|e| e["isSuccessful"] == true).count(), 20, "{r}");
    }
    let s = w.sims.stats();
    assert_eq!(s.apns.accepted, 80);
    assert!(s.apns.goaways >= 4, "connections were closed with GOAWAY: {}", s.apns.goaways);
    assert_eq!(w.sims.accepted(herald_sim::Provider::Apns).len(), 20);
    // Every connection reused the one provider token: never expired, never refreshed too often.
    assert!(!s.apns.by_reason.contains_key("ExpiredProviderToken"));
    assert!(!s.apns.by_reason.contains_key("TooManyProviderTokenUpdates"));
    assert!(!s.apns.by_reason.contains_key("InvalidProviderToken"));
}

#[tokio::test]
async fn oversize_payloads_get_a_per_client_error() {
    let w = PushWorld::start().await;
    let a = w.client("demo", "joe", &format!("APNS:{}", apns_token(7))).await;
    let f = w.client("demo", "joe", "FCM:fcm-jo").await;
    let big = "x".repeat(5000);
    let (st, r) = w.send(to_user("joe", &big)).await;
    assert_eq!(st, StatusCode::ACCEPTED);
    for e in r.as_array().unwrap() {
        assert_eq!(e["isSuccessful"], false);
        assert_eq!(e["results"][0]["result"]["code"], 413, "{e}");
        assert!(e["results"][0]["result"]["message"].as_str().unwrap().contains("4096"), "{e}");
    }
    let s = w.sims.stats();
    assert_eq!(s.apns.requests + s.fcm.requests, 0, "nothing oversize reaches a provider");
    let _ = (a, f);
}

#[tokio::test]
async fn a_crashed_tenant_actor_restarts_and_others_keep_sending() {
    let w = PushWorld::start().await;
    let s = &w.server;
    // A second tenant with its own app and client.
    s.create_tenant("beta").await;
    let beta = s.admin_token("beta").await;
    let (st, _) = s.call(Method::POST, "/v1/tenants/beta/apps/demo", Some(&beta), Some(w.creds.app_json.clone())).await;
    assert_eq!(st, StatusCode::CREATED);
    let (id, _) = s.register_client("beta", &beta, "demo").await;
    s.call(Method::PUT, &format!("/v1/tenants/beta/users/bob/clients/{id}"), Some(&beta), Some(json!({}))).await;
    s.call(
        Method::PUT,
        &format!("/v1/tenants/beta/clients/{id}/pushtoken"),
        Some(&beta),
        Some(json!({"appName": "demo", "pushToken": "FCM:beta-token"})),
    )
    .await;
    let acme_client = w.client("demo", "kim", "FCM:acme-token").await;

    let engine = &s.running.as_ref().unwrap().engine;
    engine.push.crash_tenant("acme").await.unwrap();
    // Beta is unaffected, immediately.
    let (st, r) = s
        .call(Method::POST, "/v1/tenants/beta/push_notification/send", Some(&beta), Some(json!({"category": "chat", "recipient": {"tenantId": "beta", "userId": "bob"}, "payload": {"message": {"body": "b"}}})))
        .await;
    assert_eq!((st, r[0]["isSuccessful"].clone()), (StatusCode::ACCEPTED, json!(true)), "{r}");
    // Acme's actor was restarted by its supervisor and serves again.
    let mut ok = false;
    for _ in 0..50 {
        let (st, r) = w.send(to_client("kim", &acme_client, json!({"body": "a"}))).await;
        if st == StatusCode::ACCEPTED && r[0]["isSuccessful"] == true {
            ok = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(ok, "acme's tenant actor came back");
    let metrics = s.http.get(s.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("herald_actor_restarts_total{actor=\"tenant\"}"), "restart counted");
}

#[tokio::test]
async fn certificate_auth_and_stream_limits() {
    use base64::Engine as _;
    let w = PushWorld::start().await;
    let b64 = |p: &std::path::Path| base64::engine::general_purpose::STANDARD.encode(std::fs::read(p).unwrap());
    let app = json!({"categories": ["chat"], "iosApnsCertificate": b64(&w.creds.apns_cert_path), "iosApnsPrivateKey": b64(&w.creds.apns_cert_key_path),
        "iosBundleId": w.creds.bundle_id, "iosIsDevelopment": true});
    let (st, b) = w.server.call(Method::POST, "/v1/tenants/acme/apps/certified", Some(&w.admin), Some(app)).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    // The simulator allows two streams per connection: twelve concurrent sends need more connections.
    w.sims.set_faults(Faults {
        apns: ProviderFaults { max_concurrent_streams: Some(2), latency_ms: Some(50), ..Default::default() },
        ..Default::default()
    });
    for i in 0..12 {
        w.client("certified", "lena", &format!("APNS:{}", apns_token(500 + i))).await;
    }
    let (st, r) = w.send(to_user("lena", "mTLS")).await;
    assert_eq!(st, StatusCode::ACCEPTED);
    assert!(r.as_array().unwrap().iter().all(|e| e["isSuccessful"] == true), "{r}");
    let s = w.sims.stats();
    assert_eq!(s.apns.accepted, 12);
    assert!(s.apns.connections >= 2, "another connection opened when streams ran out: {}", s.apns.connections);
    let req = w.sims.requests(herald_sim::Provider::Apns, 1).pop().unwrap();
    assert!(!req.headers.contains_key("authorization"), "certificate auth sends no bearer");
}
