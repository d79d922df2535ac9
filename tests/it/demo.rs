//! `herald serve --demo` as a newcomer runs it: the printed instructions work.

use reqwest::StatusCode;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Starts `serve --demo` on `dir`, sends to alice (a client on each
/// provider), checks each simulator accepted one, and stops it with SIGTERM.
async fn demo_run_sends(dir: &std::path::Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(["serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .env("HERALD_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut base, mut stats) = (None, None);
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(url) = line.strip_prefix("herald listening on ") {
            base = Some(url.trim().to_string());
        }
        if line.starts_with("curl -s http") && line.ends_with("/stats") {
            stats = Some(line.trim_start_matches("curl -s ").to_string());
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let (base, stats) = (base.expect("address printed"), stats.expect("stats URL printed"));
    let at_start = herald_storage::test_newest_snapshot(dir);
    // A regression fails, not hangs: every call is bounded.
    let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(30)).build().unwrap();
    let tokens: Value = http
        .post(format!("{base}/auth/realms/demo/protocol/openid-connect/token"))
        .form(&[("grant_type", "password"), ("username", "admin"), ("password", "demo-password")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = tokens["access_token"].as_str().expect("the demo admin logs in");
    let r = http
        .post(format!("{base}/v1/tenants/demo/push_notification/send"))
        .bearer_auth(token)
        .json(&json!({"category": "chat", "recipient": {"tenantId": "demo", "userId": "alice"}, "payload": {"message": {"title": "Hello", "body": "from Herald"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer.as_array().unwrap().len(), 4, "alice has a client on each provider: {answer}");
    assert!(answer.as_array().unwrap().iter().all(|e| e["isSuccessful"] == true), "{answer}");
    let s: Value = http.get(&stats).send().await.unwrap().json().await.unwrap();
    for p in ["apns", "fcm", "hms", "webpush"] {
        assert_eq!(s[p]["accepted"], 1, "{p}: {s}");
    }
    crate::common::signal(&child, crate::common::Signal::TERM);
    assert!(child.wait().unwrap().success(), "SIGTERM shuts down cleanly");
    // The stop closed the store with a snapshot of sled's page table covering
    // this run's writes, so the next start reads it instead of replaying them.
    assert!(herald_storage::test_newest_snapshot(dir) > at_start, "a snapshot newer than {at_start:?}");
}

#[tokio::test]
async fn demo_mode_sends_to_the_in_process_simulators() {
    let dir = tempfile::tempdir().unwrap();
    demo_run_sends(dir.path()).await;
}

/// A second `serve --demo` on the same data directory has new simulators
/// (ports, keys): the demo apps are pointed at them, and sends work again.
#[tokio::test]
async fn a_second_demo_start_on_the_same_data_sends_too() {
    let dir = tempfile::tempdir().unwrap();
    demo_run_sends(dir.path()).await;
    demo_run_sends(dir.path()).await;
}
