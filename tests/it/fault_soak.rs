//! Provider fault soak: while the simulators answer 429, 500 and 503, drop
//! connections, send GOAWAY and add jittered latency at seeded rates, `herald
//! serve` runs a topic broadcast and a stream of interactive sends. Nothing may be
//! lost (the simulators' accepted set equals the expected set), no token may be
//! marked invalid, and Herald's resident memory is sampled for its slope.
//!
//! CI: 6 000 tokens and about a minute. Long form: `HERALD_SOAK_TOKENS=200000
//! HERALD_SOAK_SECS=600`; `HERALD_SOAK_SEED` replays the faults.

use crate::common;
use crate::common::{apns_token, Herald, OPERATOR, PASSWORD};
use herald_sim::{Faults, Provider, ProviderFaults, StatusFault};
use herald_storage::push_tokens::PushProvider;
use herald_storage::Store;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The faults of one provider: every kind at once, at low seeded rates, so that
/// five attempts per token are plenty but every retry path is exercised.
fn faults(seed: u64) -> ProviderFaults {
    let rule = |status: u16, rate: f64, n: u64| StatusFault {
        status,
        rate: Some(rate),
        seed: Some(seed.wrapping_add(n)),
        retry_after: (status == 429).then_some(1),
        ..Default::default()
    };
    ProviderFaults {
        status: vec![rule(429, 0.02, 1), rule(500, 0.01, 2), rule(503, 0.01, 3)],
        latency_ms: Some(1),
        latency_jitter_ms: Some(8),
        goaway_after_streams: Some(500),
        reset_connection_rate: Some(0.0005),
        seed: Some(seed),
        ..Default::default()
    }
}

/// The provider and stored form of the `i`th seeded token.
fn token_of(i: u64) -> (PushProvider, String) {
    match i % 3 {
        0 => (PushProvider::Apns, apns_token(9_000_000 + i)),
        1 => (PushProvider::Fcm, format!("soak-fcm-{i}")),
        _ => (PushProvider::Hpk, format!("soak-hms-{i}")),
    }
}

fn seed_tokens(data: &std::path::Path, n: u64) -> Vec<String> {
    common::seed_clients(data, n, token_of).into_iter().map(|(id, _)| id).collect()
}

fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Least-squares slope of (seconds, KiB) samples, in KiB per minute.
fn slope_kb_per_min(samples: &[(f64, f64)]) -> f64 {
    let n = samples.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mx, my) = (samples.iter().map(|s| s.0).sum::<f64>() / n, samples.iter().map(|s| s.1).sum::<f64>() / n);
    let cov: f64 = samples.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = samples.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    if var == 0.0 {
        0.0
    } else {
        cov / var * 60.0
    }
}

