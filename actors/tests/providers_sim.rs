//! The provider wire formats and auth against the real simulators of
//! `herald-sim`: what `providers::{apns, fcm, hms}` build is what the simulated
//! APNs, FCM and HMS accept, and their answers parse to the right outcomes.
//!
//! Requests go through a plain hyper-util HTTP/2 client (not the engine's pool),
//! so these tests check only the formats, auth and answer mapping.

// Tests assert by unwrapping and panicking, and compute with small numbers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use herald_actors::guard::EndpointPolicy;
use herald_actors::providers::auth_http::AuthHttp;
use herald_actors::providers::fcm::{Assertion, FcmAuth, ServiceAccount};
use herald_actors::providers::hms::{ClientCredentials, HmsAuth};
use herald_actors::providers::{apns, fcm, hms, Bearer, Notification, Outcome, Priority, WireRequest, MAX_PAYLOAD};
use herald_sim::{generate_credentials, Credentials, Faults, SimConfig, SimUrls, Simulators};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    cert_dir: PathBuf,
    creds: Credentials,
}

/// One credential set per test binary: its RSA key is slow to make in debug builds.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let cert_dir = dir.path().join("certs");
        // The URLs are placeholders: each test's simulators listen on their own
        // ports, and the service account's token_uri is replaced below.
        let urls = SimUrls {
            cert_dir: cert_dir.clone(),
            apns_url: "https://127.0.0.1:1".into(),
            fcm_url: "https://127.0.0.1:2".into(),
            hms_url: "https://127.0.0.1:3".into(),
            webpush_url: "https://127.0.0.1:4".into(),
        };
        let creds = generate_credentials(&dir.path().join("creds"), &urls).unwrap();
        Fixture { _dir: dir, cert_dir, creds }
    })
}

async fn start() -> Simulators {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Simulators::start(SimConfig::local(&fixture().cert_dir)).await.unwrap()
}

fn tls(ca_pem: &str) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth()
}

/// The OAuth client, trusting the simulators' CA and their loopback addresses.
fn auth_http(sims: &Simulators) -> AuthHttp {
    AuthHttp::new(Arc::new(tls(&sims.ca_pem())), EndpointPolicy::new([], true))
}

/// An HTTP/2-only client trusting the simulators' CA.
struct H2 {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl H2 {
    fn new(ca_pem: &str) -> H2 {
        let https =
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls(ca_pem)).https_only().enable_http2().build();
        H2 { client: Client::builder(TokioExecutor::new()).http2_only(true).build(https) }
    }

    /// POSTs `req` to `base` + its path; returns (status, headers, body).
    async fn post(&self, base: &str, req: &WireRequest) -> (u16, http::HeaderMap, Bytes) {
        let mut builder = http::Request::post(format!("{base}{}", req.path));
        for (k, v) in &req.headers {
            builder = builder.header(k, v);
        }
        let request = builder.body(Full::new(req.body.clone())).unwrap();
        let response = self.client.request(request).await.unwrap();
        assert_eq!(response.version(), http::Version::HTTP_2);
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, headers, body)
    }
}

fn notification() -> Notification {
    let mut n = Notification {
        id: "01HZX5J3K9Q8W7E6R5T4Y3U2I1".into(),
        category: "payment".into(),
        title: Some("Payment".into()),
        body: Some("You paid 10 EUR".into()),
        title_loc_args: vec!["x".into()],
        sound: Some("default".into()),
        collapse_key: Some("payments".into()),
        time_to_live: Some(3600),
        priority: Priority::High,
        sender: Some(("acme".into(), "user-1".into())),
        ..Default::default()
    };
    n.custom_data.insert("amount".into(), json!(10));
    n.custom_data.insert("currency".into(), json!("EUR"));
    n
}

fn apns_token(n: u64) -> String {
    format!("{n:064x}")
}

fn is_dead(o: &Outcome) -> bool {
    matches!(o, Outcome::Dead { .. })
}

