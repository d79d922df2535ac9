//! The embedding API: an engine built in-process with the builder, its HTTP
//! API mounted in a server of the test's own, and the typed operations.

use crate::common::receiver::Receiver;
use herald::models::app::AppBody;
use herald::models::push::PushNotificationEvent;
use herald::models::tenant::CreateTenant;
use herald::models::webhook::DomainEvent;
use herald::Engine;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Serves `engine.http_service()` on a listener of our own; answers its base URL.
async fn mount(engine: &Arc<Engine>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = engine.http_service();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service.clone();
            tokio::spawn(async move {
                let _ = auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    format!("http://{addr}")
}

/// An engine on `dir` from the builder, `tune`d, with the simulators in
/// process and the demo tenant seeded.
async fn demo_engine(
    dir: &std::path::Path,
    tune: impl FnOnce(&mut herald::config::Config),
) -> (Arc<Engine>, herald_sim::Simulators) {
    let mut config = herald::config::Config::for_data_dir(dir);
    let sims = herald::demo::start_simulators(&mut config).await.unwrap();
    let engine = Engine::builder().config(config).operator_token("op-token").tune(tune).build().await.unwrap();
    herald::demo::seed(&engine, &sims).await.unwrap();
    (engine, sims)
}

fn event_to(user: &str) -> PushNotificationEvent {
    serde_json::from_value(json!({
        "category": "chat",
        "recipient": { "tenantId": "demo", "userId": user },
        "payload": { "message": { "title": "t", "body": "b" } }
    }))
    .unwrap()
}

/// A topic send answers once its broadcast is queued, however long that
/// takes: the send deadline bounds the wait for providers only. Queuing is
/// storage work (it reads each app's whole token index); cut off by the
/// deadline and its one-second grace, the send answered 500 "the providers
/// did not answer within the deadline" while the broadcast went out anyway,
/// so a retry would have sent it twice (seen at a million tokens on an
/// engine slowed by a heap profiler). Here the clock is paused: while the
/// queuing works on other threads the runtime is idle, and its clock jumps
/// past every timer, the grace's included.
#[tokio::test(start_paused = true)]
async fn a_topic_send_is_not_cut_off_by_the_send_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _sims) = demo_engine(dir.path(), |c| c.send_deadline = Duration::ZERO).await;
    let topic = serde_json::from_value(json!({
        "category": "chat",
        "recipient": { "tenantId": "demo", "topic": "all" },
        "payload": { "message": { "title": "t", "body": "b" } }
    }))
    .unwrap();
    let answer = engine.push().send(&herald::Caller::admin("demo"), "demo", topic).await;
    let answer = answer.unwrap_or_else(|e| panic!("the broadcast is answered, not cut off: {e}"));
    let targeted: u64 = answer.iter().filter_map(|a| a.metadata.as_ref()?.targeted).sum();
    assert!(targeted > 0, "{answer:?}");
    engine.shutdown().await;
}

