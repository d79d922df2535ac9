//! The documented metrics (`herald::metrics::SERIES`) after a workload that
//! exercises them all; the Grafana dashboard and the README checked against them.

use crate::common::receiver::Receiver;
use crate::common::*;
use herald::metrics::{Kind, SERIES};
use herald_sim::{Faults, ProviderFaults, StatusFault};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Prometheus text → sample name → [(labels, value)].
fn parse(text: &str) -> HashMap<String, Vec<(String, f64)>> {
    let mut out: HashMap<String, Vec<(String, f64)>> = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (series, value) = line.rsplit_once(' ').expect("sample line");
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        out.entry(name.to_string()).or_default().push((labels.to_string(), value.parse().unwrap_or(f64::NAN)));
    }
    out
}

/// The sample that says whether a series moved: a histogram's `_count`.
fn moving_sample(name: &str, kind: Kind) -> String {
    match kind {
        Kind::Histogram => format!("{name}_count"),
        _ => name.to_string(),
    }
}

fn total(samples: &HashMap<String, Vec<(String, f64)>>, name: &str) -> f64 {
    samples.get(name).map(|v| v.iter().map(|(_, x)| x.max(0.0)).sum()).unwrap_or(0.0)
}

async fn scrape(s: &TestServer) -> String {
    let resp = s.http.get(s.url("/metrics")).send().await.expect("scrape");
    assert_eq!(resp.status(), StatusCode::OK);
    resp.text().await.expect("metrics text")
}

/// Every PromQL expression of the dashboard (panel targets and template queries).
fn dashboard_queries() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/grafana/dashboards/herald.json");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("dashboard")).expect("dashboard JSON");
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("expr", Value::String(e)) => out.push(e.clone()),
                        ("query", Value::Object(q)) => {
                            if let Some(Value::String(e)) = q.get("query") {
                                out.push(label_values_metric(e));
                            }
                        }
                        _ => walk(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(&d, &mut out);
    out
}

/// `label_values(metric, label)` → `metric` (Grafana's template query syntax).
fn label_values_metric(q: &str) -> String {
    q.strip_prefix("label_values(").and_then(|r| r.split(',').next()).unwrap_or(q).trim().to_string()
}

const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
];
/// Aggregation operators, which may take their `by (..)` clause before the parenthesis.
const AGGREGATIONS: &[&str] =
    &["sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile"];

