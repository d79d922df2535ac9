//! Webhooks through the real HTTP API, delivered to a local receiver on loopback.

use crate::common::receiver::{Received, Receiver};
use crate::common::*;
use base64::Engine as _;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn server() -> (TestServer, String) {
    let s = TestServer::start_with(|c| {
        c.webhooks.allow_private = true;
        c.webhooks.retry_schedule =
            [0, 50, 50, 50, 50].iter().map(|ms| std::time::Duration::from_millis(*ms)).collect();
    })
    .await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    (s, t)
}

async fn create(s: &TestServer, t: &str, body: Value) -> (StatusCode, Value) {
    s.call(Method::POST, "/v1/tenants/acme/webhooks", Some(t), Some(body)).await
}

async fn publish(s: &TestServer, t: &str, event: &str, data: Value) -> Value {
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/events",
            Some(t),
            Some(json!({"type": "domain", "event": event, "data": data})),
        )
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    b
}

/// The Standard Webhooks check a receiver makes.
fn verify(secret: &str, r: &Received) -> bool {
    let key = base64::engine::general_purpose::STANDARD.decode(secret.trim_start_matches("whsec_")).unwrap();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let signed = format!("{}.{}.{}", r.headers["webhook-id"], r.headers["webhook-timestamp"], r.body);
    let expected = base64::engine::general_purpose::STANDARD.encode(ring::hmac::sign(&key, signed.as_bytes()).as_ref());
    r.headers["webhook-signature"].split(' ').any(|s| s == format!("v1,{expected}"))
}

