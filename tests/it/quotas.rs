//! Per-tenant quotas the operator sets (`PUT /v1/tenants/{t}/limits`):
//! interactive sends refused past their rate, broadcasts slowed to theirs,
//! broadcasts per day and stored push tokens refused past them.

use crate::common::*;
use herald_sim::Provider;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn set_limits(w: &PushWorld, limits: Value) {
    let (st, b) = w.server.call(Method::PUT, "/v1/tenants/acme/limits", Some(OPERATOR), Some(limits)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
}

/// When the APNs simulator received each send (ms).
fn apns_arrivals(w: &PushWorld) -> Vec<u64> {
    let requests = w.sims.requests(Provider::Apns, herald_sim::RECORDED_REQUESTS);
    requests.iter().filter(|r| r.path.starts_with("/3/device/")).map(|r| r.received_ms).collect()
}

fn topic() -> Value {
    json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": "all"}}})
}

/// The figure of the issue: 1 000 one-client sends at 250 a second, a
/// tenant limited to 100 a second. The refused get 429 with
/// `Retry-After` naming the limit, and the simulator sees no more than 100 a
/// second (allowing for arrival jitter: [`assert_paced`]).
#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_limited_to_100_a_second_is_refused_past_it_and_the_provider_sees_at_most_100_a_second() {
    let w = PushWorld::start().await;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    set_limits(&w, json!({"interactivePerSecond": 100})).await;
    w.sims.reset();

    // 1 000 sends at 250 a second (one every 4 ms, each on its own task), for 4 s.
    let url = w.server.url("/v1/tenants/acme/push_notification/send");
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(4));
    let mut sends = Vec::new();
    for _ in 0..1000 {
        tick.tick().await;
        let (http, url, admin) = (w.server.http.clone(), url.clone(), w.admin.clone());
        let body = to_client("alice", &client, json!({"body": "hi"}));
        sends.push(tokio::spawn(async move {
            let r = http.post(&url).bearer_auth(&admin).json(&body).send().await.unwrap();
            match r.status() {
                StatusCode::ACCEPTED => true,
                StatusCode::TOO_MANY_REQUESTS => {
                    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
                    assert!((1..=2).contains(&retry), "Retry-After {retry}");
                    let b: Value = r.json().await.unwrap();
                    assert!(b["message"].as_str().unwrap().contains("interactivePerSecond"), "{b}");
                    false
                }
                s => panic!("unexpected {s}: {}", r.text().await.unwrap()),
            }
        }));
    }
    let (mut sent, mut refused) = (0u64, 0u64);
    for send in sends {
        match send.await.unwrap() {
            true => sent += 1,
            false => refused += 1,
        }
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(sent + refused, 1000);
    assert!(refused > 0, "none refused in {secs:.1} s");
    // The bucket starts with one token and refills at 100 a second.
    assert!(sent as f64 <= 1.0 + 100.0 * secs + 1.0, "{sent} sent in {secs:.2} s");
    assert!(sent as f64 >= 100.0 * secs * 0.5, "{sent} sent in {secs:.2} s: the limit is a rate, not a wall");
    let arrivals = apns_arrivals(&w);
    assert_eq!(arrivals.len() as u64, sent, "each accepted send reached the simulator once");
    assert_paced(&arrivals, 100.0, 1.0);
    eprintln!("{sent} sent and {refused} refused in {secs:.2} s");

    let metrics = w.server.http.get(w.server.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let line = r#"herald_quota_refused_total{limit="interactivePerSecond",tenant="acme"}"#;
    assert!(metrics.lines().any(|l| l.starts_with(line)), "{line} missing");
}

/// Only the operator sets quotas; the tenant's admin reads them with its
/// usage; bad values are 400s naming the field; an unknown tenant is 404.
#[tokio::test]
async fn the_operator_sets_quotas_and_the_tenant_reads_them() {
    let w = PushWorld::start().await;
    let s = &w.server;
    let body = json!({"interactivePerSecond": 5, "broadcastsPerDay": 3, "pushTokens": 10});
    let (st, _) = s.call(Method::PUT, "/v1/tenants/acme/limits", Some(&w.admin), Some(body.clone())).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "a tenant admin does not set its own quotas");
    let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/limits", Some(OPERATOR), Some(body)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["interactivePerSecond"], 5);
    w.client("demo", "alice", "FCM:fcm-1").await;
    let (st, b) = s.call(Method::GET, "/v1/tenants/acme/limits", Some(&w.admin), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!((b["broadcastsPerDay"].clone(), b["pushTokens"].clone()), (json!(3), json!(10)), "{b}");
    assert_eq!(b["usage"], json!({"broadcastsToday": 0, "pushTokens": 1}));
    assert!(b["updatedAt"].as_u64().unwrap() > 0);
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/limits", None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);

    for (bad, field) in [
        (json!({"interactivePerSecond": 0}), "interactivePerSecond"),
        (json!({"bulkPerSecond": 2_000_000}), "bulkPerSecond"),
        (json!({"interactiveBurst": 5}), "interactiveBurst"),
        (json!({"pushTokens": -1}), "pushTokens"),
        (json!({"perSecond": 5}), "perSecond"),
    ] {
        let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/limits", Some(OPERATOR), Some(bad)).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{b}");
        assert!(b["message"].as_str().unwrap().contains(field), "{field}: {b}");
    }
    let (st, _) = s.call(Method::PUT, "/v1/tenants/nobody/limits", Some(OPERATOR), Some(json!({}))).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    // `{}` removes them all.
    let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/limits", Some(OPERATOR), Some(json!({}))).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert!(b.get("interactivePerSecond").is_none() && b.get("updatedAt").is_none(), "{b}");
}

