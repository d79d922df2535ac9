//! Bad input gets a 400 naming the field, through the real HTTP API.

mod common;
use common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn save(s: &TestServer, token: &str, name: &str, body: Value) -> (StatusCode, String) {
    let (st, b) = s.call(Method::POST, &format!("/v1/tenants/acme/apps/{name}"), Some(token), Some(body)).await;
    if st == StatusCode::BAD_REQUEST {
        assert_eq!(b["code"], 400, "{b}");
        assert_eq!(b["subsystem"], 519, "{b}");
    }
    (st, field(&b))
}

#[tokio::test]
async fn app_rules_name_the_field() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    let bad = StatusCode::BAD_REQUEST;
    let apns = json!({"categories": ["chat"], "iosApnsPrivateKey": "a2V5", "iosApnsTeamId": "T", "iosApnsKeyId": "K", "iosBundleId": "com.x", "iosIsDevelopment": false});
    assert_eq!(save(&s, &t, "ok", apns.clone()).await.0, StatusCode::CREATED);
    let cases: Vec<(&str, Value, &str)> = vec![
        ("x".repeat(33).leak(), json!({"categories": ["chat"]}), "appName"),
        ("a", json!({"categories": []}), "categories"),
        ("a", json!({}), "request body"),
        ("a", json!({"categories": ["chat", "chat"]}), "categories[1]"),
        ("a", json!({"categories": ["spam"]}), "categories[0]"),
        ("a", json!({"categories": ["chat"], "hpkClientId": "id"}), "hpkClientSecret"),
        ("a", json!({"categories": ["chat"], "hpkClientSecret": "s"}), "hpkClientId"),
        ("a", json!({"categories": ["chat"], "hpkClientId": "x".repeat(65), "hpkClientSecret": "s"}), "hpkClientId"),
        ("a", json!({"categories": ["chat"], "iosApnsTeamId": "x".repeat(33)}), "iosApnsTeamId"),
        ("a", json!({"categories": ["chat"], "iosBundleId": "x".repeat(129)}), "iosBundleId"),
        ("a", json!({"categories": ["chat"], "androidApiKey": "x".repeat(256)}), "androidApiKey"),
        ("a", json!({"categories": ["chat"], "fcmServiceAccountJSON": "bm90IGpzb24="}), "fcmServiceAccountJSON"),
        ("a", json!({"categories": ["chat"], "iosBundleId": "com.x"}), "iosIsDevelopment"),
        ("a", json!({"categories": ["chat"], "iosBundleId": "com.x", "iosIsDevelopment": true}), "iosApnsTeamId"),
        (
            "a",
            json!({"categories": ["chat"], "iosApnsCertificate": "Y2VydA==", "iosBundleId": "com.x", "iosIsDevelopment": true}),
            "iosApnsPrivateKey",
        ),
        (
            "a",
            json!({"categories": ["chat"], "iosApnsCertificate": "Y2VydA==", "iosApnsPrivateKey": "a2V5", "iosIsDevelopment": true}),
            "iosBundleId",
        ),
        ("a", json!({"categories": ["chat"], "iosIsDevelopment": "yes"}), "iosIsDevelopment"),
        ("a", json!({"categories": ["chat"], "surprise": 1}), "surprise"),
        ("a", json!({"categories": ["chat"], "appName": "b"}), "appName"),
    ];
    for (name, body, expected) in cases {
        assert_eq!(save(&s, &t, name, body.clone()).await, (bad, expected.to_string()), "{body}");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn unknown_fields_and_malformed_bodies_are_rejected_everywhere() {
    let s = TestServer::start().await;
    let t = s.tenant_with_app("acme", "shop").await;
    let (client, _) = s.register_client("acme", &t, "shop").await;
    let cases = [
        (
            Method::POST,
            "/v1/tenants".to_string(),
            json!({"tenantId": "abc", "adminUsername": "a", "adminPassword": "password1", "x": 1}),
            "x",
        ),
        (
            Method::POST,
            "/v1/tenants".to_string(),
            json!({"tenantId": "AB_C", "adminUsername": "a", "adminPassword": "password1"}),
            "tenantId",
        ),
        (
            Method::POST,
            "/v1/tenants".to_string(),
            json!({"tenantId": "ab", "adminUsername": "a", "adminPassword": "password1"}),
            "tenantId",
        ),
        (
            Method::POST,
            "/v1/tenants/acme/clients".to_string(),
            json!({"appName": "shop", "platform": "ios", "color": "red"}),
            "color",
        ),
        (
            Method::POST,
            "/v1/tenants/acme/clients".to_string(),
            json!({"appName": "nope", "platform": "ios"}),
            "appName",
        ),
        (Method::POST, "/v1/tenants/acme/clients".to_string(), json!({"appName": "shop", "platform": ""}), "platform"),
        (
            Method::PUT,
            format!("/v1/tenants/acme/clients/{client}/pushtoken"),
            json!({"appName": "shop", "pushToken": "x", "extra": true}),
            "extra",
        ),
        (
            Method::PUT,
            format!("/v1/tenants/acme/clients/{client}/pushtoken"),
            json!({"appName": "shop", "pushToken": "tok"}),
            "pushProvider",
        ),
        (
            Method::PUT,
            format!("/v1/tenants/acme/clients/{client}/pushtoken"),
            json!({"appName": "shop", "pushToken": "APNS:zz"}),
            "pushToken",
        ),
        (
            Method::PUT,
            format!("/v1/tenants/acme/clients/{client}/pushtoken"),
            json!({"appName": "other", "pushToken": "FCM:t"}),
            "appName",
        ),
        (
            Method::PUT,
            format!("/v1/tenants/acme/clients/{client}/pushtoken"),
            json!({"appName": 5, "pushToken": "FCM:t"}),
            "appName",
        ),
        (Method::PUT, format!("/v1/tenants/acme/users/alice/clients/{client}"), json!({"mLoA": "x", "y": 1}), "y"),
        (Method::PUT, "/v1/tenants/acme/users/alice/clients/not-a-ulid".to_string(), json!({}), "astClientId"),
    ];
    for (method, path, body, expected) in cases {
        let token = if path == "/v1/tenants" { OPERATOR } else { t.as_str() };
        let (st, b) = s.call(method.clone(), &path, Some(token), Some(body.clone())).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, expected.to_string()), "{method} {path} {body} -> {b}");
    }
    // Not JSON at all.
    let resp = s.http.post(s.url("/v1/tenants/acme/apps/z")).bearer_auth(&t).body("{not json").send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    s.shutdown().await;
}

#[tokio::test]
async fn bodies_over_the_limit_get_413() {
    let s = TestServer::start_with(|c| c.body_limit = 4096).await;
    let t = s.tenant_with_app("acme", "shop").await;
    let big = json!({"categories": ["chat"], "androidApiKey": "x".repeat(5000)});
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/apps/big", Some(&t), Some(big)).await;
    assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE, "{b}");
    assert_eq!(b["code"], 413);
    s.shutdown().await;
}
