//! Properties of users and clients through the HTTP API.

use crate::common;
use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn create(s: &TestServer, t: &str, path: &str, body: Value) -> (StatusCode, Value) {
    s.call(Method::POST, path, Some(t), Some(body)).await
}

#[tokio::test]
async fn every_rule_listing_sealing_and_deletion() {
    let s = TestServer::start().await;
    let t = s.tenant_with_app("acme", "shop").await;
    let (client, _) = s.register_client("acme", &t, "shop").await;
    s.call(Method::PUT, &format!("/v1/tenants/acme/users/alice/clients/{client}"), Some(&t), Some(json!({}))).await;
    let own = "/v1/tenants/acme/users/alice/properties";
    let of_client = format!("/v1/tenants/acme/users/alice/clients/{client}/properties");

    for (body, f) in [
        (json!({"name": "ab", "type": "UTF8STRING", "value": "x"}), "name"),
        (json!({"name": "abc", "type": "TEXT", "value": "x"}), "type"),
        (json!({"name": "abc", "type": "UTF8STRING", "value": ""}), "value"),
        (json!({"name": "abc", "type": "INTEGER", "value": "12a"}), "value"),
        (json!({"name": "abc", "type": "BOOLEAN", "value": "yes"}), "value"),
        (json!({"name": "abc", "type": "DATE", "value": "22/11/2026"}), "value"),
        (json!({"name": "abc", "type": "OCTETSTRING", "value": "***"}), "value"),
        (json!({"name": "abc", "type": "UTF8STRING", "value": "x", "encryption": "AES"}), "encryption"),
        (json!({"name": "abc", "type": "UTF8STRING", "value": "x", "cpFlags": 256}), "cpFlags"),
        (
            json!({"name": "abc", "type": "UTF8STRING", "value": "x", "visibility": ["CLIENT", "PUBLIC"]}),
            "visibility[1]",
        ),
        (json!({"name": "abc", "type": "UTF8STRING", "value": "x", "extra": 1}), "extra"),
    ] {
        let (st, b) = create(&s, &t, own, body.clone()).await;
        assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, f.to_string()), "{body}: {b}");
    }
    for (name, kind, value) in [
        ("count", "INTEGER", "-42"),
        ("flag", "BOOLEAN", "true"),
        ("born", "DATE", "1990-04-01"),
        ("seen", "DATE", "2026-11-22T10:00:00Z"),
        ("blob", "OCTETSTRING", "aGVsbG8="),
    ] {
        let (st, b) = create(&s, &t, own, json!({"name": name, "type": kind, "value": value})).await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        assert_eq!(b["userId"], "alice");
    }
    let (st, _) = create(&s, &t, own, json!({"name": "count", "type": "INTEGER", "value": "1"})).await;
    assert_eq!(st, StatusCode::CONFLICT, "unique per owner");
    let (st, b) = create(
        &s,
        &t,
        &of_client,
        json!({"name": "count", "type": "INTEGER", "value": "1", "cpFlags": 512, "visibility": ["CLIENT"]}),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "the client is another owner: {b}");
    assert_eq!(b["astClientId"], client.as_str());
    let (st, sealed) = create(
        &s,
        &t,
        &of_client,
        json!({"name": "pin", "type": "UTF8STRING", "value": "1234", "encryption": "SERVER_SIDE_DB"}),
    )
    .await;
    assert_eq!((st, sealed["value"].clone()), (StatusCode::CREATED, json!("1234")), "admins read the clear value");
    let (st, _) = create(
        &s,
        &t,
        "/v1/tenants/acme/users/alice/clients/01ARZ3NDEKTSV4RRFFQ69G5FAV/properties",
        json!({"name": "abc", "type": "UTF8STRING", "value": "x"}),
    )
    .await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    // Listing: paging, filters, UnknownProperty and ParsingError.
    let (_, all) = s.call(Method::GET, own, Some(&t), None).await;
    assert_eq!(all.as_array().unwrap().len(), 5);
    let (_, page) = s.call(Method::GET, &format!("{own}?page=2&page_size=5"), Some(&t), None).await;
    assert_eq!(page, json!([]));
    let (_, dates) = s.call(Method::GET, &format!("{own}?filter=type=DATE&filter=name^=b"), Some(&t), None).await;
    assert_eq!(dates.as_array().unwrap().len(), 1);
    let (st, b) = s.call(Method::GET, &format!("{own}?filter=colour=red"), Some(&t), None).await;
    assert!(st == StatusCode::BAD_REQUEST && b["message"].as_str().unwrap().starts_with("UnknownProperty"), "{b}");
    let (st, b) = s.call(Method::GET, &format!("{own}?filter=name"), Some(&t), None).await;
    assert!(st == StatusCode::BAD_REQUEST && b["message"].as_str().unwrap().starts_with("ParsingError"), "{b}");
    let (st, _) = s.call(Method::GET, &format!("{own}?page_size=101"), Some(&t), None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (_, c) = s.call(Method::GET, &of_client, Some(&t), None).await;
    assert_eq!(c.as_array().unwrap().len(), 2);

    // Delete user data removes them; another tenant sees none.
    s.create_tenant("other").await;
    let o = s.admin_token("other").await;
    let (_, theirs) = s.call(Method::GET, "/v1/tenants/other/users/alice/properties", Some(&o), None).await;
    assert_eq!(theirs, json!([]));
    s.call(Method::DELETE, "/v1/tenants/acme/users/alice", Some(&t), None).await;
    let (_, gone) = s.call(Method::GET, own, Some(&t), None).await;
    assert_eq!(gone, json!([]));
}

