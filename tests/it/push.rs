//! The send API end to end: HTTP → engine → simulators over TLS, and what the
//! simulators received.

use crate::common::*;
use herald_sim::Provider;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

fn last_request(w: &PushWorld, p: Provider) -> herald_sim::RecordedRequest {
    w.sims.requests(p, 1).pop().expect("the simulator received a request")
}

#[tokio::test]
async fn one_client_on_apns_with_the_mapping() {
    let w = PushWorld::start().await;
    let token = apns_token(1);
    let client = w.client("demo", "alice", &format!("APNS:{token}")).await;
    let message = json!({"title": "Hi", "body": "there", "titleLocKey": "T", "titleLocArgs": "one", "bodyLocKey": "B", "bodyLocArgs": ["a", "b"],
        "sound": "ping.caf", "collapseKey": "c1", "timeToLive": 3600, "priority": "HIGH"});
    let mut body = to_client("alice", &client, message);
    body["payload"]["customData"] = json!({"orderId": 42, "kind": "x"});
    body["sender"] = json!({"tenantId": "acme", "userId": "bob"});
    let (st, r) = w.send(body).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let entries = r.as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["isSuccessful"], true, "{r}");
    assert_eq!(entries[0]["results"][0], json!({"result": "SENT", "astClientId": client}));
    assert_eq!(entries[0]["notificationId"].as_str().unwrap().len(), 26);

    let req = last_request(&w, Provider::Apns);
    assert_eq!(req.path, format!("/3/device/{token}"));
    let h = |name: &str| req.headers.get(name).cloned().unwrap_or_default();
    assert_eq!(h("apns-topic"), w.creds.bundle_id);
    assert_eq!(h("apns-priority"), "10");
    assert_eq!(h("apns-push-type"), "alert");
    assert_eq!(h("apns-collapse-id"), "c1");
    let expiration: u64 = h("apns-expiration").parse().unwrap();
    let now = herald_storage::now_ms() / 1000;
    assert!(expiration > now + 3500 && expiration <= now + 3601, "{expiration}");
    let b = req.body.clone();
    assert_eq!(b["aps"]["alert"]["title"], "Hi");
    assert_eq!(b["aps"]["alert"]["title-loc-args"], json!(["one"]));
    assert_eq!(b["aps"]["alert"]["loc-args"], json!(["a", "b"]));
    assert_eq!(b["aps"]["sound"], "ping.caf");
    assert_eq!(b["orderId"], 42);
    assert_eq!(b["sender"]["userId"], "bob");

    // The delivery report agrees.
    let id = entries[0]["notificationId"].as_str().unwrap();
    let report = w.wait_report(id, 5).await;
    assert_eq!(report["state"], "COMPLETED");
    assert_eq!(report["counts"]["sent"], 1);
    assert_eq!(report["byProvider"]["apns"]["sent"], 1);
    assert_eq!(report["clients"][0]["astClientId"], client.as_str());
}