/// The metric names a PromQL expression selects: identifiers outside strings,
/// label matchers `{..}` and ranges `[..]` that are not functions, keywords, or
/// label lists of `by`/`without`/`on`/`ignoring`/`group_*`.
fn metric_names(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let (mut i, mut names, mut last_word) = (0, Vec::new(), String::new());
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' | '`' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                while i < chars.len() && chars[i] != close {
                    if chars[i] == '"' {
                        i += 1;
                        while i < chars.len() && chars[i] != '"' {
                            i += if chars[i] == '\\' { 2 } else { 1 };
                        }
                    }
                    i += 1;
                }
                i += 1;
            }
            '(' if ["by", "without", "on", "ignoring", "group_left", "group_right"].contains(&last_word.as_str()) => {
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                i += 1;
                last_word.clear();
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut j = i;
                while j < chars.len() && chars[j] == ' ' {
                    j += 1;
                }
                let is_call = j < chars.len() && chars[j] == '(';
                let lower = word.to_ascii_lowercase();
                if !is_call && !KEYWORDS.contains(&lower.as_str()) && !AGGREGATIONS.contains(&lower.as_str()) {
                    names.push(word.clone());
                }
                last_word = word;
            }
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    names
}

/// The sample names a series exports (a histogram's `_bucket`, `_sum`, `_count`).
fn documented_samples() -> BTreeSet<String> {
    SERIES
        .iter()
        .flat_map(|s| match s.kind {
            Kind::Histogram => ["_bucket", "_sum", "_count"].iter().map(|x| format!("{}{x}", s.name)).collect(),
            _ => vec![s.name.to_string()],
        })
        .collect()
}

/// Metric names the dashboard uses that are not in `exported`.
fn dashboard_strays(exported: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut strays = Vec::new();
    for q in dashboard_queries() {
        let names = metric_names(&q);
        assert!(!names.is_empty(), "a dashboard query selects no metric: {q}");
        strays.extend(names.into_iter().filter(|n| !exported.contains(n)).map(|n| (n, q.clone())));
    }
    strays
}

#[test]
fn the_promql_reader_finds_metric_names() {
    let q = r#"histogram_quantile(0.99, sum by (le, route) (rate(herald_x_bucket{route=~"a|b", x="}"}[$__rate_interval]))) / on(job) group_left(foo) up offset 5m"#;
    assert_eq!(metric_names(q), ["herald_x_bucket", "up"]);
    assert_eq!(metric_names("sum(a) / sum(b:c) * 100"), ["a", "b:c"]);
    assert_eq!(label_values_metric("label_values(herald_y, tenant)"), "herald_y");
}

#[test]
fn the_dashboard_uses_only_documented_series_and_shows_them_all() {
    let documented = documented_samples();
    let strays = dashboard_strays(&documented);
    assert!(strays.is_empty(), "dashboard metrics not documented in herald::metrics::SERIES: {strays:?}");
    let used: BTreeSet<String> = dashboard_queries().iter().flat_map(|q| metric_names(q)).collect();
    for s in SERIES {
        let shown = used.iter().any(|u| u == s.name || u.strip_prefix(s.name).is_some_and(|x| x.starts_with('_')));
        assert!(shown, "{} has no dashboard panel", s.name);
    }
}

#[test]
fn series_follow_prometheus_naming() {
    let mut names = BTreeSet::new();
    for s in SERIES {
        assert!(names.insert(s.name), "{} listed twice", s.name);
        assert!(s.name.starts_with("herald_"), "{}", s.name);
        match s.kind {
            Kind::Counter => assert!(s.name.ends_with("_total"), "{}", s.name),
            Kind::Histogram => assert!(s.name.ends_with("_seconds"), "{}", s.name),
            Kind::Gauge => assert!(!s.name.ends_with("_total"), "{}", s.name),
        }
    }
}

#[test]
fn the_readme_lists_every_series() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README");
    let table = herald::metrics::markdown_table();
    assert!(readme.contains(&table), "README's metrics table differs from herald::metrics::SERIES; expected:\n{table}");
}

#[test]
fn the_readme_configuration_table_matches_the_printed_defaults() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README");
    let table = herald::config_reference::markdown_table();
    assert!(readme.contains(&table), "README's configuration table differs from the code; expected:\n{table}");
    // And the CLI prints the same defaults, as TOML that parses back.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_herald")).args(["config", "defaults"]).output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed, herald::config_reference::defaults_toml());
    let parsed: herald::config::Settings = toml::from_str(&printed).expect("printed defaults parse");
    assert!(herald::config::Config::resolve(parsed).is_ok());
    for o in herald::config_reference::options() {
        let line = match &o.default {
            Some(d) if o.derived => format!("# {} = {d} (derived from listen)\n", o.key),
            Some(d) => format!("{} = {d}\n", o.key),
            None => format!("# {} = (unset by default)\n", o.key),
        };
        assert!(printed.contains(&line), "{line}");
        assert!(printed.contains(&format!("# flag {}, env {}\n", o.flag, o.env)));
    }
}

/// Records the largest total of every sample name seen while the workload runs,
/// so gauges that fall back to 0 (streams in flight, outbox depth) count as moved.
fn sample_peaks(s: &TestServer) -> (Arc<Mutex<HashMap<String, f64>>>, tokio::task::JoinHandle<()>) {
    let peaks = Arc::new(Mutex::new(HashMap::<String, f64>::new()));
    let (p, http, url) = (peaks.clone(), s.http.clone(), s.url("/metrics"));
    let task = tokio::spawn(async move {
        loop {
            if let Ok(r) = http.get(&url).send().await {
                if let Ok(text) = r.text().await {
                    let samples = parse(&text);
                    let mut p = p.lock().unwrap();
                    for name in samples.keys() {
                        let t = total(&samples, name);
                        let e = p.entry(name.clone()).or_insert(0.0);
                        *e = e.max(t);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    (peaks, task)
}

/// Alone in a process: it counts exact totals (the recorder is process-wide).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_series_moves_under_a_workload() {
    if !alone_in_a_process("metrics::every_documented_series_moves_under_a_workload") {
        return;
    }
    let w = PushWorld::start_with(|c| {
        c.limits.header_read_timeout = Duration::from_millis(300);
        c.webhooks.allow_private = true;
        c.webhooks.retry_schedule = [0, 300].iter().map(|ms| Duration::from_millis(*ms)).collect();
        // Long enough for the reports to be read below, short enough to be swept.
        let keep = Some(Duration::from_secs(4));
        c.retention = herald::sweeper::Retention { reports: keep, events: keep };
    })
    .await;
    let s = &w.server;
    let (peaks, sampler) = sample_peaks(s);

    // Sends on all three providers, one FCM answer a 503 (retried), slow APNs answers.
    let apns = w.client("demo", "carol", &format!("APN:{}", apns_token(1))).await;
    w.client("demo", "carol", "FCM:fcm-carol").await;
    w.client("demo", "carol", "HPK:hms-carol").await;
    w.client("demo", "dora", "FCM:dead-token").await;
    w.sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(40), ..Default::default() },
        fcm: ProviderFaults {
            status: vec![StatusFault { status: 503, count: Some(1), retry_after: Some(0), ..Default::default() }],
            ..Default::default()
        },
        ..Default::default()
    });
    let to_user = |user: &str| json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": user}, "payload": {"message": {"body": "hi"}}});
    let (st, r) = w.send(to_user("carol")).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    assert!(r.as_array().unwrap().iter().all(|e| e["isSuccessful"] == true), "{r}");
    let (st, r) = w.send(to_user("dora")).await;
    assert_eq!((st, r[0]["isSuccessful"].clone()), (StatusCode::ACCEPTED, json!(false)), "{r}");

    // A broadcast over a few more APNs clients, paced by the tenant's quota;
    // a send past the interactive quota refused.
    for i in 0..12 {
        w.client("demo", &format!("user{i}"), &format!("APN:{}", apns_token(100 + i))).await;
    }
    let limits = json!({"bulkPerSecond": 20, "interactivePerSecond": 1});
    let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/limits", Some(OPERATOR), Some(limits)).await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let (st, r) = w
        .send(json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": "all"}}}))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let report = w.wait_report(r[0]["notificationId"].as_str().unwrap(), 30).await;
    assert_eq!(report["state"], "COMPLETED", "{report}");
    let statuses = [w.send(to_user("dora")).await.0, w.send(to_user("dora")).await.0];
    assert!(statuses.contains(&StatusCode::TOO_MANY_REQUESTS), "{statuses:?}");
    let (st, b) = s.call(Method::PUT, "/v1/tenants/acme/limits", Some(OPERATOR), Some(json!({}))).await;
    assert_eq!(st, StatusCode::OK, "{b}");

    // A scheduled send, due at once (to a user that does not exist: it fails, sending nothing).
    let now = time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap();
    let path = "/v1/tenants/acme/push_notification/schedule";
    let (st, b) =
        s.call(Method::POST, path, Some(&w.admin), Some(json!({"sendAt": now, "event": to_user("nobody")}))).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let schedule = format!("{path}/{}", b["id"].as_str().unwrap());
    for _ in 0..200 {
        if s.call(Method::GET, &schedule, Some(&w.admin), None).await.1["state"] == "FAILED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Webhook deliveries: the receiver fails the first attempt, the retry succeeds.
    let receiver = Receiver::start(vec![500]).await;
    let (st, b) = s
        .call(
            Method::POST,
            "/v1/tenants/acme/webhooks",
            Some(&w.admin),
            Some(json!({"filter": "type=domain", "callbackUrl": receiver.url})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let event = json!({"type": "domain", "event": "ORDER_PAID", "data": {"id": 1}});
    let (st, b) = s.call(Method::POST, "/v1/tenants/acme/events", Some(&w.admin), Some(event)).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    assert_eq!(receiver.wait_for(2, 10).await.len(), 2, "delivered on the retry");

    // A connection that never sends a request is closed.
    let mut silent = tokio::net::TcpStream::connect(s.base.trim_start_matches("http://")).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(5), silent.read_to_end(&mut Vec::new())).await;
    assert!(closed.is_ok(), "the silent connection was closed");

    // An actor restart.
    s.running.as_ref().unwrap().engine.push.crash_tenant("acme").await.unwrap();
    let mut back = false;
    for _ in 0..100 {
        let (st, r) = w.send(to_client("carol", &apns, json!({"body": "again"}))).await;
        if st == StatusCode::ACCEPTED && r[0]["isSuccessful"] == true {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(back, "the tenant actor came back");
    // Retention: the reports and webhook attempts above are swept once 4 s old.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let samples = parse(&scrape(s).await);
        let deleted = |kind: &str| {
            let label = format!("kind=\"{kind}\"");
            samples.get("herald_retention_deleted_total").into_iter().flatten().any(|(l, v)| *l == label && *v > 0.0)
        };
        if deleted("report") && deleted("attempt") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no retention pass deleted reports and attempts");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    sampler.abort();

    let text = scrape(s).await;
    let samples = parse(&text);
    let peaks = peaks.lock().unwrap().clone();
    let mut still = Vec::new();
    // The data directory's disk and sled's grouped flushes: PostgreSQL has neither.
    let sled_only = ["herald_storage_free_bytes", "herald_storage_flush_seconds"];
    for series in SERIES {
        if herald_storage::test_on_postgres() && sled_only.contains(&series.name) {
            continue;
        }
        let sample = moving_sample(series.name, series.kind);
        assert!(samples.contains_key(&sample), "{} missing from /metrics:\n{text}", series.name);
        assert!(text.contains(&format!("# TYPE {} {}", series.name, series.kind.as_str())), "{} type", series.name);
        let moved = match series.kind {
            Kind::Gauge => peaks.get(&sample).copied().unwrap_or(0.0).max(total(&samples, &sample)) > 0.0,
            _ => total(&samples, &sample) > 0.0,
        };
        // Move only when another engine takes work over (`multinode` tests
        // it), in `herald serve` when stderr is not read (`logging`), or
        // when a write meets a full disk (`exhaustion`).
        let elsewhere =
            ["herald_lease_fenced_total", "herald_log_lines_dropped_total", "herald_storage_write_failures_total"];
        if !moved && !elsewhere.contains(&series.name) {
            still.push(series.name);
        }
        // Every documented label appears on at least one sample.
        let labels = &samples[&sample];
        for l in series.labels {
            assert!(labels.iter().any(|(ls, _)| ls.contains(&format!("{l}=\""))), "{} lacks label {l}", series.name);
        }
    }
    assert!(still.is_empty(), "documented series that did not move: {still:?}\n{text}");
    // Labels carry what operators filter on.
    for needle in [
        r#"herald_notifications_total{provider="apns",outcome="sent",tenant="acme"}"#,
        r#"herald_notifications_total{provider="fcm",outcome="invalid",tenant="acme"}"#,
        r#"herald_provider_retries_total{provider="fcm"}"#,
        r#"herald_webhook_attempts_total{outcome="failure",tenant="acme"}"#,
        r#"herald_actor_restarts_total{actor="tenant"}"#,
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
    assert_eq!(total(&samples, "herald_fanout_targeted_total"), 15.0, "{text}");
    assert!(total(&samples, "herald_fanout_notifications_total") >= 15.0);
    // Histograms have the explicit buckets, not summaries.
    assert!(text.contains(r#"herald_send_duration_seconds_bucket{recipient="user",le="0.005"}"#), "{text}");

    // The dashboard selects only what the engine exports.
    let mut exported = documented_samples();
    exported.extend(samples.keys().cloned());
    let strays = dashboard_strays(&exported);
    assert!(strays.is_empty(), "dashboard metrics Herald does not export: {strays:?}");
}

/// `--metrics-tenant-label=top:1` through the environment, in a child process
/// (the policy is process-wide): the first tenant keeps its name, the next is `other`.
#[tokio::test]
async fn the_tenant_label_is_bounded_by_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let mut herald = Herald::start(&dir.path().join("data"), &[("HERALD_METRICS_TENANT_LABEL", "top:1".into())]);
    let http = crate::common::http_client();
    for tenant in ["first", "second"] {
        let token = herald.create_tenant(&http, tenant).await;
        let r = http
            .post(format!("{}/v1/tenants/{tenant}/events", herald.base))
            .bearer_auth(&token)
            .json(&json!({"type": "domain", "event": "PING", "data": {}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
    }
    // A made-up tenant in a path never becomes a label value.
    let r =
        http.get(format!("{}/v1/tenants/made-up/webhooks", herald.base)).bearer_auth("nonsense").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let text = http.get(format!("{}/metrics", herald.base)).send().await.unwrap().text().await.unwrap();
    let _ = herald.child.kill();
    let _ = herald.child.wait();
    assert!(text.contains(r#"herald_events_published_total{tenant="first"} 1"#), "{text}");
    assert!(text.contains(r#"herald_events_published_total{tenant="other"} 1"#), "{text}");
    assert!(!text.contains(r#"tenant="second""#) && !text.contains(r#"tenant="made-up""#), "{text}");
    assert!(
        text.contains(r#"route="/v1/tenants/{tenantId}/events",method="POST",status="202",tenant="first""#),
        "{text}"
    );

    // A bad value stops start-up with a message naming the option.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(["serve", "--listen", "127.0.0.1:0", "--metrics-tenant-label", "some"])
        .arg("--data-dir")
        .arg(dir.path().join("other"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("metrics_tenant_label"), "{out:?}");
}

/// Counters and histograms whose labels are known before anything happens
/// are exported from start, at zero, so dashboards show 0, not "No data".
#[tokio::test]
async fn closed_label_series_are_exported_from_start() {
    let s = TestServer::start().await;
    let text = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
    for series in [
        "herald_provider_retries_total{provider=\"hms\"}",
        "herald_actor_restarts_total{actor=\"fanout\"}",
        "herald_actor_restarts_total{actor=\"webhook_target\"}",
        "herald_provider_auth_refreshes_total{provider=\"fcm\",outcome=\"error\"}",
        "herald_connections_closed_total{reason=\"per_ip\"}",
        "herald_send_duration_seconds_count{recipient=\"topic\"}",
        "herald_provider_request_duration_seconds_count{provider=\"apns\",lane=\"bulk\"}",
        "herald_webhook_delivery_seconds_count",
    ] {
        assert!(text.lines().any(|l| l.starts_with(series)), "{series} is not exported:\n{text}");
    }
    s.shutdown().await;
}

/// Every counter and histogram of `SERIES` is exported by a fresh process
/// before any request: each route at zero with its success status, each
/// tenant-labelled series once without a tenant and, under the default
/// `--metrics-tenant-label=on`, for every tenant the data directory holds.
#[tokio::test]
async fn every_counter_and_histogram_is_exported_from_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let http = crate::common::http_client();
    let first = Herald::start(&data, &[]);
    first.create_tenant(&http, "acme").await;
    first.kill9();
    let mut herald = Herald::start(&data, &[]);
    let text = http.get(format!("{}/metrics", herald.base)).send().await.unwrap().text().await.unwrap();
    let _ = herald.child.kill();
    let _ = herald.child.wait();
    let samples = parse(&text);
    for s in SERIES.iter().filter(|s| s.kind != Kind::Gauge) {
        let name = match s.kind {
            Kind::Histogram => format!("{}_count", s.name),
            _ => s.name.to_string(),
        };
        assert!(samples.contains_key(&name), "{name} is not exported from start:\n{text}");
    }
    for line in [
        r#"herald_http_requests_total{route="/v1/tenants/{tenantId}/push_notification/send",method="POST",status="202"} 0"#,
        r#"herald_http_requests_total{route="/v1/tenants",method="POST",status="201"} 0"#,
        r#"herald_notifications_total{provider="apns",outcome="sent"} 0"#,
        r#"herald_notifications_total{provider="fcm",outcome="invalid",tenant="acme"} 0"#,
        r#"herald_webhook_attempts_total{outcome="error",tenant="acme"} 0"#,
        r#"herald_fanout_jobs_started_total{tenant="acme"} 0"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} is not exported:\n{text}");
    }
}

/// A scrape's text (hundreds of kilobytes) is rendered on the broadcast
/// threads, at their lower priority, not on the runtime workers where
/// requests run: its milliseconds of CPU never hold up the sends queued
/// behind it.
#[tokio::test]
async fn metrics_are_rendered_off_the_runtime_workers() {
    const SCRAPES: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let herald = Herald::start(&dir.path().join("data"), &[]);
    let http = crate::common::http_client();
    let pid = herald.child.id();
    let before = ticks_by_thread_name(pid);
    let mut bytes = 0;
    for _ in 0..SCRAPES {
        let r = http.get(format!("{}/metrics", herald.base)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        bytes += r.text().await.unwrap().len();
    }
    let spent = ticks_since(pid, &before);
    let of = |name: &str| spent.get(name).copied().unwrap_or(0);
    println!("{SCRAPES} scrapes of {} bytes: CPU ticks by thread name {spent:?}", bytes / SCRAPES);
    assert!(
        of("herald-bulk") > of("tokio-rt-worker"),
        "more of the scrapes' CPU on the broadcast threads than on the engine's workers: {spent:?}"
    );
}
