//! Retention: reports and outcomes past `--report-retention` are deleted by
//! the sweeper's next pass, on whichever backend the suite runs.

use crate::common::{apns_token, to_client, PushWorld};
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_report_past_its_retention_is_gone_after_the_next_pass() {
    let w = PushWorld::start_with(|c| c.retention.reports = Some(Duration::from_secs(2))).await;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    let (st, body) = w.send(to_client("alice", &client, json!({"title": "hi"}))).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{body}");
    let id = body[0]["notificationId"].as_str().unwrap().to_string();
    let report = w.wait_report(&id, 10).await;
    assert_eq!(report["counts"]["sent"], 1, "{report}");
    let path = format!("/v1/tenants/acme/push_notification/{id}");
    // Passes run every second with a 2 s retention: gone within 2 s + 1 s, and not long after.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (st, _) = w.server.call(Method::GET, &path, Some(&w.admin), None).await;
        if st == StatusCode::NOT_FOUND {
            break;
        }
        assert_eq!(st, StatusCode::OK);
        assert!(Instant::now() < deadline, "the report outlived its retention by 13 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let text = w.server.http.get(w.server.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("herald_retention_deleted_total{kind=\"report\"}") && !l.ends_with(" 0")),
        "the deletion is counted"
    );
}
