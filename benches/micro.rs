//! Criterion micro-benchmarks of the per-request work on Herald's hot paths
//! (`cargo bench --bench micro`, about a minute):
//!
//! - `format/*`: a notification formatted per provider, once per notification
//!   (`prepare`) and once per token (`request`), as a broadcast does it.
//! - `apns_jwt/*`: the APNs provider token: loading the `.p8` key and signing
//!   (`ApnsJwt::new`), signing alone (a clock that makes every call stale),
//!   and the per-request path that reuses the token in force (`current`).
//! - `access_token/*`: Herald's own access-token check on every API request
//!   (`herald::auth::tokens::verify`) for a token seen before (`verify_cached`)
//!   and one not seen before (`verify_cold`: header, tenant key, ES256
//!   signature with jsonwebtoken's RustCrypto backend, claims); signing one;
//!   and for comparison the same signature checked with ring alone
//!   (`signature_only_ring`).
//! - `send_body/*`: the send API's body decoded strictly into
//!   `PushNotificationEvent` and validated (`into_parts`).
//!
//! Durable storage writes with grouped flushes are measured by
//! `cargo bench -p herald-storage --bench storage` and not repeated here.

// Benchmarks and examples: a failure is a visible abort, not a served request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use herald::auth::tokens::{self, AccessClaims, RoleSet};
use herald::auth::KeyCache;
use herald::models::push::PushNotificationEvent;
use herald_actors::providers::apns::{self, ApnsJwt};
use herald_actors::providers::{fcm, hms, Bearer, Notification, Priority};
use herald_storage::{Store, StoreOptions};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Small samples: the whole file runs in about a minute.
fn quick<'a>(c: &'a mut Criterion, name: &str) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    g
}