/// An embedding program can keep broadcasts on its own runtime
/// (`push.bulk_nice = None`): Herald then starts no threads for them, and a
/// broadcast still completes. Alone in a process, so that no other test's
/// engine has broadcast threads.
#[tokio::test]
async fn broadcasts_run_on_the_programs_runtime_when_asked() {
    if !crate::common::alone_in_a_process("embedding::broadcasts_run_on_the_programs_runtime_when_asked") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (engine, _sims) = demo_engine(dir.path(), |c| c.push.bulk_nice = None).await;
    let admin = herald::Caller::admin("demo");
    let topic = serde_json::from_value(json!({
        "category": "chat",
        "recipient": { "tenantId": "demo", "topic": "all" },
        "payload": { "message": { "title": "t", "body": "b" } }
    }))
    .unwrap();
    let answer = engine.push().send(&admin, "demo", topic).await.unwrap();
    let id = answer[0].notification_id.clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let report = loop {
        let report = engine.push().report(&admin, "demo", &id, 1, 10).await.unwrap();
        if report.state != "RUNNING" || std::time::Instant::now() > deadline {
            break report;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(report.state, "COMPLETED", "{report:?}");
    let bulk = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|n| n.trim() == "herald-bulk"))
        .count();
    assert_eq!(bulk, 0, "no broadcast threads of Herald's");
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builder_service_typed_api_and_draining_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, sims) = demo_engine(dir.path(), |c| c.webhooks.retry_schedule = vec![Duration::ZERO]).await;

    // Typed tenant and app set-up, validated like the HTTP bodies.
    let tenant = CreateTenant {
        tenant_id: "acme".into(),
        admin_username: "root".into(),
        admin_password: "a-long-password".into(),
    };
    let op = herald::Caller::Operator;
    let err = engine.tenants().create(&herald::Caller::admin("demo"), tenant.clone()).await.unwrap_err();
    assert_eq!(err.kind(), herald::ErrorKind::Unauthenticated, "only the operator creates tenants: {err}");
    engine.tenants().create(&op, tenant).await.unwrap();
    let bad = AppBody { categories: vec!["nonsense".into()], ..AppBody::default() };
    let acme = herald::Caller::admin("acme");
    let err = engine.apps().create(&acme, "acme", "shop", bad).await.unwrap_err();
    assert_eq!(err.status, 400);
    assert!(err.message.starts_with("categories"), "{err}");
    let good = AppBody { categories: vec!["chat".into()], ..AppBody::default() };
    assert_eq!(engine.apps().create(&acme, "acme", "shop", good).await.unwrap().app_name, "shop");

    // The mounted HTTP API is the real one: tokens, routes, errors.
    let base = mount(&engine).await;
    let http = crate::common::http_client();
    let token: Value = http
        .post(format!("{base}/auth/realms/demo/protocol/openid-connect/token"))
        .form(&[("grant_type", "password"), ("username", "admin"), ("password", "demo-password")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = token["access_token"].as_str().unwrap().to_string();
    let receiver = Receiver::start(vec![]).await;
    let hook = http
        .post(format!("{base}/v1/tenants/demo/webhooks"))
        .bearer_auth(&token)
        .json(&json!({ "filter": "type=domain", "callbackUrl": receiver.url }))
        .send()
        .await
        .unwrap();
    assert_eq!(hook.status(), 201, "{:?}", hook.text().await);

    // Typed send: answered like the HTTP send, delivered to the simulators.
    let demo_admin = herald::Caller::admin("demo");
    let answers = engine.push().send(&demo_admin, "demo", event_to("alice")).await.unwrap();
    assert_eq!(answers.len(), 4, "alice has an iOS, an Android, a Huawei and a web client");
    assert!(answers.iter().all(|a| a.is_successful), "{answers:?}");
    let stats = sims.stats();
    assert_eq!(stats.apns.accepted + stats.fcm.accepted + stats.hms.accepted + stats.webpush.accepted, 4);
    let err = engine.push().send(&herald::Caller::admin("acme"), "acme", event_to("alice")).await.unwrap_err();
    assert_eq!(err.status, 400, "recipient.tenantId must match: {err}");

    // Typed publish reaches the webhook.
    let event = DomainEvent { kind: "domain".into(), event: "ORDER_SHIPPED".into(), data: json!({ "order": 7 }) };
    let published = engine.webhooks().publish(&demo_admin, "demo", event).await.unwrap();
    assert_eq!(published.webhooks, 1);
    let got = receiver.wait_for(1, 10).await;
    assert!(got[0].body.contains("ORDER_SHIPPED"), "{}", got[0].body);

    // Shutdown waits for a request in flight through the service.
    sims.set_faults(serde_json::from_value(json!({ "apns": { "latency_ms": 700 } })).unwrap());
    let finished = Arc::new(AtomicBool::new(false));
    let sent_at = std::time::Instant::now();
    let slow = {
        let (http, base, token, finished) = (http.clone(), base.clone(), token.clone(), finished.clone());
        tokio::spawn(async move {
            let body = json!({
                "category": "chat",
                "recipient": { "tenantId": "demo", "userId": "bob" },
                "payload": { "message": { "title": "t" } }
            });
            let url = format!("{base}/v1/tenants/demo/push_notification/send");
            let r = http.post(url).bearer_auth(token).json(&body).send().await.unwrap();
            finished.store(true, Ordering::SeqCst);
            r.status()
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!finished.load(Ordering::SeqCst), "the send should still be waiting for APNs");
    engine.shutdown().await;
    // The answer cannot exist before APNs' 700 ms; the client may see it a
    // moment after shutdown returns, so the server side is judged by the clock.
    assert!(
        sent_at.elapsed() >= Duration::from_millis(690),
        "shutdown returned after {:?}, before the request in flight finished",
        sent_at.elapsed()
    );
    assert_eq!(slow.await.unwrap(), 202);
    // The store is closed, on sled with a snapshot of the page table (none
    // existed: this directory was opened once), so the next start reads it
    // rather than replaying the log.
    assert!(matches!(engine.store.apps().get("acme", "demo"), Err(herald_storage::Error::Unavailable(_))));
    if !herald_storage::test_on_postgres() {
        assert_ne!(herald_storage::test_newest_snapshot(dir.path()), "", "a snapshot in {}", dir.path().display());
    }
    // The heartbeat and the sweeper stopped before the leases were freed:
    // a second later, past a sweeper's round, this engine holds none (the
    // heartbeat kept the node lease alive while the runtime ran).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(engine.store.leases().held_names(""), Vec::<String>::new(), "leases held after shutdown");
    sims.shutdown().await;
}
