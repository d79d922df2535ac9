//! Bad input gets a 400 naming the field, through the real HTTP API.

use crate::common::*;
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
    let apns = json!({"categories": ["chat"], "iosApnsPrivateKey": b64(&key_pem(&rcgen::PKCS_ECDSA_P256_SHA256)), "iosApnsTeamId": "T", "iosApnsKeyId": "K", "iosBundleId": "com.x", "iosIsDevelopment": false});
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

fn b64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn key_pem(alg: &'static rcgen::SignatureAlgorithm) -> String {
    rcgen::KeyPair::generate_for(alg).unwrap().serialize_pem()
}

/// A self-signed certificate and its key, both PEM.
fn cert_and_key() -> (String, String) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let cert = rcgen::CertificateParams::new(vec!["com.x".to_string()]).unwrap().self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// The base64 service-account JSON of [`fcm_app_body`] with `fields` changed
/// (a null removes the field).
fn service_account(fields: Value) -> String {
    use base64::Engine as _;
    let b64 = fcm_app_body()["fcmServiceAccountJSON"].as_str().unwrap().to_string();
    let mut sa: Value =
        serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap();
    for (k, v) in fields.as_object().unwrap() {
        match v {
            Value::Null => sa.as_object_mut().unwrap().remove(k),
            v => sa.as_object_mut().unwrap().insert(k.clone(), v.clone()),
        };
    }
    base64::engine::general_purpose::STANDARD.encode(sa.to_string())
}

#[tokio::test]
async fn credentials_that_do_not_parse_are_refused_at_save() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    let token = |key: String| {
        json!({"categories": ["chat"], "iosApnsPrivateKey": key, "iosApnsTeamId": "T", "iosApnsKeyId": "K",
            "iosBundleId": "com.x", "iosIsDevelopment": false})
    };
    let certified = |cert: &str, key: &str| {
        json!({"categories": ["chat"], "iosApnsCertificate": b64(cert), "iosApnsPrivateKey": b64(key),
            "iosBundleId": "com.x", "iosIsDevelopment": true})
    };
    let fcm = |sa: String| json!({"categories": ["chat"], "fcmServiceAccountJSON": sa});
    let (cert, key) = cert_and_key();
    let (_, other_key) = cert_and_key();
    let cases: Vec<(Value, &str, &str)> = vec![
        (token(b64("key")), "iosApnsPrivateKey", "P-256"),
        (token(b64(&key_pem(&rcgen::PKCS_ECDSA_P384_SHA384))), "iosApnsPrivateKey", "P-256"),
        (token(b64(TEST_RSA_PEM)), "iosApnsPrivateKey", "P-256"),
        (certified("cert", &key), "iosApnsCertificate", "X.509"),
        (
            certified("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", &key),
            "iosApnsCertificate",
            "X.509",
        ),
        (certified(&cert, "key"), "iosApnsPrivateKey", "private key"),
        (certified(&cert, &other_key), "iosApnsPrivateKey", "not the key of the certificate"),
        (fcm(service_account(json!({"private_key": "garbage"}))), "fcmServiceAccountJSON", "private_key"),
        (
            fcm(service_account(json!({"private_key": key_pem(&rcgen::PKCS_ECDSA_P256_SHA256)}))),
            "fcmServiceAccountJSON",
            "RSA",
        ),
        (fcm(service_account(json!({"client_email": null}))), "fcmServiceAccountJSON", "client_email"),
        (fcm(service_account(json!({"project_id": ""}))), "fcmServiceAccountJSON", "project_id"),
    ];
    for (body, field, says) in &cases {
        let (st, b) = s.call(Method::POST, "/v1/tenants/acme/apps/bad", Some(&t), Some(body.clone())).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{body} -> {b}");
        let message = b["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{field}: ")) && message.contains(says), "{body} -> {message}");
    }
    // Good credentials of each kind are saved.
    for (name, body) in [
        ("token", token(b64(&key_pem(&rcgen::PKCS_ECDSA_P256_SHA256)))),
        ("certified", certified(&cert, &key)),
        ("fcm", fcm_app_body()),
    ] {
        assert_eq!(save(&s, &t, name, body).await.0, StatusCode::CREATED, "{name}");
    }
    // An update is checked the same way; the mask keeps the stored credential unread.
    for (body, expected, _) in &cases {
        let app = if body.get("fcmServiceAccountJSON").is_some() { "fcm" } else { "certified" };
        let (st, b) = s.call(Method::PUT, &format!("/v1/tenants/acme/apps/{app}"), Some(&t), Some(body.clone())).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, expected.to_string()), "PUT {body} -> {b}");
    }
    let masked = json!({"categories": ["chat"], "iosApnsCertificate": "***", "iosApnsPrivateKey": "***",
        "iosBundleId": "com.x", "iosIsDevelopment": true});
    let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/apps/certified", Some(&t), Some(masked)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let masked = json!({"categories": ["chat"], "fcmServiceAccountJSON": "***"});
    let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/apps/fcm", Some(&t), Some(masked)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    s.shutdown().await;
}

