//! Nonces, login events and the login configuration through the HTTP API.

use crate::common;
use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn nonce(s: &TestServer, t: &str, kind: &str, body: Value) -> (StatusCode, Value) {
    s.call(Method::POST, &format!("/v1/tenants/acme/nonces?type={kind}"), Some(t), Some(body)).await
}

async fn login(s: &TestServer, t: &str, nonce: &str, client: &str, user: &str) -> StatusCode {
    s.call(
        Method::PUT,
        "/v1/tenants/acme/clients/events",
        Some(t),
        Some(json!({"nonce": nonce, "astClientId": client, "userId": user})),
    )
    .await
    .0
}

#[tokio::test]
async fn nonces_are_single_use_expire_and_check_the_user() {
    let clock = herald::auth::brute_force::Clock::default();
    let c2 = clock.clone();
    let s = TestServer::start_with(move |c| {
        c.clock = c2;
        c.webhooks.allow_private = true;
    })
    .await;
    let t = s.tenant_with_app("acme", "shop").await;
    let (client, _) = s.register_client("acme", &t, "shop").await;
    clock.freeze();
    let now = clock.now_ms();

    let (st, n) = nonce(&s, &t, "default", json!({"action": "LOGIN_NONCE", "payload": {"portalSessionId": "p-1", "expectedUserId": "alice", "timeout": 60}})).await;
    assert_eq!(st, StatusCode::CREATED, "{n}");
    assert_eq!(n["type"], "LOGIN_NONCE");
    assert_eq!(n["expiresAt"], now + 60_000);
    let value = n["nonce"].as_str().unwrap().to_string();
    assert_eq!(value.len(), 43, "32 random bytes, base64url");
    let (_, short) = nonce(&s, &t, "short", json!({"action": "TMS_NONCE", "payload": {}})).await;
    let sv = short["nonce"].as_str().unwrap();
    assert!(sv.len() == 8 && sv.bytes().all(|b| b.is_ascii_digit()), "{short}");
    assert_eq!(short["expiresAt"], now + 300_000, "default timeout 300 s");

    for (kind, body, f) in [
        ("default", json!({"action": "LOGIN", "payload": {}}), "action"),
        ("default", json!({"action": "LOGIN_NONCE", "payload": {"timeout": 3601}}), "payload.timeout"),
        ("default", json!({"action": "LOGIN_NONCE"}), "request body"),
        ("long", json!({"action": "LOGIN_NONCE", "payload": {}}), "type"),
    ] {
        let (st, b) = nonce(&s, &t, kind, body.clone()).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, f.to_string()), "{body} {b}");
    }

    let receiver = common::receiver::Receiver::start(vec![]).await;
    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/webhooks",
            Some(&t),
            Some(json!({"filter": "type=login", "callbackUrl": receiver.url})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);

    // Wrong user: 403 and the nonce is not spent; then success; then 409.
    assert_eq!(login(&s, &t, &value, &client, "mallory").await, StatusCode::FORBIDDEN);
    assert_eq!(login(&s, &t, &value, &client, "alice").await, StatusCode::OK);
    assert_eq!(login(&s, &t, &value, &client, "alice").await, StatusCode::CONFLICT);
    assert_eq!(login(&s, &t, "no-such-nonce", &client, "alice").await, StatusCode::NOT_FOUND);
    let (_, d) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{client}"), Some(&t), None).await;
    assert_eq!(d["lastSuccessfulVerification"], now);
    let got = receiver.wait_for(1, 10).await;
    let callback: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(callback["event"], "LOGIN_NONCE_COMPLETED");
    assert_eq!(
        callback["data"],
        json!({"timestampMillis": now, "nonce": value, "portalSessionId": "p-1", "loginEvent": {"astClientId": client, "userId": "alice"}})
    );

    // Expiry, by moving the clock.
    let (_, n) = nonce(&s, &t, "default", json!({"action": "LOGIN_NONCE", "payload": {"timeout": 10}})).await;
    clock.advance(10_001);
    assert_eq!(login(&s, &t, n["nonce"].as_str().unwrap(), &client, "bob").await, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn login_config_defaults_and_updates() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    let (st, c) = s.call(Method::GET, "/v1/tenants/acme/config/login", Some(&t), None).await;
    assert_eq!((st, c), (StatusCode::OK, json!({"risks": {"enableInference": false}})));
    let (st, c) = s
        .call(Method::PUT, "/v1/tenants/acme/config/login", Some(&t), Some(json!({"risks": {"enableInference": true}})))
        .await;
    assert_eq!((st, c["risks"]["enableInference"].clone()), (StatusCode::OK, json!(true)));
    let (_, c) = s.call(Method::GET, "/v1/tenants/acme/config/login", Some(&t), None).await;
    assert_eq!(c["risks"]["enableInference"], true);
    let (st, b) = s
        .call(
            Method::PUT,
            "/v1/tenants/acme/config/login",
            Some(&t),
            Some(json!({"risks": {"enableInference": "yes"}})),
        )
        .await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "risks.enableInference".to_string()));
}
