//! Web Push end to end: apps' VAPID keys, browser subscriptions as push
//! tokens, and sends through the HTTP API that the Web Push simulator
//! verifies (the VAPID JWT) and decrypts (RFC 8291), so the plaintext is
//! checked here.

use crate::common::*;
use herald_sim::{Faults, Provider, ProviderFaults, StatusFault};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// Herald and the simulators, subscriptions at the simulator's loopback
/// address allowed (`--allow-private-provider-endpoints`).
async fn world() -> PushWorld {
    PushWorld::start_with(|c| c.push.allow_private_endpoints = true).await
}

/// A `WEB` client of app `demo` linked to `user`, subscribed as `id` at the simulator.
async fn web_client(w: &PushWorld, user: &str, id: &str) -> String {
    w.client("demo", user, &format!("WEB:{}", w.sims.webpush_subscription(id))).await
}

/// The decrypted messages the simulator accepted, by subscription id.
fn plaintexts(w: &PushWorld) -> Vec<(String, Value)> {
    w.sims
        .requests(Provider::Webpush, 100)
        .into_iter()
        .filter_map(|r| Some((r.path.trim_start_matches('/').to_string(), serde_json::from_str(&r.plaintext?).ok()?)))
        .collect()
}

#[tokio::test]
async fn one_client_gets_the_message_decrypted_with_its_headers() {
    let w = world().await;
    let client = web_client(&w, "alice", "alice-browser").await;
    let message = json!({"title": "Hi", "body": "there", "collapseKey": "order 42", "timeToLive": 3600, "priority": "HIGH", "icon": "/icon.png"});
    let mut body = to_client("alice", &client, message);
    body["payload"]["customData"] = json!({"orderId": 42});
    body["sender"] = json!({"tenantId": "acme", "userId": "bob"});
    let (st, r) = w.send(body).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    assert_eq!(r[0]["isSuccessful"], true, "{r}");
    assert_eq!(r[0]["results"][0], json!({"result": "SENT", "astClientId": client}));

    let req = w.sims.requests(Provider::Webpush, 1).pop().unwrap();
    assert_eq!((req.path.as_str(), req.status, req.version.as_str()), ("/alice-browser", 201, "HTTP/2.0"));
    let h = |name: &str| req.headers.get(name).cloned().unwrap_or_default();
    assert_eq!(h("ttl"), "3600");
    assert_eq!(h("urgency"), "high");
    assert_eq!(h("topic").len(), 32, "a collapse key that is no topic is hashed into one");
    assert_eq!(h("content-encoding"), "aes128gcm");
    assert!(h("authorization").starts_with("vapid t="), "{}", h("authorization"));
    let id = r[0]["notificationId"].as_str().unwrap();
    let plain: Value = serde_json::from_str(req.plaintext.as_deref().unwrap()).unwrap();
    assert_eq!(
        plain,
        json!({"notificationId": id, "category": "chat", "title": "Hi", "body": "there", "icon": "/icon.png",
               "data": {"orderId": 42}, "sender": {"tenantId": "acme", "userId": "bob"}})
    );
    let s = w.sims.stats().webpush;
    assert_eq!((s.accepted, s.rejected), (1, 0));
    assert!(s.jwt_verifications >= 1);

    // The VAPID key the JWT was signed with is the app's, as GET shows it.
    let (_, app) = w.server.call(Method::GET, "/v1/tenants/acme/apps/demo", Some(&w.admin), None).await;
    let public = app["pushNotificationConfig"]["webPushVapidPublicKey"].as_str().unwrap();
    assert!(h("authorization").ends_with(&format!(", k={public}")));

    let report = w.wait_report(id, 5).await;
    assert_eq!(report["byProvider"]["webpush"]["sent"], 1, "{report}");
}

#[tokio::test]
async fn a_user_and_a_topic_reach_every_browser() {
    let w = world().await;
    let a = web_client(&w, "carol", "carol-laptop").await;
    let b = web_client(&w, "carol", "carol-phone").await;
    let apns = w.client("demo", "carol", &format!("APNS:{}", apns_token(5))).await;
    let (st, r) = w
        .send(json!({"category": "payment", "recipient": {"tenantId": "acme", "userId": "carol"},
                     "payload": {"message": {"title": "Paid", "body": "10 EUR"}}}))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let entries = r.as_array().unwrap();
    assert_eq!(entries.len(), 3);
    assert!(entries.iter().all(|e| e["isSuccessful"] == true), "{r}");
    for c in [&a, &b, &apns] {
        assert!(entries.iter().any(|e| e["astClientId"] == c.as_str()));
    }
    let got = plaintexts(&w);
    assert_eq!(got.len(), 2);
    for id in ["carol-laptop", "carol-phone"] {
        let (_, p) = got.iter().find(|(s, _)| s == id).unwrap();
        assert_eq!((p["title"].as_str(), p["body"].as_str()), (Some("Paid"), Some("10 EUR")), "{p}");
    }
    assert_eq!(w.sims.stats().apns.accepted, 1);

    // A topic broadcast: every valid subscription of the app, decrypted intact.
    for i in 0..20 {
        web_client(&w, &format!("reader{i}"), &format!("reader-{i}")).await;
    }
    w.sims.reset();
    let (st, r) = w
        .send(json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"},
                     "payload": {"message": {"title": "All", "body": "hands"}}}))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let id = r[0]["notificationId"].as_str().unwrap();
    let report = w.wait_report(id, 20).await;
    assert_eq!(report["state"], "COMPLETED", "{report}");
    assert_eq!(report["byProvider"]["webpush"]["sent"], 22, "{report}");
    let got = plaintexts(&w);
    assert_eq!(got.len(), 22);
    assert!(got.iter().all(|(_, p)| p["body"] == "hands" && p["notificationId"] == id));
    assert_eq!(w.sims.stats().webpush.distinct_tokens, 22);
}