#[tokio::test]
async fn apns_accepts_what_we_send() {
    let fx = fixture();
    let sims = start().await;
    let h2 = H2::new(&sims.ca_pem());
    let jwt =
        apns::ApnsJwt::new(fx.creds.apns_key_pem.as_bytes(), &fx.creds.apns_key_id, &fx.creds.apns_team_id).unwrap();
    let base = sims.apns_url();

    let payload = apns::prepare(&notification(), &fx.creds.bundle_id).unwrap();
    for i in 1..=2 {
        let (status, headers, body) = h2.post(&base, &payload.request(&apns_token(i), Some(&jwt.current()))).await;
        let outcome = apns::parse_response(status, &headers, &body);
        assert!(matches!(&outcome, Outcome::Sent { id: Some(id) } if id.len() == 36), "{outcome:?}");
    }

    // A silent push (background, priority 5).
    let mut silent = notification();
    silent.silent = true;
    let payload = apns::prepare(&silent, &fx.creds.bundle_id).unwrap();
    let (status, headers, body) = h2.post(&base, &payload.request(&apns_token(3), Some(&jwt.current()))).await;
    assert!(matches!(apns::parse_response(status, &headers, &body), Outcome::Sent { .. }));

    // A dead token, and a malformed one.
    let dead = format!("dead{}", &apns_token(4)[4..]);
    let (status, headers, body) = h2.post(&base, &payload.request(&dead, Some(&jwt.current()))).await;
    let outcome = apns::parse_response(status, &headers, &body);
    assert_eq!(outcome, Outcome::Dead { status: 410, reason: "Unregistered".into() });
    let (status, headers, body) = h2.post(&base, &payload.request("xyz", Some(&jwt.current()))).await;
    assert_eq!(
        apns::parse_response(status, &headers, &body),
        Outcome::Dead { status: 400, reason: "BadDeviceToken".into() }
    );

    // A JWT of an unknown key is refused: AuthRefused.
    let stranger = apns::ApnsJwt::new(fx.creds.apns_key_pem.as_bytes(), "UNKNOWN123", &fx.creds.apns_team_id).unwrap();
    let (status, headers, body) = h2.post(&base, &payload.request(&apns_token(5), Some(&stranger.current()))).await;
    assert_eq!(
        apns::parse_response(status, &headers, &body),
        Outcome::AuthRefused { status: 403, reason: "InvalidProviderToken".into() }
    );

    let stats = sims.stats().apns;
    assert_eq!(stats.accepted, 3, "{stats:?}");
    assert_eq!(stats.by_reason.get("Unregistered"), Some(&1));
}

#[tokio::test]
async fn apns_payload_limit_matches_the_simulator() {
    let fx = fixture();
    let sims = start().await;
    let h2 = H2::new(&sims.ca_pem());
    let jwt =
        apns::ApnsJwt::new(fx.creds.apns_key_pem.as_bytes(), &fx.creds.apns_key_id, &fx.creds.apns_team_id).unwrap();
    let mut n = notification();
    n.custom_data.insert("pad".into(), json!(""));
    let fill = MAX_PAYLOAD - apns::prepare(&n, &fx.creds.bundle_id).unwrap().body().len();
    n.custom_data.insert("pad".into(), json!("x".repeat(fill)));
    let payload = apns::prepare(&n, &fx.creds.bundle_id).unwrap();
    assert_eq!(payload.body().len(), MAX_PAYLOAD);
    let (status, headers, body) =
        h2.post(&sims.apns_url(), &payload.request(&apns_token(9), Some(&jwt.current()))).await;
    assert!(matches!(apns::parse_response(status, &headers, &body), Outcome::Sent { .. }));

    n.custom_data.insert("pad".into(), json!("x".repeat(fill + 1)));
    let e = apns::prepare(&n, &fx.creds.bundle_id).unwrap_err();
    assert_eq!(e.status, 413);
}

fn service_account(sims: &Simulators) -> ServiceAccount {
    let mut sa = ServiceAccount::from_json(fixture().creds.fcm_service_account_json.as_bytes()).unwrap();
    sa.token_uri = sims.fcm_token_url();
    sa
}

