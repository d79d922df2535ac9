//! `herald serve --demo`: the provider simulators in-process, and a tenant with
//! apps, users and clients configured through the real API, so a newcomer can
//! send a push with one curl command and see it arrive.

use crate::config::Config;
use crate::engine::Engine;
use crate::router::dispatch;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::sync::Arc;

/// The tenant the demo seeds.
pub const TENANT: &str = "demo";
/// Username of the demo tenant's admin.
pub const ADMIN: &str = "admin";
/// Password of the demo admin: public, so never run `--demo` where it matters.
pub const PASSWORD: &str = "demo-password";

/// Starts the simulators and points the configuration at them.
pub async fn start_simulators(config: &mut Config) -> Result<herald_sim::Simulators, String> {
    let dir = config.data_dir.join("demo");
    let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.join("certs")))
        .await
        .map_err(|e| format!("starting the simulators: {e}"))?;
    config.push.endpoints = herald_actors::Endpoints {
        apns: sims.apns_url(),
        apns_sandbox: sims.apns_url(),
        fcm: sims.fcm_url(),
        hms: sims.hms_url(),
        hms_token: sims.hms_token_url(),
    };
    config.push.extra_ca_pem = sims.ca_pem().into_bytes();
    // Demo webhooks go to receivers on this machine, and so do the browser
    // subscriptions of the web clients (the Web Push simulator's endpoints).
    config.webhooks.allow_private = true;
    config.push.allow_private_endpoints = true;
    Ok(sims)
}

