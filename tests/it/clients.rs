//! Client lifecycle through the HTTP API: detail, overview, links, lock and
//! unlock, disconnect, unlink, delete client, delete user data.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn client_token(s: &TestServer, id: &str, secret: &str) -> (StatusCode, Value) {
    let r = s
        .http
        .post(s.url("/auth/realms/acme/protocol/openid-connect/token"))
        .form(&[("grant_type", "client_credentials"), ("client_id", id), ("client_secret", secret)])
        .send()
        .await
        .unwrap();
    let st = r.status();
    (st, r.json().await.unwrap_or(Value::Null))
}

async fn link(s: &TestServer, t: &str, user: &str, id: &str) {
    let (st, b) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/users/{user}/clients/{id}"),
            Some(t),
            Some(json!({"mLoA": "low"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
}

#[tokio::test]
async fn detail_overview_and_self_update() {
    let s = TestServer::start().await;
    let t = s.tenant_with_app("acme", "shop").await;
    let risk = json!({"platform": "android", "decodedRisks": "root", "score": 7, "details": {"scoring": [{"value": 7, "type": "root"}], "itemizedRisks": [{"name": "root", "score": 7, "description": "rooted"}]}});
    let (st, b) = s
        .call(Method::POST, "/v1/tenants/acme/clients", Some(&t), Some(json!({"appName": "shop", "platform": "android", "deviceName": "Pixel", "risks": "root", "riskAnalysis": risk, "locales": ["de-CH"]})))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let (id, secret) =
        (b["astClientId"].as_str().unwrap().to_string(), b["clientSecret"].as_str().unwrap().to_string());
    link(&s, &t, "alice", &id).await;
    let (st, d) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{id}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::OK, "{d}");
    assert_eq!(
        (d["deviceName"].clone(), d["lockState"].clone(), d["riskAnalysis"]["score"].clone()),
        (json!("Pixel"), json!("NONE"), json!(7))
    );
    assert!(d["createdOn"].as_u64().unwrap() > 1_600_000_000_000 && d["linkedOnOrMloaUpdated"].is_u64());

    // The client reports its own state; another client may not.
    let (_, tok) = client_token(&s, &id, &secret).await;
    let ct = tok["access_token"].as_str().unwrap().to_string();
    let (st, u) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/clients/{id}"),
            Some(&ct),
            Some(json!({"appVersion": "2.0.1", "riskAnalysis": {"score": 1}})),
        )
        .await;
    assert_eq!(
        (st, u["appVersion"].clone(), u["riskAnalysis"]["score"].clone()),
        (StatusCode::OK, json!("2.0.1"), json!(1))
    );
    let (other, _) = s.register_client("acme", &t, "shop").await;
    let (st, _) = s
        .call(Method::PUT, &format!("/v1/tenants/acme/clients/{other}"), Some(&ct), Some(json!({"appVersion": "x"})))
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, b) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/clients/{id}"),
            Some(&ct),
            Some(json!({"riskAnalysis": {"score": "high"}})),
        )
        .await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "riskAnalysis.score".to_string()));

    // Overview with filters, users of a client.
    link(&s, &t, "alice", &other).await;
    let (st, o) = s.call(Method::GET, "/v1/tenants/acme/clients/overview?userId=alice", Some(&t), None).await;
    assert_eq!(st, StatusCode::OK, "{o}");
    assert_eq!(o.as_array().unwrap().len(), 2);
    let (_, o) = s
        .call(
            Method::GET,
            "/v1/tenants/acme/clients/overview?userId=alice&filter=appVersion=2.0.1&filter=appPlatform=android",
            Some(&t),
            None,
        )
        .await;
    assert_eq!(o.as_array().unwrap().len(), 1);
    assert_eq!(o[0]["astClientId"], id.as_str());
    for key in [
        "appName",
        "appPlatform",
        "lockState",
        "createdOn",
        "locales",
        "riskAnalysis",
        "sdkVersion",
        "loginOutcome",
        "lastLoginAttempt",
    ] {
        assert!(o[0].get(key).is_some(), "overview field {key}");
    }
    let (st, b) =
        s.call(Method::GET, "/v1/tenants/acme/clients/overview?userId=alice&filter=shoeSize=9", Some(&t), None).await;
    assert!(st == StatusCode::BAD_REQUEST && b["message"].as_str().unwrap().starts_with("UnknownProperty"), "{b}");
    let (st, _) = s.call(Method::GET, "/v1/tenants/acme/clients/overview?userId=nobody", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, u) = s.call(Method::GET, &format!("/v1/tenants/acme/users?astClientId={id}"), Some(&t), None).await;
    assert_eq!((st, u), (StatusCode::OK, json!([{"userId": "alice", "mLoA": "low"}])));
    let (st, _) =
        s.call(Method::GET, "/v1/tenants/acme/users?astClientId=01ARZ3NDEKTSV4RRFFQ69G5FAV", Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_locked_client_cannot_log_in_or_receive_pushes() {
    let w = PushWorld::start_with(|c| c.webhooks.allow_private = true).await;
    let s = &w.server;
    let (id, secret) = s.register_client("acme", &w.admin, "demo").await;
    link(s, &w.admin, "nora", &id).await;
    s.call(
        Method::PUT,
        &format!("/v1/tenants/acme/clients/{id}/pushtoken"),
        Some(&w.admin),
        Some(json!({"appName": "demo", "pushToken": "FCM:nora-token"})),
    )
    .await;
    let (_, tok) = client_token(s, &id, &secret).await;
    let ct = tok["access_token"].as_str().unwrap().to_string();

    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/clients/lock",
            Some(&w.admin),
            Some(json!({"astClientId": id, "lockReason": "stolen"})),
        )
        .await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/clients/lock",
            Some(&w.admin),
            Some(json!({"astClientId": id, "lockReason": "again"})),
        )
        .await;
    assert_eq!(st, StatusCode::NOT_ACCEPTABLE);
    let (st, b) =
        s.call(Method::POST, "/v1/tenants/acme/clients/lock", Some(&w.admin), Some(json!({"astClientId": id}))).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "request body".to_string()), "{b}");
    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/clients/lock",
            Some(&w.admin),
            Some(json!({"astClientId": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "lockReason": "x"})),
        )
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (_, d) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{id}"), Some(&w.admin), None).await;
    assert_eq!((d["lockState"].clone(), d["lockReason"].clone()), (json!("LOCKED"), json!("stolen")));

    // No login, no use of an earlier token, no push (neither direct nor broadcast).
    let (st, _) = client_token(s, &id, &secret).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{id}"), Some(&ct), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (_, r) = w.send(to_client("nora", &id, json!({"body": "x"}))).await;
    assert_eq!(r[0]["results"][0]["result"]["code"], 423, "{r}");
    let (_, b) = w.send(json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "t"}, "payload": {"message": {"body": "x"}}})).await;
    assert_eq!(b[0]["metadata"]["targeted"], 0, "the broadcast skips a locked client: {b}");
    assert_eq!(w.sims.stats().fcm.accepted, 0);

    let (st, _) = s.call(Method::POST, &format!("/v1/tenants/acme/clients/{id}/unlock"), Some(&w.admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s.call(Method::POST, &format!("/v1/tenants/acme/clients/{id}/unlock"), Some(&w.admin), None).await;
    assert_eq!(st, StatusCode::NOT_ACCEPTABLE);
    let (st, _) = client_token(s, &id, &secret).await;
    assert_eq!(st, StatusCode::OK);
    let (_, r) = w.send(to_client("nora", &id, json!({"body": "x"}))).await;
    assert_eq!(r[0]["isSuccessful"], true, "{r}");
}

#[tokio::test]
async fn unlink_disconnect_and_deletes() {
    let s = TestServer::start().await;
    let t = s.tenant_with_app("acme", "shop").await;
    let (shared, _) = s.register_client("acme", &t, "shop").await;
    let (own, own_secret) = s.register_client("acme", &t, "shop").await;
    let (own2, _) = s.register_client("acme", &t, "shop").await;
    let (bobs, _) = s.register_client("acme", &t, "shop").await;
    for c in [&shared, &own, &own2] {
        link(&s, &t, "alice", c).await;
    }
    link(&s, &t, "bobby", &shared).await;
    link(&s, &t, "bobby", &bobs).await;

    // Disconnect: the selected client's tokens stop working; clientIds required for the selective modes.
    let (_, tok) = client_token(&s, &own, &own_secret).await;
    let ct = tok["access_token"].as_str().unwrap().to_string();
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/users/alice/disconnect",
            Some(&t),
            Some(json!({"disconnectType": "SPECIFIED_CLIENTS"})),
        )
        .await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "clientIds".to_string()));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/users/alice/disconnect",
            Some(&t),
            Some(json!({"disconnectType": "SPECIFIED_CLIENTS", "clientIds": [own]})),
        )
        .await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{own}"), Some(&ct), None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "a disconnected client must log in again");
    let (_, tok) = client_token(&s, &own, &own_secret).await;
    let (st, _) =
        s.call(Method::GET, &format!("/v1/tenants/acme/clients/{own}"), tok["access_token"].as_str(), None).await;
    assert_eq!(st, StatusCode::OK);

    // Delete client: 409 while linked.
    let (st, _) = s.call(Method::DELETE, &format!("/v1/tenants/acme/clients/{own2}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::CONFLICT);
    // Unlink all except `own`, then the deprecated single unlink.
    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/users/alice/unlink",
            Some(&t),
            Some(json!({"unlinkType": "ALL_EXCEPT_SPECIFIED_CLIENTS", "clientIds": [own]})),
        )
        .await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (_, links) = s.call(Method::GET, "/v1/tenants/acme/users/alice/clients", Some(&t), None).await;
    assert_eq!(links.as_array().unwrap().len(), 1);
    let (st, _) = s.call(Method::DELETE, &format!("/v1/tenants/acme/clients/{own2}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{own2}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/unlink",
            Some(&t),
            Some(json!({"userId": "alice", "astClientId": shared})),
        )
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND, "already unlinked above");

    // Delete user data: alice's own client goes; the shared client and bobby's links stay.
    link(&s, &t, "alice", &shared).await;
    let (st, _) = s.call(Method::DELETE, "/v1/tenants/acme/users/alice", Some(&t), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{own}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{shared}"), Some(&t), None).await;
    assert_eq!(st, StatusCode::OK);
    let (_, bob) = s.call(Method::GET, "/v1/tenants/acme/users/bobby/clients", Some(&t), None).await;
    assert_eq!(bob.as_array().unwrap().len(), 2, "nothing of bobby touched");
    let (_, alice) = s.call(Method::GET, "/v1/tenants/acme/users/alice/clients", Some(&t), None).await;
    assert_eq!(alice, json!([]));
}

/// Invariant: a link never points to a deleted client. Deleting a user's data
/// deletes the clients no other user is linked to; a link made to such a
/// client meanwhile either keeps it (the link came first) or is refused with
/// 404 (the client was gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_never_points_to_a_client_deleted_with_a_users_data() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let (mut kept, mut refused) = (0, 0);
    for round in 0..30 {
        let (client, _) = s.register_client("acme", &admin, "shop").await;
        let (ann, bob) = (format!("ann{round}"), format!("bob{round}"));
        let link_path = |user: &str| format!("/v1/tenants/acme/users/{user}/clients/{client}");
        let (st, _) = s.call(Method::PUT, &link_path(&ann), Some(&admin), Some(json!({}))).await;
        assert_eq!(st, StatusCode::OK);
        let (delete_path, bob_path) = (format!("/v1/tenants/acme/users/{ann}"), link_path(&bob));
        let delete = s.call(Method::DELETE, &delete_path, Some(&admin), None);
        let link = s.call(Method::PUT, &bob_path, Some(&admin), Some(json!({})));
        let ((deleted, _), (linked, b)) = tokio::join!(delete, link);
        assert_eq!(deleted, StatusCode::NO_CONTENT, "round {round}");
        let (exists, _) = s.call(Method::GET, &format!("/v1/tenants/acme/clients/{client}"), Some(&admin), None).await;
        match linked {
            StatusCode::OK => {
                assert_eq!(exists, StatusCode::OK, "round {round}: bob's link points to a deleted client");
                kept += 1;
            }
            StatusCode::NOT_FOUND => {
                assert_eq!(exists, StatusCode::NOT_FOUND, "round {round}");
                let (_, links) =
                    s.call(Method::GET, &format!("/v1/tenants/acme/users/{bob}/clients"), Some(&admin), None).await;
                assert_eq!(links, json!([]), "round {round}: a refused link left nothing");
                refused += 1;
            }
            other => panic!("round {round}: the link answered {other}: {b}"),
        }
    }
    eprintln!("links kept their client {kept} times, were refused {refused} times");
    s.shutdown().await;
}