#[tokio::test]
async fn a_dead_subscription_is_invalidated() {
    let w = world().await;
    let dead = w.client("demo", "dan", &format!("WEB:{}", w.creds.webpush_subscriptions[0])).await;
    let live = w.client("demo", "dan", &format!("WEB:{}", w.creds.webpush_subscriptions[1])).await;
    let (st, r) = w
        .send(json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "dan"}, "payload": {"message": {"body": "x"}}}))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    for e in r.as_array().unwrap() {
        let id = e["astClientId"].as_str().unwrap();
        assert_eq!(e["isSuccessful"], id == live, "{e}");
        if id == dead {
            assert_eq!(e["results"][0]["result"]["code"], 410, "{e}");
        }
    }
    let path = |id: &str| format!("/v1/tenants/acme/clients/{id}/pushtoken");
    assert_eq!(w.server.call(Method::GET, &path(&dead), Some(&w.admin), None).await.1["isValid"], false);
    let live_token = w.server.call(Method::GET, &path(&live), Some(&w.admin), None).await.1;
    assert_eq!(live_token["isValid"], true);
    assert_eq!(live_token["pushProvider"], "WEB");
    assert!(live_token["pushToken"].as_str().unwrap().starts_with(r#"{"endpoint":"https://127.0.0.1:"#));
    assert_eq!(w.sims.stats().webpush.by_reason.get("SubscriptionGone"), Some(&1));
}

#[tokio::test]
async fn throttling_and_unavailability_are_retried() {
    let w = world().await;
    web_client(&w, "hank", "hank-browser").await;
    let rules = vec![
        StatusFault { status: 429, count: Some(2), retry_after: Some(0), ..Default::default() },
        StatusFault { status: 503, count: Some(1), ..Default::default() },
    ];
    w.sims.set_faults(Faults { webpush: ProviderFaults { status: rules, ..Default::default() }, ..Default::default() });
    let (st, r) = w
        .send(json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "hank"}, "payload": {"message": {"body": "retry me"}}}))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED);
    assert_eq!(r[0]["isSuccessful"], true, "{r}");
    let s = w.sims.stats().webpush;
    assert_eq!((s.by_status.get("429"), s.by_status.get("503"), s.accepted), (Some(&2), Some(&1), 1));
    assert_eq!(plaintexts(&w)[0].1["body"], "retry me");
}

#[tokio::test]
async fn invalid_subscriptions_are_refused_naming_the_field() {
    // Private addresses are refused here: the default configuration.
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "web").await;
    let (id, _) = s.register_client("acme", &admin, "web").await;
    let keys = json!({"p256dh": "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "auth": "BTBZMqHH6r4Tts7J_aSIgg"});
    let path = format!("/v1/tenants/acme/clients/{id}/pushtoken");
    let put = |sub: Value| {
        let body = json!({"appName": "web", "pushProvider": "WEB", "pushToken": sub.to_string()});
        s.call(Method::PUT, &path, Some(&admin), Some(body))
    };
    let with_keys = |endpoint: &str, keys: Value| json!({"endpoint": endpoint, "expirationTime": null, "keys": keys});
    let mut short = keys.clone();
    short["p256dh"] = json!("BCVxsr7N_eNgVRqvHtD0zTZsEc6");
    let mut bad_auth = keys.clone();
    bad_auth["auth"] = json!("BTBZMqHH");
    for (sub, name) in [
        (with_keys("http://push.example.net/x", keys.clone()), "pushToken.endpoint"),
        (with_keys("https://10.1.2.3/x", keys.clone()), "pushToken.endpoint"),
        (with_keys("https://127.0.0.1:8443/x", keys.clone()), "pushToken.endpoint"),
        (with_keys("https://[::1]/x", keys.clone()), "pushToken.endpoint"),
        (with_keys("https://push.example.net/x", short), "pushToken.keys.p256dh"),
        (with_keys("https://push.example.net/x", bad_auth), "pushToken.keys.auth"),
        (json!({"endpoint": "https://push.example.net/x"}), "pushToken.keys.p256dh"),
        (json!("not a subscription"), "pushToken"),
    ] {
        let (st, b) = put(sub.clone()).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{sub}: {b}");
        assert_eq!(field(&b), name, "{sub}: {b}");
    }
    let (st, b) = put(with_keys("https://push.example.net/x", keys.clone())).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["pushProvider"], "WEB");
    // The legacy prefix names the provider too.
    let legacy =
        json!({"appName": "web", "pushToken": format!("WEB:{}", with_keys("https://push.example.net/y", keys))});
    let (st, b) = s.call(Method::PUT, &path, Some(&admin), Some(legacy)).await;
    assert_eq!((st, b["pushProvider"].as_str()), (StatusCode::OK, Some("WEB")), "{b}");
}

