//! Identity (spec 001): users, lists, tokens, brute force, addresses — through
//! the HTTP API as a client would use it.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

fn realm(tenant: &str, path: &str) -> String {
    format!("/auth/realms/{tenant}{path}")
}

async fn create_user(s: &TestServer, tenant: &str, token: &str, body: Value) -> (StatusCode, Value) {
    s.call(Method::POST, &realm(tenant, "/users"), Some(token), Some(body)).await
}

async fn get(s: &TestServer, tenant: &str, token: &str, path: &str) -> Value {
    let (st, b) = s.call(Method::GET, &realm(tenant, path), Some(token), None).await;
    assert_eq!(st, StatusCode::OK, "GET {path}: {b}");
    b
}

fn usernames(b: &Value) -> Vec<String> {
    b["data"]["userList"].as_array().unwrap().iter().map(|u| u["username"].as_str().unwrap().to_string()).collect()
}

async fn refresh(s: &TestServer, tenant: &str, token: &str) -> (StatusCode, Value) {
    let resp = s
        .http
        .post(s.url(&realm(tenant, "/protocol/openid-connect/token")))
        .form(&[("grant_type", "refresh_token"), ("refresh_token", token)])
        .send()
        .await
        .unwrap();
    let st = resp.status();
    (st, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn create_read_update_and_credentials() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;

    let (st, b) = create_user(
        &s,
        "acme",
        &admin,
        json!({
            "username": "Alice", "email": "alice@example.com", "firstName": "Alice", "lastName": "Liddell",
            "enabled": true, "emailVerified": true,
            "attributes": {"department": ["sales"], "phone": "123"},
            "clientRoles": {"shop": ["buyer"]}, "groups": ["staff"], "realmRoles": ["user"],
            "credentials": [{"type": "password", "value": "alice-password", "temporary": false}]
        }),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["status"], "OK");
    assert_eq!(b["subSystem"], 5);
    let id = b["data"]["id"].as_str().unwrap().to_string();

    // 409 on a taken username (case-insensitive) or e-mail.
    let (st, b) = create_user(&s, "acme", &admin, json!({"username": "alice"})).await;
    assert_eq!(st, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["subSystem"], 5);
    let (st, _) = create_user(&s, "acme", &admin, json!({"username": "other", "email": "ALICE@example.com"})).await;
    assert_eq!(st, StatusCode::CONFLICT);
    // 400 naming the field; unknown fields refused.
    let (st, b) = create_user(&s, "acme", &admin, json!({"email": "x@y.z"})).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "username".to_string()), "{b}");
    let (st, b) = create_user(&s, "acme", &admin, json!({"username": "u", "nickname": "x"})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{b}");
    let (st, b) =
        create_user(&s, "acme", &admin, json!({"username": "u", "credentials": [{"type": "otp", "value": "1"}]})).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "credentials[0].type".to_string()), "{b}");

    // Get by UUID: the bare object.
    let u = get(&s, "acme", &admin, &format!("/users/id/{id}")).await;
    assert_eq!(u["username"], "alice");
    assert!(u["access"]["view"].is_boolean() && u["notBefore"].is_number(), "{u}");
    assert!(u["disableableCredentialTypes"].is_array());
    assert!(u.get("status").is_none());
    let (st, b) = s.call(Method::GET, &realm("acme", "/users/id/nope"), Some(&admin), None).await;
    assert_eq!((st, b["status"].clone()), (StatusCode::NOT_FOUND, json!("USER_NOT_FOUND")));

    // Get User Info by username.
    let b = get(&s, "acme", &admin, "/users/alice").await;
    let d = &b["data"];
    assert_eq!(d["id"], id.as_str());
    assert_eq!(d["email"], "alice@example.com");
    assert_eq!(d["attributes"]["phone"], json!(["123"]));
    assert_eq!(d["admin"], false);
    assert!(d["createdTimestamp"].as_u64().unwrap() > 1_600_000_000_000);
    let (st, b) = s.call(Method::GET, &realm("acme", "/users/nobody"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(b, json!({"message": "User does not exist", "status": "USER_NOT_FOUND", "subSystem": 5}));

    // The password works; credentials show parameters, never the hash.
    let (st, t) = s.password_grant("acme", "alice", "alice-password").await;
    assert_eq!(st, StatusCode::OK, "{t}");
    let (st, creds) = s.call(Method::GET, &realm("acme", "/users/alice/credentials"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK);
    let c = &creds[0];
    assert_eq!(c["type"], "password");
    assert!(c["createdDate"].is_number() && c["id"].is_string());
    let data: Value = serde_json::from_str(c["credentialData"].as_str().unwrap()).unwrap();
    assert_eq!(data["algorithm"], "argon2");
    assert!(!creds.to_string().contains("$argon2"), "no hash leaks: {creds}");

    // Update: e-mail moves its index, username stays unique.
    let (st, b) = s
        .call(
            Method::PUT,
            &realm("acme", "/users/alice"),
            Some(&admin),
            Some(json!({"email": "a2@example.com", "attributes": {"department": ["support"]}})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let (st, _) = create_user(&s, "acme", &admin, json!({"username": "bob", "email": "alice@example.com"})).await;
    assert_eq!(st, StatusCode::OK, "the old e-mail is free again");
    let (st, _) =
        s.call(Method::PUT, &realm("acme", "/users/bob"), Some(&admin), Some(json!({"email": "a2@example.com"}))).await;
    assert_eq!(st, StatusCode::CONFLICT);
    let (st, b) = s.call(Method::PUT, &realm("acme", "/users/ghost"), Some(&admin), Some(json!({}))).await;
    assert_eq!((st, b["status"].clone()), (StatusCode::NOT_FOUND, json!("USER_NOT_FOUND")));

    // By attribute: the index follows the update.
    let b = get(&s, "acme", &admin, "/users/by-attribute?key=department&value=support").await;
    assert_eq!(b["data"].as_array().unwrap().len(), 1);
    let b = get(&s, "acme", &admin, "/users/by-attribute?key=department&value=sales").await;
    assert_eq!(b["data"], json!([]));
    let (st, b) = s.call(Method::GET, &realm("acme", "/users/by-attribute?value=x"), Some(&admin), None).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "key".to_string()));

    // Update profile.
    let (st, b) = s
        .call(
            Method::PUT,
            &realm("acme", "/users/alice/profile"),
            Some(&admin),
            Some(json!({"firstName": "Al", "attributes": {"nick": ["al"]}})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let d = get(&s, "acme", &admin, "/users/alice").await["data"].clone();
    assert_eq!(d["firstName"], "Al");
    assert_eq!(d["attributes"]["nick"], json!(["al"]));
    assert_eq!(d["attributes"]["department"], json!(["support"]));
    let (st, _) =
        s.call(Method::PUT, &realm("acme", "/users/alice/profile"), Some(&admin), Some(json!({"username": "x"}))).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    // Tenant list of a user.
    let b = get(&s, "acme", &admin, "/users/alice/tenants").await;
    assert_eq!(b["data"], "acme");
    s.shutdown().await;
}

#[tokio::test]
async fn lists_search_and_paging() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let people = [
        ("carol", "Carol", "Zeta", true, false, "staff"),
        ("dave", "Dave", "Young", false, true, "staff"),
        ("erin", "Erin", "Xavier", true, true, "staff"),
        ("frank", "Frank", "Alpha", true, false, "ops"),
        ("grace", "Grace", "Beta", true, true, "staff"),
    ];
    for (u, f, l, enabled, verified, group) in people {
        let (st, b) = create_user(
            &s,
            "acme",
            &admin,
            json!({"username": u, "firstName": f, "lastName": l, "email": format!("{u}@example.com"),
                   "enabled": enabled, "emailVerified": verified, "groups": [group],
                   "realmRoles": ["member"], "clientRoles": {"shop": [if u < "e" { "buyer" } else { "seller" }]}}),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{b}");
    }

    // Role list: alphabetical by username, paged.
    let b = get(&s, "acme", &admin, "/roles/member/users?limit=2&offset=2").await;
    assert_eq!(usernames(&b), ["erin", "frank"]);
    assert_eq!(b["data"]["page"], json!({"currentPage": 2, "pageSize": 2, "totalPages": 3, "totalRecords": 5}));
    let b = get(&s, "acme", &admin, "/roles/member/users?orderBy=desc&orderByKey=lastName&limit=2").await;
    assert_eq!(usernames(&b), ["carol", "dave"]);
    let b = get(&s, "acme", &admin, "/roles/member/users?isUserEnabled=false").await;
    assert_eq!(usernames(&b), ["dave"]);
    let b = get(&s, "acme", &admin, "/roles/member/users?isEmailVerified=true&lastName=BET").await;
    assert_eq!(usernames(&b), ["grace"]);
    // genericSearchVal overrides the specific filters.
    let b = get(&s, "acme", &admin, "/roles/member/users?genericSearchVal=xav&firstName=carol").await;
    assert_eq!(usernames(&b), ["erin"]);
    let b = get(&s, "acme", &admin, "/roles/nobody/users").await;
    assert_eq!(b["data"]["page"]["totalRecords"], 0);

    // Client role and group lists.
    let b = get(&s, "acme", &admin, "/clients/shop/roles/buyer/users").await;
    assert_eq!(usernames(&b), ["carol", "dave"]);
    let b = get(&s, "acme", &admin, "/groups/staff/users?email=example&orderBy=desc").await;
    assert_eq!(usernames(&b), ["grace", "erin", "dave", "carol"]);
    let now = herald_storage::now_ms();
    let b = get(&s, "acme", &admin, &format!("/groups/ops/users?from=0&to={now}")).await;
    assert_eq!(usernames(&b), ["frank"]);
    let b = get(&s, "acme", &admin, &format!("/groups/ops/users?from={}", now + 60_000)).await;
    assert_eq!(usernames(&b), Vec::<String>::new());

    // Search by key over the four fields (admin is a user too).
    let b = get(&s, "acme", &admin, "/users?key=ALPHA").await;
    assert_eq!(usernames(&b), ["frank"]);
    let b = get(&s, "acme", &admin, "/users?key=example.com&limit=10").await;
    assert_eq!(b["data"]["page"]["totalRecords"], 5);
    let b = get(&s, "acme", &admin, "/users").await;
    assert_eq!(b["data"]["page"]["totalRecords"], 6);

    // A whole tenant in a name order, paged and filtered, and again after a
    // write moved one user within that order.
    let b = get(&s, "acme", &admin, "/users?key=&orderByKey=lastName&limit=3&offset=1").await;
    // The admin has no last name: it comes first.
    assert_eq!(usernames(&b), ["frank", "grace", "erin"]);
    let b = get(&s, "acme", &admin, "/users?orderByKey=firstName&orderBy=desc&isUserEnabled=true&limit=2").await;
    assert_eq!(usernames(&b), ["grace", "frank"]);
    assert_eq!(b["data"]["page"]["totalRecords"], 5);
    let (st, b) =
        s.call(Method::PUT, &realm("acme", "/users/grace"), Some(&admin), Some(json!({"firstName": "Aaron"}))).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let b = get(&s, "acme", &admin, "/users?orderByKey=firstName&orderBy=desc&isUserEnabled=true&limit=2").await;
    assert_eq!(usernames(&b), ["frank", "erin"]);
    let b = get(&s, "acme", &admin, "/users?orderByKey=firstName&limit=1&firstName=a").await;
    assert_eq!(usernames(&b), ["grace"]);

    // Bad list parameters name themselves.
    for (q, f) in [
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("offset=-1", "offset"),
        ("orderBy=up", "orderBy"),
        ("orderByKey=age", "orderByKey"),
        ("isUserEnabled=maybe", "isUserEnabled"),
        ("from=yesterday", "from"),
    ] {
        let (st, b) = s.call(Method::GET, &realm("acme", &format!("/users?{q}")), Some(&admin), None).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, f.to_string()), "{q}: {b}");
        assert_eq!(b["status"], "BAD_REQUEST");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn tenants_never_see_each_others_users() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    s.create_tenant("globex").await;
    let acme = s.admin_token("acme").await;
    let globex = s.admin_token("globex").await;
    let body = json!({"username": "alice", "email": "alice@example.com", "groups": ["g"], "realmRoles": ["r"],
                      "attributes": {"k": ["v"]}, "clientRoles": {"c": ["x"]}});
    let (st, _) = create_user(&s, "acme", &acme, body.clone()).await;
    assert_eq!(st, StatusCode::OK);
    // The same username and e-mail are free in another tenant.
    let (st, _) =
        create_user(&s, "globex", &globex, json!({"username": "alicia", "email": "alicia@example.com"})).await;
    assert_eq!(st, StatusCode::OK);
    for path in ["/users?key=alice", "/groups/g/users", "/roles/r/users", "/clients/c/roles/x/users"] {
        let b = get(&s, "globex", &globex, path).await;
        assert_eq!(b["data"]["page"]["totalRecords"], 0, "{path}: {b}");
        let b = get(&s, "acme", &acme, path).await;
        assert_eq!(b["data"]["page"]["totalRecords"], 1, "{path}: {b}");
    }
    let b = get(&s, "globex", &globex, "/users/by-attribute?key=k&value=v").await;
    assert_eq!(b["data"], json!([]));
    let (st, _) = s.call(Method::GET, &realm("globex", "/users/alice"), Some(&globex), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s.call(Method::GET, &realm("acme", "/users/alice"), Some(&globex), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let b = get(&s, "globex", &globex, "/admins").await;
    assert_eq!(b["data"].as_array().unwrap().len(), 1);
    s.shutdown().await;
}

#[tokio::test]
async fn account_states_roles_and_tokens() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let (st, _) = create_user(
        &s,
        "acme",
        &admin,
        json!({"username": "bob", "realmRoles": ["member"], "clientRoles": {"shop": ["buyer", "seller"]},
               "credentials": [{"type": "password", "value": "bob-password", "temporary": true}]}),
    )
    .await;
    assert_eq!(st, StatusCode::OK);

    // A temporary password: UPDATE_PASSWORD pending, no token yet.
    let d = get(&s, "acme", &admin, "/users/bob").await["data"].clone();
    assert_eq!(d["requiredActions"], json!(["UPDATE_PASSWORD"]));
    let (st, b) = s.password_grant("acme", "bob", "bob-password").await;
    assert_eq!((st, b["error_description"].clone()), (StatusCode::BAD_REQUEST, json!("Account is not fully set up")));
    let (st, _) = s
        .call(
            Method::POST,
            &realm("acme", "/users/bob/revoke-required-actions"),
            Some(&admin),
            Some(json!({"requiredActions": ["UPDATE_PASSWORD"]})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, tokens) = s.password_grant("acme", "bob", "bob-password").await;
    assert_eq!(st, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["expires_in"], 300);
    assert_eq!(tokens["refresh_expires_in"], 1800);
    let claims = decode_claims(tokens["access_token"].as_str().unwrap());
    assert_eq!(claims["resource_access"]["shop"]["roles"], json!(["buyer", "seller"]));
    assert_eq!(claims["realm_access"]["roles"], json!(["member"]));
    assert_eq!(claims["preferred_username"], "bob");

    // Refresh tokens are single-use; reusing one ends the session.
    let r1 = tokens["refresh_token"].as_str().unwrap().to_string();
    let (st, t2) = refresh(&s, "acme", &r1).await;
    assert_eq!(st, StatusCode::OK, "{t2}");
    let r2 = t2["refresh_token"].as_str().unwrap().to_string();
    assert_ne!(r1, r2);
    let (st, b) = refresh(&s, "acme", &r1).await;
    assert_eq!((st, b["error"].clone()), (StatusCode::BAD_REQUEST, json!("invalid_grant")), "{b}");
    let (st, _) = refresh(&s, "acme", &r2).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "the reuse revoked the whole session");

    // Disable: no token, and refresh tokens stop working; enable restores.
    let (_, fresh) = s.password_grant("acme", "bob", "bob-password").await;
    let r3 = fresh["refresh_token"].as_str().unwrap().to_string();
    let (st, _) = s.call(Method::PUT, &realm("acme", "/users/bob/disable"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK);
    let (st, b) = s.password_grant("acme", "bob", "bob-password").await;
    assert_eq!((st, b["error_description"].clone()), (StatusCode::BAD_REQUEST, json!("Account disabled")));
    let (st, _) = refresh(&s, "acme", &r3).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(get(&s, "acme", &admin, "/users/bob").await["data"]["enabled"], false);
    let (st, _) = s.call(Method::PUT, &realm("acme", "/users/bob/enable"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK);
    let (st, _) = s.password_grant("acme", "bob", "bob-password").await;
    assert_eq!(st, StatusCode::OK);

    // Promote: bob administers; revoke admin: he no longer does.
    let (st, _) = s.call(Method::PUT, &realm("acme", "/users/bob/admin"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK);
    let names: Vec<Value> = get(&s, "acme", &admin, "/admins").await["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].clone())
        .collect();
    assert_eq!(names, [json!("admin"), json!("bob")]);
    let (_, t) = s.password_grant("acme", "bob", "bob-password").await;
    let bob = t["access_token"].as_str().unwrap().to_string();
    let b = get(&s, "acme", &bob, "/roles/realm-admin/users").await;
    assert_eq!(usernames(&b), ["admin", "bob"]);
    let (st, _) = s.call(Method::DELETE, &realm("acme", "/users/bob/admin"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK);
    let (_, t) = s.password_grant("acme", "bob", "bob-password").await;
    let bob = t["access_token"].as_str().unwrap().to_string();
    let (st, _) = s.call(Method::GET, &realm("acme", "/admins"), Some(&bob), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    assert_eq!(get(&s, "acme", &admin, "/users/bob").await["data"]["admin"], false);

    // Revoke roles.
    let (st, _) = s
        .call(
            Method::POST,
            &realm("acme", "/users/bob/revoke-roles"),
            Some(&admin),
            Some(json!({"realmRoles": ["member"], "clientRoles": {"shop": ["seller"]}})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(get(&s, "acme", &admin, "/roles/member/users").await["data"]["page"]["totalRecords"], 0);
    assert_eq!(usernames(&get(&s, "acme", &admin, "/clients/shop/roles/buyer/users").await), ["bob"]);
    assert_eq!(get(&s, "acme", &admin, "/clients/shop/roles/seller/users").await["data"]["page"]["totalRecords"], 0);
    for path in ["/users/ghost/enable", "/users/ghost/disable", "/users/ghost/admin"] {
        let (st, b) = s.call(Method::PUT, &realm("acme", path), Some(&admin), None).await;
        assert_eq!((st, b["status"].clone()), (StatusCode::NOT_FOUND, json!("USER_NOT_FOUND")), "{path}");
    }
    s.shutdown().await;
}

async fn promote_bob(s: &TestServer, admin: &str) {
    let (st, _) = s.call(Method::PUT, &realm("acme", "/users/bob/admin"), Some(admin), None).await;
    assert_eq!(st, StatusCode::OK);
}

/// Bob's access and refresh tokens.
async fn login_bob(s: &TestServer, password: &str) -> (String, String) {
    let (st, t) = s.password_grant("acme", "bob", password).await;
    assert_eq!(st, StatusCode::OK, "{t}");
    (t["access_token"].as_str().unwrap().to_string(), t["refresh_token"].as_str().unwrap().to_string())
}

/// What an admin-read realm route and a tenant route answer `token`.
async fn answers(s: &TestServer, token: &str) -> (StatusCode, StatusCode) {
    let (a, _) = s.call(Method::GET, &realm("acme", "/admins"), Some(token), None).await;
    let (b, _) = s.call(Method::GET, "/v1/tenants/acme/apps", Some(token), None).await;
    (a, b)
}

/// Every change that takes something from a user refuses its earlier tokens
/// on the very next request, on realm and tenant routes alike; a token issued
/// after the change works (where the user may still log in).
#[tokio::test]
async fn earlier_tokens_are_refused_at_once_after_each_revocation() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let body = json!({"username": "bob", "realmRoles": ["member"], "clientRoles": {"shop": ["buyer"]},
                      "credentials": [{"type": "password", "value": "bob-password"}]});
    assert_eq!(create_user(&s, "acme", &admin, body).await.0, StatusCode::OK);
    let ok = (StatusCode::OK, StatusCode::OK);
    let revoked = (StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED);

    let changes: Vec<(&str, Method, &str, Option<Value>)> = vec![
        ("disable", Method::PUT, "/users/bob/disable", None),
        ("demote", Method::DELETE, "/users/bob/admin", None),
        (
            "revoke roles",
            Method::POST,
            "/users/bob/revoke-roles",
            Some(json!({"realmRoles": ["member"], "clientRoles": {}})),
        ),
        (
            "new password",
            Method::PUT,
            "/users/bob",
            Some(json!({"credentials": [{"type": "password", "value": "bob-password-2"}]})),
        ),
    ];
    let mut password = "bob-password";
    for (what, method, path, body) in changes {
        promote_bob(&s, &admin).await;
        s.call(Method::PUT, &realm("acme", "/users/bob/enable"), Some(&admin), None).await;
        let (token, refresh_token) = login_bob(&s, password).await;
        assert_eq!(answers(&s, &token).await, ok, "before {what}");
        let (st, b) = s.call(method, &realm("acme", path), Some(&admin), body).await;
        assert_eq!(st, StatusCode::OK, "{what}: {b}");
        assert_eq!(answers(&s, &token).await, revoked, "the token from before {what} is refused at once");
        let (st, b) = refresh(&s, "acme", &refresh_token).await;
        assert_eq!((st, b["error"].clone()), (StatusCode::BAD_REQUEST, json!("invalid_grant")), "{what}: {b}");
        if what == "new password" {
            password = "bob-password-2";
        }
    }
    // A token issued after the change works; the admin's own token was never touched.
    promote_bob(&s, &admin).await;
    let (token, _) = login_bob(&s, password).await;
    assert_eq!(answers(&s, &token).await, ok, "a token issued after the changes");
    assert_eq!(answers(&s, &admin).await, ok);

    // Required actions revoked, and the user's data deleted, refuse earlier tokens too.
    let (st, _) = s
        .call(
            Method::PUT,
            &realm("acme", "/users/bob"),
            Some(&admin),
            Some(json!({"requiredActions": ["VERIFY_EMAIL"]})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, b) = s
        .call(
            Method::POST,
            &realm("acme", "/users/bob/revoke-required-actions"),
            Some(&admin),
            Some(json!({"requiredActions": ["VERIFY_EMAIL"]})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(answers(&s, &token).await, revoked, "required actions revoked");
    let (token, _) = login_bob(&s, password).await;
    let (st, b) = s.call(Method::DELETE, "/v1/tenants/acme/users/bob", Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT, "{b}");
    assert_eq!(answers(&s, &token).await, revoked, "user data deleted");
    s.shutdown().await;
}

fn decode_claims(token: &str) -> Value {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

#[tokio::test]
async fn brute_force_locks_with_keycloak_defaults() {
    let s = TestServer::start().await;
    let clock = s.running.as_ref().unwrap().engine.config.clock.clone();
    clock.freeze();
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let (st, _) = create_user(
        &s,
        "acme",
        &admin,
        json!({"username": "eve", "credentials": [{"type": "password", "value": "eve-password"}]}),
    )
    .await;
    assert_eq!(st, StatusCode::OK);

    // Two failures less than a second apart: the quick-login wait (60 s).
    let (st, _) = s.password_grant("acme", "eve", "wrong").await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    clock.advance(500);
    let (st, _) = s.password_grant("acme", "eve", "wrong").await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let (st, b) = s.password_grant("acme", "eve", "eve-password").await;
    assert_eq!((st, b["error"].clone()), (StatusCode::BAD_REQUEST, json!("invalid_grant")), "{b}");
    clock.advance(59_000);
    let (st, _) = s.password_grant("acme", "eve", "eve-password").await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "still locked");
    clock.advance(2_000);
    let (st, b) = s.password_grant("acme", "eve", "eve-password").await;
    assert_eq!(st, StatusCode::OK, "{b}");

    // Slow failures: locked at the 30th (failureFactor), for 60 s.
    for i in 0..29 {
        clock.advance(2_000);
        let (st, _) = s.password_grant("acme", "eve", "wrong").await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "failure {i}");
    }
    clock.advance(2_000);
    let (st, _) = s.password_grant("acme", "eve", "eve-password").await;
    assert_eq!(st, StatusCode::OK, "29 failures do not lock (and success clears them)");
    for _ in 0..30 {
        clock.advance(2_000);
        s.password_grant("acme", "eve", "wrong").await;
    }
    let (st, _) = s.password_grant("acme", "eve", "eve-password").await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    clock.advance(61_000);
    let (st, _) = s.password_grant("acme", "eve", "eve-password").await;
    assert_eq!(st, StatusCode::OK);
    // Other users are untouched.
    let (st, _) = s.password_grant("acme", "admin", PASSWORD).await;
    assert_eq!(st, StatusCode::OK);
    s.shutdown().await;
}

#[tokio::test]
async fn addresses_add_read_edit() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let (st, _) = create_user(&s, "acme", &admin, json!({"username": "ann"})).await;
    assert_eq!(st, StatusCode::OK);

    let (st, b) =
        s.call(Method::POST, &realm("acme", "/address/ann/add"), Some(&admin), Some(json!({"city": "Paris"}))).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(b, json!({"message": "Mandatory data is missing", "status": "BAD_REQUEST", "subSystem": 5}));
    let (st, b) = s
        .call(Method::POST, &realm("acme", "/address/ghost/add"), Some(&admin), Some(json!({"postalCode": "1"})))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(b, json!({"message": "User does not exist", "status": "USER_NOT_FOUND", "subSystem": 5}));

    let (st, b) = s
        .call(
            Method::POST,
            &realm("acme", "/address/ann/add"),
            Some(&admin),
            Some(json!({"postalCode": "75001", "city": "Paris", "addressType": "home", "directions": "2nd floor"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["message"], "Address added successfully");
    let (st, _) = s
        .call(
            Method::POST,
            &realm("acme", "/address/ann/add"),
            Some(&admin),
            Some(json!({"postalCode": "10115", "city": "Berlin", "defaultAddress": true})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let list = get(&s, "acme", &admin, "/address/ann").await["data"].clone();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["defaultAddress"], "false");
    assert_eq!(list[1]["defaultAddress"], "true");
    assert_eq!(list[0]["direction"], "2nd floor");
    let paris = list[0]["addressID"].as_str().unwrap().to_string();

    let (st, b) = s
        .call(
            Method::PUT,
            &realm("acme", "/address/ann/edit"),
            Some(&admin),
            Some(json!({"addressID": paris, "lastName": "Smith", "addressType": "work", "defaultAddress": true})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let list = get(&s, "acme", &admin, "/address/ann").await["data"].clone();
    assert_eq!(list[0]["lastName"], "Smith");
    assert_eq!(list[0]["addressType"], "work");
    assert_eq!(list[0]["postalCode"], "75001");
    let defaults = list.as_array().unwrap().iter().filter(|a| a["defaultAddress"] == "true").count();
    assert_eq!((defaults, list[0]["defaultAddress"].clone()), (1, json!("true")));
    let (st, _) = s
        .call(Method::PUT, &realm("acme", "/address/ann/edit"), Some(&admin), Some(json!({"addressID": "nope"})))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    s.shutdown().await;
}

#[tokio::test]
async fn resend_otp_lock() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    for u in ["otto", "olga"] {
        let (st, _) = create_user(&s, "acme", &admin, json!({"username": u})).await;
        assert_eq!(st, StatusCode::OK);
    }
    let resend = |u: &'static str| {
        let (s, admin) = (&s, admin.clone());
        async move { s.call(Method::POST, &realm("acme", &format!("/users/{u}/otp/resend")), Some(&admin), None).await }
    };
    for _ in 0..5 {
        assert_eq!(resend("otto").await.0, StatusCode::OK);
    }
    let (st, b) = resend("otto").await;
    assert_eq!((st, b["status"].clone()), (StatusCode::TOO_MANY_REQUESTS, json!("TOO_MANY_REQUESTS")), "{b}");
    let b = get(&s, "acme", &admin, "/users/otto/otp-lock").await;
    assert_eq!(b["data"]["locked"], true);
    for _ in 0..6 {
        resend("olga").await;
    }
    // Unlock one, then all.
    let (st, _) = s.call(Method::DELETE, &realm("acme", "/users/otto/otp-lock"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(get(&s, "acme", &admin, "/users/otto/otp-lock").await["data"]["locked"], false);
    assert_eq!(get(&s, "acme", &admin, "/users/olga/otp-lock").await["data"]["locked"], true);
    let (st, b) = s.call(Method::DELETE, &realm("acme", "/otp-lock"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(get(&s, "acme", &admin, "/users/olga/otp-lock").await["data"]["locked"], false);
    assert_eq!(resend("olga").await.0, StatusCode::OK);
    // The window passing unlocks too.
    let clock = s.running.as_ref().unwrap().engine.config.clock.clone();
    for _ in 0..6 {
        resend("otto").await;
    }
    assert_eq!(get(&s, "acme", &admin, "/users/otto/otp-lock").await["data"]["locked"], true);
    clock.advance(901_000);
    assert_eq!(get(&s, "acme", &admin, "/users/otto/otp-lock").await["data"]["locked"], false);
    let (st, _) = s.call(Method::GET, &realm("acme", "/users/ghost/otp-lock"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // Off for the tenant: 200 saying so.
    let engine = &s.running.as_ref().unwrap().engine;
    let off = herald_storage::identity::OtpPolicy { enabled: false, ..Default::default() };
    engine.store.transact(|tx| tx.put_config("acme", &["otp-policy"], &off)).unwrap();
    let b = get(&s, "acme", &admin, "/users/otto/otp-lock").await;
    assert!(b["message"].as_str().unwrap().contains("disabled for this tenant"), "{b}");
    let (st, b) = s.call(Method::DELETE, &realm("acme", "/otp-lock"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK);
    assert!(b["message"].as_str().unwrap().contains("disabled"), "{b}");
    s.shutdown().await;
}

fn ldap_body() -> Value {
    let c = |v: &str| json!([v]);
    json!({
        "name": "corp-ldap",
        "providerType": "org.keycloak.storage.UserStorageProvider",
        "config": {
            "enabled": c("true"), "priority": c("0"), "importEnabled": c("true"), "editMode": c("READ_ONLY"),
            "vendor": c("ad"), "connectionUrl": c("ldaps://ldap.example.com"), "usersDn": c("ou=users,dc=example,dc=com"),
            "authType": c("simple"), "bindDn": c("cn=admin,dc=example,dc=com"), "bindCredential": c("s3cret"),
            "customUserSearchFilter": c("(objectClass=person)"), "searchScope": c("2"),
            "useTruststoreSpi": c("ldapsOnly"), "cachePolicy": c("DEFAULT"), "evictionDay": c("1"),
            "fullSyncPeriod": c("604800"), "batchSizeForSync": c("1000")
        }
    })
}

#[tokio::test]
async fn ldap_component_app_settings_and_affiliations() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;

    let (st, b) = s.call(Method::POST, &realm("acme", "/v3_ldap/components"), Some(&admin), Some(ldap_body())).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["subSystem"], 9);
    let id = b["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(b["data"]["config"]["bindCredential"], json!(["**********"]));
    assert!(!b.to_string().contains("s3cret"));
    let b = get(&s, "acme", &admin, &format!("/v3_ldap/components/{id}")).await;
    assert_eq!(b["data"]["config"]["vendor"], json!(["ad"]));
    assert_eq!(b["data"]["parentId"], "acme");

    // Update keeping the sealed credential (sent back masked).
    let mut upd = ldap_body();
    upd["config"]["bindCredential"] = json!(["**********"]);
    upd["config"]["vendor"] = json!(["rhds"]);
    let path = realm("acme", &format!("/v3_ldap/components/{id}"));
    let (st, b) = s.call(Method::PUT, &path, Some(&admin), Some(upd)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["message"], "Successfully updated LDAP Details");
    assert_eq!(b["data"]["config"]["vendor"], json!(["rhds"]));
    let engine = &s.running.as_ref().unwrap().engine;
    let stored: herald_storage::identity::LdapComponent =
        engine.store.identity().config("acme", &["ldap", &id]).unwrap().unwrap();
    let plain = engine
        .store
        .unseal(
            stored.bind_credential.as_ref().unwrap(),
            &herald_storage::identity::LdapComponent::secret_context("acme", &id),
        )
        .unwrap();
    assert_eq!(plain, b"s3cret");

    let (st, b) =
        s.call(Method::PUT, &realm("acme", "/v3_ldap/components/nope"), Some(&admin), Some(ldap_body())).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(b, json!({"message": "Component Not found", "status": "BAD_REQUEST", "subSystem": 9}));

    // Field rules.
    for (k, v, f) in [
        ("editMode", "SOMETIMES", "config.editMode"),
        ("evictionHour", "24", "config.evictionHour"),
        ("evictionDay", "0", "config.evictionDay"),
        ("customUserSearchFilter", "objectClass=person", "config.customUserSearchFilter"),
        ("pagination", "yes", "config.pagination"),
        ("allowKerberosAuthentication", "true", "config.kerberosRealm"),
        ("connectionUrl", "http://x", "config.connectionUrl"),
        ("madeUp", "1", "config.madeUp"),
    ] {
        let mut body = ldap_body();
        body["config"][k] = json!([v]);
        let (st, b) = s.call(Method::PUT, &path, Some(&admin), Some(body)).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, f.to_string()), "{k}={v}: {b}");
        assert_eq!(b["subSystem"], 9);
    }
    let mut body = ldap_body();
    body["config"]["enabled"] = json!(["true", "false"]);
    let (st, _) = s.call(Method::PUT, &path, Some(&admin), Some(body)).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    // App settings: public read, admin write.
    let (st, b) = s.call(Method::GET, &realm("acme", "/v4_realm/appsettings"), None, None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b.as_object().unwrap().len(), 20);
    assert_eq!(b["flutter_ios_link"], "");
    let (st, b) = s
        .call(
            Method::PUT,
            &realm("acme", "/v4_realm/appsettings"),
            Some(&admin),
            Some(json!({"macos_version": "1.2.3", "macos_link": "https://apps.example.com/mac", "macos_build_number": "42"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let (_, b) = s.call(Method::GET, &realm("acme", "/v4_realm/appsettings"), None, None).await;
    assert_eq!(b["macos_version"], "1.2.3");
    assert!(b["macos_update_by"].as_str().unwrap().parse::<u64>().is_ok());
    let (st, _) =
        s.call(Method::PUT, &realm("acme", "/v4_realm/appsettings"), Some(&admin), Some(json!({"ios": "1"}))).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, b) = s.call(Method::GET, &realm("nowhere", "/v4_realm/appsettings"), None, None).await;
    assert_eq!((st, b["message"].clone()), (StatusCode::NOT_FOUND, json!("Realm does not exist")));

    let (st, _) = s.call(Method::PUT, &realm("acme", "/core/v1/migrate/affiliations"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s.call(Method::PUT, &realm("acme", "/core/v1/migrate/affiliations"), None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    s.shutdown().await;
}

/// Invariant: a disable is never undone by a concurrent update that does not
/// touch `enabled`, even one that hashes a new password meanwhile; tokens
/// issued before the disable are refused after both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_update_with_a_new_password_never_reverts_a_concurrent_disable() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let body =
        json!({"username": "bob", "realmRoles": ["admin"], "credentials": [{"type": "password", "value": "pw-0"}]});
    assert_eq!(create_user(&s, "acme", &admin, body).await.0, StatusCode::OK);
    for round in 0..12 {
        let (st, _) = s.call(Method::PUT, &realm("acme", "/users/bob/enable"), Some(&admin), None).await;
        assert_eq!(st, StatusCode::OK);
        let (token, _) = login_bob(&s, &format!("pw-{round}")).await;
        let new_password = json!({"firstName": format!("Bob {round}"),
                                  "credentials": [{"type": "password", "value": format!("pw-{}", round + 1)}]});
        let bob = realm("acme", "/users/bob");
        let update = s.call(Method::PUT, &bob, Some(&admin), Some(new_password));
        let disable = async {
            // Lands while the update hashes its password.
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            s.call(Method::PUT, &realm("acme", "/users/bob/disable"), Some(&admin), None).await
        };
        let ((a, _), (b, _)) = tokio::join!(update, disable);
        assert_eq!((a, b), (StatusCode::OK, StatusCode::OK), "round {round}");
        let u = get(&s, "acme", &admin, "/users/bob").await["data"].clone();
        assert_eq!(u["enabled"], false, "round {round}: the disable stands: {u}");
        assert_eq!(u["firstName"], format!("Bob {round}"), "round {round}: and so does the update");
        assert_eq!(
            answers(&s, &token).await.0,
            StatusCode::UNAUTHORIZED,
            "round {round}: the earlier token is refused"
        );
    }
    s.shutdown().await;
}

/// Invariant: a login that races a disable never yields a token that works
/// once the disable has answered. The login verifies the password (argon2)
/// before it opens its session; the session is opened in one transaction
/// with a look at the user as stored, and the tokens carry an issue instant
/// taken before it, so either the login sees the disable (refused) or the
/// disable's revocation instant comes after the tokens (refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_racing_a_disable_never_yields_a_token_that_works_after_it() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let body =
        json!({"username": "bob", "realmRoles": ["admin"], "credentials": [{"type": "password", "value": "pw"}]});
    assert_eq!(create_user(&s, "acme", &admin, body).await.0, StatusCode::OK);
    let mut logged_in = 0;
    for round in 0..12 {
        let (st, _) = s.call(Method::PUT, &realm("acme", "/users/bob/enable"), Some(&admin), None).await;
        assert_eq!(st, StatusCode::OK);
        let login = s.password_grant("acme", "bob", "pw");
        let disable = async {
            // Lands while the login verifies the password.
            tokio::time::sleep(std::time::Duration::from_millis(5 + round % 4)).await;
            s.call(Method::PUT, &realm("acme", "/users/bob/disable"), Some(&admin), None).await
        };
        let ((login, tokens), (disabled, _)) = tokio::join!(login, disable);
        assert_eq!(disabled, StatusCode::OK, "round {round}");
        if login != StatusCode::OK {
            assert_eq!((login, tokens["error"].clone()), (StatusCode::BAD_REQUEST, json!("invalid_grant")));
            continue;
        }
        logged_in += 1;
        let token = tokens["access_token"].as_str().unwrap();
        assert_eq!(answers(&s, token).await, (StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED), "round {round}");
        let (st, b) = refresh(&s, "acme", tokens["refresh_token"].as_str().unwrap()).await;
        assert_eq!((st, b["error"].clone()), (StatusCode::BAD_REQUEST, json!("invalid_grant")), "round {round}");
    }
    eprintln!("{logged_in} of 12 logins answered before the disable");
    s.shutdown().await;
}

/// Invariant: wrong passwords tried at once all count towards the lockout,
/// none lost to another's write: thirty concurrent failures lock the user
/// like thirty in a row (Keycloak's failure factor).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_wrong_passwords_all_count_towards_the_lockout() {
    let s = TestServer::start().await;
    let clock = s.running.as_ref().unwrap().engine.config.clock.clone();
    clock.freeze();
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let body = json!({"username": "eve", "credentials": [{"type": "password", "value": "eve-password"}]});
    assert_eq!(create_user(&s, "acme", &admin, body).await.0, StatusCode::OK);
    for round in 0..3 {
        let tries = (0..30).map(|_| s.password_grant("acme", "eve", "wrong"));
        for (st, _) in futures::future::join_all(tries).await {
            assert_eq!(st, StatusCode::UNAUTHORIZED, "round {round}");
        }
        let (st, b) = s.password_grant("acme", "eve", "eve-password").await;
        assert_eq!(
            (st, b["error_description"].clone()),
            (StatusCode::BAD_REQUEST, json!("Account temporarily disabled"))
        );
        clock.advance(61_000);
        let (st, b) = s.password_grant("acme", "eve", "eve-password").await;
        assert_eq!(st, StatusCode::OK, "round {round}: {b}");
        clock.advance(2_000);
    }
    s.shutdown().await;
}

/// Invariant: deleting a user's data (`DELETE /v1/tenants/{t}/users/{u}`,
/// which revokes the realm user's tokens) racing an update of that user
/// never brings the user's earlier tokens back: after both, a token issued
/// before them is refused, its refresh token too, and the update stands.
/// (The realm has no route that deletes the user record itself.) Both
/// writes record a revocation instant, each in its transaction, and the
/// instant never moves back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_users_data_racing_an_update_never_brings_back_its_earlier_tokens() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;
    let body =
        json!({"username": "bob", "realmRoles": ["admin"], "credentials": [{"type": "password", "value": "pw-0"}]});
    assert_eq!(create_user(&s, "acme", &admin, body).await.0, StatusCode::OK);
    for round in 0..12 {
        let (token, refresh_token) = login_bob(&s, &format!("pw-{round}")).await;
        assert_eq!(answers(&s, &token).await, (StatusCode::OK, StatusCode::OK), "round {round}");
        // Every other round, the update takes nothing from the user (no revocation of its own).
        let update = match round % 2 {
            0 => json!({"firstName": format!("Bob {round}"),
                        "credentials": [{"type": "password", "value": format!("pw-{}", round + 1)}]}),
            _ => json!({"firstName": format!("Bob {round}")}),
        };
        let next = if round % 2 == 0 { round + 1 } else { round };
        let bob = realm("acme", "/users/bob");
        let update = s.call(Method::PUT, &bob, Some(&admin), Some(update));
        let delete = async {
            tokio::time::sleep(std::time::Duration::from_millis(round % 6)).await;
            s.call(Method::DELETE, "/v1/tenants/acme/users/bob", Some(&admin), None).await
        };
        let ((a, _), (b, _)) = tokio::join!(update, delete);
        assert_eq!((a, b), (StatusCode::OK, StatusCode::NO_CONTENT), "round {round}");
        assert_eq!(answers(&s, &token).await, (StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED), "round {round}");
        let (st, b) = refresh(&s, "acme", &refresh_token).await;
        assert_eq!((st, b["error"].clone()), (StatusCode::BAD_REQUEST, json!("invalid_grant")), "round {round}: {b}");
        let u = get(&s, "acme", &admin, "/users/bob").await["data"].clone();
        assert_eq!(u["firstName"], format!("Bob {round}"), "round {round}: the update stands");
        // Passwords stay in step for the next round's login.
        if next != round + 1 {
            let pw = json!({"credentials": [{"type": "password", "value": format!("pw-{}", round + 1)}]});
            let (st, _) = s.call(Method::PUT, &realm("acme", "/users/bob"), Some(&admin), Some(pw)).await;
            assert_eq!(st, StatusCode::OK);
        }
    }
    s.shutdown().await;
}

/// The library API (`engine.users()`, `engine.realm()`) checks the caller as
/// the routes do, and answers typed values.
#[tokio::test]
async fn the_library_checks_the_caller_and_answers_typed_values() {
    use herald::models::ldap::{LoginConfigBody, Risks};
    use herald::models::user::{UserListQuery, UserWrite};
    use herald::{Caller, ErrorKind};
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let engine = &s.running.as_ref().unwrap().engine;
    let (admin, reader) = (Caller::admin("acme"), Caller::reader("acme"));
    let body: UserWrite = serde_json::from_value(json!({
        "username": "Lib", "email": "lib@example.com",
        "credentials": [{"type": "password", "value": "lib-password"}]
    }))
    .unwrap();

    // Refused: a reader, another tenant's admin, a device client, nobody.
    let users = engine.users();
    for (who, kind) in [
        (&reader, ErrorKind::Forbidden),
        (&Caller::admin("other"), ErrorKind::Forbidden),
        (&Caller::client("acme", "01ARZ3NDEKTSV4RRFFQ69G5FAV"), ErrorKind::Forbidden),
        (&Caller::Anonymous, ErrorKind::Unauthenticated),
    ] {
        let err = users.create(who, "acme", body.clone()).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{who:?}: {err}");
    }
    let created = users.create(&admin, "acme", body.clone()).await.unwrap();
    assert_eq!(created.username, "lib");
    assert_eq!(users.create(&admin, "acme", body).await.unwrap_err().kind(), ErrorKind::Conflict);

    // Reads: readers may; the answers are typed.
    let u = users.get(&reader, "acme", "LIB").await.unwrap();
    assert_eq!((u.id.as_str(), u.email.as_str(), u.admin), (created.id.as_str(), "lib@example.com", false));
    assert_eq!(users.get(&reader, "acme", "ghost").await.unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(users.get_by_id(&reader, "acme", &created.id).await.unwrap().username, "lib");
    let creds = users.credentials(&reader, "acme", "lib").await.unwrap();
    assert_eq!((creds.len(), creds[0].kind.as_str()), (1, "password"));
    assert_eq!(users.promote(&reader, "acme", "lib").await.unwrap_err().kind(), ErrorKind::Forbidden);
    assert!(users.promote(&admin, "acme", "lib").await.unwrap().admin);
    let admins = users.admins(&reader, "acme").await.unwrap();
    assert!(admins.iter().any(|u| u.username == "lib"), "{admins:?}");
    let page = users.search(&reader, "acme", Some("LI"), &UserListQuery::default()).await.unwrap();
    assert_eq!(page.user_list.iter().map(|u| u.username.as_str()).collect::<Vec<_>>(), ["lib"]);
    assert_eq!((page.page.current_page, page.page.total_records), (1, 1));
    let filtered = UserListQuery { email: Some("LIB@".into()), ..UserListQuery::default() };
    assert_eq!(users.search(&reader, "acme", None, &filtered).await.unwrap().page.total_records, 1);
    let err = users.search(&reader, "acme", None, &UserListQuery { limit: 0, ..UserListQuery::default() }).await;
    let err = err.unwrap_err();
    assert_eq!((err.kind(), err.field.as_deref()), (ErrorKind::Invalid, Some("limit")), "{err}");

    // Realm configuration.
    let realm = engine.realm();
    let on = LoginConfigBody { risks: Risks { enable_inference: true } };
    assert_eq!(realm.set_login_config(&reader, "acme", on).await.unwrap_err().kind(), ErrorKind::Forbidden);
    assert_eq!(realm.set_login_config(&admin, "acme", on).await.unwrap(), on);
    assert_eq!(realm.login_config(&reader, "acme").await.unwrap(), on);
    let settings = realm.app_settings(&Caller::Anonymous, "acme").await.unwrap();
    assert_eq!((settings.len(), settings["macos_version"].as_str()), (20, ""));
    let resent = realm.otp_resend(&admin, "acme", "lib").await.unwrap();
    assert_eq!(resent.remaining_resends, Some(4));
    let lock = realm.otp_lock(&reader, "acme", "lib").await.unwrap().expect("counted");
    assert_eq!((lock.locked, lock.resend_count), (false, 1));
    assert_eq!(realm.otp_unlock_all(&reader, "acme").await.unwrap_err().kind(), ErrorKind::Forbidden);
    assert_eq!(realm.otp_unlock_all(&admin, "acme").await.unwrap().map(|u| u.unlocked), Some(1));

    // A password login gives tokens the HTTP API takes.
    let err = realm.password_grant("acme", "lib", "wrong-password").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthenticated, "{err}");
    let pair = realm.password_grant("acme", "lib", "lib-password").await.unwrap();
    assert!(!pair.refresh_token.is_empty());
    let b = get(&s, "acme", &pair.access_token, "/users/lib").await;
    assert_eq!(b["data"]["id"], created.id.as_str());
    s.shutdown().await;
}