#[tokio::test]
async fn notify_properties_emit_property_changed() {
    let s = TestServer::start_with(|c| c.webhooks.allow_private = true).await;
    s.create_tenant("acme").await;
    let t = s.admin_token("acme").await;
    let r = common::receiver::Receiver::start(vec![]).await;
    s.call(
        Method::POST,
        "/v1/tenants/acme/webhooks",
        Some(&t),
        Some(json!({"filter": "event=PROPERTY_CHANGED", "callbackUrl": r.url})),
    )
    .await;
    create(
        &s,
        &t,
        "/v1/tenants/acme/users/alice/properties",
        json!({"name": "quiet", "type": "UTF8STRING", "value": "a"}),
    )
    .await;
    create(
        &s,
        &t,
        "/v1/tenants/acme/users/alice/properties",
        json!({"name": "loud", "type": "UTF8STRING", "value": "b", "notify": true}),
    )
    .await;
    let got = r.wait_for(1, 10).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(r.received().len(), 1);
    let e: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(e["data"]["name"], "loud");
}

/// Invariant: a client's property never outlives the deletion of its user's
/// data. Created before the delete, it is deleted with the user's other
/// properties; created after, it is refused (the client is no longer linked
/// to the user). Bob keeps the client alive, so ann can be linked again to
/// look.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_property_written_while_its_users_data_is_deleted_never_survives() {
    let s = TestServer::start().await;
    let admin = s.tenant_with_app("acme", "shop").await;
    let (client, _) = s.register_client("acme", &admin, "shop").await;
    let link = |user: String| {
        let path = format!("/v1/tenants/acme/users/{user}/clients/{client}");
        let admin = admin.clone();
        let s = &s;
        async move { s.call(Method::PUT, &path, Some(&admin), Some(json!({}))).await.0 }
    };
    assert_eq!(link("bob".into()).await, StatusCode::OK);
    let (mut before, mut after) = (0, 0);
    for round in 0..100 {
        let ann = format!("ann{round}");
        assert_eq!(link(ann.clone()).await, StatusCode::OK);
        let properties = format!("/v1/tenants/acme/users/{ann}/clients/{client}/properties");
        let body = json!({"name": "color", "type": "UTF8STRING", "value": "blue"});
        let delete_path = format!("/v1/tenants/acme/users/{ann}");
        let delete = s.call(Method::DELETE, &delete_path, Some(&admin), None);
        let write = create(&s, &admin, &properties, body);
        let ((deleted, _), (written, b)) = tokio::join!(delete, write);
        assert_eq!(deleted, StatusCode::NO_CONTENT, "round {round}");
        match written {
            StatusCode::CREATED => before += 1,
            StatusCode::NOT_FOUND => after += 1,
            other => panic!("round {round}: the property write answered {other}: {b}"),
        }
        assert_eq!(link(ann.clone()).await, StatusCode::OK);
        let (st, listed) = s.call(Method::GET, &properties, Some(&admin), None).await;
        assert_eq!((st, listed), (StatusCode::OK, json!([])), "round {round}: a property survived the delete");
    }
    eprintln!("property written before the delete {before} times, refused after it {after} times");
    s.shutdown().await;
}

