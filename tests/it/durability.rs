//! Acknowledged writes survive SIGKILL: `herald serve` as a child process is
//! killed right after its 2xx answers, restarted on the same data dir, and
//! every acknowledged record is read back.

use crate::common::{fcm_app_body, Herald, PASSWORD};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use std::process::Command;

async fn post(http: &Client, url: String, token: &str, body: Value) -> (StatusCode, Value) {
    let r = http.post(url).bearer_auth(token).json(&body).send().await.unwrap();
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let http = crate::common::http_client();
    let h = Herald::start(dir.path(), &[]);
    let token = h.create_tenant(&http, "acme").await;
    let (st, _) = post(&http, format!("{}/v1/tenants/acme/apps/shop", h.base), &token, fcm_app_body()).await;
    assert_eq!(st, StatusCode::CREATED);

    // 100 concurrent client registrations, each with a push token; the server
    // is killed the moment the last acknowledgement arrives.
    let mut tasks = Vec::new();
    for i in 0..100 {
        let (http, base, token) = (http.clone(), h.base.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            let (st, b) = post(
                &http,
                format!("{base}/v1/tenants/acme/clients"),
                &token,
                json!({"appName": "shop", "platform": "android"}),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED);
            let id = b["astClientId"].as_str().unwrap().to_string();
            let r = http
                .put(format!("{base}/v1/tenants/acme/clients/{id}/pushtoken"))
                .bearer_auth(&token)
                .json(&json!({"appName": "shop", "pushToken": format!("FCM:token-{i}")}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            (id, format!("token-{i}"))
        }));
    }
    let mut acknowledged = Vec::new();
    for t in tasks {
        acknowledged.push(t.await.unwrap());
    }
    h.kill9();

    let h = Herald::start(dir.path(), &[]);
    let token = h.admin_token(&http).await;
    let mut found = 0;
    for (id, push_token) in &acknowledged {
        let r = http
            .get(format!("{}/v1/tenants/acme/clients/{id}/pushtoken", h.base))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "client {id} lost");
        assert_eq!(r.json::<Value>().await.unwrap()["pushToken"], push_token.as_str());
        found += 1;
    }
    println!("acknowledged {} clients with tokens, found {found} after SIGKILL", acknowledged.len());
    assert_eq!(found, acknowledged.len());
    h.kill9();
}

#[tokio::test]
async fn offline_tenant_creation_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(["tenant", "create", "acme", "--admin", "admin", "--password", PASSWORD, "--data-dir"])
        .arg(dir.path())
        .envs(crate::common::store_for(dir.path()).map(|url| ("HERALD_STORE", url)))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(["tenant", "create", "acme", "--admin", "admin", "--password", PASSWORD, "--data-dir"])
        .arg(dir.path())
        .envs(crate::common::store_for(dir.path()).map(|url| ("HERALD_STORE", url)))
        .output()
        .unwrap();
    assert!(!again.status.success(), "a second create of the same tenant fails");
    let h = Herald::start(dir.path(), &[]);
    let http = crate::common::http_client();
    h.admin_token(&http).await;
    let r = http.get(format!("{}/readyz", h.base)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    h.kill9();
}

/// `herald store recount-tokens` counts a stopped engine's store and leaves
/// counts that match its tokens.
#[tokio::test]
async fn offline_recount_of_push_tokens() {
    use herald_storage::push_tokens::{PushProvider, PushToken};
    let dir = tempfile::tempdir().unwrap();
    let token = |app: &str, is_valid| PushToken {
        app_name: app.into(),
        provider: PushProvider::Fcm,
        token: "t".into(),
        is_valid,
        updated_ms: 1,
    };
    {
        let store = herald_storage::Store::open(&herald_storage::test_options(dir.path())).unwrap();
        store.push_tokens().set("acme", "c1", &token("shop", true)).unwrap();
        store.push_tokens().set("acme", "c2", &token("shop", false)).unwrap();
        store.push_tokens().set("other", "c1", &token("shop", true)).unwrap();
        store.close().unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(["store", "recount-tokens", "--data-dir"])
        .arg(dir.path())
        .envs(crate::common::store_for(dir.path()).map(|url| ("HERALD_STORE", url)))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "counted 3 push tokens");
    let store = herald_storage::Store::open(&herald_storage::test_options(dir.path())).unwrap();
    let tokens = store.push_tokens();
    assert_eq!((tokens.count_of_tenant("acme").unwrap(), tokens.count_valid_of_app("acme", "shop").unwrap()), (2, 1));
}

/// A test that fails while holding a child Herald must not leak it: the drop kills
/// and reaps the process (a leaked or unreaped one would still answer `kill(pid, 0)`).
#[test]
fn dropping_a_child_herald_kills_and_reaps_it() {
    let dir = tempfile::tempdir().unwrap();
    let h = Herald::start(dir.path(), &[]);
    let pid = h.child.id();
    assert!(crate::common::process_exists(pid), "herald serve runs");
    drop(h);
    assert!(!crate::common::process_exists(pid), "herald serve {pid} is gone after the drop");
}