/// Calls the engine's own router, as an HTTP client would.
async fn call(
    engine: &Arc<Engine>,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Result<(StatusCode, Value), String> {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let body = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    let req = req.header("content-type", "application/json").body(Full::new(body)).map_err(|e| e.to_string())?;
    let resp = dispatch(engine.clone(), req).await;
    let status = resp.status();
    let bytes = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

async fn expect(
    engine: &Arc<Engine>,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Value,
) -> Result<Value, String> {
    let (status, answer) = call(engine, method.clone(), path, token, Some(body)).await?;
    if status.is_success() {
        Ok(answer)
    } else {
        Err(format!("{method} {path}: {status} {answer}"))
    }
}

/// Creates tenant `demo` (once): an app per provider, users alice and bob with a
/// client on each provider (a browser on `demo-web`). On a later start over the
/// same data directory, the apps' credentials are rewritten for this start's
/// simulators, and the browsers subscribe again (the Web Push simulator's port changed).
pub async fn seed(engine: &Arc<Engine>, sims: &herald_sim::Simulators) -> Result<(), String> {
    let body = json!({ "tenantId": TENANT, "adminUsername": ADMIN, "adminPassword": PASSWORD });
    let (status, _) = call(engine, Method::POST, "/v1/tenants", Some(&engine.operator_token), Some(body)).await?;
    // Seeded by an earlier start: the apps are pointed at this start's
    // simulators (new ports, new keys); the clients stay.
    let first_start = status != StatusCode::CONFLICT;
    let creds =
        sims.generate_credentials(&engine.config.data_dir.join("demo").join("creds")).map_err(|e| e.to_string())?;
    let (_, tokens) = call_form_token(engine).await?;
    let token = tokens["access_token"].as_str().ok_or("no demo admin token")?.to_string();
    let full = creds.app_json.clone();
    let pick = |keys: &[&str]| -> Value {
        let mut app = json!({ "categories": full["categories"].clone() });
        for k in keys {
            app[*k] = full[*k].clone();
        }
        app
    };
    let apps = [
        (
            "demo-apns",
            pick(&["iosApnsPrivateKey", "iosApnsKeyId", "iosApnsTeamId", "iosBundleId", "iosIsDevelopment"]),
            "APNS",
        ),
        ("demo-fcm", pick(&["fcmServiceAccountJSON"]), "FCM"),
        ("demo-hms", pick(&["hpkClientId", "hpkClientSecret"]), "HPK"),
        ("demo-web", pick(&["webPushSubject"]), "WEB"),
    ];
    let write = if first_start { Method::POST } else { Method::PUT };
    for (app, body, _) in &apps {
        expect(engine, write.clone(), &format!("/v1/tenants/{TENANT}/apps/{app}"), Some(&token), body.clone()).await?;
    }
    if !first_start {
        return resubscribe(engine, sims, &token).await;
    }
    for (n, user) in ["alice", "bob"].iter().enumerate() {
        for (i, (app, _, provider)) in apps.iter().enumerate() {
            let c = expect(
                engine,
                Method::POST,
                &format!("/v1/tenants/{TENANT}/clients"),
                Some(&token),
                json!({ "appName": app, "platform": provider.to_lowercase() }),
            )
            .await?;
            let id = c["astClientId"].as_str().ok_or("no client id")?;
            expect(
                engine,
                Method::PUT,
                &format!("/v1/tenants/{TENANT}/users/{user}/clients/{id}"),
                Some(&token),
                json!({ "mLoA": "none" }),
            )
            .await?;
            let push_token = match *provider {
                "APNS" => format!("{:064x}", n.saturating_mul(10).saturating_add(i).saturating_add(1)),
                "WEB" => sims.webpush_subscription(&format!("demo-{user}")).to_string(),
                other => format!("{}-demo-token-{user}", other.to_lowercase()),
            };
            expect(
                engine,
                Method::PUT,
                &format!("/v1/tenants/{TENANT}/clients/{id}/pushtoken"),
                Some(&token),
                json!({ "appName": app, "pushToken": format!("{provider}:{push_token}") }),
            )
            .await?;
        }
    }
    Ok(())
}

/// Points the browsers' subscriptions (`WEB` tokens) of alice and bob at this
/// start's Web Push simulator.
async fn resubscribe(engine: &Arc<Engine>, sims: &herald_sim::Simulators, token: &str) -> Result<(), String> {
    for user in ["alice", "bob"] {
        let path = format!("/v1/tenants/{TENANT}/users/{user}/clients");
        let (_, links) = call(engine, Method::GET, &path, Some(token), None).await?;
        for id in links.as_array().into_iter().flatten().filter_map(|l| l["astClientId"].as_str()) {
            let path = format!("/v1/tenants/{TENANT}/clients/{id}/pushtoken");
            let (_, current) = call(engine, Method::GET, &path, Some(token), None).await?;
            if current["pushProvider"] == "WEB" {
                let sub = sims.webpush_subscription(&format!("demo-{user}")).to_string();
                let body = json!({ "appName": current["appName"], "pushToken": format!("WEB:{sub}") });
                expect(engine, Method::PUT, &path, Some(token), body).await?;
            }
        }
    }
    Ok(())
}

async fn call_form_token(engine: &Arc<Engine>) -> Result<(StatusCode, Value), String> {
    let form = format!("grant_type=password&username={ADMIN}&password={PASSWORD}");
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("/auth/realms/{TENANT}/protocol/openid-connect/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Full::new(Bytes::from(form)))
        .map_err(|e| e.to_string())?;
    let resp = dispatch(engine.clone(), req).await;
    let status = resp.status();
    let bytes = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

/// What to run next, printed once at start-up.
pub fn instructions(base: &str, sims: &herald_sim::Simulators) -> String {
    let stats = sims.control_url().map(|u| format!("{u}/stats")).unwrap_or_default();
    format!(
        "\nDemo ready: tenant `{TENANT}` (admin `{ADMIN}` / `{PASSWORD}`), apps demo-apns, demo-fcm, demo-hms, demo-web,\n\
         users alice and bob with a client on each provider. Send alice a push:\n\n\
         TOKEN=$(curl -s {base}/auth/realms/{TENANT}/protocol/openid-connect/token -d grant_type=password -d username={ADMIN} -d password={PASSWORD} | sed 's/.*\"access_token\":\"\\([^\"]*\\)\".*/\\1/')\n\
         curl -s -X POST {base}/v1/tenants/{TENANT}/push_notification/send -H \"authorization: Bearer $TOKEN\" -H 'content-type: application/json' \\\n  \
         -d '{{\"category\":\"chat\",\"recipient\":{{\"tenantId\":\"{TENANT}\",\"userId\":\"alice\"}},\"payload\":{{\"message\":{{\"title\":\"Hello\",\"body\":\"from Herald\"}}}}}}'\n\n\
         Then see what the simulators received:\n\n\
         curl -s {stats}\n"
    )
}
