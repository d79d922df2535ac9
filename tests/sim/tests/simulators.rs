//! End-to-end tests of the simulators over real HTTP/2 + TLS connections.

// Tests assert by unwrapping and panicking, and compute with small numbers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

mod common;

use std::time::Duration;

use base64::Engine;
use common::*;
use herald_sim::{Faults, Provider, ProviderFaults, StatusFault};
use serde_json::{json, Value};

// ---- APNs ---------------------------------------------------------------------------------

#[tokio::test]
async fn apns_token_auth_accepts_and_caches_the_jwt() {
    let fx = fixture();
    let sims = start().await;
    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let jwt = apns_jwt(&fx.creds, now());
    let topic = Some(fx.creds.bundle_id.as_str());

    let a = c.send(apns_request(&apns_token(1), Some(&jwt), topic).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert!(a.body.is_empty());
    let id = a.header("apns-id").unwrap();
    assert_eq!(id.len(), 36);

    // apns-id is echoed when given.
    let given = "123E4567-E89B-12D3-A456-4266554400A0";
    let a = c
        .send(
            apns_request(&apns_token(2), Some(&jwt), topic)
                .header("apns-id", given)
                .header("apns-expiration", "0")
                .header("apns-collapse-id", "c1")
                .body(())
                .unwrap(),
            APNS_PAYLOAD,
        )
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("apns-id"), Some(given));
    let a = c.send(apns_request(&apns_token(1), Some(&jwt), topic).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 200);

    let stats = sims.stats().apns;
    assert_eq!(stats.accepted, 3);
    assert_eq!(stats.rejected, 0);
    assert_eq!(stats.connections, 1);
    assert_eq!(stats.jwt_verifications, 1, "the JWT is verified once per connection");
    assert!(stats.first_accepted_ms.is_some() && stats.last_accepted_ms >= stats.first_accepted_ms);
    let accepted = sims.accepted(Provider::Apns);
    assert_eq!(accepted.get(&apns_token(1)), Some(&2));
    assert_eq!(accepted.get(&apns_token(2)), Some(&1));
}

