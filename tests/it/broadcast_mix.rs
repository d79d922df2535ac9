//! Broadcasts over apps whose tokens mix providers: a provider that takes
//! many tokens per request (HMS) fills its request from the same stream as
//! the providers that take one, and no mix of them, at any size around the
//! read batch, the in-flight budget or the partition size, keeps a
//! broadcast from completing with exact counts.

use crate::common::*;
use herald_sim::{Faults, ProviderFaults};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn topic() -> Value {
    json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"},
           "payload": {"message": {"title": "t", "body": "b"}}})
}

/// A provider of the mix and how its tokens look at the simulators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Apns,
    Fcm,
    Hms,
    Web,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Apns, Kind::Fcm, Kind::Hms, Kind::Web];

    /// The report's name of the provider.
    fn report_name(self) -> &'static str {
        match self {
            Kind::Apns => "apns",
            Kind::Fcm => "fcm",
            Kind::Hms => "hms",
            Kind::Web => "webpush",
        }
    }

    /// The push token of client `i`; a dead one (FCM and HMS only) when `dead`.
    fn token(self, w: &PushWorld, i: usize, dead: bool) -> String {
        match (self, dead) {
            (Kind::Apns, _) => format!("APNS:{}", apns_token(i as u64)),
            (Kind::Fcm, false) => format!("FCM:fcm-{i}"),
            (Kind::Fcm, true) => format!("FCM:dead-{i}"),
            (Kind::Hms, false) => format!("HPK:hms-{i}"),
            (Kind::Hms, true) => format!("HPK:dead-hms-{i}"),
            (Kind::Web, _) => format!("WEB:{}", w.sims.webpush_subscription(&format!("sub-{i}"))),
        }
    }
}

/// Herald and the simulators with small thresholds (clients per read batch,
/// notifications in flight, clients per partition), Web Push's loopback
/// endpoint allowed.
async fn world(batch: usize, in_flight: usize, partition: u64) -> PushWorld {
    PushWorld::start_with(|c| {
        c.push.allow_private_endpoints = true;
        c.push.batch_size = batch;
        c.push.bulk_in_flight = in_flight;
        c.push.partition_size = partition;
    })
    .await
}

/// `n` clients of app `demo` registered 8 at a time with APNs tokens; their
/// ids in the order a broadcast reads them (the token index is ordered by client id).
async fn clients(w: &PushWorld, n: usize) -> Vec<String> {
    use futures::StreamExt;
    let mut ids: Vec<String> = futures::stream::iter(0..n)
        .map(|i| async move { w.client("demo", &format!("user{i}"), &Kind::Apns.token(w, i, false)).await })
        .buffer_unordered(8)
        .collect()
        .await;
    ids.sort();
    ids
}