#[tokio::test]
async fn the_app_shows_its_vapid_public_key_never_the_private_one() {
    use base64::Engine as _;
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let app = |body: Value| s.call(Method::PUT, "/v1/tenants/acme/apps/web", Some(&admin), Some(body));
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/apps/web",
            Some(&admin),
            Some(json!({"categories": ["chat"], "webPushSubject": "mailto:ops@example.com"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let config = &b["pushNotificationConfig"];
    let generated = config["webPushVapidPublicKey"].as_str().unwrap().to_string();
    let point = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&generated).unwrap();
    assert_eq!((point.len(), point[0]), (65, 4), "an uncompressed P-256 point");
    assert_eq!(config["webPushVapidPrivateKey"], "***");
    assert_eq!(config["webPushSubject"], "mailto:ops@example.com");

    // Saved again without a key, the app keeps its pair (browsers subscribed with it).
    let (st, b) = app(json!({"categories": ["chat"], "webPushSubject": "https://example.com/contact"})).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["pushNotificationConfig"]["webPushVapidPublicKey"], generated.as_str());
    // A read sent back as it is keeps everything.
    let (_, read) = s.call(Method::GET, "/v1/tenants/acme/apps/web", Some(&admin), None).await;
    let (st, b) = app(read["pushNotificationConfig"].clone()).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["pushNotificationConfig"]["webPushVapidPublicKey"], generated.as_str());

    // A key given as a base64 PKCS#8 PEM: its public half is shown, never itself.
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let pem = key.serialize_pem();
    let given = base64::engine::general_purpose::STANDARD.encode(&pem);
    let (st, b) = app(
        json!({"categories": ["chat"], "webPushSubject": "mailto:ops@example.com", "webPushVapidPrivateKey": given}),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let public = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.public_key_raw());
    assert_eq!(b["pushNotificationConfig"]["webPushVapidPublicKey"], public.as_str());
    for (method, path) in [(Method::GET, "/v1/tenants/acme/apps/web"), (Method::GET, "/v1/tenants/acme/apps")] {
        let (st, b) = s.call(method, path, Some(&admin), None).await;
        assert_eq!(st, StatusCode::OK);
        let text = b.to_string();
        assert!(text.contains(&public), "{text}");
        assert!(!text.contains(&given) && !text.contains("PRIVATE KEY"), "{text}");
    }

    for (body, name) in [
        (json!({"categories": ["chat"], "webPushVapidPrivateKey": given}), "webPushSubject"),
        (json!({"categories": ["chat"], "webPushSubject": "ops@example.com"}), "webPushSubject"),
        (json!({"categories": ["chat"], "webPushSubject": "http://example.com"}), "webPushSubject"),
        (
            json!({"categories": ["chat"], "webPushSubject": "mailto:a@b", "webPushVapidPrivateKey": "bm90IGEga2V5"}),
            "webPushVapidPrivateKey",
        ),
        (
            json!({"categories": ["chat"], "webPushSubject": "mailto:a@b", "webPushVapidPublicKey": generated}),
            "webPushVapidPublicKey",
        ),
    ] {
        let (st, b) = app(body.clone()).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{body}: {b}");
        assert_eq!(field(&b), name, "{body}: {b}");
    }
    // Without a subject the app has no Web Push any more.
    let (st, b) = app(json!({"categories": ["chat"]})).await;
    assert_eq!(st, StatusCode::OK);
    assert!(b["pushNotificationConfig"]["webPushVapidPublicKey"].is_null(), "{b}");
}

#[tokio::test]
async fn a_payload_over_the_record_limit_is_refused_before_sending() {
    let w = world().await;
    let client = web_client(&w, "joe", "joe-browser").await;
    let (st, r) = w.send(to_client("joe", &client, json!({"body": "x".repeat(4000)}))).await;
    assert_eq!(st, StatusCode::ACCEPTED);
    assert_eq!(r[0]["isSuccessful"], false, "{r}");
    assert_eq!(r[0]["results"][0]["result"]["code"], 413, "{r}");
    assert!(r[0]["results"][0]["result"]["message"].as_str().unwrap().contains("3993-byte"), "{r}");
    assert_eq!(w.sims.stats().webpush.requests, 0, "nothing oversize reaches the push service");
    // Just under it goes through (a 4096-byte message).
    let (_, r) = w.send(to_client("joe", &client, json!({"body": "x".repeat(3850)}))).await;
    assert_eq!(r[0]["isSuccessful"], true, "{r}");
}