/// A service account's `token_uri` is an address the engine will connect to on
/// a tenant's word: https at a public address only (or an endpoint the
/// operator configured), unless the operator allows private endpoints.
#[tokio::test]
async fn a_token_uri_must_be_https_at_a_public_address() {
    let fcm = |uri: &str| json!({"categories": ["chat"], "fcmServiceAccountJSON": service_account(json!({"token_uri": uri}))});
    let refused = [
        "http://127.0.0.1:9/token",
        "https://10.0.0.1/token",
        "https://[::1]:8443/token",
        "http://oauth2.googleapis.com/token",
        // A name is resolved when saved: refused if any address is private or loopback.
        "https://localhost:9/token",
    ];
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    for uri in refused {
        let (st, b) = s.call(Method::POST, "/v1/tenants/acme/apps/guarded", Some(&t), Some(fcm(uri))).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "fcmServiceAccountJSON".into()), "{uri}: {b}");
        assert!(b["message"].as_str().unwrap().contains("token_uri"), "{b}");
    }
    // A public address is saved (a literal: tests resolve no external name).
    assert_eq!(save(&s, &t, "public", fcm("https://93.184.216.34/token")).await.0, StatusCode::CREATED);
    // An update is checked the same way.
    let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/apps/public", Some(&t), Some(fcm(refused[1]))).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "fcmServiceAccountJSON".into()), "{b}");
    s.shutdown().await;

    let s = TestServer::start_with(|c| c.push.allow_private_endpoints = true).await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    for (i, uri) in refused.iter().enumerate() {
        assert_eq!(save(&s, &t, &format!("private{i}"), fcm(uri)).await.0, StatusCode::CREATED, "{uri}");
    }
    s.shutdown().await;
}

/// The guard holds on the addresses a name resolves to: `localhost` is refused
/// when saved, with the field named (a send connecting to a name checks it
/// again, since it can be re-pointed). The simulators' own endpoints, which
/// the operator configured, are saved and serve without being resolved.
#[tokio::test]
async fn a_token_uri_resolving_to_loopback_is_refused_when_saved() {
    use base64::Engine as _;
    let w = PushWorld::start().await;
    let port = w.sims.fcm_addr().port();
    let mut sa: Value = serde_json::from_str(&w.creds.fcm_service_account_json).unwrap();
    let app = |sa: &Value| json!({"categories": ["chat"], "fcmServiceAccountJSON": base64::engine::general_purpose::STANDARD.encode(sa.to_string())});
    sa["token_uri"] = json!(format!("https://localhost:{port}/token"));
    let (st, b) = w.server.call(Method::POST, "/v1/tenants/acme/apps/local", Some(&w.admin), Some(app(&sa))).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "fcmServiceAccountJSON".into()), "{b}");
    let message = b["message"].as_str().unwrap();
    assert!(message.contains("token_uri") && message.contains("localhost resolves to"), "{message}");
    assert!(message.contains("private or loopback"), "{message}");
    sa["token_uri"] = json!(format!("https://127.0.0.1:{port}/token"));
    let (st, b) = w.server.call(Method::POST, "/v1/tenants/acme/apps/configured", Some(&w.admin), Some(app(&sa))).await;
    assert_eq!(st, StatusCode::CREATED, "the configured origin: {b}");
    let configured = w.client("configured", "nina", "FCM:fcm-nina-configured").await;
    let (st, r) = w.send(json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "nina"}, "payload": {"message": {"body": "hi"}}})).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let result = r.as_array().unwrap().iter().find(|e| e["astClientId"] == configured).unwrap().clone();
    assert_eq!(result["isSuccessful"], true, "{r}");
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

/// API.md: ids are ULIDs, and a malformed one in a path is a 400 naming the
/// parameter, not a 404.
#[tokio::test]
async fn malformed_ids_in_paths_are_400_naming_the_parameter() {
    let s = TestServer::start().await;
    let t = s.tenant_with_app("acme", "shop").await;
    for (method, path, param) in [
        (Method::GET, "/v1/tenants/acme/clients/not-a-ulid", "astClientId"),
        (Method::PUT, "/v1/tenants/acme/clients/not-a-ulid/pushtoken", "astClientId"),
        (Method::GET, "/v1/tenants/acme/versions/short", "versionId"),
        (Method::DELETE, "/v1/tenants/acme/versions/short", "versionId"),
        (Method::GET, "/v1/tenants/acme/policies/short", "policyId"),
        (Method::GET, "/v1/tenants/acme/webhooks/not-an-id", "webhookId"),
        (Method::DELETE, "/v1/tenants/acme/webhooks/not-an-id", "webhookId"),
    ] {
        let body =
            (method != Method::GET && method != Method::DELETE).then(|| json!({"appName": "shop", "pushToken": ""}));
        let (st, b) = s.call(method.clone(), path, Some(&t), body).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, param.to_string()), "{method} {path}: {b}");
    }
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/clients/01ARZ3NDEKTSV4RRFFQ69G5FAV", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "a well-formed id of nothing stays a 404");
    s.shutdown().await;
}
