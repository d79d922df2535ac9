//! Tenant isolation and authorization, generated from the router's route table:
//! every tenant route is called with every kind of wrong credential, and with
//! another tenant's valid credentials aimed at the identifiers of tenant `acme`.
//! Each must get the right 401/403, and no answer may carry `acme`'s data.

use crate::common::*;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use herald::auth::{tokens, Access, Grant};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// Values seeded into `acme` that no request of the suite contains: any answer
/// carrying one of them leaks `acme`'s data.
const MARKERS: [&str; 6] = [
    "acme-marker-email@example.com",
    "acme-marker-push-token",
    "https://acme-marker-hook.example.com/in",
    "acme-marker-property-value",
    "acme-marker-firstname",
    "acme-marker-lastname",
];

/// A route of the table with its access rule.
struct TenantRoute {
    method: Method,
    pattern: &'static str,
    grants: &'static [Grant],
}

fn tenant_routes() -> Vec<TenantRoute> {
    herald::router::Router::global()
        .routes()
        .iter()
        .filter_map(|r| match r.access {
            Access::Tenant(grants) => Some(TenantRoute {
                method: Method::from_bytes(r.method.as_str().as_bytes()).expect("method"),
                pattern: r.path,
                grants,
            }),
            _ => None,
        })
        .collect()
}

/// Fills a pattern's parameters: `tenant`, then `acme`'s identifiers by name.
fn fill(pattern: &str, tenant: &str, ids: &[(&str, String)]) -> String {
    let mut path = pattern.replace("{tenantId}", tenant);
    while let Some(start) = path.find('{') {
        let end = path[start..].find('}').map(|e| e + start).expect("closed parameter");
        let name = path[start + 1..end].to_string();
        let value = ids.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
        path.replace_range(start..=end, &value.unwrap_or_else(|| "01ARZ3NDEKTSV4RRFFQ69G5FAV".into()));
    }
    path
}

fn leaks(body: &Value) -> Option<&'static str> {
    let text = body.to_string();
    MARKERS.iter().copied().find(|m| text.contains(m))
}