#[tokio::test]
async fn a_user_with_clients_on_all_three_providers() {
    let w = PushWorld::start().await;
    let apns = w.client("demo", "carol", &format!("APN:{}", apns_token(2))).await;
    let fcm = w.client("demo", "carol", "FCM:fcm-token-carol").await;
    let hms = w.client("demo", "carol", "HPK:hms-token-carol").await;
    let body = json!({"category": "payment", "recipient": {"tenantId": "acme", "userId": "carol"},
        "payload": {"message": {"title": "Paid", "body": "10 EUR", "priority": "NORMAL", "timeToLive": 99999999, "collapseKey": "7"},
                    "customData": {"amount": 10, "currency": "EUR"}}});
    let (st, r) = w.send(body).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let entries = r.as_array().unwrap();
    assert_eq!(entries.len(), 3);
    for e in entries {
        assert_eq!(e["isSuccessful"], true, "{e}");
        assert_eq!(e["userId"], "carol");
    }
    let ids: Vec<&str> = entries.iter().map(|e| e["astClientId"].as_str().unwrap()).collect();
    for c in [&apns, &fcm, &hms] {
        assert!(ids.contains(&c.as_str()));
    }

    let apns_req = last_request(&w, Provider::Apns);
    assert_eq!(apns_req.headers["apns-priority"], "5");
    let fcm_req = last_request(&w, Provider::Fcm);
    let m = &fcm_req.body.clone()["message"];
    assert_eq!(m["token"], "fcm-token-carol");
    assert_eq!(m["android"]["priority"], "normal");
    assert_eq!(m["android"]["ttl"], "2419200s", "capped at FCM's 28 days");
    assert_eq!(m["android"]["collapse_key"], "7");
    assert_eq!(m["data"]["amount"], "10", "FCM data values are strings");
    assert_eq!(m["android"]["notification"]["title"], "Paid");
    let hms_req = last_request(&w, Provider::Hms);
    let m = &hms_req.body.clone()["message"];
    assert_eq!(m["token"], json!(["hms-token-carol"]));
    assert_eq!(m["android"]["urgency"], "NORMAL");
    assert_eq!(m["android"]["ttl"], "1296000s", "capped at HMS's 15 days");
    assert_eq!(m["android"]["notification"]["body"], "10 EUR");
    let stats = w.sims.stats();
    assert_eq!((stats.apns.accepted, stats.fcm.accepted, stats.hms.accepted), (1, 1, 1));
}

/// The interactive lane sends at once, one token per request, even on HMS,
/// which would take a thousand (batches are for broadcasts).
#[tokio::test]
async fn interactive_hms_sends_are_not_batched() {
    let w = PushWorld::start().await;
    for i in 0..3 {
        w.client("demo", "dora", &format!("HPK:hms-dora-{i}")).await;
    }
    let (st, r) = w
        .send(json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "dora"}, "payload": {"message": {"body": "hi"}}}))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    assert!(r.as_array().unwrap().iter().all(|e| e["isSuccessful"] == true), "{r}");
    let sends: Vec<_> =
        w.sims.requests(Provider::Hms, 10).into_iter().filter(|q| q.path.ends_with("/messages:send")).collect();
    assert_eq!(sends.len(), 3);
    assert!(sends.iter().all(|q| q.body["message"]["token"].as_array().unwrap().len() == 1));
}

