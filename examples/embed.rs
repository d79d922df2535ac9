//! Herald inside another program: an engine built with the builder, its HTTP
//! API mounted in the program's own hyper server, and a push sent through the
//! typed API to the local APNs, FCM and HMS simulators (nothing leaves this
//! machine).
//!
//! `cargo run --example embed`

// Benchmarks and examples: a failure is a visible abort, not a served request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

use herald::models::push::PushNotificationEvent;
use herald::Engine;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("herald-embed-{}", std::process::id()));
    let mut config = herald::config::Config::for_data_dir(&dir);
    // The simulators stand in for Apple, Google and Huawei.
    let sims = herald::demo::start_simulators(&mut config).await?;
    let engine = Engine::builder().config(config).tune(|c| c.send_deadline = Duration::from_secs(5)).build().await?;
    // Tenant `demo`: an app per provider and users with a client on each.
    herald::demo::seed(&engine, &sims).await?;

    // The program's own listener serves Herald's whole API.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let service = engine.http_service();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service.clone();
            tokio::spawn(async move {
                let _ = auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    let health = reqwest::get(format!("http://{addr}/healthz")).await?;
    println!("mounted API at http://{addr}: /healthz answered {}", health.status());

    // A send without HTTP, validated and answered like the HTTP body.
    let event: PushNotificationEvent = serde_json::from_value(json!({
        "category": "chat",
        "recipient": { "tenantId": "demo", "userId": "alice" },
        "payload": { "message": { "title": "Hello", "body": "from an embedded Herald" } }
    }))?;
    let answers = engine.push().send(&herald::Caller::admin("demo"), "demo", event).await?;
    let sent = answers.iter().filter(|a| a.is_successful).count();
    println!("sent to {sent} of alice's {} clients", answers.len());

    let deadline = Instant::now() + Duration::from_secs(10);
    let received = loop {
        let s = sims.stats();
        let n = s.apns.accepted + s.fcm.accepted + s.hms.accepted + s.webpush.accepted;
        if n >= 4 || Instant::now() > deadline {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!("the simulators accepted {received} notifications");

    engine.shutdown().await;
    sims.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    // alice has an iOS, an Android, a Huawei and a web client.
    if sent != 4 || received < 4 {
        return Err(format!("expected 4 deliveries, sent {sent}, received {received}").into());
    }
    Ok(())
}
