//! App versions, registration policies, integrity voting and the latest-version
//! app listing, through the real HTTP API.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const A: &str = "AAAAAAAAAAAAAAAAAAAAAA";
const B: &str = "BBBBBBBBBBBBBBBBBBBBBB";
const C: &str = "CCCCCCCCCCCCCCCCCCCCCC";
const D: &str = "DDDDDDDDDDDDDDDDDDDDDD";

/// A client of `app` and its `client_credentials` access token.
async fn client_token(s: &TestServer, tenant: &str, admin: &str, app: &str) -> (String, String) {
    let (id, secret) = s.register_client(tenant, admin, app).await;
    let token = s.client_token(tenant, &id, &secret).await;
    (id, token)
}

async fn create_version(s: &TestServer, admin: &str, body: Value) -> String {
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/versions", Some(admin), Some(body)).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    b["id"].as_str().unwrap().to_string()
}

fn version(app: &str, platform: &str, v: &str) -> Value {
    json!({"appName": app, "platform": platform, "versionStr": v, "sdkVersion": "5.1.0", "registerUserId": "alice"})
}

async fn create_policy(s: &TestServer, admin: &str, name: &str, quorum: u32, max: u32) -> String {
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/policies",
            Some(admin),
            Some(json!({"name": name, "type": "QUORUM", "parameters": {"quorumSize": quorum, "maxVotes": max}})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    b["id"].as_str().unwrap().to_string()
}

async fn vote(s: &TestServer, token: &str, vid: &str, arch: &str, check: &str) -> (StatusCode, Value) {
    s.call(
        Method::POST,
        &format!("/v1/tenants/acme/versions/{vid}/votes"),
        Some(token),
        Some(json!({"architectureName": arch, "integrityCheckId": check})),
    )
    .await
}

async fn arch_state(s: &TestServer, admin: &str, vid: &str, arch: &str) -> Option<String> {
    let (st, b) =
        s.call(Method::GET, &format!("/v1/tenants/acme/versions/{vid}/architectures"), Some(admin), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    b.as_array()
        .unwrap()
        .iter()
        .find(|a| a["architecture"] == arch)
        .map(|a| a["registrationState"].as_str().unwrap().to_string())
}

async fn votes_of(s: &TestServer, admin: &str, vid: &str, arch: &str) -> Vec<Value> {
    let path = format!("/v1/tenants/acme/versions/{vid}/votes?architectureName={arch}&pageSize=100");
    let (st, b) = s.call(Method::GET, &path, Some(admin), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    b["votes"].as_array().unwrap().clone()
}

#[tokio::test]
async fn version_operations_and_statuses() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let id = create_version(&s, &admin, version("shop", "android", "1.2.3")).await;
    let (st, b) = s.call(Method::GET, &format!("/v1/tenants/acme/versions/{id}"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["versionStr"], "1.2.3");
    assert_eq!(b["version"], "1000002000003");
    assert_eq!(b["tenantId"], "acme");
    assert_eq!(b["versionLock"], false);
    assert_eq!(b["registerUserId"], "alice");
    assert_eq!(b["architectureIntegrities"], json!([]));

    // Creation errors name the field.
    for (body, f) in [
        (json!({"appName": "shop", "platform": "android", "versionStr": "1.2.4"}), "policyId"),
        (json!({"appName": "shop", "platform": "android", "versionStr": "1.2", "registerUserId": "a"}), "versionStr"),
        (json!({"appName": "nope", "platform": "android", "versionStr": "1.2.4", "registerUserId": "a"}), "appName"),
        (json!({"appName": "shop", "platform": "", "versionStr": "1.2.4", "registerUserId": "a"}), "platform"),
        (json!({"appName": "shop", "platform": "ios", "versionStr": "1.2.4", "policyId": "short"}), "policyId"),
        (
            json!({"appName": "shop", "platform": "ios", "versionStr": "1.2.4", "policyId": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}),
            "policyId",
        ),
        (json!({"appName": "shop", "platform": "ios", "versionStr": "1.2.4", "registerUserId": "a", "x": 1}), ""),
    ] {
        let (st, b) = s.call(Method::POST, "/v1/tenants/acme/versions", Some(&admin), Some(body)).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{b}");
        if !f.is_empty() {
            assert_eq!(field(&b), f, "{b}");
        }
        assert_eq!(b["subsystem"], 517);
    }
    // The same app, platform and version twice: 409.
    let (st, b) = s
        .call(Method::POST, "/v1/tenants/acme/versions", Some(&admin), Some(version("shop", "android", "1.2.3")))
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{b}");

    // Update: the spec's body rules.
    let path = format!("/v1/tenants/acme/versions/{id}");
    let mut upd = json!({"appName": "shop", "platform": "android", "versionStr": "1.3.0", "isCheckIntegrity": true, "registerUserId": "bob", "policyId": null});
    let (st, b) = s.call(Method::PUT, &path, Some(&admin), Some(upd.clone())).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["versionStr"], "1.3.0");
    assert_eq!(b["isCheckIntegrity"], true);
    assert_eq!(b["registerUserId"], "bob");
    assert_eq!(b["sdkVersion"], "5.1.0", "kept when not given");
    upd["appName"] = json!("sh");
    let (st, b) = s.call(Method::PUT, &path, Some(&admin), Some(upd.clone())).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "appName".to_string()), "{b}");
    upd["appName"] = json!("shop");
    upd["registerUserId"] = json!(null);
    let (st, b) = s.call(Method::PUT, &path, Some(&admin), Some(upd.clone())).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "policyId".to_string()), "{b}");
    upd["registerUserId"] = json!("x".repeat(256));
    let (st, b) = s.call(Method::PUT, &path, Some(&admin), Some(upd.clone())).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "registerUserId".to_string()), "{b}");
    let missing = "/v1/tenants/acme/versions/01ARZ3NDEKTSV4RRFFQ69G5FAV";
    upd["registerUserId"] = json!("bob");
    let (st, _) = s.call(Method::PUT, missing, Some(&admin), Some(upd)).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // Lock and unlock.
    let (st, b) = s.call(Method::PUT, &format!("{path}/lock"), Some(&admin), Some(json!({"versionLock": true}))).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["versionLock"], true);
    let (st, b) = s.call(Method::PUT, &format!("{path}/lock"), Some(&admin), Some(json!({}))).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{b}");
    assert!(b["message"].as_str().unwrap().contains("versionLock"), "{b}");
    let (st, _) =
        s.call(Method::PUT, &format!("{missing}/lock"), Some(&admin), Some(json!({"versionLock": false}))).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, b) = s.call(Method::PUT, &format!("{path}/lock"), Some(&admin), Some(json!({"versionLock": false}))).await;
    assert_eq!((st, b["versionLock"].clone()), (StatusCode::OK, json!(false)));

    // Registration routes validate architectureName.
    let (st, b) = s.call(Method::DELETE, &format!("{path}/registration?architectureName=ab"), Some(&admin), None).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "architectureName".to_string()), "{b}");
    let (st, _) =
        s.call(Method::DELETE, &format!("{path}/registration?architectureName=arm64"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s.call(Method::GET, &format!("{missing}/architectures"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // Delete.
    let (st, _) = s.call(Method::DELETE, &path, Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, b) = s.call(Method::GET, &path, Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(b["subsystem"], 517);
    let (st, _) = s.call(Method::DELETE, &path, Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    s.shutdown().await;
}

#[tokio::test]
async fn distinct_versions_order_numerically_and_search() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let (st, _) = s.call(Method::POST, "/v1/tenants/acme/apps/bank", Some(&admin), Some(fcm_app_body())).await;
    assert_eq!(st, StatusCode::CREATED);
    for (app, platform, v) in [
        ("shop", "android", "1.9.0"),
        ("shop", "android", "1.10.0"),
        ("shop", "android", "1.2.3"),
        ("shop", "ios", "1.10.0"),
        ("bank", "ios", "2.0.0"),
    ] {
        create_version(&s, &admin, version(app, platform, v)).await;
    }
    let mut locked = version("bank", "android", "10.1.0");
    locked["versionLock"] = json!(true);
    locked["isCheckIntegrity"] = json!(true);
    create_version(&s, &admin, locked).await;

    let list = |q: &'static str| {
        let (s, admin) = (&s, &admin);
        async move {
            let (st, b) = s.call(Method::GET, &format!("/v1/tenants/acme/versions{q}"), Some(admin), None).await;
            assert_eq!(st, StatusCode::OK, "{q}: {b}");
            b["versions"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>()
        }
    };
    assert_eq!(list("").await, ["1.2.3", "1.9.0", "1.10.0", "2.0.0", "10.1.0"]);
    assert_eq!(list("?orderByVersion=desc").await, ["10.1.0", "2.0.0", "1.10.0", "1.9.0", "1.2.3"]);
    assert_eq!(list("?orderByVersion=asc&pageSize=2&page=2").await, ["1.10.0", "2.0.0"]);
    assert_eq!(list("?versionStr=1.%25").await, ["1.2.3", "1.9.0", "1.10.0"]);
    assert_eq!(list("?versionStr=%25.0").await, ["1.9.0", "1.10.0", "2.0.0", "10.1.0"]);
    assert_eq!(list("?versionStr=%2510%25").await, ["1.10.0", "10.1.0"]);
    assert_eq!(list("?versionStr=1.9.0").await, ["1.9.0"]);
    assert_eq!(list("?appName=%25an%25").await, ["2.0.0", "10.1.0"]);
    assert_eq!(list("?appName=shop&platform=ios").await, ["1.10.0"]);
    assert_eq!(list("?platform=%25dro%25").await, ["1.2.3", "1.9.0", "1.10.0", "10.1.0"]);
    assert_eq!(list("?versionLock=true").await, ["10.1.0"]);
    assert_eq!(list("?isCheckIntegrity=false&orderByVersion=desc").await, ["2.0.0", "1.10.0", "1.9.0", "1.2.3"]);
    for (q, f) in [
        ("?orderByVersion=up", "orderByVersion"),
        ("?versionStr=a.b", "versionStr"),
        ("?versionLock=yes", "versionLock"),
        ("?pageSize=101", "pageSize"),
        ("?page=0", "page"),
        ("?platform=io", "platform"),
    ] {
        let (st, b) = s.call(Method::GET, &format!("/v1/tenants/acme/versions{q}"), Some(&admin), None).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, f.to_string()), "{q}: {b}");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn registration_policies() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let id = create_policy(&s, &admin, "two of three", 2, 3).await;
    assert_eq!(id.len(), 26);
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/policies",
            Some(&admin),
            Some(json!({"name": "two of three", "type": "QUORUM", "parameters": {"quorumSize": 1, "maxVotes": 1}})),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{b}");
    for (body, f) in [
        (
            json!({"name": "x", "type": "QUORUM", "parameters": {"quorumSize": 3, "maxVotes": 2}}),
            "parameters.quorumSize",
        ),
        (
            json!({"name": "x", "type": "QUORUM", "parameters": {"quorumSize": 0, "maxVotes": 2}}),
            "parameters.quorumSize",
        ),
        (json!({"name": "x", "type": "MAJORITY", "parameters": {"quorumSize": 1, "maxVotes": 2}}), "type"),
        (json!({"name": "", "type": "QUORUM", "parameters": {"quorumSize": 1, "maxVotes": 2}}), "name"),
        (json!({"name": "y".repeat(51), "type": "QUORUM", "parameters": {"quorumSize": 1, "maxVotes": 2}}), "name"),
        (json!({"name": "x", "type": "QUORUM", "parameters": {"quorumSize": 1}}), "maxVotes"),
    ] {
        let (st, b) = s.call(Method::POST, "/v1/tenants/acme/policies", Some(&admin), Some(body)).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{b}");
        assert!(b["message"].as_str().unwrap().contains(f), "{f}: {b}");
    }
    let (st, b) = s.call(Method::GET, "/v1/tenants/acme/policies", Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        b,
        json!([{"id": id, "name": "two of three", "type": "QUORUM", "parameters": {"quorumSize": 2, "maxVotes": 3}}])
    );
    let path = format!("/v1/tenants/acme/policies/{id}");
    let (st, b) = s.call(Method::GET, &path, Some(&admin), None).await;
    assert_eq!((st, b["name"].clone()), (StatusCode::OK, json!("two of three")));
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/policies/01ARZ3NDEKTSV4RRFFQ69G5FAV", Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // In use: 409, until the version goes.
    let vid = create_version(
        &s,
        &admin,
        json!({"appName": "shop", "platform": "ios", "versionStr": "1.0.0", "policyId": id}),
    )
    .await;
    let (st, b) = s.call(Method::DELETE, &path, Some(&admin), None).await;
    assert_eq!(st, StatusCode::CONFLICT, "{b}");
    // Moving the version to the default policy releases the policy.
    let (st, b) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/versions/{vid}"),
            Some(&admin),
            Some(json!({"appName": "shop", "platform": "ios", "versionStr": "1.0.0", "registerUserId": "alice"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let (st, _) = s.call(Method::DELETE, &path, Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s.call(Method::DELETE, &path, Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    // The name is free again.
    create_policy(&s, &admin, "two of three", 2, 3).await;
    s.shutdown().await;
}

#[tokio::test]
async fn quorum_voting_registers_fails_and_resets() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let policy = create_policy(&s, &admin, "quorum", 2, 3).await;
    let vid = create_version(
        &s,
        &admin,
        json!({"appName": "shop", "platform": "android", "versionStr": "2.0.0", "isCheckIntegrity": true, "policyId": policy}),
    )
    .await;
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client_token(&s, "acme", &admin, "shop").await);
    }
    let base = format!("/v1/tenants/acme/versions/{vid}");

    // A webhook for version events shows VERSION_REGISTERED in its outbox.
    let (st, hook) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/webhooks",
            Some(&admin),
            Some(json!({"filter": "type=version", "callbackUrl": "https://hooks.invalid/herald"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{hook}");

    // Two votes disagree; the first client changes its mind: quorum of 2 on B.
    let (st, b) = vote(&s, &clients[0].1, &vid, "arm64", A).await;
    assert_eq!((st, b["registrationState"].clone()), (StatusCode::OK, json!("VOTING")), "{b}");
    let (st, b) = vote(&s, &clients[1].1, &vid, "arm64", B).await;
    assert_eq!((st, b["registrationState"].clone()), (StatusCode::OK, json!("VOTING")), "{b}");
    let (st, b) = s
        .call(Method::GET, &format!("{base}/votes?architectureName=arm64&integrityCheckId={A}"), Some(&admin), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["votes"], json!([{"astClientId": clients[0].0, "integrityCheckId": A}]));
    assert_eq!(b["architecture"], "arm64");
    assert_eq!(b["versionStr"], "2.0.0");
    assert_eq!(b["metadata"], json!({"page": 1, "pageSize": 20}));
    let (st, b) = vote(&s, &clients[0].1, &vid, "arm64", B).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["registrationState"], "REGISTERED");
    assert_eq!(b["isRegistered"], true);
    let (st, b) = vote(&s, &clients[2].1, &vid, "arm64", B).await;
    assert_eq!(st, StatusCode::CONFLICT, "voting is closed: {b}");
    let (st, b) =
        s.call(Method::GET, &format!("{base}/votes/summary?architectureName=arm64"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(
        b["policy"],
        json!({"id": policy, "name": "quorum", "type": "QUORUM", "parameters": {"quorumSize": 2, "maxVotes": 3}})
    );
    assert_eq!(b["votes"], json!([{"integrityCheckId": B, "num": 2, "percent": 100}]));
    let (_, v) = s.call(Method::GET, &base, Some(&admin), None).await;
    assert_eq!(
        v["architectureIntegrities"],
        json!([{"versionId": vid, "architecture": "arm64", "isRegistered": true, "registrationState": "REGISTERED"}])
    );
    let engine = &s.running.as_ref().unwrap().engine;
    let hook_id = hook["id"].as_str().unwrap();
    let mut seen = false;
    for _ in 0..50 {
        let pending = engine.store.webhooks().pending("acme", hook_id, 10).unwrap();
        let failed_or_sent = engine.store.webhooks().attempts("acme", hook_id, 0, 10).unwrap();
        if pending.iter().any(|(_, e)| e.body.contains("VERSION_REGISTERED") && e.body.contains(&vid))
            || !failed_or_sent.is_empty()
        {
            seen = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(seen, "VERSION_REGISTERED was queued for the webhook");

    // maxVotes reached without quorum: FAILED.
    for (i, check) in [A, B, C].iter().enumerate() {
        let (st, b) = vote(&s, &clients[i].1, &vid, "x86_64", check).await;
        assert_eq!(st, StatusCode::OK, "{b}");
        assert_eq!(b["registrationState"], if i == 2 { "FAILED" } else { "VOTING" });
    }
    let (st, _) = vote(&s, &clients[3].1, &vid, "x86_64", A).await;
    assert_eq!(st, StatusCode::CONFLICT);
    assert_eq!(arch_state(&s, &admin, &vid, "x86_64").await.as_deref(), Some("FAILED"));

    // Reset before registration: starts over.
    let (st, _) = s.call(Method::DELETE, &format!("{base}/votes?architectureName=x86_64"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    assert_eq!(arch_state(&s, &admin, &vid, "x86_64").await, None);
    assert!(votes_of(&s, &admin, &vid, "x86_64").await.is_empty());
    let (st, b) = vote(&s, &clients[3].1, &vid, "x86_64", D).await;
    assert_eq!((st, b["registrationState"].clone()), (StatusCode::OK, json!("VOTING")), "{b}");
    assert_eq!(votes_of(&s, &admin, &vid, "x86_64").await.len(), 1);

    // Reset after registration: the state stays, the votes go.
    let (st, _) = s.call(Method::DELETE, &format!("{base}/votes?architectureName=arm64"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    assert_eq!(arch_state(&s, &admin, &vid, "arm64").await.as_deref(), Some("REGISTERED"));
    assert!(votes_of(&s, &admin, &vid, "arm64").await.is_empty());
    let (_, b) = s.call(Method::GET, &format!("{base}/votes/summary?architectureName=arm64"), Some(&admin), None).await;
    assert_eq!(b["votes"], json!([]));
    let (st, _) = vote(&s, &clients[3].1, &vid, "arm64", A).await;
    assert_eq!(st, StatusCode::CONFLICT, "still registered");

    // Reset of every architecture.
    let (st, _) = s.call(Method::DELETE, &format!("{base}/votes"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    assert_eq!(arch_state(&s, &admin, &vid, "x86_64").await, None);
    assert_eq!(arch_state(&s, &admin, &vid, "arm64").await.as_deref(), Some("REGISTERED"));

    // Deleting the registration removes the architecture.
    let (st, _) =
        s.call(Method::DELETE, &format!("{base}/registration?architectureName=arm64"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    assert_eq!(arch_state(&s, &admin, &vid, "arm64").await, None);
    let (st, b) = vote(&s, &clients[3].1, &vid, "arm64", A).await;
    assert_eq!((st, b["registrationState"].clone()), (StatusCode::OK, json!("VOTING")), "{b}");

    // Who may vote, and on what.
    let other = &clients[1].0;
    let (st, _) = s
        .call(
            Method::POST,
            &format!("{base}/votes"),
            Some(&clients[0].1),
            Some(json!({"architectureName": "arm64", "integrityCheckId": A, "astClientId": other})),
        )
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN, "a client votes only as itself");
    let (st, b) = vote(&s, &admin, &vid, "arm64", A).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "astClientId".to_string()), "{b}");
    let (st, b) = s
        .call(
            Method::POST,
            &format!("{base}/votes"),
            Some(&admin),
            Some(json!({"architectureName": "arm64", "integrityCheckId": A, "astClientId": other})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "an admin votes for a named client: {b}");
    let (st, b) = vote(&s, &clients[0].1, &vid, "arm64", "short").await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "integrityCheckId".to_string()), "{b}");
    let (st, b) = vote(&s, &clients[0].1, &vid, "a", A).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "architectureName".to_string()), "{b}");
    let (st, _) = vote(&s, &clients[0].1, "01ARZ3NDEKTSV4RRFFQ69G5FAV", "arm64", A).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    // A client token cannot read or reset votes.
    let (st, _) = s.call(Method::GET, &format!("{base}/votes?architectureName=arm64"), Some(&clients[0].1), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, _) = s.call(Method::DELETE, &format!("{base}/votes"), Some(&clients[0].1), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    // A client of another app may not vote.
    let (st, _) = s.call(Method::POST, "/v1/tenants/acme/apps/bank", Some(&admin), Some(fcm_app_body())).await;
    assert_eq!(st, StatusCode::CREATED);
    let (_, bank_client) = client_token(&s, "acme", &admin, "bank").await;
    let (st, _) = vote(&s, &bank_client, &vid, "arm64", A).await;
    assert_eq!(st, StatusCode::FORBIDDEN);

    // A locked version takes no votes; nor one without the integrity check.
    let (st, _) = s.call(Method::PUT, &format!("{base}/lock"), Some(&admin), Some(json!({"versionLock": true}))).await;
    assert_eq!(st, StatusCode::OK);
    let (st, b) = vote(&s, &clients[2].1, &vid, "arm64", A).await;
    assert_eq!(st, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["subsystem"], 517);
    let plain = create_version(&s, &admin, version("shop", "android", "2.0.1")).await;
    let (st, _) = vote(&s, &clients[2].1, &plain, "arm64", A).await;
    assert_eq!(st, StatusCode::CONFLICT);
    s.shutdown().await;
}

#[tokio::test]
async fn default_policy_registers_on_the_register_users_client() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let mut body = version("shop", "ios", "3.0.0");
    body["isCheckIntegrity"] = json!(true);
    let vid = create_version(&s, &admin, body).await;
    let (alice_client, alice) = client_token(&s, "acme", &admin, "shop").await;
    let (bob_client, bob) = client_token(&s, "acme", &admin, "shop").await;
    for (user, client) in [("alice", &alice_client), ("bob", &bob_client)] {
        let (st, b) = s
            .call(
                Method::PUT,
                &format!("/v1/tenants/acme/users/{user}/clients/{client}"),
                Some(&admin),
                Some(json!({})),
            )
            .await;
        assert_eq!(st, StatusCode::OK, "{b}");
    }
    let (st, _) = vote(&s, &bob, &vid, "arm64", A).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "bob is not the registering user");
    let (st, b) = vote(&s, &alice, &vid, "arm64", A).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["registrationState"], "REGISTERED");
    let (_, b) = s
        .call(
            Method::GET,
            &format!("/v1/tenants/acme/versions/{vid}/votes/summary?architectureName=arm64"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(b["policy"]["type"], "DEFAULT");
    assert_eq!(b["votes"], json!([{"integrityCheckId": A, "num": 1, "percent": 100}]));
    s.shutdown().await;
}

/// 64 clients vote at once on one architecture; whatever the interleaving, the
/// outcome is one consistent state: the quorum is completed exactly once (never
/// overshot), or maxVotes is reached exactly once without a quorum.
#[tokio::test]
async fn concurrent_votes_end_in_one_consistent_state() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let (quorum, max) = (8u64, 20u64);
    let policy = create_policy(&s, &admin, "race", quorum as u32, max as u32).await;
    let mut clients = Vec::new();
    for _ in 0..64 {
        clients.push(client_token(&s, "acme", &admin, "shop").await);
    }
    let checks = [A, B, C];
    for round in 0..5 {
        let vid = create_version(
            &s,
            &admin,
            json!({"appName": "shop", "platform": "android", "versionStr": format!("4.0.{round}"),
                   "isCheckIntegrity": true, "policyId": policy}),
        )
        .await;
        let results = futures::future::join_all(
            clients.iter().enumerate().map(|(i, (_, token))| vote(&s, token, &vid, "arm64", checks[(i + round) % 3])),
        )
        .await;
        let ok: Vec<&Value> = results.iter().filter(|(st, _)| *st == StatusCode::OK).map(|(_, b)| b).collect();
        for (st, b) in &results {
            assert!(*st == StatusCode::OK || *st == StatusCode::CONFLICT, "round {round}: {st} {b}");
        }
        let state = arch_state(&s, &admin, &vid, "arm64").await.expect("a state");
        let votes = votes_of(&s, &admin, &vid, "arm64").await;
        assert_eq!(votes.len(), ok.len(), "round {round}: every accepted vote is stored, no other");
        let count = |c: &str| votes.iter().filter(|v| v["integrityCheckId"] == c).count() as u64;
        let best = checks.iter().map(|c| count(c)).max().unwrap();
        let completing: Vec<_> = ok.iter().filter(|b| b["registrationState"] != "VOTING").collect();
        assert_eq!(completing.len(), 1, "round {round}: exactly one vote completed the voting");
        assert_eq!(completing[0]["registrationState"], state.as_str());
        match state.as_str() {
            "REGISTERED" => {
                assert_eq!(best, quorum, "round {round}: the quorum is reached, not overshot");
                assert!((votes.len() as u64) <= max);
            }
            "FAILED" => {
                assert_eq!(votes.len() as u64, max, "round {round}");
                assert!(best < quorum);
            }
            other => panic!("round {round}: unexpected state {other}"),
        }
        let (_, summary) = s
            .call(
                Method::GET,
                &format!("/v1/tenants/acme/versions/{vid}/votes/summary?architectureName=arm64"),
                Some(&admin),
                None,
            )
            .await;
        let total: u64 = summary["votes"].as_array().unwrap().iter().map(|v| v["num"].as_u64().unwrap()).sum();
        assert_eq!(total, votes.len() as u64, "round {round}: the tally matches the stored votes");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn apps_with_latest_versions_and_filters() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let key = apns_key_base64();
    let bank = json!({"categories": ["payment", "tms"], "iosApnsPrivateKey": key, "iosApnsTeamId": "TEAM",
        "iosApnsKeyId": "KEY", "iosBundleId": "com.bank", "iosIsDevelopment": true,
        "hpkClientId": "hid", "hpkClientSecret": "hsecret"});
    let news = json!({"categories": ["chat"], "hpkClientId": "nid", "hpkClientSecret": "nsecret"});
    for (name, body) in [("bank", bank), ("news", news)] {
        let (st, b) = s.call(Method::POST, &format!("/v1/tenants/acme/apps/{name}"), Some(&admin), Some(body)).await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
    }
    create_version(&s, &admin, version("shop", "android", "1.9.0")).await;
    let shop_android = create_version(&s, &admin, version("shop", "android", "1.10.0")).await;
    let shop_ios = create_version(&s, &admin, version("shop", "ios", "2.0.0")).await;
    let bank_ios = create_version(&s, &admin, version("bank", "ios", "3.0.1")).await;
    create_version(&s, &admin, version("bank", "ios", "3.0.0")).await;

    let names = |q: &'static str| {
        let (s, admin) = (&s, &admin);
        async move {
            let (st, b) = s.call(Method::GET, &format!("/v1/tenants/acme/apps-latest{q}"), Some(admin), None).await;
            assert_eq!(st, StatusCode::OK, "{q}: {b}");
            let names: Vec<String> =
                b["data"].as_array().unwrap().iter().map(|a| a["appName"].as_str().unwrap().to_string()).collect();
            (names, b)
        }
    };
    let (all, b) = names("").await;
    assert_eq!(all, ["bank", "news", "shop"]);
    assert_eq!(b["totalCount"], 3);
    let shop = &b["data"][2];
    assert_eq!(shop["pushNotificationConfig"], json!({"categories": ["chat", "payment"], "credentials": ["FCM"]}));
    assert_eq!(
        shop["platforms"],
        json!([{"name": "android", "latestVersion": "1.10.0", "latestVersionId": shop_android},
               {"name": "ios", "latestVersion": "2.0.0", "latestVersionId": shop_ios}])
    );
    assert_eq!(b["data"][0]["pushNotificationConfig"]["credentials"], json!(["APNS", "HMS"]));
    assert_eq!(
        b["data"][0]["platforms"],
        json!([{"name": "ios", "latestVersion": "3.0.1", "latestVersionId": bank_ios}])
    );
    assert_eq!(b["data"][1]["platforms"], json!([]));

    assert_eq!(names("?appName=sho").await.0, ["shop"]);
    let (n, b) = names("?platform=ios").await;
    assert_eq!(n, ["bank", "shop"]);
    assert_eq!(b["data"][1]["platforms"].as_array().unwrap().len(), 1, "only the matching platform");
    assert_eq!(names("?category=tms").await.0, ["bank"]);
    assert_eq!(names("?category=chat&category=tms").await.0, ["bank", "news", "shop"]);
    assert_eq!(names("?credential=HMS").await.0, ["bank", "news"]);
    assert_eq!(names("?credential=APNS&credential=FCM").await.0, ["bank", "shop"]);
    assert_eq!(names("?credential=HMS&category=chat").await.0, ["news"]);
    // textSearch over name, platform, version, categories and credential types.
    assert_eq!(names("?textSearch=1.10").await.0, ["shop"]);
    assert_eq!(names("?textSearch=hms").await.0, ["bank", "news"]);
    assert_eq!(names("?textSearch=BAN").await.0, ["bank"]);
    assert_eq!(names("?textSearch=chat").await.0, ["news", "shop"]);
    assert_eq!(names("?textSearch=andr").await.0, ["shop"]);
    // ... but not over a property that has its own filter.
    assert_eq!(names("?textSearch=chat&category=tms").await.0, Vec::<String>::new());
    assert_eq!(names("?textSearch=ios&platform=android").await.0, Vec::<String>::new());
    assert_eq!(names("?textSearch=fcm&appName=shop").await.0, ["shop"]);
    assert_eq!(names("?textSearch=shop&appName=sh").await.0, Vec::<String>::new());
    // Paging.
    let (n, b) = names("?pageSize=1&page=2").await;
    assert_eq!((n, b["totalCount"].clone()), (vec!["news".to_string()], json!(3)));
    for (q, f) in [
        ("?pageSize=0", "pageSize"),
        ("?page=21474838", "page"),
        ("?category=chat&category=tms&category=payment&category=chat", "category"),
        ("?credential=GCM", "credential[0]"),
        ("?platform=io", "platform"),
        ("?appName=", "appName"),
    ] {
        let (st, b) = s.call(Method::GET, &format!("/v1/tenants/acme/apps-latest{q}"), Some(&admin), None).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, f.to_string()), "{q}: {b}");
    }

    // Deleting an app deletes its versions.
    let (st, _) = s.call(Method::DELETE, "/v1/tenants/acme/apps/shop", Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/versions/{shop_ios}"), Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, b) = s.call(Method::GET, "/v1/tenants/acme/versions", Some(&admin), None).await;
    assert_eq!((st, b), (StatusCode::OK, json!({"versions": ["3.0.0", "3.0.1"]})));
    // A new app of the same name starts without versions.
    let (st, _) = s.call(Method::POST, "/v1/tenants/acme/apps/shop", Some(&admin), Some(fcm_app_body())).await;
    assert_eq!(st, StatusCode::CREATED);
    create_version(&s, &admin, version("shop", "ios", "2.0.0")).await;
    s.shutdown().await;
}

#[tokio::test]
async fn tenants_see_only_their_own_versions() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let policy = create_policy(&s, &admin, "p", 1, 1).await;
    let mut body = version("shop", "android", "1.0.0");
    body["isCheckIntegrity"] = json!(true);
    let vid = create_version(&s, &admin, body).await;
    let other = s.tenant_with_app("other", "shop").await;
    let (_, other_client) = client_token(&s, "other", &other, "shop").await;

    for (method, path) in [
        (Method::GET, format!("/v1/tenants/acme/versions/{vid}")),
        (Method::GET, "/v1/tenants/acme/versions".to_string()),
        (Method::GET, "/v1/tenants/acme/apps-latest".to_string()),
        (Method::GET, format!("/v1/tenants/acme/policies/{policy}")),
        (Method::DELETE, format!("/v1/tenants/acme/versions/{vid}")),
        (Method::PUT, format!("/v1/tenants/acme/versions/{vid}/lock")),
        (Method::DELETE, format!("/v1/tenants/acme/policies/{policy}")),
    ] {
        let (st, b) = s.call(method.clone(), &path, Some(&other), Some(json!({"versionLock": true}))).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{method} {path}: {b}");
        assert!(!b.to_string().contains(&vid));
    }
    let (st, _) = vote(&s, &other_client, &vid, "arm64", A).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    // Through its own paths the other tenant finds nothing of acme's.
    for path in [
        format!("/v1/tenants/other/versions/{vid}"),
        format!("/v1/tenants/other/versions/{vid}/architectures"),
        format!("/v1/tenants/other/policies/{policy}"),
    ] {
        let (st, _) = s.call(Method::GET, &path, Some(&other), None).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}");
    }
    let (_, b) = s.call(Method::GET, "/v1/tenants/other/versions", Some(&other), None).await;
    assert_eq!(b, json!({"versions": []}));
    let (_, b) = s.call(Method::GET, "/v1/tenants/other/policies", Some(&other), None).await;
    assert_eq!(b, json!([]));
    let (_, b) = s.call(Method::GET, "/v1/tenants/other/apps-latest", Some(&other), None).await;
    assert_eq!(b["data"][0]["platforms"], json!([]));
    assert_eq!(b["totalCount"], 1);
    // A version in the other tenant cannot use acme's policy.
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/other/versions",
            Some(&other),
            Some(json!({"appName": "shop", "platform": "ios", "versionStr": "1.0.0", "policyId": policy})),
        )
        .await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "policyId".to_string()), "{b}");
    // acme's version is untouched.
    let (st, b) = s.call(Method::GET, &format!("/v1/tenants/acme/versions/{vid}"), Some(&admin), None).await;
    assert_eq!((st, b["versionLock"].clone()), (StatusCode::OK, json!(false)));
    s.shutdown().await;
}

/// Vote racing version lock. Invariant: a vote is counted only if the version
/// was not locked when it was written. After a lock and votes made together,
/// the version is locked in every round; each vote was either counted (200,
/// stored, in the tally) or refused because of the lock (409, not stored):
/// the stored votes are exactly the accepted ones, and a vote after the lock
/// is refused and stores nothing.
#[tokio::test]
async fn a_vote_is_counted_only_while_its_version_is_unlocked() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let policy = create_policy(&s, &admin, "lockrace", 100, 1000).await;
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client_token(&s, "acme", &admin, "shop").await);
    }
    for round in 0..25 {
        let vid = create_version(
            &s,
            &admin,
            json!({"appName": "shop", "platform": "android", "versionStr": format!("7.0.{round}"),
                   "isCheckIntegrity": true, "policyId": policy}),
        )
        .await;
        let path = format!("/v1/tenants/acme/versions/{vid}");
        let lock_path = format!("{path}/lock");
        let lock = s.call(Method::PUT, &lock_path, Some(&admin), Some(json!({"versionLock": true})));
        let votes = futures::future::join_all(clients.iter().map(|(_, token)| vote(&s, token, &vid, "arm64", A)));
        let ((lock_st, lb), results) = tokio::join!(lock, votes);
        assert_eq!(lock_st, StatusCode::OK, "round {round}: {lb}");
        let mut accepted = Vec::new();
        for ((id, _), (st, b)) in clients.iter().zip(&results) {
            match *st {
                StatusCode::OK => accepted.push(id.clone()),
                StatusCode::CONFLICT => assert!(b.to_string().contains("locked"), "round {round}: {b}"),
                other => panic!("round {round}: {other} {b}"),
            }
        }
        let (_, v) = s.call(Method::GET, &path, Some(&admin), None).await;
        assert_eq!(v["versionLock"], true, "round {round}: the lock stands");
        let mut stored: Vec<String> = votes_of(&s, &admin, &vid, "arm64")
            .await
            .iter()
            .map(|v| v["astClientId"].as_str().unwrap().to_string())
            .collect();
        stored.sort();
        accepted.sort();
        assert_eq!(stored, accepted, "round {round}: the stored votes are exactly the accepted ones");
        // Once locked, no vote lands.
        let (st, b) = vote(&s, &clients[0].1, &vid, "arm64", B).await;
        assert_eq!(st, StatusCode::CONFLICT, "round {round}: {b}");
        let after = votes_of(&s, &admin, &vid, "arm64").await;
        assert_eq!(after.len(), accepted.len(), "round {round}: a vote after the lock stores nothing");
        assert!(after.iter().all(|v| v["integrityCheckId"] == A), "round {round}: {after:?}");
    }
    s.shutdown().await;
}

/// Version update racing version lock. Invariant: an update whose body does
/// not set `versionLock` keeps the lock as stored when it writes, so a lock
/// made meanwhile is never undone: after both, the version is locked.
#[tokio::test]
async fn a_version_update_never_undoes_a_concurrent_lock() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    for round in 0..25 {
        let vid = create_version(&s, &admin, version("shop", "ios", &format!("8.0.{round}"))).await;
        let path = format!("/v1/tenants/acme/versions/{vid}");
        let mut update = version("shop", "ios", &format!("8.1.{round}"));
        update["sdkVersion"] = json!(format!("6.0.{round}"));
        let lock_path = format!("{path}/lock");
        let lock = s.call(Method::PUT, &lock_path, Some(&admin), Some(json!({"versionLock": true})));
        let put = s.call(Method::PUT, &path, Some(&admin), Some(update));
        let ((lock_st, lb), (put_st, pb)) = tokio::join!(lock, put);
        assert_eq!((lock_st, put_st), (StatusCode::OK, StatusCode::OK), "round {round}: {lb} {pb}");
        let (_, v) = s.call(Method::GET, &path, Some(&admin), None).await;
        assert_eq!(v["versionLock"], true, "round {round}: the update undid the lock: {v}");
        assert_eq!(v["versionStr"], format!("8.1.{round}"), "round {round}: the update stands too");
    }
    s.shutdown().await;
}

/// Version creation racing the app's delete. Invariant: a version never
/// outlives its app: after both, the app is gone, and so is the version if
/// its creation was accepted (otherwise it was refused for want of the app).
#[tokio::test]
async fn a_version_never_outlives_its_deleted_app() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let app_body = json!({"categories": ["chat"], "androidApiKey": "key"});
    for round in 0..25 {
        let app = format!("gone{round}");
        let path = format!("/v1/tenants/acme/apps/{app}");
        let (st, b) = s.call(Method::POST, &path, Some(&admin), Some(app_body.clone())).await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        let create =
            s.call(Method::POST, "/v1/tenants/acme/versions", Some(&admin), Some(version(&app, "ios", "1.0.0")));
        let delete = s.call(Method::DELETE, &path, Some(&admin), None);
        let ((create_st, cb), (delete_st, db)) = tokio::join!(create, delete);
        assert_eq!(delete_st, StatusCode::NO_CONTENT, "round {round}: {db}");
        match create_st {
            StatusCode::CREATED => {
                let id = cb["id"].as_str().unwrap();
                let (st, b) = s.call(Method::GET, &format!("/v1/tenants/acme/versions/{id}"), Some(&admin), None).await;
                assert_eq!(st, StatusCode::NOT_FOUND, "round {round}: the version outlived its app: {b}");
            }
            StatusCode::BAD_REQUEST => assert_eq!(field(&cb), "appName", "round {round}: {cb}"),
            other => panic!("round {round}: {other} {cb}"),
        }
        let (_, list) =
            s.call(Method::GET, &format!("/v1/tenants/acme/versions?appName={app}"), Some(&admin), None).await;
        assert_eq!(list["versions"], json!([]), "round {round}: {list}");
    }
    s.shutdown().await;
}

/// The library API: the same checks as the routes, typed answers.
#[tokio::test]
async fn library_methods_check_the_caller_and_answer_typed_views() {
    use herald::models::version::{AppsLatestQuery, PolicyBody, SummaryPolicy, VersionBody, VersionQuery};
    use herald::paging::Paging;
    use herald::{Caller, ErrorKind};
    let s = TestServer::start().await;
    s.tenant_with_app("acme", "shop").await;
    let engine = &s.running.as_ref().unwrap().engine;
    let (admin, reader) = (Caller::admin("acme"), Caller::reader("acme"));
    let body: VersionBody = serde_json::from_value(version("shop", "ios", "2.0.1")).unwrap();

    let err = engine.versions().create(&reader, "acme", body.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let err = engine.versions().create(&Caller::Anonymous, "acme", body.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthenticated, "{err}");
    let err = engine.versions().create(&Caller::admin("other"), "acme", body.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "another tenant's admin: {err}");
    let v = engine.versions().create(&admin, "acme", body).await.unwrap();
    assert_eq!((v.app_name.as_str(), v.version_str.as_str(), v.version.as_str()), ("shop", "2.0.1", "2000000000001"));

    let page = Paging { page: 1, size: 20 };
    let numbers = engine.versions().list(&reader, "acme", &VersionQuery::default(), page).await.unwrap();
    assert_eq!(numbers.versions, vec!["2.0.1".to_string()]);
    let err = engine.versions().list(&reader, "acme", &VersionQuery::default(), Paging { page: 0, size: 20 }).await;
    assert_eq!(err.unwrap_err().field.as_deref(), Some("page"));

    let summary = engine.versions().summary(&reader, "acme", &v.id, "arm64").await.unwrap();
    match summary.policy {
        Some(SummaryPolicy::Default(d)) => assert_eq!(d.parameters.register_user_id.as_deref(), Some("alice")),
        other => panic!("the default policy, not {other:?}"),
    }
    assert!(summary.votes.is_empty());

    let policy: PolicyBody = serde_json::from_value(
        json!({"name": "three", "type": "QUORUM", "parameters": {"quorumSize": 2, "maxVotes": 3}}),
    )
    .unwrap();
    let p = engine.versions().create_policy(&admin, "acme", policy).await.unwrap();
    assert_eq!((p.kind.as_str(), p.parameters.quorum_size), ("QUORUM", 2));
    assert_eq!(engine.versions().policy(&reader, "acme", &p.id).await.unwrap().name, "three");
    let err = engine.versions().delete_policy(&reader, "acme", &p.id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");

    let latest = engine.versions().apps_latest(&reader, "acme", &AppsLatestQuery::default(), page).await.unwrap();
    assert_eq!(latest.total_count, 1);
    assert_eq!(latest.data[0].platforms[0].latest_version_id, v.id);

    assert_eq!(engine.apps().get(&reader, "acme", "shop").await.unwrap().app_name, "shop");
    let err = engine.apps().delete(&reader, "acme", "shop").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    engine.apps().delete(&admin, "acme", "shop").await.unwrap();
    let err = engine.versions().get(&reader, "acme", &v.id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "the app's versions went with it: {err}");
}