/// Seeds recognisable data in `acme`; returns its identifiers by parameter name.
async fn seed_acme(s: &TestServer, admin: &str) -> Vec<(&'static str, String)> {
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/apps/shop", Some(admin), Some(fcm_app_body())).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let (st, b) = s
        .call(
            Method::POST,
            "/auth/realms/acme/users",
            Some(admin),
            Some(json!({"username": "alice", "email": "acme-marker-email@example.com", "firstName": "acme-marker-firstname", "lastName": "acme-marker-lastname"})),
        )
        .await;
    assert!(st.is_success(), "{st} {b}");
    let user_id = b["data"]["id"].as_str().expect("user id").to_string();
    let (client, _) = s.register_client("acme", admin, "shop").await;
    let calls = [
        (Method::PUT, format!("/v1/tenants/acme/users/alice/clients/{client}"), json!({})),
        (
            Method::PUT,
            format!("/v1/tenants/acme/clients/{client}/pushtoken"),
            json!({"appName": "shop", "pushToken": "FCM:acme-marker-push-token"}),
        ),
        (
            Method::POST,
            "/v1/tenants/acme/users/alice/properties".into(),
            json!({"name": "secret", "type": "UTF8STRING", "value": "acme-marker-property-value"}),
        ),
    ];
    for (method, path, body) in calls {
        let (st, b) = s.call(method.clone(), &path, Some(admin), Some(body)).await;
        assert!(st.is_success(), "{method} {path}: {st} {b}");
    }
    let (st, hook) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/webhooks",
            Some(admin),
            Some(json!({"filter": "type=domain", "callbackUrl": "https://acme-marker-hook.example.com/in"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{hook}");
    // Sanity: the markers are readable by acme itself, so their absence elsewhere means something.
    let (_, b) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{client}/pushtoken"), Some(admin), None).await;
    assert_eq!(leaks(&b), Some("acme-marker-push-token"), "{b}");
    vec![
        ("astClientId", client),
        ("userId", "alice".into()),
        ("userName", "alice".into()),
        ("id", user_id),
        ("appName", "shop".into()),
        ("webhookId", hook["id"].as_str().expect("webhook id").to_string()),
    ]
}

#[tokio::test]
async fn no_tenant_reaches_another_and_every_role_stays_in_its_lane() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let acme = s.admin_token("acme").await;
    let ids = seed_acme(&s, &acme).await;
    s.create_tenant("other").await;
    let other = s.admin_token("other").await;
    let (st, _) = s.call(Method::POST, "/v1/tenants/other/apps/shop", Some(&other), Some(fcm_app_body())).await;
    assert_eq!(st, StatusCode::CREATED);
    let (oid, osecret) = s.register_client("other", &other, "shop").await;
    let other_client = s.client_token("other", &oid, &osecret).await;
    let (aid, asecret) = s.register_client("acme", &acme, "shop").await;
    let acme_client = s.client_token("acme", &aid, &asecret).await;

    // Tokens forged from acme's admin claims.
    let engine = &s.running.as_ref().expect("running").engine;
    let acme_key = engine.keys.get(&engine.store, "acme").unwrap().unwrap();
    let other_key = engine.keys.get(&engine.store, "other").unwrap().unwrap();
    let (_, claims) =
        tokens::verify(&engine.store, &engine.keys, &engine.config.public_url, &acme, tokens::TYP_ACCESS).unwrap();
    let mut expired_claims = claims.clone();
    expired_claims.exp = claims.iat - 60;
    let expired = tokens::sign(&acme_key, &expired_claims).unwrap();
    // acme's claims signed by other's key, once under other's kid and once under acme's.
    let foreign = tokens::sign(&other_key, &claims).unwrap();
    let mut parts: Vec<String> = foreign.split('.').map(str::to_string).collect();
    parts[0] = acme.split('.').next().unwrap().to_string();
    let foreign_with_acme_kid = parts.join(".");
    let header =
        |alg: &str| URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}","typ":"JWT","kid":"{}"}}"#, acme_key.kid));
    let payload = acme.split('.').nth(1).unwrap();
    let none = format!("{}.{payload}.", header("none"));
    // HS256 with the public key as the HMAC secret (the key-confusion attack), in each form a verifier might use.
    let hs256 = |secret: &[u8]| {
        let input = format!("{}.{payload}", header("HS256"));
        let tag = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret), input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    };
    let jwk = acme_key.jwk().to_string();
    let mut point = vec![4u8];
    point.extend(URL_SAFE_NO_PAD.decode(&acme_key.x).unwrap());
    point.extend(URL_SAFE_NO_PAD.decode(&acme_key.y).unwrap());
    let hs_jwk = hs256(jwk.as_bytes());
    let hs_point = hs256(&point);
    let hs_b64 = hs256(STANDARD.encode(&point).as_bytes());
    // A correctly signed admin-read token of acme.
    let mut read_claims = claims.clone();
    read_claims.realm_access.roles = vec!["admin-read".into()];
    let reader = tokens::sign(&acme_key, &read_claims).unwrap();

    let unauthenticated: [(&str, &str); 8] = [
        ("expired", &expired),
        ("signed by another tenant's key", &foreign),
        ("signed by another tenant's key under acme's kid", &foreign_with_acme_kid),
        ("alg none", &none),
        ("HS256 keyed with the JWK", &hs_jwk),
        ("HS256 keyed with the public point", &hs_point),
        ("HS256 keyed with the base64 point", &hs_b64),
        ("garbage", "a.b.c"),
    ];
    let routes = tenant_routes();
    assert!(routes.len() >= 80, "the route table lists the tenant routes: {}", routes.len());
    let mut cases = 0;
    for r in &routes {
        let at_acme = fill(r.pattern, "acme", &ids);
        let what = format!("{} {}", r.method, r.pattern);
        let mut check = |st: StatusCode, b: &Value, expected: StatusCode, name: &str| {
            cases += 1;
            assert_eq!(st, expected, "{what} with {name}: {b}");
            assert_eq!(leaks(b), None, "{what} with {name} leaks acme's data: {b}");
        };
        let (st, b) = s.call(r.method.clone(), &at_acme, None, Some(json!({}))).await;
        check(st, &b, StatusCode::UNAUTHORIZED, "no token");
        for (name, token) in unauthenticated {
            let (st, b) = s.call(r.method.clone(), &at_acme, Some(token), Some(json!({}))).await;
            check(st, &b, StatusCode::UNAUTHORIZED, name);
        }
        for (name, token) in [("another tenant's admin", &other), ("another tenant's client", &other_client)] {
            let (st, b) = s.call(r.method.clone(), &at_acme, Some(token), Some(json!({}))).await;
            check(st, &b, StatusCode::FORBIDDEN, name);
        }
        if !r.grants.contains(&Grant::Client) {
            let (st, b) = s.call(r.method.clone(), &at_acme, Some(&acme_client), Some(json!({}))).await;
            check(st, &b, StatusCode::FORBIDDEN, "a client token");
        }
        if !r.grants.contains(&Grant::AdminRead) {
            let (st, b) = s.call(r.method.clone(), &at_acme, Some(&reader), Some(json!({}))).await;
            check(st, &b, StatusCode::FORBIDDEN, "an admin-read token");
        }
        // Another tenant's admin on its own tenant, aimed at acme's identifiers: whatever
        // the answer, none of acme's data.
        let at_other = fill(r.pattern, "other", &ids);
        let (st, b) = s.call(r.method.clone(), &at_other, Some(&other), Some(json!({}))).await;
        cases += 1;
        assert!(st.as_u16() < 500, "{what} on other with acme's ids: {st} {b}");
        assert_eq!(leaks(&b), None, "{what} on other with acme's ids leaks acme's data: {b}");
    }
    // acme's data is intact and still its own.
    let client = &ids[0].1;
    let (st, b) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{client}/pushtoken"), Some(&acme), None).await;
    assert_eq!((st, leaks(&b)), (StatusCode::OK, Some("acme-marker-push-token")), "{b}");
    println!("isolation: {} tenant routes, {cases} cases, 0 leaks", routes.len());
    s.shutdown().await;
}
