//! Bearer verification on every tenant route, generated from the route table.

use crate::common::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use herald::auth::{tokens, Access};
use reqwest::{Method, StatusCode};
use serde_json::json;

/// Every tenant route of the router, with its parameters filled in for `tenant`.
fn tenant_routes(tenant: &str) -> Vec<(Method, String)> {
    herald::router::Router::global()
        .routes()
        .iter()
        .filter(|r| matches!(r.access, Access::Tenant(_)))
        .map(|r| {
            let mut path = r.path.replace("{tenantId}", tenant);
            while let Some(start) = path.find('{') {
                let end = path[start..].find('}').unwrap() + start;
                path.replace_range(start..=end, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
            }
            (Method::from_bytes(r.method.as_str().as_bytes()).unwrap(), path)
        })
        .collect()
}

#[tokio::test]
async fn every_tenant_route_needs_a_valid_token_of_its_tenant() {
    let s = TestServer::start().await;
    let acme = s.tenant_with_app("acme", "shop").await;
    s.create_tenant("other").await;
    let other = s.admin_token("other").await;

    // A token whose signature does not match (payload of acme, signature of other).
    let mut parts: Vec<&str> = acme.split('.').collect();
    let other_sig = other.split('.').nth(2).unwrap();
    parts[2] = other_sig;
    let bad_signature = parts.join(".");
    // alg none and HS256 tokens carrying acme's claims.
    let payload = acme.split('.').nth(1).unwrap();
    let none = format!("{}.{payload}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#));
    let hs256 = format!(
        "{}.{payload}.{}",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode("x")
    );
    // An expired token signed with acme's real key.
    let engine = &s.running.as_ref().unwrap().engine;
    let key = engine.keys.get(&engine.store, "acme").unwrap().unwrap();
    let (_, mut claims) =
        tokens::verify(&engine.store, &engine.keys, &engine.config.public_url, &acme, tokens::TYP_ACCESS).unwrap();
    claims.exp = claims.iat - 60;
    let expired = tokens::sign(&key, &claims).unwrap();

    let routes = tenant_routes("acme");
    assert!(routes.len() >= 10, "the route table lists the tenant routes");
    for (method, path) in routes {
        let (st, b) = s.call(method.clone(), &path, None, None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{method} {path} without token: {b}");
        // `/v1` bodies carry `code`, `/auth/realms` bodies the status word.
        assert!(b["code"] == 401 || b["status"] == "UNAUTHORIZED", "{method} {path}: {b}");
        for (name, token) in [
            ("garbage", "abc.def.ghi"),
            ("bad signature", &bad_signature),
            ("none", &none),
            ("hs256", &hs256),
            ("expired", &expired),
        ] {
            let (st, _) = s.call(method.clone(), &path, Some(token), None).await;
            assert_eq!(st, StatusCode::UNAUTHORIZED, "{method} {path} with a {name} token");
        }
        let (st, b) = s.call(method.clone(), &path, Some(&other), Some(json!({}))).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{method} {path} with another tenant's token: {b}");
        assert!(!b.to_string().contains("shop"), "no data of acme leaks: {b}");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn operator_routes_need_the_operator_token() {
    let s = TestServer::start().await;
    let body = json!({"tenantId": "abc", "adminUsername": "a", "adminPassword": "password1"});
    let (st, _) = s.call(Method::POST, "/v1/tenants", None, Some(body.clone())).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let (st, _) = s.call(Method::POST, "/v1/tenants", Some("wrong"), Some(body.clone())).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let (st, _) = s.call(Method::POST, "/v1/tenants", Some(&admin), Some(body)).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "a tenant admin is not the operator");
    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants",
            Some(OPERATOR),
            Some(json!({"tenantId": "acme", "adminUsername": "a", "adminPassword": "password1"})),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT);
    s.shutdown().await;
}

/// The API takes access tokens only: a refresh token of the same realm is
/// refused, and still refused once its signature was verified and cached
/// (the second call answers from the verification cache).
#[tokio::test]
async fn a_refresh_token_is_not_a_bearer_even_once_cached() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let (st, b) = s.password_grant("acme", "admin", PASSWORD).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let refresh = b["refresh_token"].as_str().expect("refresh_token").to_string();
    for attempt in ["first", "cached"] {
        let (st, b) = s.call(Method::GET, "/v1/tenants/acme/apps", Some(&refresh), None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{attempt} presentation of a refresh token: {b}");
    }
    let (st, b) = s.call(Method::GET, "/v1/tenants/acme/apps", Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK, "the access token of the same login still works: {b}");
    s.shutdown().await;
}

#[tokio::test]
async fn client_tokens_cannot_administer() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let (id, secret) = s.register_client("acme", &admin, "shop").await;
    let client = s.client_token("acme", &id, &secret).await;
    for (method, path) in [
        (Method::GET, format!("/v1/tenants/acme/clients/{id}/pushtoken")),
        (Method::GET, "/v1/tenants/acme/apps".to_string()),
        (Method::POST, "/v1/tenants/acme/clients".to_string()),
        (Method::DELETE, "/v1/tenants/acme/apps/shop".to_string()),
    ] {
        let (st, _) = s.call(method.clone(), &path, Some(&client), Some(json!({}))).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{method} {path}");
    }
    // A wrong client secret gets no token.
    let resp = s
        .http
        .post(s.url("/auth/realms/acme/protocol/openid-connect/token"))
        .form(&[("grant_type", "client_credentials"), ("client_id", id.as_str()), ("client_secret", "nope")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    s.shutdown().await;
}

/// Spec 001 quotes `HTTP 401 Unauthorized` for the realm interface's 401s
/// (address add, LDAP components), in its envelope.
#[tokio::test]
async fn a_realm_401_says_what_spec_001_quotes() {
    let s = TestServer::start().await;
    s.tenant_with_app("acme", "shop").await;
    for (method, path) in [
        (Method::POST, "/auth/realms/acme/address/alice/add"),
        (Method::PUT, "/auth/realms/acme/v3_ldap/components/ldap-1"),
    ] {
        let (st, b) = s.call(method, path, None, Some(serde_json::json!({}))).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(b["message"], "HTTP 401 Unauthorized", "{path}: {b}");
        assert_eq!(b["status"], "UNAUTHORIZED", "{path}: {b}");
    }
    s.shutdown().await;
}