#[tokio::test]
async fn fcm_accepts_what_we_send() {
    let sims = start().await;
    let h2 = H2::new(&sims.ca_pem());
    let sa = service_account(&sims);
    let project = sa.project_id.clone();
    let auth = FcmAuth::new(Assertion::new(sa).unwrap(), auth_http(&sims));
    let bearer = auth.token().await.unwrap();
    assert!(bearer.token().starts_with("ya29."), "{bearer:?}");
    assert_eq!(auth.token().await.unwrap().token(), bearer.token(), "cached");
    let base = sims.fcm_url();

    let payload = fcm::prepare(&notification()).unwrap();
    let (status, headers, body) =
        h2.post(&base, &payload.request(&project, "fcm-token-1:APA91b", Some(&bearer)).unwrap()).await;
    let outcome = fcm::parse_response(status, &headers, &body);
    assert!(
        matches!(&outcome, Outcome::Sent { id: Some(name) } if name.starts_with(&format!("projects/{project}/messages/"))),
        "{outcome:?}"
    );

    let mut silent = notification();
    silent.silent = true;
    silent.priority = Priority::Low;
    let payload = fcm::prepare(&silent).unwrap();
    let (status, headers, body) =
        h2.post(&base, &payload.request(&project, "fcm-token-2", Some(&bearer)).unwrap()).await;
    assert!(matches!(fcm::parse_response(status, &headers, &body), Outcome::Sent { .. }));

    let (status, headers, body) =
        h2.post(&base, &payload.request(&project, "dead-fcm-token", Some(&bearer)).unwrap()).await;
    assert_eq!(
        fcm::parse_response(status, &headers, &body),
        Outcome::Dead { status: 404, reason: "UNREGISTERED".into() }
    );

    // A bearer FCM does not know: AuthRefused.
    let (status, headers, body) = h2
        .post(
            &base,
            &payload.request(&project, "fcm-token-3", Some(&Bearer::new("Bearer", "ya29.forged").unwrap())).unwrap(),
        )
        .await;
    assert!(matches!(fcm::parse_response(status, &headers, &body), Outcome::AuthRefused { status: 401, .. }));

    // An injected 429 is a retry after the announced delay.
    let faults: Faults =
        serde_json::from_value(json!({"fcm": {"status": [{"status": 429, "count": 1, "retry_after": 2}]}})).unwrap();
    sims.set_faults(faults);
    let (status, headers, body) =
        h2.post(&base, &payload.request(&project, "fcm-token-4", Some(&bearer)).unwrap()).await;
    assert_eq!(
        fcm::parse_response(status, &headers, &body),
        Outcome::Retry {
            status: 429,
            reason: "QUOTA_EXCEEDED: Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com'.".into(),
            after: Some(Duration::from_secs(2))
        }
    );

    let stats = sims.stats().fcm;
    assert_eq!(stats.accepted, 2, "{stats:?}");
    assert_eq!(stats.token_grants, 1);
}

#[tokio::test]
async fn fcm_payload_limit_matches_the_simulator() {
    let sims = start().await;
    let h2 = H2::new(&sims.ca_pem());
    let sa = service_account(&sims);
    let project = sa.project_id.clone();
    let auth = FcmAuth::new(Assertion::new(sa).unwrap(), auth_http(&sims));
    let bearer = auth.token().await.unwrap();

    // Grow the data until one more byte is refused, and check the simulator
    // takes the largest message we accept.
    let mut n = notification();
    let mut fill = 3000;
    loop {
        n.custom_data.insert("pad".into(), json!("x".repeat(fill + 1)));
        if fcm::prepare(&n).is_err() {
            break;
        }
        fill += 1;
    }
    assert_eq!(fcm::prepare(&n).unwrap_err().status, 413);
    n.custom_data.insert("pad".into(), json!("x".repeat(fill)));
    let payload = fcm::prepare(&n).unwrap();
    let (status, headers, body) =
        h2.post(&sims.fcm_url(), &payload.request(&project, "fcm-token-big", Some(&bearer)).unwrap()).await;
    let outcome = fcm::parse_response(status, &headers, &body);
    assert!(matches!(outcome, Outcome::Sent { .. }), "{outcome:?}");
}