#[tokio::test]
async fn silent_pushes_are_background_and_data_only() {
    let w = PushWorld::start().await;
    let a = w.client("demo", "dave", &format!("APNS:{}", apns_token(3))).await;
    w.client("demo", "dave", "FCM:fcm-dave").await;
    w.client("demo", "dave", "HPK:hms-dave").await;
    let mut body = json!({"category": "tms", "recipient": {"tenantId": "acme", "userId": "dave"}, "silent": true,
        "payload": {"message": {"title": "hidden", "priority": "HIGH"}, "customData": {"sync": true}}});
    let (st, r) = w.send(body.clone()).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    assert!(r.as_array().unwrap().iter().all(|e| e["isSuccessful"] == true), "{r}");
    let apns = last_request(&w, Provider::Apns);
    assert_eq!(apns.headers["apns-push-type"], "background");
    assert_eq!(apns.headers["apns-priority"], "5");
    let b = apns.body;
    assert_eq!(b["aps"]["content-available"], 1);
    assert!(b["aps"].get("alert").is_none());
    assert!(last_request(&w, Provider::Fcm).body["message"]["android"].get("notification").is_none());
    assert!(last_request(&w, Provider::Hms).body["message"]["android"].get("notification").is_none());

    // Category filtering: an app without `tms` gets a per-client error.
    let mut app = w.creds.app_json.clone();
    app["categories"] = json!(["chat"]);
    let (st, _) = w.server.call(Method::PUT, "/v1/tenants/acme/apps/demo", Some(&w.admin), Some(app)).await;
    assert_eq!(st, StatusCode::OK);
    body["silent"] = json!(false);
    let (_, r) = w.send(body).await;
    for e in r.as_array().unwrap() {
        assert_eq!(e["isSuccessful"], false);
        assert_eq!(e["results"][0]["result"]["code"], 400, "{e}");
        assert_eq!(e["results"][0]["result"]["subsystem"], 516);
    }
    // A deleted app's channels go with it.
    let (st, _) = w.server.call(Method::DELETE, "/v1/tenants/acme/apps/demo", Some(&w.admin), None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (_, r) = w.send(to_client("dave", &a, json!({"body": "gone"}))).await;
    assert_eq!(r[0]["results"][0]["result"]["code"], 404, "{r}");
}

#[tokio::test]
async fn recipients_are_validated_and_resolved() {
    let w = PushWorld::start().await;
    let client = w.client("demo", "erin", "FCM:fcm-erin").await;
    let base =
        |recipient: Value| json!({"category": "chat", "recipient": recipient, "payload": {"message": {"body": "x"}}});
    for (recipient, field) in [
        (json!({"tenantId": "acme"}), "recipient"),
        (json!({"tenantId": "acme", "topic": "t", "userId": "erin"}), "recipient"),
        (json!({"tenantId": "acme", "astClientId": client}), "recipient"),
        (json!({"userId": "erin"}), "recipient.tenantId"),
        (json!({"tenantId": "other", "userId": "erin"}), "recipient.tenantId"),
        (json!({"tenantId": "acme", "userId": "erin", "astClientId": "short"}), "recipient.astClientId"),
        (json!({"tenantId": "acme", "userId": "erin", "extra": 1}), "recipient.extra"),
    ] {
        let (st, b) = w.send(base(recipient.clone())).await;
        assert_eq!((st, field_of(&b)), (StatusCode::BAD_REQUEST, field.to_string()), "{recipient} -> {b}");
    }
    for (body, field) in [
        (
            json!({"category": "news", "recipient": {"tenantId": "acme", "userId": "erin"}, "payload": {"message": {}}}),
            "category",
        ),
        (
            json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "erin"}, "payload": {"message": {"priority": "URGENT"}}}),
            "payload.message.priority",
        ),
        (
            json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "erin"}, "payload": {"message": {"timeToLive": -1}}}),
            "payload.message.timeToLive",
        ),
        (
            json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "erin"}, "payload": {"message": {}, "x": 1}}),
            "payload.x",
        ),
        (
            json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "erin"}, "payload": {"message": {}}, "sender": {"tenantId": "acme"}}),
            "sender",
        ),
        (json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "erin"}}), "request body"),
    ] {
        let (st, b) = w.send(body.clone()).await;
        assert_eq!((st, field_of(&b)), (StatusCode::BAD_REQUEST, field.to_string()), "{body} -> {b}");
    }
    // Unknown client or user: 404; a user without clients: 202 with [].
    let (st, _) =
        w.send(base(json!({"tenantId": "acme", "userId": "erin", "astClientId": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}))).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = w.send(base(json!({"tenantId": "acme", "userId": "nobody"}))).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, r) = w.send(base(json!({"tenantId": "acme", "userId": "admin"}))).await;
    assert_eq!((st, r), (StatusCode::ACCEPTED, json!([])));
}

fn field_of(b: &Value) -> String {
    field(b)
}