/// Past `broadcastsPerDay` a topic send is 429 until the next UTC day; past
/// `pushTokens` a new registration is 429 while replacing a token is not;
/// in a batch, each event past the interactive rate gets its own 429.
#[tokio::test]
async fn broadcasts_per_day_push_tokens_and_batch_events_are_refused_past_their_quota() {
    let w = PushWorld::start().await;
    let s = &w.server;
    let first = w.client("demo", "alice", "FCM:fcm-1").await;
    w.client("demo", "bob", "FCM:fcm-2").await;
    set_limits(&w, json!({"broadcastsPerDay": 1, "pushTokens": 2, "interactivePerSecond": 1})).await;

    let (third, _) = s.register_client("acme", &w.admin, "demo").await;
    let r = s
        .http
        .put(s.url(&format!("/v1/tenants/acme/clients/{third}/pushtoken")))
        .bearer_auth(&w.admin)
        .json(&json!({"appName": "demo", "pushToken": "FCM:fcm-3"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()["retry-after"], "60");
    assert!(r.text().await.unwrap().contains("pushTokens"));
    let (st, b) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/clients/{first}/pushtoken"),
            Some(&w.admin),
            Some(json!({"appName": "demo", "pushToken": "FCM:fcm-1b"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "a client's token is replaced at the quota: {b}");

    let (st, b) = w.send(topic()).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let r = s.http.post(s.url("/v1/tenants/acme/push_notification/send")).bearer_auth(&w.admin).json(&topic());
    let r = r.send().await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=86_400).contains(&retry), "until the next UTC day: {retry}");
    assert!(r.text().await.unwrap().contains("broadcastsPerDay"));
    let (_, b) = s.call(Method::GET, "/v1/tenants/acme/limits", Some(&w.admin), None).await;
    assert_eq!(b["usage"]["broadcastsToday"], 1, "{b}");

    tokio::time::sleep(Duration::from_millis(1100)).await; // the bucket holds one token again
    let events: Vec<Value> = (0..3).map(|_| to_client("alice", &first, json!({"body": "hi"}))).collect();
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/push_notification/send-batch",
            Some(&w.admin),
            Some(json!({"events": events})),
        )
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let results = b["results"].as_array().unwrap();
    let refused = results.iter().filter(|e| e["code"] == 429).count();
    assert_eq!(refused, 2, "one event fits the bucket: {b}");
    assert!(results.iter().any(|e| e["message"].as_str().is_some_and(|m| m.contains("interactivePerSecond"))));
}

/// A broadcast over the tenant's `bulkPerSecond` is accepted and paced: the
/// simulator sees no more than the rate and its small burst (allowing for
/// arrival jitter: [`assert_paced`]).
#[tokio::test(flavor = "multi_thread")]
async fn a_broadcast_over_the_bulk_rate_is_slowed_not_refused() {
    let w = PushWorld::start().await;
    for i in 0..50 {
        w.client("demo", &format!("user{i}"), &format!("APNS:{}", apns_token(i))).await;
    }
    set_limits(&w, json!({"bulkPerSecond": 20})).await;
    w.sims.reset();
    let started = Instant::now();
    let (st, r) = w.send(topic()).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let report = w.wait_report(r[0]["notificationId"].as_str().unwrap(), 30).await;
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(report["state"], "COMPLETED", "{report}");
    assert_eq!(report["counts"]["sent"], 50);
    assert!(secs >= 2.0, "50 at 20 a second took {secs:.2} s");
    assert_paced(&apns_arrivals(&w), 20.0, 1.0);
    let metrics = w.server.http.get(w.server.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let line = r#"herald_quota_throttled_total{limit="bulkPerSecond",tenant="acme"}"#;
    assert!(metrics.lines().any(|l| l.starts_with(line)), "{line} missing");
}

/// A tenant's quota series are at 0 from when its quotas are set, and again
/// after a restart, before anything is refused or slowed: the "Tenant quotas"
/// panel shows them rather than "No data". Quotas it does not have, and
/// tenants without quotas, get none. (A child `herald serve`: the metrics
/// registry is process-wide.)
#[tokio::test]
async fn a_tenants_quota_series_are_at_zero_before_a_first_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let http = http_client();
    let metrics = |h: &Herald| {
        let (http, url) = (http.clone(), format!("{}/metrics", h.base));
        async move { http.get(url).send().await.unwrap().text().await.unwrap() }
    };
    let zero = [
        r#"herald_quota_refused_total{limit="interactivePerSecond",tenant="acme"} 0"#,
        r#"herald_quota_refused_total{limit="broadcastsPerDay",tenant="acme"} 0"#,
        r#"herald_quota_throttled_total{limit="bulkPerSecond",tenant="acme"} 0"#,
    ];
    let absent = [r#"{limit="pushTokens",tenant="acme"}"#, r#"tenant="other""#];
    let check = |text: &str, when: &str| {
        let quota_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("herald_quota_")).collect();
        for line in zero {
            assert!(quota_lines.contains(&line), "{when}: {line} missing in {quota_lines:#?}");
        }
        for part in absent {
            assert!(!quota_lines.iter().any(|l| l.contains(part)), "{when}: {part} in {quota_lines:#?}");
        }
    };

    let h = Herald::start(&data, &[]);
    h.create_tenant(&http, "acme").await;
    h.create_tenant(&http, "other").await;
    let text = metrics(&h).await;
    assert!(
        !text.contains(r#"herald_quota_refused_total{limit="interactivePerSecond",tenant="acme"}"#),
        "no quota yet"
    );
    let r = http
        .put(format!("{}/v1/tenants/acme/limits", h.base))
        .bearer_auth(OPERATOR)
        .json(&json!({"interactivePerSecond": 5, "broadcastsPerDay": 3, "bulkPerSecond": 100}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    check(&metrics(&h).await, "once set");
    h.kill9();

    let h = Herald::start(&data, &[]);
    check(&metrics(&h).await, "after a restart");
}