#[tokio::test]
async fn crud_validation_and_isolation() {
    let (s, t) = server().await;
    let ok = json!({"filter": "type=domain", "callbackUrl": "https://example.invalid/hook"});
    let (st, w) = create(&s, &t, ok.clone()).await;
    assert_eq!(st, StatusCode::CREATED, "{w}");
    assert!(w["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(
        (w["active"].clone(), w["authType"].clone(), w["createdBy"].clone()),
        (json!(true), json!("NONE"), json!("admin"))
    );
    let id = w["id"].as_str().unwrap().to_string();
    let (_, got) = s.call(Method::GET, &format!("/v1/tenants/acme/webhooks/{id}"), Some(&t), None).await;
    assert!(got.get("secret").is_none(), "the secret is shown once");
    for (body, expected) in [
        (json!({"filter": "ab", "callbackUrl": "https://x.io"}), "filter"),
        (json!({"filter": "type=domain and (", "callbackUrl": "https://x.io"}), "filter"),
        (json!({"filter": "type=domain", "callbackUrl": "not a url"}), "callbackUrl"),
        (json!({"filter": "type=domain", "callbackUrl": "ftp://x.io/a"}), "callbackUrl"),
        (json!({"filter": "type=domain", "callbackUrl": format!("https://x.io/{}", "a".repeat(4000))}), "callbackUrl"),
        (json!({"filter": "type=domain", "callbackUrl": "https://x.io", "authType": "BASIC"}), "authCredentials"),
        (json!({"filter": "type=domain", "callbackUrl": "https://x.io", "authType": "DIGEST"}), "authType"),
        (json!({"filter": "type=domain", "callbackUrl": "https://x.io", "color": 1}), "color"),
    ] {
        let (st, b) = create(&s, &t, body.clone()).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, expected.to_string()), "{body}: {b}");
        assert_eq!(b["subsystem"], 521);
    }
    let (st, b) = create(&s, &t, json!({"filter": "type=domain and (", "callbackUrl": "https://x.io"})).await;
    assert!(st == StatusCode::BAD_REQUEST && b["message"].as_str().unwrap().contains("ParsingError"), "{b}");
    let (st, b) = create(&s, &t, json!({"filter": "type=client", "callbackUrl": "https://y.io", "authType": "BASIC", "authCredentials": {"username": "u", "password": "p"}, "active": false})).await;
    assert_eq!(st, StatusCode::CREATED);
    assert_eq!(b["authCredentials"]["password"], "***", "credentials never in clear");

    // Update, list paging and filters.
    let (st, u) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/webhooks/{id}"),
            Some(&t),
            Some(json!({"filter": "event=X", "callbackUrl": "https://z.io"})),
        )
        .await;
    assert_eq!((st, u["filter"].clone()), (StatusCode::OK, json!("event=X")));
    for i in 0..6 {
        create(&s, &t, json!({"filter": "type=domain", "callbackUrl": format!("https://h{i}.io")})).await;
    }
    let (_, page) = s.call(Method::GET, "/v1/tenants/acme/webhooks?page=2&page_size=5", Some(&t), None).await;
    assert_eq!(page.as_array().unwrap().len(), 3);
    let (_, f) = s
        .call(
            Method::GET,
            "/v1/tenants/acme/webhooks?filter=callbackUrl%5E%3Dhttps://h&filter=active=true",
            Some(&t),
            None,
        )
        .await;
    assert_eq!(f.as_array().unwrap().len(), 6);
    let (st, b) = s.call(Method::GET, "/v1/tenants/acme/webhooks?filter=colour=red", Some(&t), None).await;
    assert!(st == StatusCode::BAD_REQUEST && b["message"].as_str().unwrap().starts_with("UnknownProperty"), "{b}");
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/webhooks?page_size=4", Some(&t), None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    // Another tenant sees nothing.
    s.create_tenant("other").await;
    let o = s.admin_token("other").await;
    let (_, list) = s.call(Method::GET, "/v1/tenants/other/webhooks", Some(&o), None).await;
    assert_eq!(list, json!([]));
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/other/webhooks/{id}"), Some(&o), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    let (st, _) = s.call(Method::DELETE, &format!("/v1/tenants/acme/webhooks/{id}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/webhooks/{id}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn signed_delivery_with_basic_auth_and_filters() {
    let (s, t) = server().await;
    let r = Receiver::start(vec![]).await;
    let (_, w) = create(&s, &t, json!({"filter": "type=domain and (event=TMS_RESULT_AVAILABLE or data.kind=\"special one\")", "callbackUrl": r.url,
        "authType": "BASIC", "authCredentials": {"username": "hook", "password": "s3cret"}})).await;
    let secret = w["secret"].as_str().unwrap().to_string();
    publish(&s, &t, "TMS_RESULT_AVAILABLE", json!({"result": 1})).await;
    publish(&s, &t, "OTHER", json!({"kind": "plain"})).await;
    publish(&s, &t, "OTHER", json!({"kind": "special one"})).await;
    let got = r.wait_for(2, 10).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let got2 = r.received();
    assert_eq!(got2.len(), 2, "only matching events: {got:?}");
    for g in &got2 {
        assert!(verify(&secret, g), "signature verifies: {g:?}");
        let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("hook:s3cret"));
        assert_eq!(g.headers["authorization"], expected);
        assert_eq!(g.headers["user-agent"], concat!("Herald-Webhooks/", env!("CARGO_PKG_VERSION")));
        let body: Value = serde_json::from_str(&g.body).unwrap();
        assert_eq!(body["tenantId"], "acme");
        assert_eq!(body["type"], "domain");
        assert_eq!(body["id"], g.headers["webhook-id"].as_str());
        assert!(body["timestamp"].as_str().unwrap().contains('T'));
    }
    let first: Value = serde_json::from_str(&got2[0].body).unwrap();
    assert_eq!(first["event"], "TMS_RESULT_AVAILABLE", "delivered in order");
    // A tampered body fails verification.
    let mut tampered = got2[0].clone();
    tampered.body.push(' ');
    assert!(!verify(&secret, &tampered));
}