async fn post(http: &reqwest::Client, url: String, token: &str, body: Value) -> (StatusCode, Value) {
    let r = http.post(url).bearer_auth(token).json(&body).send().await.unwrap();
    let st = r.status();
    (st, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn faults_lose_nothing_and_invalidate_nothing() {
    let n = env_or("HERALD_SOAK_TOKENS", 6_000);
    let secs = env_or("HERALD_SOAK_SECS", 45);
    let seed = env_or("HERALD_SOAK_SEED", 20_261_122);
    println!("fault soak: {n} broadcast tokens, {secs} s of interactive sends, seed {seed}");
    let dir = tempfile::tempdir().unwrap();
    let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.path().join("certs"))).await.unwrap();
    let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();
    let mut env = common::sim_env(&sims, dir.path());
    // One admin token serves the whole soak: the long form outlives the default 300 s.
    env.push(("HERALD_ACCESS_TOKEN_TTL", (secs + 1200).to_string()));
    let data = dir.path().join("data");
    let http = crate::common::http_client();

    // Tenant, app, and 12 interactive users with one client per provider, through the API.
    let h = Herald::start(&data, &env);
    let base = h.base.clone();
    let (st, _) = post(
        &http,
        format!("{base}/v1/tenants"),
        OPERATOR,
        json!({"tenantId": "acme", "adminUsername": "admin", "adminPassword": PASSWORD}),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED);
    let token = h.admin_token(&http).await;
    let (st, b) = post(&http, format!("{base}/v1/tenants/acme/apps/demo"), &token, creds.app_json.clone()).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let mut interactive: HashMap<String, (Provider, String)> = HashMap::new();
    for u in 0..12u64 {
        for (provider, push) in [
            (Provider::Apns, format!("APNS:{}", apns_token(8_000_000 + u))),
            (Provider::Fcm, format!("FCM:live-fcm-{u}")),
            (Provider::Hms, format!("HPK:live-hms-{u}")),
        ] {
            let (st, b) = post(
                &http,
                format!("{base}/v1/tenants/acme/clients"),
                &token,
                json!({"appName": "demo", "platform": "android"}),
            )
            .await;
            assert_eq!(st, StatusCode::CREATED, "{b}");
            let id = b["astClientId"].as_str().unwrap().to_string();
            for (path, body) in [
                (format!("/v1/tenants/acme/users/user{u}/clients/{id}"), json!({})),
                (format!("/v1/tenants/acme/clients/{id}/pushtoken"), json!({"appName": "demo", "pushToken": push})),
            ] {
                let r = http.put(format!("{base}{path}")).bearer_auth(&token).json(&body).send().await.unwrap();
                assert_eq!(r.status(), StatusCode::OK);
            }
            let stored = push.split_once(':').unwrap().1.to_string();
            interactive.insert(id, (provider, stored));
        }
    }
    h.kill9();
    let seeded = seed_tokens(&data, n);

    let h = Herald::start(&data, &env);
    let pid = h.child.id();
    let base = h.base.clone();
    let token = h.admin_token(&http).await;
    sims.reset();
    sims.set_faults(Faults {
        apns: faults(seed),
        fcm: faults(seed + 100),
        hms: faults(seed + 200),
        ..Default::default()
    });
    let started = Instant::now();

    // RSS sampler.
    let samples = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (samples, stop) = (samples.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Some(kb) = rss_kb(pid) {
                    samples.lock().unwrap().push((started.elapsed().as_secs_f64(), kb as f64));
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };

    let body = json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "soak"}, "payload": {"message": {"body": "soak"}}});
    let (st, b) = post(&http, format!("{base}/v1/tenants/acme/push_notification/send"), &token, body).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{b}");
    let broadcast = b[0]["notificationId"].as_str().unwrap().to_string();

    // Interactive sends: 4 senders for `secs`, each acknowledged success counted per token.
    let expected: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let failed = Arc::new(AtomicU64::new(0));
    let sends = Arc::new(AtomicU64::new(0));
    let deadline = started + Duration::from_secs(secs);
    let by_id = Arc::new(interactive.clone());
    let senders: Vec<_> = (0..4u64)
        .map(|w| {
            let (http, base, token) = (http.clone(), base.clone(), token.clone());
            let (expected, failed, sends, by_id) = (expected.clone(), failed.clone(), sends.clone(), by_id.clone());
            tokio::spawn(async move {
                let mut i = w;
                while Instant::now() < deadline {
                    let body = json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": format!("user{}", i % 12)}, "payload": {"message": {"body": format!("m{i}")}}});
                    let (st, r) = post(&http, format!("{base}/v1/tenants/acme/push_notification/send"), &token, body).await;
                    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
                    sends.fetch_add(1, Ordering::Relaxed);
                    for e in r.as_array().unwrap() {
                        let id = e["astClientId"].as_str().unwrap();
                        if e["isSuccessful"] == true {
                            *expected.lock().unwrap().entry(by_id[id].1.clone()).or_default() += 1;
                        } else {
                            eprintln!("interactive send failed: {e}");
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    i += 4;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        })
        .collect();
    for s in senders {
        s.await.unwrap();
    }
    let report = loop {
        let r = http
            .get(format!("{base}/v1/tenants/acme/push_notification/{broadcast}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap();
        if r["state"] == "COMPLETED" || started.elapsed() > Duration::from_secs(secs + 600) {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    let stats = sims.stats();
    h.kill9();

    // Accepted sets per provider, against the expected ones.
    let accepted: HashMap<Provider, HashMap<String, u64>> =
        [Provider::Apns, Provider::Fcm, Provider::Hms].into_iter().map(|p| (p, sims.accepted(p))).collect();
    let provider_of = |p: PushProvider| match p {
        PushProvider::Apns => Provider::Apns,
        PushProvider::Fcm => Provider::Fcm,
        PushProvider::Hpk => Provider::Hms,
        other => panic!("not seeded: {other:?}"),
    };
    let lost_broadcast = (0..n)
        .filter(|i| {
            let (p, t) = token_of(*i);
            !accepted[&provider_of(p)].contains_key(&t)
        })
        .count();
    let expected = expected.lock().unwrap().clone();
    let lost_interactive: u64 = interactive
        .values()
        .map(|(p, t)| {
            let want = expected.get(t).copied().unwrap_or(0);
            want.saturating_sub(accepted[p].get(t).copied().unwrap_or(0))
        })
        .sum();
    let store = Store::open(&herald_storage::test_options(&data)).unwrap();
    let invalidated = seeded
        .iter()
        .chain(interactive.keys())
        .filter(|id| store.push_tokens().get("acme", id).unwrap().is_some_and(|t| !t.is_valid))
        .count();
    let samples = samples.lock().unwrap().clone();
    let warm = samples.iter().filter(|s| s.0 >= elapsed.as_secs_f64() * 0.25).cloned().collect::<Vec<_>>();
    let rss_first = warm.first().map(|s| s.1 / 1024.0).unwrap_or(0.0);
    let rss_last = warm.last().map(|s| s.1 / 1024.0).unwrap_or(0.0);
    let faults_seen: u64 = [&stats.apns, &stats.fcm, &stats.hms].iter().map(|s| s.rejected).sum();
    let resets: u64 = [&stats.apns, &stats.fcm, &stats.hms].iter().map(|s| s.connection_resets).sum();
    let goaways: u64 = [&stats.apns, &stats.fcm, &stats.hms].iter().map(|s| s.goaways).sum();
    println!(
        "fault soak in {elapsed:.0?}: broadcast {n} tokens {} (sent {}, failed {}, invalid {}), lost {lost_broadcast}; \
         interactive sends {} ({} client deliveries acknowledged, {} failed), lost {lost_interactive}; \
         tokens wrongly invalidated {invalidated}; faults injected: {faults_seen} error answers, {resets} connection resets, {goaways} GOAWAYs; \
         Herald RSS after warm-up {rss_first:.0} -> {rss_last:.0} MiB, slope {:.0} KiB/min over {} samples",
        report["state"],
        report["counts"]["sent"],
        report["counts"]["failed"],
        report["counts"]["invalid"],
        sends.load(Ordering::Relaxed),
        expected.values().sum::<u64>(),
        failed.load(Ordering::Relaxed),
        slope_kb_per_min(&warm),
        warm.len(),
    );
    assert_eq!(report["state"], "COMPLETED", "{report}");
    assert!(faults_seen > 0 && resets > 0 && goaways > 0, "every kind of fault was injected");
    assert_eq!(lost_broadcast, 0, "every broadcast token accepted: {report}");
    assert_eq!(lost_interactive, 0, "every acknowledged interactive delivery accepted");
    assert_eq!(failed.load(Ordering::Relaxed), 0, "no interactive delivery failed for good");
    assert_eq!(invalidated, 0, "no token marked invalid by a transient fault");
}
