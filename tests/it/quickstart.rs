//! The README quickstart, end to end through the HTTP API.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn quickstart_sequence() {
    let s = TestServer::start().await;
    s.create_tenant("acme").await;
    let admin = s.admin_token("acme").await;

    // An app with push configuration; credentials never come back in clear.
    let (st, app) = s.call(Method::POST, "/v1/tenants/acme/apps/shop", Some(&admin), Some(fcm_app_body())).await;
    assert_eq!(st, StatusCode::CREATED, "{app}");
    assert_eq!(app["tenantId"], "acme");
    assert_eq!(app["appName"], "shop");
    assert_eq!(app["pushNotificationConfig"]["fcmServiceAccountJSON"], "***");
    assert_eq!(app["pushNotificationConfig"]["categories"], json!(["chat", "payment"]));
    let (st, _) = s.call(Method::POST, "/v1/tenants/acme/apps/shop", Some(&admin), Some(fcm_app_body())).await;
    assert_eq!(st, StatusCode::CONFLICT);

    // A client, its own token, its push token.
    let (client_id, secret) = s.register_client("acme", &admin, "shop").await;
    assert_eq!(client_id.len(), 26);
    let resp = s
        .http
        .post(s.url("/auth/realms/acme/protocol/openid-connect/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", secret.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let client_token = resp.json::<serde_json::Value>().await.unwrap()["access_token"].as_str().unwrap().to_string();

    let (st, b) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/users/alice/clients/{client_id}"),
            Some(&admin),
            Some(json!({"mLoA": "high"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["mLoA"], "high");

    let path = format!("/v1/tenants/acme/clients/{client_id}/pushtoken");
    let (st, b) = s
        .call(
            Method::PUT,
            &path,
            Some(&client_token),
            Some(json!({"appName": "shop", "pushToken": "FCM:device-token-1"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["pushProvider"], "FCM");

    // Read back by the admin: the bare token, the provider inferred from the prefix, the assigned user.
    let (st, b) = s.call(Method::GET, &path, Some(&admin), None).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(
        b,
        json!({"appName": "shop", "pushToken": "device-token-1", "pushProvider": "FCM", "isValid": true, "assignedUsers": ["alice"]})
    );

    // The client may not read it (sensitive), nor register another client's token.
    let (st, _) = s.call(Method::GET, &path, Some(&client_token), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (other, _) = s.register_client("acme", &admin, "shop").await;
    let (st, _) = s
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/clients/{other}/pushtoken"),
            Some(&client_token),
            Some(json!({"appName": "shop", "pushToken": "FCM:x"})),
        )
        .await;
    assert_eq!(st, StatusCode::FORBIDDEN);

    // An empty token removes it.
    let (st, _) = s.call(Method::PUT, &path, Some(&admin), Some(json!({"appName": "shop", "pushToken": ""}))).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, b) = s.call(Method::GET, &path, Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(b["subsystem"], 516);
    s.shutdown().await;
}

#[tokio::test]
async fn apps_update_list_and_delete() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    // Sending the mask back keeps the stored secret.
    let mut body = fcm_app_body();
    body["fcmServiceAccountJSON"] = json!("***");
    body["categories"] = json!(["tms"]);
    let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/apps/shop", Some(&admin), Some(body.clone())).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["pushNotificationConfig"]["categories"], json!(["tms"]));
    assert_eq!(b["pushNotificationConfig"]["fcmServiceAccountJSON"], "***");
    let (st, _) = s.call(Method::PUT, "/v1/tenants/acme/apps/nope", Some(&admin), Some(fcm_app_body())).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    // A mask with nothing stored is a client error.
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/apps/other", Some(&admin), Some(body)).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "fcmServiceAccountJSON".into()));

    for name in ["a1", "a2", "a3"] {
        let (st, _) =
            s.call(Method::POST, &format!("/v1/tenants/acme/apps/{name}"), Some(&admin), Some(fcm_app_body())).await;
        assert_eq!(st, StatusCode::CREATED);
    }
    let (_, page) = s.call(Method::GET, "/v1/tenants/acme/apps?page=2&pageSize=2", Some(&admin), None).await;
    let names: Vec<_> = page.as_array().unwrap().iter().map(|a| a["appName"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["a3", "shop"]);
    let (_, filtered) = s.call(Method::GET, "/v1/tenants/acme/apps?appName=a2", Some(&admin), None).await;
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    let (st, b) = s.call(Method::GET, "/v1/tenants/acme/apps?pageSize=0", Some(&admin), None).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "pageSize".into()));

    let (st, _) = s.call(Method::DELETE, "/v1/tenants/acme/apps/a1", Some(&admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, b) = s.call(Method::GET, "/v1/tenants/acme/apps/a1", Some(&admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(b["subsystem"], 519);
    s.shutdown().await;
}

/// Invariant: a delete is never undone by a concurrent update of the same
/// app (which used to check, then write the whole record back), and two
/// concurrent updates both stand (each builds on the other's result).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_update_never_undoes_a_concurrent_delete() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let mut update = fcm_app_body();
    update["fcmServiceAccountJSON"] = json!("***");
    for round in 0..30 {
        let path = format!("/v1/tenants/acme/apps/r{round}");
        let (st, _) = s.call(Method::POST, &path, Some(&admin), Some(fcm_app_body())).await;
        assert_eq!(st, StatusCode::CREATED);
        let put = s.call(Method::PUT, &path, Some(&admin), Some(update.clone()));
        let delete = s.call(Method::DELETE, &path, Some(&admin), None);
        let ((put_st, b), (delete_st, _)) = tokio::join!(put, delete);
        assert_eq!(delete_st, StatusCode::NO_CONTENT, "round {round}");
        assert!([StatusCode::OK, StatusCode::NOT_FOUND].contains(&put_st), "round {round}: {put_st} {b}");
        let (st, b) = s.call(Method::GET, &path, Some(&admin), None).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "round {round}: the deleted app came back: {b}");
    }
    // Concurrent updates of different fields: the last writer builds on the first.
    let categories = |c: &str| {
        let mut b = update.clone();
        b["categories"] = json!([c]);
        b
    };
    let (a, b) = tokio::join!(
        s.call(Method::PUT, "/v1/tenants/acme/apps/shop", Some(&admin), Some(categories("chat"))),
        s.call(Method::PUT, "/v1/tenants/acme/apps/shop", Some(&admin), Some(categories("tms")))
    );
    assert_eq!((a.0, b.0), (StatusCode::OK, StatusCode::OK));
    s.shutdown().await;
}