/// The load benchmark's notification, and one with every optional field.
fn notifications() -> [(&'static str, Notification); 2] {
    let small = Notification {
        id: "01JD0000000000000000000000".into(),
        category: "chat".into(),
        title: Some("x".into()),
        body: Some("y".into()),
        ..Notification::default()
    };
    let mut custom = serde_json::Map::new();
    custom.insert("orderId".into(), serde_json::json!("A-1029384756"));
    custom.insert("amount".into(), serde_json::json!(129.90));
    custom.insert("items".into(), serde_json::json!([{"sku": "X1", "qty": 2}]));
    let full = Notification {
        id: "01JD0000000000000000000001".into(),
        category: "payment".into(),
        title: Some("Payment received".into()),
        title_loc_key: Some("PAYMENT_TITLE".into()),
        title_loc_args: vec!["ACME".into()],
        body: Some("You received 129.90 EUR from ACME Corp. for order A-1029384756".into()),
        body_loc_key: Some("PAYMENT_BODY".into()),
        body_loc_args: vec!["129.90".into(), "EUR".into(), "ACME Corp.".into()],
        sound: Some("cash.caf".into()),
        icon: Some("ic_payment".into()),
        collapse_key: Some("payments".into()),
        time_to_live: Some(3600),
        priority: Priority::High,
        silent: false,
        custom_data: custom,
        sender: Some(("acme".into(), "cashier-7".into())),
    };
    [("small", small), ("full", full)]
}

const APNS_TOKEN: &str = "00000000000000000000000000000000000000000000000000000001000a1b2c";
const BEARER: &str = "ya29.sim.0123456789abcdef0123456789abcdef0123456789abcdef";

fn format(c: &mut Criterion) {
    let mut g = quick(c, "format");
    // Issued once per credential, as the authorizers do.
    let bearer = Bearer::new("Bearer", BEARER).expect("bearer");
    let bearer = Some(&bearer);
    for (name, n) in notifications() {
        g.bench_with_input(BenchmarkId::new("apns_prepare", name), &n, |b, n| {
            b.iter(|| apns::prepare(black_box(n), "com.herald.demo").expect("apns"))
        });
        let p = apns::prepare(&n, "com.herald.demo").expect("apns");
        g.bench_with_input(BenchmarkId::new("apns_request", name), &p, |b, p| {
            b.iter(|| p.request(black_box(APNS_TOKEN), bearer))
        });
        g.bench_with_input(BenchmarkId::new("fcm_prepare", name), &n, |b, n| {
            b.iter(|| fcm::prepare(black_box(n)).expect("fcm"))
        });
        let p = fcm::prepare(&n).expect("fcm");
        g.bench_with_input(BenchmarkId::new("fcm_request", name), &p, |b, p| {
            b.iter(|| {
                p.request("herald-demo", black_box("fcm-registration-token-0123456789"), bearer).expect("fcm request")
            })
        });
        g.bench_with_input(BenchmarkId::new("hms_prepare", name), &n, |b, n| {
            b.iter(|| hms::prepare(black_box(n)).expect("hms"))
        });
        let p = hms::prepare(&n).expect("hms");
        g.bench_with_input(BenchmarkId::new("hms_request", name), &p, |b, p| {
            b.iter(|| p.request("123456789", &[black_box("hms-token-0123456789")], bearer).expect("hms request"))
        });
    }
    g.finish();
}

/// A fresh `.p8` (PKCS#8 PEM P-256 key), as Apple hands them out.
fn p8_key() -> Vec<u8> {
    use base64::Engine as _;
    let rng = ring::rand::SystemRandom::new();
    let der = ring::signature::EcdsaKeyPair::generate_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .expect("key generation");
    let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    pem.into_bytes()
}

fn apns_jwt(c: &mut Criterion) {
    let key = p8_key();
    let mut g = quick(c, "apns_jwt");
    g.bench_function("new_load_key_and_sign", |b| {
        b.iter(|| ApnsJwt::new(black_box(&key), "ABCDE12345", "TEAM123456").expect("jwt"))
    });
    // A clock one hour further at every reading: every `current` signs anew.
    let t = Arc::new(AtomicU64::new(1_700_000_000));
    let clock: apns::Clock = Arc::new(move || t.fetch_add(3600, Ordering::Relaxed));
    let signing = ApnsJwt::with_clock(&key, "ABCDE12345", "TEAM123456", clock).expect("jwt");
    g.bench_function("sign", |b| b.iter(|| signing.current()));
    let cached = ApnsJwt::new(&key, "ABCDE12345", "TEAM123456").expect("jwt");
    g.bench_function("current_cached", |b| b.iter(|| cached.current()));
    g.finish();
}

fn access_token(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&StoreOptions::new(dir.path().join("data"))).expect("store");
    let body = herald::models::tenant::CreateTenant {
        tenant_id: "acme".into(),
        admin_username: "admin".into(),
        admin_password: "admin-password-1".into(),
    };
    herald::api::tenants::create_tenant(&store, &body).expect("tenant");
    let keys = KeyCache::default();
    let key = keys.get(&store, "acme").expect("key").expect("tenant key");
    let public_url = "http://127.0.0.1:8080";
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
    let claims = AccessClaims {
        exp: now + 3600,
        iat: now,
        iat_ms: now * 1000,
        jti: "01JD0000000000000000000002".into(),
        iss: tokens::issuer(public_url, "acme"),
        aud: "account".into(),
        sub: "6f1c2d3e-0000-4000-8000-000000000001".into(),
        typ: tokens::TYP_ACCESS.into(),
        azp: "herald-cli".into(),
        session_state: "01JD0000000000000000000003".into(),
        scope: "openid profile email".into(),
        realm_access: RoleSet { roles: vec!["admin".into()] },
        resource_access: Default::default(),
        preferred_username: "admin".into(),
        email: None,
        ast_client_id: None,
    };
    let token = tokens::sign(&key, &claims).expect("sign");
    let mut g = quick(c, "access_token");
    // A token seen before: Herald remembers verified tokens (what a backend
    // reusing its token pays per request).
    g.bench_function("verify_cached", |b| {
        b.iter(|| tokens::verify(&store, &keys, public_url, black_box(&token), tokens::TYP_ACCESS).expect("verify"))
    });
    // A token not seen before: the ES256 signature check itself (a fresh
    // cache per iteration, its tenant key already loaded outside the timing).
    g.bench_function("verify_cold", |b| {
        b.iter_batched(
            || {
                let fresh = KeyCache::default();
                fresh.get(&store, "acme").expect("key").expect("tenant key");
                fresh
            },
            // Answering the cache too: it is dropped outside the timing.
            |fresh| {
                let verified = tokens::verify(&store, &fresh, public_url, black_box(&token), tokens::TYP_ACCESS);
                (verified.expect("verify"), fresh)
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("sign", |b| b.iter(|| tokens::sign(&key, black_box(&claims)).expect("sign")));
    // For comparison: the same token's ES256 signature checked with ring (the
    // crypto provider Herald uses everywhere else), claims not decoded.
    let public = {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut point = vec![4u8];
        point.extend(b64.decode(&key.x).expect("x"));
        point.extend(b64.decode(&key.y).expect("y"));
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
    };
    g.bench_function("signature_only_ring", |b| {
        b.iter(|| {
            use base64::Engine as _;
            let token = black_box(token.as_str());
            let (input, sig) = token.rsplit_once('.').expect("JWT");
            let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(sig).expect("signature");
            public.verify(input.as_bytes(), &sig).expect("valid signature")
        })
    });
    g.finish();
}

fn send_body(c: &mut Criterion) {
    let bodies = [
        (
            "one_client",
            serde_json::json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": "alice", "astClientId": "01JD0000000000000000000004"}, "payload": {"message": {"title": "x", "body": "y"}}}),
        ),
        (
            "topic",
            serde_json::json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "all"}, "payload": {"message": {"title": "x", "body": "y"}}}),
        ),
        (
            "full",
            serde_json::json!({
                "category": "payment",
                "recipient": {"tenantId": "acme", "userId": "alice", "astClientId": "01JD0000000000000000000004"},
                "sender": {"tenantId": "acme", "userId": "cashier-7"},
                "payload": {
                    "message": {"title": "Payment received", "titleLocKey": "PAYMENT_TITLE", "titleLocArgs": ["ACME"],
                        "body": "You received 129.90 EUR from ACME Corp. for order A-1029384756", "bodyLocKey": "PAYMENT_BODY",
                        "bodyLocArgs": ["129.90", "EUR", "ACME Corp."], "sound": "cash.caf", "icon": "ic_payment",
                        "collapseKey": "payments", "timeToLive": 3600, "priority": "HIGH"},
                    "customData": {"orderId": "A-1029384756", "amount": 129.90, "items": [{"sku": "X1", "qty": 2}]}
                }
            }),
        ),
    ];
    let mut g = quick(c, "send_body");
    for (name, body) in bodies {
        let bytes = serde_json::to_vec(&body).expect("JSON");
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(BenchmarkId::new("decode_validate", name), &bytes, |b, bytes| {
            b.iter(|| {
                let event: PushNotificationEvent = serde_json::from_slice(black_box(bytes)).expect("decode");
                event.into_parts("acme", "01JD0000000000000000000005".into()).expect("valid")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, format, apns_jwt, access_token, send_body);
criterion_main!(benches);
