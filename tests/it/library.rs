//! The library API alone (no HTTP, no `herald::api`): a device client's whole
//! life and a webhook's, as a daemon embedding Herald would drive them. The
//! provider simulators stand in for Apple; the webhook receiver is local.

use crate::common::receiver::Receiver;
use herald::models::app::AppBody;
use herald::models::client::RegisterClient;
use herald::models::push::PushNotificationEvent;
use herald::models::push_token::PutPushToken;
use herald::models::tenant::CreateTenant;
use herald::models::webhook::{DomainEvent, WebhookBody};
use herald::{Caller, Engine, ErrorKind};
use serde_json::json;

fn typed<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_life_and_a_webhooks_through_the_library_api() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::common::config_for(&dir.path().join("data"));
    let sims = herald::demo::start_simulators(&mut config).await.unwrap();
    let engine = Engine::builder().config(config).metrics_recorder(false).build().await.unwrap();
    let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();

    // The operator creates the tenant; its admin sets up an APNs app.
    let tenant: CreateTenant =
        typed(json!({ "tenantId": "shop", "adminUsername": "root", "adminPassword": "a-long-password" }));
    engine.tenants().create(&Caller::Operator, tenant).await.unwrap();
    let admin = Caller::admin("shop");
    let mut app = json!({ "categories": creds.app_json["categories"].clone() });
    for k in ["iosApnsPrivateKey", "iosApnsKeyId", "iosApnsTeamId", "iosBundleId", "iosIsDevelopment"] {
        app[k] = creds.app_json[k].clone();
    }
    let app: AppBody = typed(app);
    assert_eq!(engine.apps().create(&admin, "shop", "ios", app).await.unwrap().app_name, "ios");

    // Register, set the token as the client itself, link to a user.
    let clients = engine.clients();
    let body: RegisterClient = typed(json!({ "appName": "ios", "platform": "ios" }));
    let err = clients.register(&Caller::reader("shop"), "shop", body).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "a reader registers no client: {err}");
    let body: RegisterClient = typed(json!({ "appName": "ios", "platform": "ios" }));
    let id = clients.register(&admin, "shop", body).await.unwrap().ast_client_id;
    let itself = Caller::client("shop", &id);
    let token: PutPushToken = typed(json!({ "appName": "ios", "pushToken": format!("APNS:{:064x}", 7) }));
    let view = clients.set_push_token(&itself, "shop", &id, token).await.unwrap().unwrap();
    assert!(view.is_valid);
    let bad: PutPushToken = typed(json!({ "appName": "android", "pushToken": format!("APNS:{:064x}", 8) }));
    let err = clients.set_push_token(&itself, "shop", &id, bad).await.unwrap_err();
    assert_eq!((err.kind(), err.field.as_deref()), (ErrorKind::Invalid, Some("appName")));
    clients.link(&admin, "shop", "dana", &id, Some("high")).await.unwrap();
    assert_eq!(clients.get(&itself, "shop", &id).await.unwrap().lock_state, "NONE");

    // Send to the user and read the report.
    let event = || -> PushNotificationEvent {
        typed(json!({
            "category": "chat",
            "recipient": { "tenantId": "shop", "userId": "dana" },
            "payload": { "message": { "title": "Hello", "body": "from the library" } }
        }))
    };
    let answers = engine.push().send(&admin, "shop", event()).await.unwrap();
    assert!(answers[0].is_successful, "{answers:?}");
    let report = engine.push().report(&admin, "shop", &answers[0].notification_id, 1, 10).await.unwrap();
    assert_eq!((report.state.as_str(), report.counts.sent), ("COMPLETED", 1), "{report:?}");
    assert_eq!(report.clients[0].ast_client_id, id);
    assert_eq!(sims.stats().apns.accepted, 1);

    // A locked client gets nothing; unlocked again, it does.
    clients.lock(&admin, "shop", &id, "lost phone").await.unwrap();
    let err = clients.lock(&admin, "shop", &id, "again").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "already locked: {err}");
    let answers = engine.push().send(&admin, "shop", event()).await.unwrap();
    assert!(!answers[0].is_successful, "a locked client gets no push: {answers:?}");
    assert_eq!(sims.stats().apns.accepted, 1);
    clients.unlock(&admin, "shop", &id).await.unwrap();

    // Delete: refused while linked, done once unlinked.
    let err = clients.delete(&admin, "shop", &id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    clients.unlink(&admin, "shop", "dana", &id).await.unwrap();
    clients.delete(&admin, "shop", &id).await.unwrap();
    let err = clients.get(&admin, "shop", &id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);

    // A webhook: created, then a published event reaches the local receiver.
    let receiver = Receiver::start(vec![]).await;
    let hook: WebhookBody = typed(json!({ "filter": "type=domain", "callbackUrl": receiver.url }));
    let created = engine.webhooks().create(&admin, "shop", hook).await.unwrap();
    assert!(created.secret.as_deref().is_some_and(|s| s.starts_with("whsec_")), "{created:?}");
    let event: DomainEvent = typed(json!({ "type": "domain", "event": "ORDER_SHIPPED", "data": { "order": 7 } }));
    let err = engine
        .webhooks()
        .publish(&Caller::admin("other"), "shop", typed(json!({ "type": "domain", "event": "X" })))
        .await;
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Forbidden, "another tenant's admin publishes nothing here");
    assert_eq!(engine.webhooks().publish(&admin, "shop", event).await.unwrap().webhooks, 1);
    let got = receiver.wait_for(1, 10).await;
    assert!(got[0].body.contains("ORDER_SHIPPED"), "{}", got[0].body);

    engine.shutdown().await;
    sims.shutdown().await;
}