async fn set_token(w: &PushWorld, client: &str, token: &str) {
    let (st, b) = w
        .server
        .call(
            Method::PUT,
            &format!("/v1/tenants/acme/clients/{client}/pushtoken"),
            Some(&w.admin),
            Some(json!({"appName": "demo", "pushToken": token})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
}

/// Broadcasts to every client, each provider answering after 1 ms plus up
/// to `jitter_ms`, and waits (up to `secs`) for the report, which must be complete.
async fn broadcast(w: &PushWorld, jitter_ms: u64, secs: u64, case: &str) -> Value {
    w.sims.reset();
    if jitter_ms > 0 {
        let slow = || ProviderFaults {
            latency_ms: Some(1),
            latency_jitter_ms: Some(jitter_ms),
            seed: Some(jitter_ms),
            ..Default::default()
        };
        w.sims.set_faults(Faults { apns: slow(), fcm: slow(), hms: slow(), webpush: slow() });
    }
    let (st, r) = w.send(topic()).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{r}");
    let id = r[0]["notificationId"].as_str().unwrap().to_string();
    let report = w.wait_report(&id, secs).await;
    assert_eq!(report["state"], "COMPLETED", "{case}: the broadcast did not complete in {secs} s: {report}");
    report
}

/// What each provider was sent and refused, from the report and from the
/// simulators, which must agree with `expected` exactly: (sent, invalid) per provider.
fn assert_counts(w: &PushWorld, report: &Value, expected: &BTreeMap<Kind, (u64, u64)>, case: &str) {
    let total: u64 = expected.values().map(|(s, i)| s + i).sum();
    let sent: u64 = expected.values().map(|(s, _)| s).sum();
    let c = &report["counts"];
    assert_eq!(c["targeted"], total, "{case}: {report}");
    assert_eq!(c["sent"], sent, "{case}: {report}");
    assert_eq!(c["invalid"], total - sent, "{case}: {report}");
    assert_eq!(
        (c["failed"].as_u64(), c["pending"].as_u64(), c["resent"].as_u64()),
        (Some(0), Some(0), Some(0)),
        "{case}: {report}"
    );
    let stats = w.sims.stats();
    for kind in Kind::ALL {
        let (s, i) = expected.get(&kind).copied().unwrap_or_default();
        let by = &report["byProvider"][kind.report_name()];
        assert_eq!(by["sent"].as_u64().unwrap_or(0), s, "{case}: {kind:?} sent: {report}");
        assert_eq!(by["invalid"].as_u64().unwrap_or(0), i, "{case}: {kind:?} invalid: {report}");
        let accepted = match kind {
            Kind::Apns => stats.apns.accepted,
            Kind::Fcm => stats.fcm.accepted,
            Kind::Hms => stats.hms.accepted,
            Kind::Web => stats.webpush.accepted,
        };
        assert_eq!(accepted, s, "{case}: {kind:?} notifications the simulator accepted (each client once)");
    }
}

/// One HMS token among APNs tokens, first, in the middle and last of the
/// read order: its request of many tokens cannot fill, and the broadcast
/// completes all the same. With a read batch of 4, 8 notifications in
/// flight and answers arriving out of order, the APNs clients read after it
/// were sent (12, the budget) while the HMS client waited for more HMS
/// tokens, and the broadcast stopped there for good: the budget counted the
/// answered APNs clients until the batch holding the HMS client committed.
#[tokio::test]
async fn one_hms_token_among_apns_tokens_never_stalls_a_broadcast() {
    let w = world(4, 8, 10_000).await;
    let ids = clients(&w, 40).await;
    for at in [0, 1, 2, 5, ids.len() / 2, ids.len() - 1] {
        set_token(&w, &ids[at], "HPK:hms-solo").await;
        let case = format!("the HMS client at {at}");
        let report = broadcast(&w, 30, 30, &case).await;
        let expected = BTreeMap::from([(Kind::Apns, (39, 0)), (Kind::Hms, (1, 0))]);
        assert_counts(&w, &report, &expected, &case);
        set_token(&w, &ids[at], &Kind::Apns.token(&w, at, false)).await;
    }
}

/// The shape at the default thresholds (a read batch of 256, 1 000
/// in flight): 2 000 clients, one of them HMS, first, in the middle and last.
/// `HERALD_TEST_ROUNDS` repeats each position (1 by default).
#[tokio::test]
async fn one_hms_token_among_two_thousand_at_the_default_thresholds() {
    let rounds: usize = std::env::var("HERALD_TEST_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let w = PushWorld::start().await;
    let ids = clients(&w, 2_000).await;
    for at in [0, 1, ids.len() / 2, ids.len() - 1] {
        set_token(&w, &ids[at], "HPK:hms-solo").await;
        for round in 0..rounds {
            let case = format!("the HMS client at {at}, round {round}");
            let report = broadcast(&w, 0, 60, &case).await;
            let expected = BTreeMap::from([(Kind::Apns, (1_999, 0)), (Kind::Hms, (1, 0))]);
            assert_counts(&w, &report, &expected, &case);
        }
        set_token(&w, &ids[at], &Kind::Apns.token(&w, at, false)).await;
    }
}

/// Random mixes of the four providers (some FCM and HMS tokens dead) at
/// random sizes around the thresholds: each broadcast completes with exact
/// counts, every live token reached once. `HERALD_TEST_SEED` replays a run
/// (its seed is printed); `HERALD_TEST_ROUNDS` multiplies the cases.
#[tokio::test]
async fn broadcasts_over_random_provider_mixes_complete_with_exact_counts() {
    let seed: u64 =
        std::env::var("HERALD_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    let rounds: usize = std::env::var("HERALD_TEST_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    println!("HERALD_TEST_SEED={seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    for case in 0..12 * rounds {
        let batch = rng.usize(1..=6);
        let in_flight = rng.usize(1..=12);
        let partition = rng.u64(2..=40);
        // Around each threshold: up to a few batches, budgets and partitions.
        let n = rng.usize(1..=(3 * (batch + in_flight)).max(partition as usize + 3));
        let weights: Vec<u32> = Kind::ALL.iter().map(|_| [0, 1, 4, 16][rng.usize(0..4)]).collect();
        let weights = if weights.iter().all(|w| *w == 0) { vec![1, 0, 1, 0] } else { weights };
        let case = format!("seed {seed} case {case}: batch {batch}, in flight {in_flight}, partition {partition}, {n} clients, weights {weights:?}");
        println!("{case}");
        let w = world(batch, in_flight, partition).await;
        let ids = clients(&w, n).await;
        let mut expected: BTreeMap<Kind, (u64, u64)> = BTreeMap::new();
        let total: u32 = weights.iter().sum();
        for (i, id) in ids.iter().enumerate() {
            let mut pick = rng.u32(0..total);
            let kind = Kind::ALL
                .into_iter()
                .zip(&weights)
                .find(|(_, w)| {
                    let hit = pick < **w;
                    pick = pick.saturating_sub(**w);
                    hit
                })
                .map_or(Kind::Apns, |(k, _)| k);
            let dead = matches!(kind, Kind::Fcm | Kind::Hms) && rng.u8(0..10) == 0;
            if kind != Kind::Apns || dead {
                set_token(&w, id, &kind.token(&w, i, dead)).await;
            }
            let e = expected.entry(kind).or_default();
            if dead {
                e.1 += 1;
            } else {
                e.0 += 1;
            }
        }
        let report = broadcast(&w, [0, 2, 20][rng.usize(0..3)], 60, &case).await;
        assert_counts(&w, &report, &expected, &case);
        w.server.shutdown().await;
    }
}

/// A broadcast to 20 000 clients, 1 % of them HMS, at the default
/// thresholds: it completes with exact counts, each token reached once, the
/// HMS tokens in requests of many.
#[tokio::test]
async fn a_broadcast_to_twenty_thousand_tokens_one_percent_hms_completes() {
    use herald_storage::push_tokens::PushProvider;
    const N: u64 = 20_000;
    let ChildWorld { sims, creds, env, data, dir: _dir } = ChildWorld::start().await;
    let http = crate::common::http_client();
    let hms = |i: u64| i % 100 == 50;
    acme_with_clients(&data, &env, &creds, N, |i| {
        if hms(i) {
            (PushProvider::Hpk, format!("hms-{i}"))
        } else {
            (PushProvider::Apns, apns_token(i))
        }
    })
    .await;
    let h = Herald::start(&data, &env);
    let token = h.admin_token(&http).await;
    sims.reset();
    let answer = h.send(&http, &token, &topic()).await;
    let done = h.wait_report(&http, &token, answer[0]["notificationId"].as_str().unwrap(), 120).await;
    assert_eq!(done["state"], "COMPLETED", "{done}");
    let stats = sims.stats();
    println!(
        "{N} tokens, 1% HMS: {} APNs requests, {} HMS requests for {} HMS tokens",
        stats.apns.requests, stats.hms.requests, stats.hms.accepted
    );
    assert_eq!(done["counts"]["targeted"], N, "{done}");
    assert_eq!(done["counts"]["sent"], N, "{done}");
    assert_eq!(done["byProvider"]["hms"]["sent"], N / 100, "{done}");
    assert_eq!(done["byProvider"]["apns"]["sent"], N - N / 100, "{done}");
    assert_eq!((stats.apns.accepted, stats.hms.accepted), (N - N / 100, N / 100));
    assert_eq!(stats.hms.distinct_tokens, N / 100, "each HMS token once");
    assert_eq!(stats.apns.distinct_tokens, N - N / 100, "each APNs token once");
    h.kill9();
}
