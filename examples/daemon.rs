//! A shop's own service with Herald inside: its hyper server routes its own
//! paths and mounts Herald's whole API under `/herald`, and its own handler
//! (`POST /orders/{n}/ship?user=...`) notifies the customer through the typed
//! library API, not over HTTP. The provider simulators stand in for Apple,
//! Google and Huawei (nothing leaves this machine); the program checks itself
//! and exits.
//!
//! `cargo run --example daemon`

// Benchmarks and examples: a failure is a visible abort, not a served request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

use bytes::Bytes;
use herald::models::client::RegisterClient;
use herald::models::push::PushNotificationEvent;
use herald::models::push_token::PutPushToken;
use herald::{Caller, Engine};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::json;
use std::sync::Arc;

/// Where the shop mounts Herald's API.
const PREFIX: &str = "/herald";
const TENANT: &str = herald::demo::TENANT;

type Body = http_body_util::combinators::BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("herald-daemon-{}", std::process::id()));
    let mut config = herald::config::Config::for_data_dir(&dir);
    let sims = herald::demo::start_simulators(&mut config).await?;
    let engine = Engine::builder().config(config).build().await?;
    herald::demo::seed(&engine, &sims).await?;

    // The shop registers carol's phone through the typed API, as its backend would.
    let admin = Caller::admin(TENANT);
    let clients = engine.clients();
    let phone: RegisterClient = serde_json::from_value(json!({ "appName": "demo-apns", "platform": "ios" }))?;
    let phone = clients.register(&admin, TENANT, phone).await?;
    let token: PutPushToken =
        serde_json::from_value(json!({ "appName": "demo-apns", "pushToken": format!("APNS:{:064x}", 77) }))?;
    clients.set_push_token(&admin, TENANT, &phone.ast_client_id, token).await?;
    clients.link(&admin, TENANT, "carol", &phone.ast_client_id, None).await?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let shop = engine.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let engine = shop.clone();
            let service = hyper::service::service_fn(move |req| route(engine.clone(), req));
            tokio::spawn(async move {
                let _ = auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });

    // Herald's API, under the shop's prefix.
    let http = reqwest::Client::new();
    let health = http.get(format!("{base}{PREFIX}/healthz")).send().await?.status();
    println!("{base}{PREFIX}/healthz answered {health}");
    // The shop's own route, which sends through the library API.
    let shipped = http.post(format!("{base}/orders/1042/ship?user=carol")).send().await?;
    let (status, answer) = (shipped.status(), shipped.text().await?);
    println!("POST /orders/1042/ship answered {status}: {answer}");
    let id = answer.split_whitespace().last().unwrap_or_default().to_string();
    let report = engine.push().report(&admin, TENANT, &id, 1, 10).await?;
    println!("report {id}: {} sent of {} targeted", report.counts.sent, report.counts.targeted);

    engine.shutdown().await;
    sims.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    if !health.is_success() || status != StatusCode::OK || report.counts.sent != 1 {
        return Err("the shop did not notify carol".into());
    }
    Ok(())
}

/// The shop's router: its own paths, and Herald's API under [`PREFIX`].
async fn route(engine: Arc<Engine>, req: Request<Incoming>) -> Result<Response<Body>, std::convert::Infallible> {
    let path = req.uri().path().to_string();
    if let Some(rest) = path.strip_prefix(PREFIX) {
        return Ok(mount(&engine, req, rest.to_string()).await);
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    Ok(match (req.method().as_str(), segments.as_slice()) {
        ("POST", ["orders", order, "ship"]) => ship(&engine, order, req.uri().query().unwrap_or("")).await,
        _ => text(StatusCode::NOT_FOUND, "no such page".into()),
    })
}

/// Hands the request to Herald with the prefix taken off its path.
async fn mount(engine: &Arc<Engine>, req: Request<Incoming>, rest: String) -> Response<Body> {
    use hyper::service::Service;
    let (mut parts, body) = req.into_parts();
    let query = parts.uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    parts.uri = match format!("{rest}{query}").parse() {
        Ok(uri) => uri,
        Err(_) => return text(StatusCode::BAD_REQUEST, "bad path".into()),
    };
    match engine.http_service().call(Request::from_parts(parts, body)).await {
        Ok(resp) => resp.map(|b| b.map_err(|never| match never {}).boxed()),
        Err(never) => match never {},
    }
}

/// Ships an order: tells the customer's devices, through the typed API.
async fn ship(engine: &Engine, order: &str, query: &str) -> Response<Body> {
    let Some(user) = query.split('&').find_map(|kv| kv.strip_prefix("user=")) else {
        return text(StatusCode::BAD_REQUEST, "user is required".into());
    };
    let event = json!({
        "category": "chat",
        "recipient": { "tenantId": TENANT, "userId": user },
        "payload": { "message": { "title": "Shipped", "body": format!("Order {order} is on its way") } }
    });
    let event: PushNotificationEvent = match serde_json::from_value(event) {
        Ok(e) => e,
        Err(e) => return text(StatusCode::BAD_REQUEST, e.to_string()),
    };
    match engine.push().send(&Caller::admin(TENANT), TENANT, event).await {
        Ok(answers) => match answers.first() {
            Some(a) => text(StatusCode::OK, format!("notified {user}: notification {}", a.notification_id)),
            None => text(StatusCode::OK, format!("{user} has no devices")),
        },
        Err(e) => text(e.status, e.message),
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let body = Full::new(Bytes::from(body)).map_err(|never| match never {}).boxed();
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp
}