#[tokio::test]
async fn apns_rejects_like_apple() {
    let fx = fixture();
    let sims = start().await;
    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let jwt = apns_jwt(&fx.creds, now());
    let bundle = fx.creds.bundle_id.as_str();
    let ok = apns_token(7);
    // Replaces a header the request builder already set.
    fn with(mut req: http::Request<()>, name: &'static str, value: &str) -> http::Request<()> {
        req.headers_mut().insert(name, value.parse().unwrap());
        req
    }
    let req = |token: &str| apns_request(token, Some(&jwt), Some(bundle)).body(()).unwrap();

    async fn expect(c: &mut H2, req: http::Request<()>, body: &str, status: u16, reason: &str) {
        let a = c.send(req, body.to_owned()).await;
        assert_eq!(a.status, status, "{reason}: {:?}", a.body);
        assert_eq!(a.json()["reason"], reason);
        assert!(a.header("apns-id").is_some());
    }

    let dead = format!("dead{}", "0".repeat(60));
    let a = c.send(apns_request(&dead, Some(&jwt), Some(bundle)).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 410);
    assert_eq!(a.json()["reason"], "Unregistered");
    assert!(a.json()["timestamp"].as_u64().unwrap() > 1_600_000_000_000);

    expect(
        &mut c,
        apns_request(&ok, Some(&jwt), Some("com.other.app")).body(()).unwrap(),
        APNS_PAYLOAD,
        400,
        "TopicDisallowed",
    )
    .await;
    expect(&mut c, apns_request(&ok, Some(&jwt), None).body(()).unwrap(), APNS_PAYLOAD, 400, "MissingTopic").await;
    expect(&mut c, with(req(&ok), "apns-priority", "7"), APNS_PAYLOAD, 400, "BadPriority").await;
    expect(&mut c, with(req(&ok), "apns-push-type", "shout"), APNS_PAYLOAD, 400, "InvalidPushType").await;
    expect(&mut c, with(req(&ok), "apns-expiration", "soon"), APNS_PAYLOAD, 400, "BadExpirationDate").await;
    expect(&mut c, with(req(&ok), "apns-collapse-id", &"x".repeat(65)), APNS_PAYLOAD, 400, "BadCollapseId").await;
    expect(&mut c, with(req(&ok), "apns-id", "nope"), APNS_PAYLOAD, 400, "BadMessageId").await;
    expect(&mut c, req("abc"), APNS_PAYLOAD, 400, "BadDeviceToken").await;
    expect(&mut c, req(&ok), "", 400, "PayloadEmpty").await;
    expect(&mut c, req(&ok), "{not json", 400, "BadRequest").await;
    expect(&mut c, req(&ok), r#"{"alert":"no aps"}"#, 400, "BadRequest").await;
    let big = format!(r#"{{"aps":{{"alert":"{}"}}}}"#, "x".repeat(4100));
    expect(&mut c, req(&ok), &big, 413, "PayloadTooLarge").await;
    expect(&mut c, apns_request(&ok, None, Some(bundle)).body(()).unwrap(), APNS_PAYLOAD, 403, "MissingProviderToken")
        .await;
    expect(
        &mut c,
        apns_request(&ok, Some("not.a.jwt"), Some(bundle)).body(()).unwrap(),
        APNS_PAYLOAD,
        403,
        "InvalidProviderToken",
    )
    .await;
    expect(
        &mut c,
        http::Request::get(format!("https://localhost/3/device/{ok}")).body(()).unwrap(),
        "",
        405,
        "MethodNotAllowed",
    )
    .await;
    expect(&mut c, post("/2/device/x").body(()).unwrap(), APNS_PAYLOAD, 404, "BadPath").await;

    // VoIP payloads may weigh up to 5 KB.
    let voip = format!(r#"{{"aps":{{}},"x":"{}"}}"#, "x".repeat(4500));
    let voip_req = with(req(&ok), "apns-push-type", "voip");
    let a = c.send(with(voip_req, "apns-topic", &format!("{bundle}.voip")), voip).await;
    assert_eq!(a.status, 200);

    let stats = sims.stats().apns;
    assert_eq!(stats.accepted, 1);
    assert_eq!(stats.rejected, 17);
    assert_eq!(stats.by_reason["Unregistered"], 1);
    assert_eq!(stats.by_reason["BadRequest"], 2);
    assert_eq!(stats.by_status["400"], 11);
}

#[tokio::test]
async fn apns_expired_and_foreign_provider_tokens() {
    let fx = fixture();
    let sims = start().await;
    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let bundle = Some(fx.creds.bundle_id.as_str());

    let old = apns_jwt(&fx.creds, now() - 3700);
    let a = c.send(apns_request(&apns_token(1), Some(&old), bundle).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 403);
    assert_eq!(a.json()["reason"], "ExpiredProviderToken");

    // Same kid and team, signed by another key: bad signature.
    let mut other = fx.creds.clone();
    other.apns_key_pem = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap().serialize_pem();
    let forged = apns_jwt(&other, now());
    let a = c.send(apns_request(&apns_token(1), Some(&forged), bundle).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 403);
    assert_eq!(a.json()["reason"], "InvalidProviderToken");

    // Unknown key id.
    let mut unknown = fx.creds.clone();
    unknown.apns_key_id = "ZZZZZZZZZZ".into();
    let a = c
        .send(apns_request(&apns_token(1), Some(&apns_jwt(&unknown, now())), bundle).body(()).unwrap(), APNS_PAYLOAD)
        .await;
    assert_eq!(a.status, 403);
    assert_eq!(a.json()["reason"], "InvalidProviderToken");
    assert_eq!(sims.stats().apns.accepted, 0);
}

#[tokio::test]
async fn apns_refuses_too_frequent_token_refresh() {
    let fx = fixture();
    let sims = start().await;
    let bundle = Some(fx.creds.bundle_id.as_str());
    let first = apns_jwt(&fx.creds, now() - 600);
    let second = apns_jwt(&fx.creds, now());

    let mut c1 = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let a = c1.send(apns_request(&apns_token(1), Some(&first), bundle).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 200);
    // Another connection sharing the same token is fine.
    let mut c2 = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let a = c2.send(apns_request(&apns_token(2), Some(&first), bundle).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 200);
    // A new token 10 minutes after the previous one is too soon.
    let a = c1.send(apns_request(&apns_token(3), Some(&second), bundle).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 429);
    assert_eq!(a.json()["reason"], "TooManyProviderTokenUpdates");
    // The old one still works.
    let a = c1.send(apns_request(&apns_token(4), Some(&first), bundle).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 200);
}

#[tokio::test]
async fn apns_certificate_auth() {
    let fx = fixture();
    let sims = start().await;
    let cert = std::fs::read_to_string(&fx.creds.apns_cert_path).unwrap();
    let key = std::fs::read_to_string(&fx.creds.apns_cert_key_path).unwrap();
    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), Some((&cert, &key))).await;

    let a = c.send(apns_request(&apns_token(9), None, Some(&fx.creds.bundle_id)).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    // Without apns-topic, the certificate's topic is used.
    let a = c.send(apns_request(&apns_token(9), None, None).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 200);
    let a = c.send(apns_request(&apns_token(9), None, Some("com.other.app")).body(()).unwrap(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["reason"], "TopicDisallowed");
    assert_eq!(sims.accepted(Provider::Apns)[&apns_token(9)], 2);
}

// ---- FCM ----------------------------------------------------------------------------------

async fn fcm_access_token(c: &mut H2) -> String {
    let fx = fixture();
    let assertion = fcm_assertion(&fx.creds, now(), now() + 3600);
    let a = c
        .send(
            post("/token").header("content-type", "application/x-www-form-urlencoded").body(()).unwrap(),
            fcm_token_form(&assertion),
        )
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    let v = a.json();
    assert_eq!(v["token_type"], "Bearer");
    assert_eq!(v["expires_in"], 3599);
    v["access_token"].as_str().unwrap().to_owned()
}

fn fcm_send(project: &str, token: &str) -> http::Request<()> {
    post(&format!("/v1/projects/{project}/messages:send"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(())
        .unwrap()
}

#[tokio::test]
async fn fcm_oauth_and_send() {
    let fx = fixture();
    let project = fx.creds.fcm_project_id.as_str();
    let sims = start().await;
    let mut c = h2_connect(sims.fcm_addr(), &sims.ca_pem(), None).await;
    let token = fcm_access_token(&mut c).await;

    let msg = json!({"message": {"token": "device-1", "data": {"k": "v"},
        "notification": {"title": "t", "body": "b"},
        "android": {"priority": "HIGH", "ttl": "3600s", "collapse_key": "c"}}});
    let a = c.send(fcm_send(project, &token), msg.to_string()).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    let name = a.json()["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with(&format!("projects/{project}/messages/")), "{name}");

    let a = c.send(fcm_send(project, &token), json!({"message": {"token": "dead-device"}}).to_string()).await;
    assert_eq!(a.status, 404);
    let e = &a.json()["error"];
    assert_eq!(e["status"], "NOT_FOUND");
    assert_eq!(e["details"][0]["errorCode"], "UNREGISTERED");
    assert_eq!(e["details"][0]["@type"], "type.googleapis.com/google.firebase.fcm.v1.FcmError");

    for bad in [
        json!({"message": {"token": "d", "data": {"n": 1}}}),
        json!({"message": {"token": "d", "topic": "news"}}),
        json!({"message": {}}),
        json!({"message": {"token": "d", "android": {"ttl": "3600"}}}),
        json!({"message": {"token": "d", "android": {"priority": "urgent"}}}),
        json!({"message": {"token": "d", "bogus": 1}}),
        json!({"message": {"token": "d", "data": {"big": "x".repeat(5000)}}}),
    ] {
        let a = c.send(fcm_send(project, &token), bad.to_string()).await;
        assert_eq!(a.status, 400, "{bad}");
        let e = &a.json()["error"];
        assert_eq!(e["status"], "INVALID_ARGUMENT", "{bad}");
        assert_eq!(e["details"][0]["errorCode"], "INVALID_ARGUMENT");
    }
    let a = c.send(fcm_send(project, &token), json!({"message": {"token": "d", "data": {"n": 1}}}).to_string()).await;
    assert_eq!(a.json()["error"]["details"][1]["fieldViolations"][0]["field"], "message.data[0].value");

    // Unknown or missing access token, or another project.
    let a = c.send(fcm_send(project, "ya29.bogus"), msg.to_string()).await;
    assert_eq!(a.status, 401);
    assert_eq!(a.json()["error"]["status"], "UNAUTHENTICATED");
    let a = c.send(fcm_send("other-project", &token), msg.to_string()).await;
    assert_eq!(a.status, 403);
    assert_eq!(a.json()["error"]["status"], "PERMISSION_DENIED");

    let stats = sims.stats().fcm;
    assert_eq!(stats.token_grants, 1);
    assert_eq!(stats.accepted, 1);
    assert_eq!(stats.by_reason["UNREGISTERED"], 1);
    assert_eq!(stats.by_reason["INVALID_ARGUMENT"], 8);
    assert_eq!(sims.accepted(Provider::Fcm)["device-1"], 1);
}

#[tokio::test]
async fn fcm_oauth_refuses_bad_assertions() {
    let fx = fixture();
    let sims = start().await;
    let mut c = h2_connect(sims.fcm_addr(), &sims.ca_pem(), None).await;
    let form = |assertion: &str| fcm_token_form(assertion);
    let token_req = || post("/token").header("content-type", "application/x-www-form-urlencoded").body(()).unwrap();

    // Lifetime over an hour.
    let a = c.send(token_req(), form(&fcm_assertion(&fx.creds, now(), now() + 7200))).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["error"], "invalid_grant");
    // Tampered signature.
    let good = fcm_assertion(&fx.creds, now(), now() + 3600);
    let (head, sig) = good.rsplit_once('.').unwrap();
    let mut sig = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(sig).unwrap();
    sig[0] ^= 1;
    let bad = format!("{head}.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig));
    let a = c.send(token_req(), form(&bad)).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["error_description"], "Invalid JWT Signature.");
    // Wrong grant type.
    let a = c.send(token_req(), "grant_type=password".to_owned()).await;
    assert_eq!(a.json()["error"], "unsupported_grant_type");
    assert_eq!(sims.stats().fcm.token_grants, 0);
}

#[tokio::test]
async fn token_endpoints_work_over_http1() {
    let fx = fixture();
    let sims = start().await;
    let assertion = fcm_assertion(&fx.creds, now(), now() + 3600);
    let a = h1_post_form(sims.fcm_addr(), &sims.ca_pem(), "/token", &fcm_token_form(&assertion)).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert!(a.json()["access_token"].as_str().unwrap().starts_with("ya29."));

    let form = url_encode(&[
        ("grant_type", "client_credentials"),
        ("client_id", &fx.creds.hms_client_id),
        ("client_secret", &fx.creds.hms_client_secret),
    ]);
    let a = h1_post_form(sims.hms_addr(), &sims.ca_pem(), "/oauth2/v3/token", &form).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.json()["expires_in"], 3600);
    assert_eq!(sims.stats().fcm.token_grants, 1);
    assert_eq!(sims.stats().hms.token_grants, 1);
}

// ---- HMS ----------------------------------------------------------------------------------

/// The HMS simulator's answer to a token request with the fixture's client credentials.
async fn hms_token_answer(c: &mut H2) -> Answer {
    let fx = fixture();
    let form = url_encode(&[
        ("grant_type", "client_credentials"),
        ("client_id", &fx.creds.hms_client_id),
        ("client_secret", &fx.creds.hms_client_secret),
    ]);
    c.send(post("/oauth2/v3/token").header("content-type", "application/x-www-form-urlencoded").body(()).unwrap(), form)
        .await
}

async fn hms_access_token(c: &mut H2) -> String {
    let a = hms_token_answer(c).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    a.json()["access_token"].as_str().unwrap().to_owned()
}

fn hms_send(app: &str, token: &str) -> http::Request<()> {
    post(&format!("/v1/{app}/messages:send"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(())
        .unwrap()
}

#[tokio::test]
async fn hms_oauth_and_send() {
    let fx = fixture();
    let app = fx.creds.hms_client_id.as_str();
    let sims = start().await;
    let mut c = h2_connect(sims.hms_addr(), &sims.ca_pem(), None).await;

    let bad_secret =
        url_encode(&[("grant_type", "client_credentials"), ("client_id", app), ("client_secret", "wrong")]);
    let a = c.send(post("/oauth2/v3/token").body(()).unwrap(), bad_secret).await;
    assert_eq!(a.status, 401);
    assert_eq!(a.json()["error"], 1102);

    let token = hms_access_token(&mut c).await;
    let msg = |tokens: Value| {
        json!({"validate_only": false, "message": {"token": tokens, "data": "{\"k\":\"v\"}",
            "android": {"collapse_key": -1, "ttl": "86400s", "urgency": "HIGH", "bi_tag": "t"}}})
        .to_string()
    };

    let a = c.send(hms_send(app, &token), msg(json!(["tok-a", "tok-b"]))).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.json()["code"], "80000000");
    assert_eq!(a.json()["msg"], "Success");
    assert!(a.json()["requestId"].is_string());

    let a = c.send(hms_send(app, &token), msg(json!(["tok-a", "dead-1"]))).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json()["code"], "80100000");
    let detail: Value = serde_json::from_str(a.json()["msg"].as_str().unwrap()).unwrap();
    assert_eq!(detail, json!({"success": 1, "failure": 1, "illegal_tokens": ["dead-1"]}));

    let a = c.send(hms_send(app, &token), msg(json!(["dead-2"]))).await;
    assert_eq!(a.json()["code"], "80300007");

    let a = c.send(hms_send(app, &token), json!({"message": {"token": ["x"], "data": {"k": 1}}}).to_string()).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["code"], "80100003");

    let a =
        c.send(hms_send(app, &token), json!({"message": {"token": ["x"], "data": "x".repeat(5000)}}).to_string()).await;
    assert_eq!(a.json()["code"], "80300008");

    let a = c.send(hms_send(app, "bogus"), msg(json!(["tok-a"]))).await;
    assert_eq!(a.status, 401);
    assert_eq!(a.json()["code"], "80200001");

    // Expired tokens (forced by the fault), then a fresh token works.
    sims.set_faults(Faults {
        hms: ProviderFaults { expire_access_tokens: true, ..Default::default() },
        ..Default::default()
    });
    let a = c.send(hms_send(app, &token), msg(json!(["tok-a"]))).await;
    assert_eq!(a.status, 401);
    assert_eq!(a.json()["code"], "80200003");
    let fresh = hms_access_token(&mut c).await;
    let a = c.send(hms_send(app, &fresh), msg(json!(["tok-c"]))).await;
    assert_eq!(a.json()["code"], "80000000");

    let stats = sims.stats().hms;
    assert_eq!(stats.accepted, 4, "tok-a, tok-b, tok-a, tok-c");
    assert_eq!(stats.token_grants, 2);
    assert_eq!(stats.by_reason["80300007"], 2);
    let accepted = sims.accepted(Provider::Hms);
    assert_eq!(accepted["tok-a"], 2);
    assert_eq!(accepted["tok-b"], 1);
}

// ---- Faults -------------------------------------------------------------------------------

#[tokio::test]
async fn hostile_answers() {
    let fx = fixture();
    let sims = start().await;
    let app = &fx.creds.hms_client_id;
    let mut c = h2_connect(sims.hms_addr(), &sims.ca_pem(), None).await;
    let token = hms_access_token(&mut c).await;
    let msg = json!({"message": {"token": ["tok-h"], "data": "{}"}}).to_string();
    let set = |v: Value| sims.set_faults(serde_json::from_value(v).unwrap());
    let second = std::time::Duration::from_secs(1);

    // retry-after as written, and a body 100 000 bytes longer that still parses.
    set(
        json!({"hms": {"status": [{"status": 429, "count": 1, "retry_after_header": "1e20", "body": {"oversized": 100000}}]}}),
    );
    let (a, ended) = c.send_reading(hms_send(app, &token), msg.clone(), usize::MAX, 10 * second).await;
    assert!(ended);
    assert_eq!((a.status.as_u16(), a.header("retry-after")), (429, Some("1e20")));
    assert_eq!(a.json()["code"], "80300013");
    assert!(a.body.len() > 100_000 && a.body.len() < 100_200, "{}", a.body.len());

    // A body that never ends: the client stops reading, the simulator goes on serving.
    set(json!({"hms": {"status": [{"status": 503, "count": 1, "retry_after_header": "-5", "body": "endless"}]}}));
    let (a, ended) = c.send_reading(hms_send(app, &token), msg.clone(), 1 << 20, 10 * second).await;
    assert!(!ended && a.body.len() >= 1 << 20);
    assert_eq!((a.status.as_u16(), a.header("retry-after")), (503, Some("-5")));
    assert!(a.body.starts_with(br#"{"code":"81000001""#) || a.body.starts_with(b"{"), "{:?}", &a.body[..40]);

    // A slow drip: a byte every 50 ms.
    set(json!({"hms": {"status": [{"status": 500, "count": 1, "body": {"drip_ms": 50}}]}}));
    let (a, ended) =
        c.send_reading(hms_send(app, &token), msg.clone(), usize::MAX, std::time::Duration::from_millis(500)).await;
    assert!(!ended && a.status == 500);
    assert!((3..=12).contains(&a.body.len()), "{} bytes in 500 ms", a.body.len());
    assert_eq!(a.body[0], b'{');

    // The same connection still serves.
    set(json!({}));
    let a = c.send(hms_send(app, &token), msg.clone()).await;
    assert_eq!(a.json()["code"], "80000000");

    // OAuth answers announce whatever lifetime the fault says; the tokens stay valid.
    for expires_in in [json!(0), json!(9_223_372_036_854_775_808u64), json!("soon")] {
        set(json!({"hms": {"expires_in": expires_in}}));
        let a = hms_token_answer(&mut c).await;
        assert_eq!(a.json()["expires_in"], expires_in);
        let fresh = a.json()["access_token"].as_str().unwrap().to_owned();
        set(json!({}));
        assert_eq!(c.send(hms_send(app, &fresh), msg.clone()).await.json()["code"], "80000000");
    }
}

#[tokio::test]
async fn fault_429_with_retry_after_then_success() {
    let fx = fixture();
    let sims = start().await;
    let control = sims.control_addr().unwrap();
    let (status, _) =
        control_post_faults(control, json!({"apns": {"status": [{"status": 429, "count": 1, "retry_after": 3}]}}))
            .await;
    assert_eq!(status, 200);

    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let jwt = apns_jwt(&fx.creds, now());
    let req = || apns_request(&apns_token(5), Some(&jwt), Some(&fx.creds.bundle_id)).body(()).unwrap();
    let a = c.send(req(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 429);
    assert_eq!(a.header("retry-after"), Some("3"));
    assert_eq!(a.json()["reason"], "TooManyRequests");
    let a = c.send(req(), APNS_PAYLOAD).await;
    assert_eq!(a.status, 200);

    let stats = sims.stats().apns;
    assert_eq!((stats.accepted, stats.rejected), (1, 1));
    assert_eq!(stats.by_reason["TooManyRequests"], 1);
    assert_eq!(sims.accepted(Provider::Apns)[&apns_token(5)], 1);

    // FCM: 503 UNAVAILABLE, then dead token via the fault list.
    sims.set_faults(Faults {
        fcm: ProviderFaults {
            dead_tokens: vec!["gone".into()],
            status: vec![StatusFault { status: 503, count: Some(1), ..Default::default() }],
            ..Default::default()
        },
        ..Default::default()
    });
    let mut f = h2_connect(sims.fcm_addr(), &sims.ca_pem(), None).await;
    let token = fcm_access_token(&mut f).await;
    let project = &fx.creds.fcm_project_id;
    let a = f.send(fcm_send(project, &token), json!({"message": {"token": "t1"}}).to_string()).await;
    assert_eq!(a.status, 503);
    assert_eq!(a.json()["error"]["status"], "UNAVAILABLE");
    let a = f.send(fcm_send(project, &token), json!({"message": {"token": "gone"}}).to_string()).await;
    assert_eq!(a.status, 404);
    let a = f.send(fcm_send(project, &token), json!({"message": {"token": "t1"}}).to_string()).await;
    assert_eq!(a.status, 200);

    // {} clears every fault.
    let (status, v) = control_post_faults(control, json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(v, json!({}));
    let a = f.send(fcm_send(project, &token), json!({"message": {"token": "gone"}}).to_string()).await;
    assert_eq!(a.status, 200);
}

async fn control_post_faults(addr: std::net::SocketAddr, v: Value) -> (http::StatusCode, Value) {
    control(addr, "POST", "/faults", &v.to_string()).await
}

#[tokio::test]
async fn goaway_after_n_streams() {
    let fx = fixture();
    let sims = start().await;
    sims.set_faults(Faults {
        apns: ProviderFaults { goaway_after_streams: Some(2), ..Default::default() },
        ..Default::default()
    });
    let jwt = apns_jwt(&fx.creds, now());
    let req = |n| apns_request(&apns_token(n), Some(&jwt), Some(&fx.creds.bundle_id)).body(()).unwrap();
    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    assert_eq!(c.send(req(1), APNS_PAYLOAD).await.status, 200);
    assert_eq!(c.send(req(2), APNS_PAYLOAD).await.status, 200);
    // The server closes the connection after the second stream.
    tokio::time::timeout(Duration::from_secs(5), &mut c.conn).await.expect("connection closed after GOAWAY").unwrap();
    assert!(c.try_send(req(3), APNS_PAYLOAD).await.is_err());

    // A reconnecting client gets everything through.
    for n in 10..15 {
        let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
        assert_eq!(c.send(req(n), APNS_PAYLOAD).await.status, 200);
    }
    let stats = sims.stats().apns;
    assert_eq!(stats.accepted, 7);
    assert!(stats.goaways >= 1);
    assert_eq!(stats.connections, 6);
}

#[tokio::test]
async fn advertises_max_concurrent_streams() {
    let sims = start_with(|cfg| cfg.max_concurrent_streams = 7).await;
    let tls = {
        let cfg = client_config(&sims.ca_pem(), None, &[b"h2"]);
        let tcp = tokio::net::TcpStream::connect(sims.apns_addr()).await.unwrap();
        tokio_rustls::TlsConnector::from(cfg)
            .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap()
    };
    let (send, mut conn) = h2::client::handshake(tls).await.unwrap();
    // Drive the connection until the server's SETTINGS arrived (a request round trip).
    let request = async {
        let mut send = send.ready().await.unwrap();
        let (resp, _) = send.send_request(post("/nope").body(()).unwrap(), true).unwrap();
        resp.await.unwrap().status()
    };
    let status = tokio::select! {
        s = request => s,
        _ = &mut conn => panic!("connection ended"),
    };
    assert_eq!(status, 404);
    assert_eq!(conn.max_concurrent_send_streams(), 7);

    // The fault overrides it for new connections.
    sims.set_faults(Faults {
        apns: ProviderFaults { max_concurrent_streams: Some(3), ..Default::default() },
        ..Default::default()
    });
    let tls = {
        let cfg = client_config(&sims.ca_pem(), None, &[b"h2"]);
        let tcp = tokio::net::TcpStream::connect(sims.apns_addr()).await.unwrap();
        tokio_rustls::TlsConnector::from(cfg)
            .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap()
    };
    let (send, mut conn) = h2::client::handshake(tls).await.unwrap();
    let request = async {
        let mut send = send.ready().await.unwrap();
        let (resp, _) = send.send_request(post("/nope").body(()).unwrap(), true).unwrap();
        resp.await.unwrap().status()
    };
    tokio::select! {
        _ = request => {},
        _ = &mut conn => panic!("connection ended"),
    };
    assert_eq!(conn.max_concurrent_send_streams(), 3);
}

#[tokio::test]
async fn connection_reset_fault_drops_the_connection() {
    let fx = fixture();
    let sims = start().await;
    sims.set_faults(Faults {
        apns: ProviderFaults { reset_connection_rate: Some(1.0), ..Default::default() },
        ..Default::default()
    });
    let jwt = apns_jwt(&fx.creds, now());
    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        c.try_send(apns_request(&apns_token(1), Some(&jwt), Some(&fx.creds.bundle_id)).body(()).unwrap(), APNS_PAYLOAD),
    )
    .await
    .unwrap();
    assert!(r.is_err());
    let stats = sims.stats().apns;
    assert_eq!(stats.accepted, 0);
    assert_eq!(stats.connection_resets, 1);
}

// ---- Control API --------------------------------------------------------------------------

#[tokio::test]
async fn control_api_stats_requests_accepted_reset() {
    let fx = fixture();
    let sims = start().await;
    let control_addr = sims.control_addr().unwrap();
    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let jwt = apns_jwt(&fx.creds, now());
    for n in [1, 1, 2] {
        let a = c
            .send(apns_request(&apns_token(n), Some(&jwt), Some(&fx.creds.bundle_id)).body(()).unwrap(), APNS_PAYLOAD)
            .await;
        assert_eq!(a.status, 200);
    }

    let (status, stats) = control(control_addr, "GET", "/stats", "").await;
    assert_eq!(status, 200);
    assert_eq!(stats["apns"]["accepted"], 3);
    assert_eq!(stats["apns"]["connections"], 1);
    assert_eq!(stats["fcm"]["accepted"], 0);
    let parsed: herald_sim::Stats = serde_json::from_value(stats).unwrap();
    assert_eq!(parsed.apns.distinct_tokens, 2);

    let (_, v) = control(control_addr, "GET", "/requests?provider=apns&limit=1", "").await;
    let reqs = v["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r["method"], "POST");
    assert_eq!(r["path"], format!("/3/device/{}", apns_token(2)));
    assert_eq!(r["headers"]["apns-topic"], fx.creds.bundle_id.as_str());
    assert_eq!(r["body"]["aps"]["alert"]["title"], "Hi");
    assert_eq!(r["status"], 200);
    assert_eq!(r["version"], "HTTP/2.0");

    let (_, v) = control(control_addr, "GET", "/accepted?provider=apns", "").await;
    assert_eq!(v["tokens"][apns_token(1)], 2);
    assert_eq!(v["tokens"][apns_token(2)], 1);
    assert_eq!(v["total"], 3);

    let (status, _) = control(control_addr, "POST", "/faults", "{\"apns\": {\"nope\": 1}}").await;
    assert_eq!(status, 400);
    let (status, ca) = control(control_addr, "GET", "/ca.pem", "").await;
    assert_eq!(status, 200);
    assert!(ca.as_str().unwrap().contains("BEGIN CERTIFICATE"));

    let (status, _) = control(control_addr, "POST", "/reset", "").await;
    assert_eq!(status, 200);
    let (_, stats) = control(control_addr, "GET", "/stats", "").await;
    assert_eq!(stats["apns"]["accepted"], 0);
    assert_eq!(stats["apns"]["open_connections"], 1);
    let (_, v) = control(control_addr, "GET", "/requests?provider=apns", "").await;
    assert_eq!(v["requests"], json!([]));
    let (_, v) = control(control_addr, "GET", "/accepted?provider=apns", "").await;
    assert_eq!(v["tokens"], json!({}));
    sims.shutdown().await;
}

#[tokio::test]
async fn generated_credentials_files() {
    let fx = fixture();
    let c = &fx.creds;
    for f in [
        "apns_key.p8",
        "apns.json",
        "apns_cert.pem",
        "apns_cert_key.pem",
        "fcm_service_account.json",
        "hms.json",
        "app.json",
        "endpoints.json",
        "ca.pem",
    ] {
        assert!(c.dir.join(f).is_file(), "{f}");
    }
    let apns: Value = serde_json::from_slice(&std::fs::read(c.dir.join("apns.json")).unwrap()).unwrap();
    assert_eq!(apns["keyId"].as_str().unwrap().len(), 10);
    assert_eq!(apns["teamId"].as_str().unwrap().len(), 10);
    assert_eq!(apns["bundleId"], "com.herald.demo");
    let p8 = std::fs::read(&c.apns_key_path).unwrap();
    assert!(p8.starts_with(b"-----BEGIN PRIVATE KEY-----"));

    let sa: Value = serde_json::from_str(&c.fcm_service_account_json).unwrap();
    assert_eq!(sa["type"], "service_account");
    assert!(sa["private_key"].as_str().unwrap().starts_with("-----BEGIN PRIVATE KEY-----"));
    assert!(sa["token_uri"].as_str().unwrap().ends_with("/token"));
    for k in ["project_id", "private_key_id", "client_email", "client_id"] {
        assert!(sa[k].is_string(), "{k}");
    }

    let app: Value = serde_json::from_slice(&std::fs::read(&c.app_json_path).unwrap()).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    assert_eq!(b64.decode(app["iosApnsPrivateKey"].as_str().unwrap()).unwrap(), p8);
    let sa_bytes = b64.decode(app["fcmServiceAccountJSON"].as_str().unwrap()).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&sa_bytes).unwrap(), sa);
    assert_eq!(app["categories"], json!(["chat", "payment", "tms"]));
    assert_eq!(app["iosApnsKeyId"], apns["keyId"]);
    assert_eq!(app["iosIsDevelopment"], false);
    assert_eq!(app["hpkClientId"], c.hms_client_id.as_str());
    assert!(app.get("appName").is_none());
    assert!(fx.cert_dir.join("creds").join(&c.name).join("registration.json").is_file());
}

#[tokio::test]
async fn credentials_generated_after_start_are_accepted() {
    let sims = start().await;
    let dir = tempfile::tempdir().unwrap();
    // A separate cert dir would need its own simulators: reuse the shared one.
    let creds = sims.generate_credentials(dir.path()).unwrap();
    let mut c = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
    let a = c
        .send(
            apns_request(&apns_token(1), Some(&apns_jwt(&creds, now())), Some(&creds.bundle_id)).body(()).unwrap(),
            APNS_PAYLOAD,
        )
        .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
}

/// Throughput of the APNs hot path. Run with
/// `cargo test -p herald-sim --release --test simulators apns_throughput -- --ignored --nocapture`
/// (`SIM_LOAD_REQUESTS`, default 200 000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn apns_throughput() {
    let fx = fixture();
    let sims = start().await;
    let total: u64 = std::env::var("SIM_LOAD_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let (connections, per_connection) = (4u64, 250u64);
    let workers = connections * per_connection;
    let jwt = std::sync::Arc::new(apns_jwt(&fx.creds, now()));
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let h = h2_connect(sims.apns_addr(), &sims.ca_pem(), None).await;
        for w in 0..per_connection {
            let mut send = h.send.clone();
            let jwt = jwt.clone();
            let bundle = fx.creds.bundle_id.clone();
            let worker = c * per_connection + w;
            tasks.push(tokio::spawn(async move {
                let mut n = worker;
                while n < total {
                    let req = apns_request(&apns_token(n), Some(&jwt), Some(&bundle)).body(()).unwrap();
                    send = send.ready().await.unwrap();
                    let (resp, mut stream) = send.send_request(req, false).unwrap();
                    stream.send_data(bytes::Bytes::from_static(APNS_PAYLOAD.as_bytes()), true).unwrap();
                    let resp = resp.await.unwrap();
                    assert_eq!(resp.status(), 200);
                    n += workers;
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = started.elapsed();
    let stats = sims.stats().apns;
    println!(
        "{total} requests in {elapsed:?}: {:.0} req/s, jwt verifications {}",
        total as f64 / elapsed.as_secs_f64(),
        stats.jwt_verifications
    );
    assert_eq!(stats.accepted, total);
    assert_eq!(stats.distinct_tokens, total);
    assert_eq!(stats.jwt_verifications, connections);
}