/// An API gateway embedding Herald checks the tokens it is shown and takes
/// one back, without HTTP.
#[tokio::test]
async fn a_gateway_introspects_and_revokes_through_the_library_api() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::common::config_for(&dir.path().join("data"));
    let engine = Engine::builder().config(config).metrics_recorder(false).build().await.unwrap();
    let tenant: CreateTenant =
        typed(json!({ "tenantId": "shop", "adminUsername": "root", "adminPassword": "a-long-password" }));
    engine.tenants().create(&Caller::Operator, tenant).await.unwrap();
    let tokens = engine.realm().password_grant("shop", "root", "a-long-password").await.unwrap();
    let realm = engine.realm();
    let admin = Caller::admin("shop");

    let seen = realm.introspect(&admin, "shop", &tokens.access_token).await.unwrap();
    assert!(seen.active);
    assert_eq!(seen.username.as_deref(), Some("root"));
    let err = realm.introspect(&Caller::reader("shop"), "shop", &tokens.access_token).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden);
    assert!(!realm.introspect(&Caller::admin("other"), "other", &tokens.access_token).await.is_ok_and(|i| i.active));

    assert!(realm.revoke(&admin, "shop", &tokens.refresh_token).await.unwrap(), "a token to take back");
    assert!(!realm.introspect(&admin, "shop", &tokens.access_token).await.unwrap().active, "the session ended");
    assert!(!realm.introspect(&admin, "shop", &tokens.refresh_token).await.unwrap().active);
    assert!(!realm.revoke(&admin, "shop", "not-a-token").await.unwrap());
}

/// A daemon sending through the library API gets the same idempotency keys
/// and scheduled sends as the HTTP API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_and_scheduled_sends_through_the_library_api() {
    use herald::models::idempotency::IdempotencyKey;
    use herald::models::schedule::ScheduleBody;
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::common::config_for(&dir.path().join("data"));
    let sims = herald::demo::start_simulators(&mut config).await.unwrap();
    let engine = Engine::builder().config(config).metrics_recorder(false).build().await.unwrap();
    let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();
    let tenant: CreateTenant =
        typed(json!({ "tenantId": "shop", "adminUsername": "root", "adminPassword": "a-long-password" }));
    engine.tenants().create(&Caller::Operator, tenant).await.unwrap();
    let admin = Caller::admin("shop");
    let mut app = json!({ "categories": creds.app_json["categories"].clone() });
    for k in ["iosApnsPrivateKey", "iosApnsKeyId", "iosApnsTeamId", "iosBundleId", "iosIsDevelopment"] {
        app[k] = creds.app_json[k].clone();
    }
    engine.apps().create(&admin, "shop", "ios", typed(app)).await.unwrap();
    let clients = engine.clients();
    let id = clients.register(&admin, "shop", typed(json!({ "appName": "ios", "platform": "ios" }))).await.unwrap();
    let id = id.ast_client_id;
    let token: PutPushToken = typed(json!({ "appName": "ios", "pushToken": format!("APNS:{:064x}", 7) }));
    clients.set_push_token(&admin, "shop", &id, token).await.unwrap();
    clients.link(&admin, "shop", "dana", &id, None).await.unwrap();
    let event = |body: &str| -> serde_json::Value {
        json!({ "category": "chat", "recipient": { "tenantId": "shop", "userId": "dana" }, "payload": { "message": { "body": body } } })
    };

    let key = IdempotencyKey::parse("invoice-17").unwrap();
    let first =
        engine.push().send_idempotent(&admin, "shop", &key, typed(event("paid")), Default::default()).await.unwrap();
    let again =
        engine.push().send_idempotent(&admin, "shop", &key, typed(event("paid")), Default::default()).await.unwrap();
    assert_eq!((first.replayed, again.replayed), (false, true));
    assert_eq!(first.answer[0].notification_id, again.answer[0].notification_id);
    let err = engine
        .push()
        .send_idempotent(&admin, "shop", &key, typed(event("other")), Default::default())
        .await
        .unwrap_err();
    assert_eq!((err.kind(), err.status.as_u16()), (ErrorKind::Invalid, 422), "{err}");
    assert_eq!(sims.stats().apns.accepted, 1);

    let now = herald_storage::now_ms();
    let at = |ms: u64| {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap();
        t.format(&time::format_description::well_known::Rfc3339).unwrap()
    };
    let soon: ScheduleBody = typed(json!({ "sendAt": at(now), "event": event("scheduled") }));
    let later: ScheduleBody = typed(json!({ "sendAt": at(now + 3_600_000), "event": event("never") }));
    let soon = engine.schedules().create(&admin, "shop", soon).await.unwrap();
    let later = engine.schedules().create(&admin, "shop", later).await.unwrap();
    assert_eq!(engine.schedules().cancel(&admin, "shop", &later.id).await.unwrap().state, "CANCELLED");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.schedules().get(&admin, "shop", &soon.id).await.unwrap().state != "SENT" {
        assert!(std::time::Instant::now() < deadline, "the schedule fires");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(sims.stats().apns.accepted, 2);
    engine.shutdown().await;
    sims.shutdown().await;
}