#[tokio::test]
async fn legacy_gcm_and_server_key_only_apps_get_a_clear_error() {
    let w = PushWorld::start().await;
    let gcm = w.client("demo", "finn", "GCM:old-token").await;
    let (st, _) = w
        .server
        .call(
            Method::POST,
            "/v1/tenants/acme/apps/legacy",
            Some(&w.admin),
            Some(json!({"categories": ["chat"], "androidApiKey": "AIzaLegacy"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    let legacy = w.client("legacy", "finn", "FCM:some-token").await;
    let (st, r) = w.send(json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "finn"}, "payload": {"message": {"body": "x"}}})).await;
    assert_eq!(st, StatusCode::ACCEPTED);
    for e in r.as_array().unwrap() {
        assert_eq!(e["isSuccessful"], false, "{e}");
        let err = &e["results"][0]["result"];
        assert_eq!(err["code"], 501, "{e}");
        assert!(err["message"].as_str().unwrap().contains("no longer"), "{e}");
    }
    assert_eq!(w.sims.stats().fcm.accepted, 0, "nothing silently dropped or sent");
    let _ = (gcm, legacy);
}

/// A batch sends each of its events as its own send, concurrently, and
/// answers one entry per event in order: an event that does not decode or
/// is refused gets its own error entry, the others go out; only a batch
/// that is itself malformed (empty, over 500 events, not an object of
/// `events`) is refused as a whole.
#[tokio::test]
async fn a_batch_answers_each_event_in_order_and_a_bad_one_alone_fails() {
    let w = PushWorld::start().await;
    let carol = w.client("demo", "carol", &format!("APNS:{}", apns_token(1))).await;
    w.client("demo", "dora", "FCM:fcm-dora").await;
    let msg = |body: &str| json!({"message": {"body": body}});
    let to_user = |user: &str, body: &str| json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": user}, "payload": msg(body)});
    let mut unknown_field = to_user("dora", "four");
    unknown_field["colour"] = json!("red");
    let events = json!([
        to_client("carol", &carol, json!({"body": "one"})),
        to_user("dora", "two"),
        to_user("nobody", "three"),
        unknown_field,
        {"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": msg("five")},
    ]);
    let path = "/v1/tenants/acme/push_notification/send-batch";
    let (st, b) = w.server.call(Method::POST, path, Some(&w.admin), Some(json!({ "events": events }))).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let r = b["results"].as_array().unwrap();
    assert_eq!(r.len(), 5, "{b}");
    assert_eq!((r[0][0]["isSuccessful"].clone(), r[0][0]["astClientId"].clone()), (json!(true), json!(carol)));
    assert_eq!((r[1][0]["isSuccessful"].clone(), r[1][0]["userId"].clone()), (json!(true), json!("dora")));
    assert_eq!((r[2]["code"].clone(), r[2]["subsystem"].clone()), (json!(404), json!(516)), "{b}");
    assert_eq!(r[3]["code"], 400, "{b}");
    let why = r[3]["message"].as_str().unwrap();
    assert!(why.contains("events[3]") && why.contains("colour"), "names the event and the field: {why}");
    assert_eq!(r[4][0]["metadata"]["targeted"], 2, "{b}");
    let ids: Vec<&str> = [&r[0][0], &r[1][0], &r[4][0]].iter().map(|e| e["notificationId"].as_str().unwrap()).collect();
    // Each event its own notification, numbered in turn: the batch's
    // one-client and one-user sends are stored in one record, which each id finds.
    let n = |id: &str| id.parse::<ulid::Ulid>().unwrap().0;
    assert_eq!((n(ids[1]) - n(ids[0]), n(ids[2]) - n(ids[0])), (1, 4), "consecutive ids: {ids:?}");
    for id in &ids {
        let report = w.wait_report(id, 20).await;
        assert_eq!(report["state"], "COMPLETED", "{report}");
    }
    assert_eq!(w.wait_report(ids[0], 1).await["clients"][0]["astClientId"], carol.as_str(), "event 0's own client");
    assert_eq!(w.wait_report(ids[1], 1).await["recipient"], "dora", "event 1's own user");
    let s = w.sims.stats();
    assert_eq!((s.apns.accepted, s.fcm.accepted), (2, 2), "carol and dora each by their event and the broadcast");

    for (body, field) in [
        (json!({"events": []}), "events"),
        (json!({"events": vec![to_user("dora", "x"); 501]}), "events"),
        (json!({"evts": []}), "evts"),
        (json!("every client"), "request body"),
    ] {
        let (st, b) = w.server.call(Method::POST, path, Some(&w.admin), Some(body)).await;
        assert_eq!((st, field_of(&b)), (StatusCode::BAD_REQUEST, field.to_string()), "{b}");
    }
    assert_eq!(w.sims.stats().fcm.accepted, 2, "a refused batch sends nothing");
}

/// Each event of a batch takes one of the tenant's send-rate tokens: the
/// events past the limit get 429 entries and are not sent; a batch of which
/// none fits is refused whole with `Retry-After`'s 429.
#[tokio::test]
async fn a_batch_past_the_send_rate_is_refused_event_by_event() {
    let w = PushWorld::start_with(|c| {
        c.limits.send_rate = 1;
        c.limits.send_burst = 3;
    })
    .await;
    let carol = w.client("demo", "carol", &format!("APNS:{}", apns_token(1))).await;
    let event = to_client("carol", &carol, json!({"body": "hi"}));
    let path = "/v1/tenants/acme/push_notification/send-batch";
    let batch = json!({ "events": vec![event.clone(); 5] });
    let (st, b) = w.server.call(Method::POST, path, Some(&w.admin), Some(batch.clone())).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let r = b["results"].as_array().unwrap();
    assert!(r[..3].iter().all(|e| e[0]["isSuccessful"] == true), "{b}");
    assert!(r[3..].iter().all(|e| e["code"] == 429), "{b}");
    assert_eq!(w.sims.stats().apns.accepted, 3, "the refused events were not sent");
    let (st, b) = w.server.call(Method::POST, path, Some(&w.admin), Some(batch)).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS, "{b}");
}

