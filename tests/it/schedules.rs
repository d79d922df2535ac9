//! Scheduled sends end to end: created through the API, fired by the
//! engine at their time (within a second, by the simulators' clocks), after
//! a kill -9 too (once), cancelled before, refused when malformed; the
//! delivery report names its schedule.

use crate::common::*;
use herald_sim::Provider;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const SCHEDULE: &str = "/v1/tenants/acme/push_notification/schedule";

/// An RFC 3339 instant `ms` since the epoch.
fn rfc3339(ms: u64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap();
    t.format(&time::format_description::well_known::Rfc3339).unwrap()
}

fn now() -> u64 {
    herald_storage::now_ms()
}

/// Polls `GET .../schedule/{id}` until its state is `state` (at most `secs`).
async fn wait_state(s: &TestServer, token: &str, id: &str, state: &str, secs: u64) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let (st, b) = s.call(Method::GET, &format!("{SCHEDULE}/{id}"), Some(token), None).await;
        assert_eq!(st, StatusCode::OK, "{b}");
        if b["state"] == state || std::time::Instant::now() > deadline {
            return b;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A send scheduled two seconds ahead leaves within a second of its time
/// (the simulator's receive time); the schedule goes SCHEDULED → SENT with
/// its notification, whose report names the schedule; lists filter by state.
#[tokio::test]
async fn a_schedule_fires_at_its_time_and_its_report_names_it() {
    let w = PushWorld::start().await;
    let s = &w.server;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    let send_at = now() + 2000;
    let event = to_client("alice", &client, json!({"body": "later"}));
    let (st, b) =
        s.call(Method::POST, SCHEDULE, Some(&w.admin), Some(json!({"sendAt": rfc3339(send_at), "event": event}))).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    assert_eq!((b["state"].as_str(), b["tenantId"].as_str()), (Some("SCHEDULED"), Some("acme")));
    assert_eq!(b["sendAt"], rfc3339(send_at));
    assert_eq!(b["event"]["payload"]["message"]["body"], "later");
    let id = b["id"].as_str().unwrap().to_string();
    let (st, list) = s.call(Method::GET, &format!("{SCHEDULE}?state=SCHEDULED"), Some(&w.admin), None).await;
    assert_eq!((st, list[0]["id"].as_str()), (StatusCode::OK, Some(id.as_str())), "{list}");
    assert_eq!(w.sims.stats().apns.accepted, 0, "not before its time");

    let sent = wait_state(s, &w.admin, &id, "SENT", 10).await;
    assert_eq!(sent["state"], "SENT", "{sent}");
    let got = w.sims.requests(Provider::Apns, 10);
    assert_eq!(got.len(), 1);
    let late = got[0].received_ms as i64 - send_at as i64;
    assert!((0..=1000).contains(&late), "received {late} ms after its time");
    eprintln!("scheduled send received {late} ms after its sendAt");
    assert_eq!(got[0].body["aps"]["alert"]["body"], "later");

    let notification = sent["notificationId"].as_str().unwrap();
    let report = w.wait_report(notification, 5).await;
    assert_eq!((report["scheduleId"].as_str(), report["counts"]["sent"].as_u64()), (Some(id.as_str()), Some(1)));
    let (_, list) = s.call(Method::GET, &format!("{SCHEDULE}?state=SENT"), Some(&w.admin), None).await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let (_, list) = s.call(Method::GET, &format!("{SCHEDULE}?state=SCHEDULED"), Some(&w.admin), None).await;
    assert_eq!(list, json!([]));
    let (st, b) = s.call(Method::DELETE, &format!("{SCHEDULE}/{id}"), Some(&w.admin), None).await;
    assert_eq!(st, StatusCode::CONFLICT, "too late to cancel: {b}");
}

/// A cancelled schedule never fires; cancelling again answers it as is;
/// another tenant does not see it; unknown ids are 404, malformed ones 400.
#[tokio::test]
async fn a_cancelled_schedule_never_fires() {
    let w = PushWorld::start().await;
    let s = &w.server;
    let client = w.client("demo", "alice", &format!("APNS:{}", apns_token(1))).await;
    let body = json!({"sendAt": rfc3339(now() + 1500), "event": to_client("alice", &client, json!({"body": "no"}))});
    let (st, b) = s.call(Method::POST, SCHEDULE, Some(&w.admin), Some(body)).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let id = b["id"].as_str().unwrap();
    for _ in 0..2 {
        let (st, b) = s.call(Method::DELETE, &format!("{SCHEDULE}/{id}"), Some(&w.admin), None).await;
        assert_eq!((st, b["state"].as_str()), (StatusCode::OK, Some("CANCELLED")), "{b}");
        assert!(b["finishedAt"].is_string(), "{b}");
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(w.sims.stats().apns.accepted, 0, "never sent");
    let b = wait_state(s, &w.admin, id, "CANCELLED", 1).await;
    assert_eq!(b["state"], "CANCELLED");

    let globex = s.tenant_with_app("globex", "shop").await;
    let path = format!("/v1/tenants/globex/push_notification/schedule/{id}");
    let (st, _) = s.call(Method::GET, &path, Some(&globex), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "another tenant's schedule is not there");
    let (st, _) = s.call(Method::GET, &format!("{SCHEDULE}/{id}"), Some(&globex), None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let unknown = ulid::Ulid::generate().to_string();
    let (st, _) = s.call(Method::DELETE, &format!("{SCHEDULE}/{unknown}"), Some(&w.admin), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, b) = s.call(Method::GET, &format!("{SCHEDULE}/not-an-id"), Some(&w.admin), None).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "scheduleId".to_string()));
}

/// What is refused names its field: a time that is not RFC 3339 (400),
/// more than a minute past or a year ahead (422), an event the send route
/// would refuse (400, `event.` and its path), an unknown state filter. A
/// time a little past fires at once; an event whose user does not exist
/// when it fires ends FAILED, saying why.
#[tokio::test]
async fn malformed_schedules_are_refused_and_unsendable_ones_fail() {
    let w = PushWorld::start().await;
    let s = &w.server;
    let ok_event = json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "nobody"}, "payload": {"message": {"body": "x"}}});
    let mut wrong_tenant = ok_event.clone();
    wrong_tenant["recipient"]["tenantId"] = json!("globex");
    let mut unknown_field = ok_event.clone();
    unknown_field["payload"]["colour"] = json!("red");
    for (body, status, field_path) in [
        (json!({"sendAt": "tomorrow", "event": ok_event}), 400, "sendAt"),
        (json!({"sendAt": "2030-01-01T09:00:00", "event": ok_event}), 400, "sendAt"),
        (json!({"sendAt": rfc3339(now() - 120_000), "event": ok_event}), 422, "sendAt"),
        (json!({"sendAt": rfc3339(now() + 400 * 86_400_000), "event": ok_event}), 422, "sendAt"),
        (json!({"sendAt": rfc3339(now()), "event": wrong_tenant}), 400, "event.recipient.tenantId"),
        (json!({"sendAt": rfc3339(now()), "event": unknown_field}), 400, "event.payload"),
        (json!({"sendAt": rfc3339(now())}), 400, "request body"),
        (json!({"sendAt": rfc3339(now()), "event": ok_event, "extra": 1}), 400, "extra"),
    ] {
        let (st, b) = s.call(Method::POST, SCHEDULE, Some(&w.admin), Some(body.clone())).await;
        assert_eq!(st.as_u16(), status, "{body} → {b}");
        assert!(field(&b).starts_with(field_path), "{body} → {b}");
        assert_eq!(b["subsystem"], 516);
    }
    let (st, b) = s.call(Method::GET, &format!("{SCHEDULE}?state=sent"), Some(&w.admin), None).await;
    assert_eq!((st, field(&b)), (StatusCode::BAD_REQUEST, "state".to_string()));
    let (st, list) = s.call(Method::GET, SCHEDULE, Some(&w.admin), None).await;
    assert_eq!((st, list), (StatusCode::OK, json!([])), "nothing refused was stored");

    let (st, b) = s
        .call(
            Method::POST,
            SCHEDULE,
            Some(&w.admin),
            Some(json!({"sendAt": rfc3339(now() - 10_000), "event": ok_event})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let failed = wait_state(s, &w.admin, b["id"].as_str().unwrap(), "FAILED", 5).await;
    assert_eq!(failed["state"], "FAILED", "{failed}");
    assert!(failed["failure"].as_str().unwrap().contains("nobody"), "{failed}");
}

/// The Done-when test: schedules that come due while the engine is killed
/// (a one-client send and a three-token broadcast) each fire once when it
/// starts again; the simulator counts every token exactly once.
#[tokio::test]
async fn schedules_due_while_the_engine_is_killed_fire_once_after_restart() {
    let world = ChildWorld::start().await;
    let clients = acme_with_apns_clients(&world.data, &world.env, &world.creds, 3, 1).await;
    let http = crate::common::http_client();
    let h = Herald::start(&world.data, &world.env);
    let admin = h.admin_token(&http).await;
    let (client, _) = &clients[0];
    let link = http.put(format!("{}/v1/tenants/acme/users/alice/clients/{client}", h.base)).bearer_auth(&admin);
    assert_eq!(link.json(&json!({})).send().await.unwrap().status(), StatusCode::OK);
    let send_at = now() + 2500;
    let topic = json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": "all"}}});
    let mut ids = Vec::new();
    for event in [to_client("alice", client, json!({"body": "one"})), topic] {
        let r = http.post(format!("{}{SCHEDULE}", h.base)).bearer_auth(&admin);
        let r = r.json(&json!({"sendAt": rfc3339(send_at), "event": event})).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
        ids.push(r.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_string());
    }
    h.kill9();
    tokio::time::sleep(Duration::from_millis(send_at.saturating_sub(now()) + 1000)).await;
    assert_eq!(world.sims.stats().apns.accepted, 0, "nothing fired while the engine was down");

    let h = Herald::start(&world.data, &world.env);
    let admin = h.admin_token(&http).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while world.sims.stats().apns.accepted < 4 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(world.sims.stats().apns.accepted, 4, "alice once, and each of the three tokens once by the broadcast");
    for id in &ids {
        let r = http.get(format!("{}{SCHEDULE}/{id}", h.base)).bearer_auth(&admin).send().await.unwrap();
        let s: Value = r.json().await.unwrap();
        assert_eq!(s["state"], "SENT", "{s}");
        let report = h.wait_report(&http, &admin, s["notificationId"].as_str().unwrap(), 10).await;
        assert_eq!(report["scheduleId"].as_str(), Some(id.as_str()), "{report}");
        assert_eq!(report["state"], "COMPLETED", "{report}");
    }
}

/// Two engines sharing one PostgreSQL: schedules created through either
/// fire once each, even when the engine holding the scheduler's lease is
/// killed before they come due (the other takes the lease over). Runs in
/// the sled suite when PostgreSQL is installed (like `multinode`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_fire_once_across_engines_when_one_dies() {
    if herald_storage::test_on_postgres() || !herald_pgtemp::installed() {
        return;
    }
    let world = ChildWorld::start().await;
    let url = herald_pgtemp::shared().unwrap().create_database().unwrap();
    let env = |node: &str| world.node_env(&url, node, &[("HERALD_LEASE_TTL", "2s".to_string())]);
    // `a` starts first and takes the scheduler's lease.
    let a = Herald::start(&world.dir.path().join("a"), &env("node-a"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let b = Herald::start(&world.dir.path().join("b"), &env("node-b"));
    let http = crate::common::http_client();
    let admin = a.create_tenant(&http, "acme").await;
    let r = http.post(format!("{}/v1/tenants/acme/apps/demo", a.base)).bearer_auth(&admin).json(&world.creds.app_json);
    assert_eq!(r.send().await.unwrap().status(), StatusCode::CREATED);
    let r = http.post(format!("{}/v1/tenants/acme/clients", b.base)).bearer_auth(&admin);
    let client: Value =
        r.json(&json!({"appName": "demo", "platform": "ios"})).send().await.unwrap().json().await.unwrap();
    let client = client["astClientId"].as_str().unwrap().to_string();
    let link = http.put(format!("{}/v1/tenants/acme/users/alice/clients/{client}", b.base)).bearer_auth(&admin);
    assert_eq!(link.json(&json!({})).send().await.unwrap().status(), StatusCode::OK);
    let token = http.put(format!("{}/v1/tenants/acme/clients/{client}/pushtoken", b.base)).bearer_auth(&admin);
    let token = token.json(&json!({"appName": "demo", "pushToken": format!("APNS:{}", apns_token(9))}));
    assert_eq!(token.send().await.unwrap().status(), StatusCode::OK);

    let send_at = rfc3339(now() + 2000);
    let mut ids = Vec::new();
    for i in 0..20 {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let event = to_client("alice", &client, json!({"body": format!("n{i}")}));
        let r = http.post(format!("{base}{SCHEDULE}")).bearer_auth(&admin);
        let r = r.json(&json!({"sendAt": send_at, "event": event})).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
        ids.push(r.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_string());
    }
    a.kill9();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while world.sims.stats().apns.accepted < 20 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = world.sims.requests(Provider::Apns, 100);
    let mut bodies: Vec<String> =
        got.iter().map(|r| r.body["aps"]["alert"]["body"].as_str().unwrap().to_string()).collect();
    bodies.sort();
    let mut want: Vec<String> = (0..20).map(|i| format!("n{i}")).collect();
    want.sort();
    assert_eq!(bodies, want, "each schedule delivered exactly once");
    for id in ids {
        let r = http.get(format!("{}{SCHEDULE}/{id}", b.base)).bearer_auth(&admin).send().await.unwrap();
        assert_eq!(r.json::<Value>().await.unwrap()["state"], "SENT");
    }
}