/// The library API: the same checks as the routes, typed answers.
#[tokio::test]
async fn library_methods_check_the_caller_and_answer_typed_views() {
    use herald::models::nonce::{CreateNonce, LoginEvent, NonceFormat};
    use herald::models::property::PropertyBody;
    use herald::paging::Paging;
    use herald::{Caller, ErrorKind};
    let s = TestServer::start().await;
    let t = s.tenant_with_app("acme", "shop").await;
    let (client, _) = s.register_client("acme", &t, "shop").await;
    let engine = &s.running.as_ref().unwrap().engine;
    let (admin, reader) = (Caller::admin("acme"), Caller::reader("acme"));
    engine.clients().link(&admin, "acme", "alice", &client, None).await.unwrap();

    // Properties: an encrypted value is shown to administrators only.
    let body = || -> PropertyBody {
        serde_json::from_value(
            json!({"name": "pin", "type": "UTF8STRING", "value": "1234", "encryption": "SERVER_SIDE_DB"}),
        )
        .unwrap()
    };
    let err = engine.properties().create(&reader, "acme", "alice", Some(&client), body()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let err = engine.properties().create(&admin, "acme", "bob", Some(&client), body()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "bob is not linked to the client: {err}");
    let created = engine.properties().create(&admin, "acme", "alice", Some(&client), body()).await.unwrap();
    assert_eq!((created.value.as_str(), created.encryption.as_str()), ("1234", "SERVER_SIDE_DB"));
    let page = Paging { page: 1, size: 20 };
    let read = engine.properties().list(&reader, "acme", "alice", Some(&client), &[], page).await.unwrap();
    assert_eq!(read[0].value, "***");
    let read = engine.properties().list(&admin, "acme", "alice", Some(&client), &[], page).await.unwrap();
    assert_eq!((read.len(), read[0].value.as_str()), (1, "1234"));

    // Nonces: a client reports only its own logins.
    let nonce: CreateNonce =
        serde_json::from_value(json!({"action": "LOGIN_NONCE", "payload": {"expectedUserId": "alice"}})).unwrap();
    let err = engine.nonces().create(&reader, "acme", NonceFormat::Short, nonce).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let nonce: CreateNonce =
        serde_json::from_value(json!({"action": "LOGIN_NONCE", "payload": {"expectedUserId": "alice"}})).unwrap();
    let issued = engine.nonces().create(&admin, "acme", NonceFormat::Short, nonce).await.unwrap();
    assert!(issued.nonce.len() == 8 && issued.nonce.bytes().all(|b| b.is_ascii_digit()), "{issued:?}");
    assert_eq!(issued.kind, "LOGIN_NONCE");
    let event = || LoginEvent { nonce: issued.nonce.clone(), ast_client_id: client.clone(), user_id: "alice".into() };
    let stranger = Caller::client("acme", "01ARZ3NDEKTSV4RRFFQ69G5FAV");
    let err = engine.nonces().login_event(&stranger, "acme", event()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let recorded = engine.nonces().login_event(&Caller::client("acme", &client), "acme", event()).await.unwrap();
    assert_eq!((recorded.user_id.as_str(), recorded.login_outcome.as_str()), ("alice", "SUCCESS"));
    let err = engine.nonces().login_event(&admin, "acme", event()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "single use: {err}");
}