#[tokio::test]
async fn hms_accepts_what_we_send() {
    let fx = fixture();
    let sims = start().await;
    let h2 = H2::new(&sims.ca_pem());
    let auth = HmsAuth::new(
        ClientCredentials::new(&fx.creds.hms_client_id, &fx.creds.hms_client_secret, &sims.hms_token_url()),
        auth_http(&sims),
    );
    let bearer = auth.token().await.unwrap();
    let app = &fx.creds.hms_client_id;
    let base = sims.hms_url();

    let payload = hms::prepare(&notification()).unwrap();
    let tokens = ["hms-token-1", "dead-hms-token", "hms-token-2"];
    let (status, headers, body) = h2.post(&base, &payload.request(app, &tokens, Some(&bearer)).unwrap()).await;
    let outcomes = hms::parse_response(status, &headers, &body, &tokens);
    assert_eq!(outcomes.len(), 3);
    assert!(matches!(outcomes[0], Outcome::Sent { id: Some(_) }), "{outcomes:?}");
    assert!(is_dead(&outcomes[1]), "{outcomes:?}");
    assert!(matches!(outcomes[2], Outcome::Sent { .. }), "{outcomes:?}");

    let mut silent = notification();
    silent.silent = true;
    silent.collapse_key = Some("42".into());
    let payload = hms::prepare(&silent).unwrap();
    let tokens = ["hms-token-3"];
    let (status, headers, body) = h2.post(&base, &payload.request(app, &tokens, Some(&bearer)).unwrap()).await;
    assert!(matches!(hms::parse_response(status, &headers, &body, &tokens)[0], Outcome::Sent { .. }));

    let tokens = ["dead-1", "dead-2"];
    let (status, headers, body) = h2.post(&base, &payload.request(app, &tokens, Some(&bearer)).unwrap()).await;
    let outcomes = hms::parse_response(status, &headers, &body, &tokens);
    assert!(outcomes.iter().all(is_dead), "{outcomes:?}");

    // A bearer Huawei does not know: AuthRefused for every token.
    let tokens = ["hms-token-4", "hms-token-5"];
    let (status, headers, body) =
        h2.post(&base, &payload.request(app, &tokens, Some(&Bearer::new("Bearer", "forged").unwrap())).unwrap()).await;
    let outcomes = hms::parse_response(status, &headers, &body, &tokens);
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::AuthRefused { status: 401, .. })), "{outcomes:?}");

    let stats = sims.stats().hms;
    assert_eq!(stats.accepted, 3, "{stats:?}");
    assert_eq!(stats.token_grants, 1);
}

#[tokio::test]
async fn hms_payload_limit_matches_the_simulator() {
    let fx = fixture();
    let sims = start().await;
    let h2 = H2::new(&sims.ca_pem());
    let auth = HmsAuth::new(
        ClientCredentials::new(&fx.creds.hms_client_id, &fx.creds.hms_client_secret, &sims.hms_token_url()),
        auth_http(&sims),
    );
    let bearer = auth.token().await.unwrap();

    let mut n = notification();
    let mut fill = 3000;
    loop {
        n.custom_data.insert("pad".into(), json!("x".repeat(fill + 1)));
        if hms::prepare(&n).is_err() {
            break;
        }
        fill += 1;
    }
    assert_eq!(hms::prepare(&n).unwrap_err().status, 413);
    n.custom_data.insert("pad".into(), json!("x".repeat(fill)));
    let payload = hms::prepare(&n).unwrap();
    // A long token list does not count towards the limit.
    let tokens: Vec<String> = (0..100).map(|i| format!("hms-token-{i:0>60}")).collect();
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let (status, headers, body) =
        h2.post(&sims.hms_url(), &payload.request(&fx.creds.hms_client_id, &tokens, Some(&bearer)).unwrap()).await;
    let outcomes = hms::parse_response(status, &headers, &body, &tokens);
    assert!(outcomes.iter().all(|o| matches!(o, Outcome::Sent { .. })), "{:?}", outcomes[0]);
}