#[tokio::test]
async fn retries_until_success_exactly_once_and_410_disables() {
    let (s, t) = server().await;
    let r = Receiver::start(vec![500, 503, 429]).await;
    let (_, w) = create(&s, &t, json!({"filter": "type=domain", "callbackUrl": r.url})).await;
    let id = w["id"].as_str().unwrap().to_string();
    let e = publish(&s, &t, "RETRY_ME", json!({})).await;
    let got = r.wait_for(4, 10).await;
    assert_eq!(got.len(), 4, "three failures then a success");
    assert!(got.iter().all(|g| g.headers["webhook-id"] == e["id"].as_str().unwrap()), "the same message each time");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(r.received().len(), 4, "nothing more after the success");
    let (_, attempts) = s.call(Method::GET, &format!("/v1/tenants/acme/webhooks/{id}/attempts"), Some(&t), None).await;
    let statuses: Vec<_> = attempts.as_array().unwrap().iter().map(|a| a["statusCode"].as_u64().unwrap()).collect();
    assert_eq!(statuses, vec![500, 503, 429, 200]);
    assert_eq!(attempts[3]["attempt"], 4);

    // 410 Gone disables the webhook.
    let gone = Receiver::start(vec![410]).await;
    let (_, w) = create(&s, &t, json!({"filter": "type=domain", "callbackUrl": gone.url})).await;
    let gid = w["id"].as_str().unwrap().to_string();
    publish(&s, &t, "BYE", json!({})).await;
    gone.wait_for(1, 10).await;
    let mut disabled = Value::Null;
    for _ in 0..100 {
        let (_, w) = s.call(Method::GET, &format!("/v1/tenants/acme/webhooks/{gid}"), Some(&t), None).await;
        if w["active"] == false {
            disabled = w;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(disabled["active"], false, "410 disabled the webhook");
    assert!(disabled["disabledReason"].as_str().unwrap().contains("410"));
}

#[tokio::test]
async fn exhausted_events_are_kept_and_replayed() {
    let (s, t) = server().await;
    let r = Receiver::start(vec![500, 500, 500, 500, 500]).await;
    let (_, w) = create(&s, &t, json!({"filter": "type=domain", "callbackUrl": r.url})).await;
    let id = w["id"].as_str().unwrap().to_string();
    publish(&s, &t, "DOOMED", json!({})).await;
    r.wait_for(5, 10).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(r.received().len(), 5, "the schedule has five attempts");
    let (st, b) = s
        .call(
            Method::POST,
            &format!("/v1/tenants/acme/webhooks/{id}/replay?since=2020-01-01T00:00:00Z"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!((st, b["requeued"].clone()), (StatusCode::ACCEPTED, json!(1)));
    let got = r.wait_for(6, 10).await;
    assert_eq!(got.len(), 6, "the replayed event was delivered");
    let (st, _) =
        s.call(Method::POST, &format!("/v1/tenants/acme/webhooks/{id}/replay?since=yesterday"), Some(&t), None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_private_address_guard_refuses_loopback_receivers() {
    let s = TestServer::start_with(|c| c.webhooks.retry_schedule = vec![std::time::Duration::ZERO]).await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    let r = Receiver::start(vec![]).await;
    let by_name = r.url.replace("127.0.0.1", "localhost");
    for url in [r.url.clone(), by_name] {
        let (_, w) = create(&s, &t, json!({"filter": "type=domain", "callbackUrl": url})).await;
        let id = w["id"].as_str().unwrap().to_string();
        publish(&s, &t, "PROBE", json!({})).await;
        let mut logged = Value::Null;
        for _ in 0..100 {
            let (_, a) = s.call(Method::GET, &format!("/v1/tenants/acme/webhooks/{id}/attempts"), Some(&t), None).await;
            if !a.as_array().unwrap().is_empty() {
                logged = a;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(logged[0]["statusCode"], 0, "{url}: {logged}");
        assert!(logged[0]["response"].as_str().unwrap().contains("private or loopback"), "{logged}");
        s.call(Method::DELETE, &format!("/v1/tenants/acme/webhooks/{id}"), Some(&t), None).await;
    }
    assert!(r.received().is_empty(), "nothing reached the loopback receiver");
}

#[tokio::test]
async fn engine_events_reach_webhooks() {
    let w = PushWorld::start_with(|c| c.webhooks.allow_private = true).await;
    let r = Receiver::start(vec![]).await;
    let (st, _) = w
        .server
        .call(
            Method::POST,
            "/v1/tenants/acme/webhooks",
            Some(&w.admin),
            Some(json!({"filter": "type=client or type=push", "callbackUrl": r.url})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    w.client("demo", "mia", "FCM:dead-mia").await;
    w.send(json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "all"}, "payload": {"message": {"body": "x"}}})).await;
    let got = r.wait_for(3, 10).await;
    let events: Vec<String> = got
        .iter()
        .map(|g| serde_json::from_str::<Value>(&g.body).unwrap()["event"].as_str().unwrap().to_string())
        .collect();
    for e in ["CLIENT_REGISTERED", "PUSH_TOKEN_INVALIDATED", "BROADCAST_COMPLETED"] {
        assert!(events.iter().any(|x| x == e), "{e} in {events:?}");
    }
}

#[tokio::test]
async fn outboxes_survive_sigkill() {
    const EVENTS: usize = 1000;
    let dir = tempfile::tempdir().unwrap();
    // A port with no receiver yet: deliveries fail and wait in the outbox.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let schedule = std::iter::once("0".to_string())
        .chain(std::iter::repeat_n("0.2".to_string(), 100))
        .collect::<Vec<_>>()
        .join(",");
    let env = vec![("HERALD_WEBHOOK_ALLOW_PRIVATE", "true".to_string()), ("HERALD_WEBHOOK_RETRY_SCHEDULE", schedule)];
    let http = crate::common::http_client();
    let h = Herald::start(dir.path(), &env);
    let token = h.create_tenant(&http, "acme").await;
    let r = http
        .post(format!("{}/v1/tenants/acme/webhooks", h.base))
        .bearer_auth(&token)
        .json(&json!({"filter": "type=domain", "callbackUrl": format!("http://127.0.0.1:{port}/hook")}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let mut published = std::collections::HashSet::new();
    let mut tasks = Vec::new();
    for i in 0..EVENTS {
        let (http, base, token) = (http.clone(), h.base.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            let r = http
                .post(format!("{base}/v1/tenants/acme/events"))
                .bearer_auth(&token)
                .json(&json!({"type": "domain", "event": "TICK", "data": {"n": i}}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::ACCEPTED);
            r.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_string()
        }));
        if tasks.len() == 50 {
            for t in tasks.drain(..) {
                published.insert(t.await.unwrap());
            }
        }
    }
    for t in tasks {
        published.insert(t.await.unwrap());
    }
    h.kill9();

    // The receiver comes up, Herald restarts: every acknowledged event arrives.
    let r = Receiver::start_on(port).await;
    let started = std::time::Instant::now();
    let h = Herald::start(dir.path(), &env);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let distinct = loop {
        let ids: std::collections::HashSet<String> =
            r.received().iter().map(|g| g.headers["webhook-id"].clone()).collect();
        if ids.len() >= EVENTS || std::time::Instant::now() > deadline {
            break ids;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let secs = started.elapsed().as_secs_f64();
    h.kill9();
    println!("{} events published before SIGKILL, {} distinct delivered after restart in {secs:.1} s ({:.0} deliveries/s, {} requests)", published.len(), distinct.len(), distinct.len() as f64 / secs, r.received().len());
    assert_eq!(published.len(), EVENTS);
    assert!(published.is_subset(&distinct), "every acknowledged event delivered at least once");
}

/// A receiver that answers every request `410 Gone` after `delay`, and counts them.
async fn slow_gone(delay: std::time::Duration) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = stream.read(&mut buf).await;
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                let _ = stream.write_all(b"HTTP/1.1 410 Gone\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
            });
        }
    });
    (url, seen)
}

/// Creates a webhook of tenant `acme` for `type=domain` events to `url`; answers its id.
async fn hook(s: &TestServer, t: &str, url: &str) -> String {
    let body = json!({"filter": "type=domain", "callbackUrl": url});
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/webhooks", Some(t), Some(body)).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    b["id"].as_str().unwrap().to_string()
}

/// Invariant: a 410 answered while the webhook was being updated never
/// erases the update, and a 410 from the URL the update replaced does not
/// disable the webhook at its new URL.
#[tokio::test]
async fn an_update_made_while_a_410_is_on_its_way_stands() {
    let (s, t) = server().await;
    let (gone_url, seen) = slow_gone(std::time::Duration::from_millis(500)).await;
    let good = Receiver::start(vec![]).await;
    let id = hook(&s, &t, &gone_url).await;
    let event = json!({"type": "domain", "event": "ORDER_PAID", "data": {"id": 1}});
    let (st, _) = s.call(Method::POST, "/v1/tenants/acme/events", Some(&t), Some(event.clone())).await;
    assert_eq!(st, StatusCode::ACCEPTED);
    // The attempt is at the receiver, whose 410 is on its way: move the webhook.
    while seen.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let moved = json!({"filter": "type=domain and event=ORDER_SHIPPED", "callbackUrl": good.url});
    let (st, b) = s.call(Method::PUT, &format!("/v1/tenants/acme/webhooks/{id}"), Some(&t), Some(moved)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    tokio::time::sleep(std::time::Duration::from_millis(900)).await; // the 410 has come back
    let (_, w) = s.call(Method::GET, &format!("/v1/tenants/acme/webhooks/{id}"), Some(&t), None).await;
    assert_eq!(w["callbackUrl"], good.url.as_str(), "the update stands: {w}");
    assert_eq!(w["filter"], "type=domain and event=ORDER_SHIPPED", "{w}");
    assert_eq!(w["active"], true, "the old URL's 410 did not disable the new one: {w}");
    // Without an update in between, a 410 does disable it.
    let second = hook(&s, &t, &gone_url).await;
    s.call(Method::POST, "/v1/tenants/acme/events", Some(&t), Some(event)).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, w) = s.call(Method::GET, &format!("/v1/tenants/acme/webhooks/{second}"), Some(&t), None).await;
        if w["active"] == false {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the 410 never disabled the webhook: {w}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    s.shutdown().await;
}

/// The library API: the same checks as the routes, typed answers.
#[tokio::test]
async fn library_methods_check_the_caller_and_answer_typed_views() {
    use herald::models::webhook::{DomainEvent, WebhookBody};
    use herald::paging::Paging;
    use herald::{Caller, ErrorKind};
    let (s, _) = server().await;
    let engine = &s.running.as_ref().unwrap().engine;
    let (admin, reader) = (Caller::admin("acme"), Caller::reader("acme"));
    let body = || -> WebhookBody {
        serde_json::from_value(json!({"filter": "type=domain", "callbackUrl": "https://example.invalid/hook"})).unwrap()
    };
    let err = engine.webhooks().create(&reader, "acme", body()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let created = engine.webhooks().create(&admin, "acme", body()).await.unwrap();
    assert!(created.secret.as_deref().is_some_and(|s| s.starts_with("whsec_")));
    assert_eq!(created.created_by, "embedded-admin");

    let page = Paging { page: 1, size: 20 };
    let listed = engine.webhooks().list(&reader, "acme", &[], page).await.unwrap();
    assert_eq!((listed.len(), listed[0].secret.as_deref()), (1, None), "the secret shows once");
    let err = engine.webhooks().list(&reader, "acme", &[], Paging { page: 1, size: 1 }).await.unwrap_err();
    assert_eq!(err.field.as_deref(), Some("page_size"), "{err}");

    let event = || DomainEvent { kind: "domain".into(), event: "ORDER_SHIPPED".into(), data: json!({"order": 7}) };
    let err = engine.webhooks().publish(&Caller::Anonymous, "acme", event()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthenticated, "{err}");
    let err = engine.webhooks().publish(&Caller::admin("other"), "acme", event()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let published = engine.webhooks().publish(&admin, "acme", event()).await.unwrap();
    assert_eq!(published.webhooks, 1);
    let bad = DomainEvent { event: "lower".into(), ..event() };
    let err = engine.webhooks().publish(&admin, "acme", bad).await.unwrap_err();
    assert_eq!((err.kind(), err.field.as_deref()), (ErrorKind::Invalid, Some("event")));

    engine.webhooks().delete(&admin, "acme", &created.id).await.unwrap();
    let err = engine.webhooks().get(&reader, "acme", &created.id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
}
