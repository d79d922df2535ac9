//! Provider faults injected by the simulators: dead tokens, 429/503, GOAWAY,
//! oversize payloads, provider-token hygiene, actor supervision.

use crate::common::*;
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

/// A caller that hangs up while its send waits for the provider does not
/// cut the send off: the provider's answer is still acted on (here a dead
/// token is learnt), though nobody reads the response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_whose_caller_hangs_up_still_acts_on_the_providers_answer() {
    let w = PushWorld::start().await;
    let dead = w.client("demo", "ivan", &format!("APNS:dead{}", "1".repeat(60))).await;
    w.sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(800), ..Default::default() },
        ..Default::default()
    });
    let url = w.server.url("/v1/tenants/acme/push_notification/send");
    let r = w.server.http.post(url).bearer_auth(&w.admin).json(&to_user("ivan", "nobody waits"));
    let gave_up = r.timeout(std::time::Duration::from_millis(200)).send().await;
    assert!(gave_up.is_err(), "the caller hung up while APNs still had the request");
    let token = format!("/v1/tenants/acme/clients/{dead}/pushtoken");
    for _ in 0..50 {
        let (_, t) = w.server.call(Method::GET, &token, Some(&w.admin), None).await;
        if t["isValid"] == false {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("APNs' 410 was not acted on after the caller hung up");
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
    w.sims.set_faults(Faults { apns: fault(429), fcm: fault(503), hms: fault(429), ..Default::default() });
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

/// A client of `app` linked to `user` with `token`, through a child Herald's API.
async fn child_client(http: &reqwest::Client, h: &Herald, admin: &str, user: &str, token: &str) -> String {
    let base = &h.base;
    let r = http.post(format!("{base}/v1/tenants/acme/clients")).bearer_auth(admin);
    let b: serde_json::Value =
        r.json(&json!({"appName": "demo", "platform": "android"})).send().await.unwrap().json().await.unwrap();
    let id = b["astClientId"].as_str().unwrap().to_string();
    for (path, body) in [
        (format!("/v1/tenants/acme/users/{user}/clients/{id}"), json!({})),
        (format!("/v1/tenants/acme/clients/{id}/pushtoken"), json!({"appName": "demo", "pushToken": token})),
    ] {
        let r = http.put(format!("{base}{path}")).bearer_auth(admin).json(&body).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
    id
}

/// `herald_actor_restarts_total`, all actors together.
async fn actor_restarts(http: &reqwest::Client, h: &Herald) -> f64 {
    let text = http.get(format!("{}/metrics", h.base)).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|l| l.starts_with("herald_actor_restarts_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn rule(status: u16, retry_after: Option<&str>, body: Option<herald_sim::BodyFault>) -> StatusFault {
    StatusFault { status, retry_after_header: retry_after.map(str::to_owned), body, ..Default::default() }
}

/// What a hostile provider can answer (`retry-after: 1e20` or `-5`, a body that
/// never ends, an OAuth `expires_in` of 0 or 2^63) neither hangs a send nor
/// hurts the engine: one-client sends and a 2 000-token broadcast finish, sent
/// or failed with the provider's reason, no actor restarts, and `/healthz`
/// answers throughout. (`--max-retry-after-s 1`, so that 1e20 seconds is one.)
#[tokio::test]
async fn hostile_answers_cannot_hurt_the_engine() {
    use herald_sim::BodyFault::Endless;
    use std::time::{Duration, Instant};
    let mut w = ChildWorld::start().await;
    w.env.push(("HERALD_MAX_RETRY_AFTER_S", "1".into()));
    let (sims, env) = (&w.sims, &w.env);
    acme_with_apns_clients(&w.data, env, &w.creds, 2000, 70_000).await;
    let h = Herald::start(&w.data, env);
    let http = crate::common::http_client();
    let admin = h.admin_token(&http).await;
    let olga = [
        child_client(&http, &h, &admin, "olga", &format!("APNS:{}", apns_token(1))).await,
        child_client(&http, &h, &admin, "olga", "FCM:fcm-olga").await,
        child_client(&http, &h, &admin, "olga", "HPK:hms-olga").await,
    ];
    let send = |body: serde_json::Value| {
        let (h, http, admin) = (&h, &http, &admin);
        async move { h.send(http, admin, &body).await }
    };
    let to_olga = || send(to_user("olga", "hostile"));
    let sent = |r: &serde_json::Value| r.as_array().unwrap().iter().filter(|e| e["isSuccessful"] == true).count();
    let restarts = actor_restarts(&http, &h).await;

    // /healthz, probed every 50 ms until the end.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let probe = {
        let (stop, url, http) = (stop.clone(), format!("{}/healthz", h.base), http.clone());
        tokio::spawn(async move {
            let (mut ok, mut failed) = (0, Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = tokio::time::timeout(Duration::from_secs(2), http.get(&url).send()).await;
                match r {
                    Ok(Ok(r)) if r.status() == StatusCode::OK => ok += 1,
                    other => failed.push(format!("{other:?}")),
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (ok, failed)
        })
    };
    let each = |f: &dyn Fn() -> ProviderFaults| Faults { apns: f(), fcm: f(), hms: f(), webpush: f() };
    let once = |status, retry_after, body| {
        move || ProviderFaults {
            status: vec![StatusFault { count: Some(1), ..rule(status, retry_after, body) }],
            ..Default::default()
        }
    };

    // retry-after: 1e20 (capped at 1 s), then -5 (no wait), then a body that
    // never ends (cut at 64 KiB): each once per provider, then sent.
    sims.set_faults(each(&once(429, Some("1e20"), None)));
    let started = Instant::now();
    assert_eq!(sent(&to_olga().await), 3);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900) && waited < Duration::from_secs(8), "{waited:?}");
    sims.set_faults(each(&once(503, Some("-5"), None)));
    assert_eq!(sent(&to_olga().await), 3);
    sims.set_faults(each(&once(503, None, Some(Endless))));
    assert_eq!(sent(&to_olga().await), 3);
    assert_eq!(sims.stats().apns.rejected, 3, "each provider answered each fault once");
    // A never-ending body for ever: failed, with the provider's reason.
    sims.set_faults(Faults {
        apns: ProviderFaults { status: vec![rule(503, Some("1e20"), Some(Endless))], ..Default::default() },
        ..Default::default()
    });
    let r = send(to_client("olga", &olga[0], json!({"body": "x"}))).await;
    assert_eq!(r[0]["isSuccessful"], false, "{r}");
    assert_eq!(r[0]["results"][0]["result"]["code"], 503, "{r}");
    assert_eq!(r[0]["results"][0]["result"]["message"], "ServiceUnavailable", "{r}");

    // OAuth answers with an expires_in of 0, then 2^63: the access tokens are
    // renewed after the 401 and then reused, not fetched for every send.
    for expires_in in [json!(0), json!(9_223_372_036_854_775_808u64)] {
        sims.set_faults(Faults::default());
        let oauth = || ProviderFaults {
            expire_access_tokens: true,
            expires_in: Some(expires_in.clone()),
            ..Default::default()
        };
        sims.set_faults(Faults { fcm: oauth(), hms: oauth(), ..Default::default() });
        let grants = |s: herald_sim::Stats| (s.fcm.token_grants, s.hms.token_grants);
        let before = grants(sims.stats());
        assert_eq!(sent(&to_olga().await), 3, "expires_in {expires_in}");
        assert_eq!(sent(&to_olga().await), 3, "expires_in {expires_in}");
        let after = grants(sims.stats());
        assert_eq!((after.0 - before.0, after.1 - before.1), (1, 1), "one new token each, reused: {expires_in}");
    }

    // A 2 000-token broadcast through all of it at seeded rates.
    let rate = |status, retry_after, body, rate: f64, seed| StatusFault {
        rate: Some(rate),
        seed: Some(seed),
        ..rule(status, retry_after, body)
    };
    sims.set_faults(Faults {
        apns: ProviderFaults {
            status: vec![
                rate(429, Some("1e20"), None, 0.05, 1),
                rate(503, Some("-5"), None, 0.05, 2),
                rate(503, None, Some(Endless), 0.02, 3),
            ],
            ..Default::default()
        },
        ..Default::default()
    });
    let r = send(json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": "all"}}})).await;
    let report = h.wait_report(&http, &admin, r[0]["notificationId"].as_str().unwrap(), 60).await;
    assert_eq!(report["state"], "COMPLETED", "{report}");
    let counts = &report["counts"];
    assert_eq!(counts["targeted"], 2003, "{report}");
    assert_eq!(counts["sent"].as_u64().unwrap() + counts["failed"].as_u64().unwrap(), 2003, "{report}");
    assert_eq!(counts["invalid"], 0, "{report}");
    println!("hostile broadcast: {counts}, simulator: {:?}", sims.stats().apns.by_reason);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failed) = probe.await.unwrap();
    assert!(failed.is_empty() && ok > 10, "/healthz answered {ok} times, failed: {failed:?}");
    assert_eq!(actor_restarts(&http, &h).await, restarts, "no actor restarted");
}

/// An interactive send does not wait past its deadline for a provider asking
/// for more time (`retry-after: 1e20` is capped at the default hour, longer
/// than the 10 s deadline): it fails at once with the provider's reason. A
/// dated `retry-after` is read; an answer that drips in slower than the
/// request timeout is given up and tried again.
#[tokio::test]
async fn a_provider_asking_for_more_than_the_deadline_fails_the_send_at_once() {
    use std::time::{Duration, Instant};
    let w = PushWorld::start_with(|c| c.push.limits.request_timeout = Duration::from_millis(500)).await;
    let a = w.client("demo", "paul", &format!("APNS:{}", apns_token(77))).await;
    let apns = |rules: Vec<StatusFault>| Faults {
        apns: ProviderFaults { status: rules, ..Default::default() },
        ..Default::default()
    };
    w.sims.set_faults(apns(vec![rule(429, Some("1e20"), None)]));
    let started = Instant::now();
    let (_, r) = w.send(to_client("paul", &a, json!({"body": "x"}))).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    let result = &r[0]["results"][0]["result"];
    assert_eq!(result["code"], 429, "{r}");
    let message = result["message"].as_str().unwrap();
    assert!(message.starts_with("TooManyRequests") && message.contains("3600 s, past the send deadline"), "{message}");
    assert_eq!(w.sims.stats().apns.requests, 1, "not tried again");

    // An HTTP date two seconds ahead: waited for, then sent.
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let date = (time::OffsetDateTime::now_utc() + Duration::from_secs(2)).format(&format).unwrap();
    w.sims.set_faults(apns(vec![StatusFault { count: Some(1), ..rule(503, Some(&date), None) }]));
    let started = Instant::now();
    let (_, r) = w.send(to_client("paul", &a, json!({"body": "x"}))).await;
    assert_eq!(r[0]["isSuccessful"], true, "{r}");
    assert!(started.elapsed() >= Duration::from_millis(900), "{:?}", started.elapsed());

    // A slow drip: cut at the request timeout, then sent on the next try.
    w.sims.set_faults(apns(vec![StatusFault {
        count: Some(1),
        ..rule(503, None, Some(herald_sim::BodyFault::DripMs(100)))
    }]));
    let (_, r) = w.send(to_client("paul", &a, json!({"body": "x"}))).await;
    assert_eq!(r[0]["isSuccessful"], true, "{r}");
}