/// Spec 002: a user's client links take `filter=` (an unknown property is a
/// 400 `UnknownProperty`), and `userId` is 3 to 255 characters.
#[tokio::test]
async fn a_users_client_links_filter_and_check_the_user_id() {
    let s = TestServer::start().await;
    let t = s.tenant_with_app("acme", "shop").await;
    let (a, _) = s.register_client("acme", &t, "shop").await;
    let (b, _) = s.register_client("acme", &t, "shop").await;
    for (id, mloa) in [(&a, "high"), (&b, "none")] {
        let path = format!("/v1/tenants/acme/users/alice/clients/{id}");
        let (st, _) = s.call(Method::PUT, &path, Some(&t), Some(json!({ "mLoA": mloa }))).await;
        assert_eq!(st, StatusCode::OK);
    }
    let list = |q: &'static str| {
        let (s, t) = (&s, &t);
        async move { s.call(Method::GET, &format!("/v1/tenants/acme/users/alice/clients{q}"), Some(t), None).await }
    };
    let (st, all) = list("").await;
    assert_eq!((st, all.as_array().map(Vec::len)), (StatusCode::OK, Some(2)));
    let (st, high) = list("?filter=mLoA%3Dhigh").await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        high.as_array().map(|l| l.iter().map(|x| x["astClientId"].clone()).collect::<Vec<_>>()),
        Some(vec![json!(a)])
    );
    let (st, b2) = list("?filter=color%3Dblue").await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{b2}");
    assert!(b2["message"].as_str().unwrap_or_default().starts_with("UnknownProperty"), "{b2}");
    let (st, b3) = s.call(Method::GET, "/v1/tenants/acme/users/al/clients", Some(&t), None).await;
    assert_eq!((st, field(&b3)), (StatusCode::BAD_REQUEST, "userId".to_string()), "{b3}");
    s.shutdown().await;
}