/// Concurrent one-client sends are each reported as soon as they are
/// answered (their records are written in groups, and read from memory
/// until then), and every report is still there once the engine has
/// stopped and started again on the same data.
#[tokio::test]
async fn concurrent_sends_are_reported_at_once_and_after_a_restart() {
    let mut w = PushWorld::start().await;
    let mut clients = Vec::new();
    for i in 0..8 {
        clients.push(w.client("demo", "alice", &format!("APNS:{}", apns_token(300 + i))).await);
    }
    let report_path = |id: &str| format!("/v1/tenants/acme/push_notification/{id}");
    let sends = (0..64).map(|i| {
        let (w, client) = (&w, clients[i % clients.len()].clone());
        async move {
            let (st, r) = w.send(to_client("alice", &client, json!({"title": format!("n{i}")}))).await;
            assert_eq!(st, StatusCode::ACCEPTED, "{r}");
            assert_eq!(r[0]["isSuccessful"], true, "{r}");
            let id = r[0]["notificationId"].as_str().unwrap().to_string();
            // Read once, at once: no polling.
            let (st, report) = w.server.call(Method::GET, &report_path(&id), Some(&w.admin), None).await;
            assert_eq!(st, StatusCode::OK, "{report}");
            assert_eq!(report["state"], "COMPLETED", "{report}");
            assert_eq!(report["clients"][0]["astClientId"], client.as_str(), "{report}");
            (id, client)
        }
    });
    let sent = futures::future::join_all(sends).await;

    let data = w.server.data_dir();
    w.server.running.take().unwrap().shutdown().await;
    let mut config = config_for(&data);
    config.listen = "127.0.0.1:0".parse().unwrap();
    let again = herald::server::spawn(config).await.expect("the engine starts again");
    let base = format!("http://{}", again.addr);
    let login = [("grant_type", "password"), ("username", "admin"), ("password", PASSWORD)];
    let r = w.server.http.post(format!("{base}/auth/realms/acme/protocol/openid-connect/token")).form(&login);
    let admin = r.send().await.unwrap().json::<Value>().await.unwrap()["access_token"].as_str().unwrap().to_string();
    for (id, client) in &sent {
        let r = w.server.http.get(format!("{base}{}", report_path(id))).bearer_auth(&admin);
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{id} after the restart");
        assert_eq!(r.json::<Value>().await.unwrap()["clients"][0]["astClientId"], client.as_str());
    }
    again.shutdown().await;
}
