//! Resends bounded: `herald serve` killed with SIGKILL again and again in the
//! middle of topic broadcasts resends, per kill, about what was in flight
//! (`bulk_in_flight`, 1 000 by default) rather than everything since the
//! last grouped flush. Counted at the APNs simulator: every token is accepted
//! at least once per broadcast, the surplus per kill stays under
//! [`MAX_RESENDS_PER_KILL`], and the reports' `resent` counts are at least
//! that surplus (they count every client that may have been sent twice).
//!
//! CI runs 5 kills; `HERALD_RESEND_KILLS=25` runs the long form.

use crate::common::{acme_with_apns_clients, sim_env, Herald};
use herald_sim::{Faults, Provider, ProviderFaults};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Tokens of app `demo`, each broadcast's audience.
const TOKENS: u64 = 6000;

/// What issue 16 allows a kill to resend on average.
const MAX_RESENDS_PER_KILL: u64 = 1500;

/// A small deterministic generator (xorshift64*) for the kill moments.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

struct World {
    http: reqwest::Client,
    env: Vec<(&'static str, String)>,
    data: std::path::PathBuf,
    sims: herald_sim::Simulators,
}

impl World {
    /// The report of broadcast `id`.
    async fn report(&self, h: &Herald, token: &str, id: &str) -> Value {
        let url = format!("{}/v1/tenants/acme/push_notification/{id}", h.base);
        let r = self.http.get(url).bearer_auth(token).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        r.json().await.unwrap()
    }

    /// Starts a broadcast to topic `news` (every client of `demo`); answers its id.
    async fn broadcast(&self, h: &Herald, token: &str) -> String {
        let body = json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": "all hands"}}});
        let url = format!("{}/v1/tenants/acme/push_notification/send", h.base);
        let r = self.http.post(url).bearer_auth(token).json(&body).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        let answer: Value = r.json().await.unwrap();
        assert_eq!(answer[0]["metadata"]["targeted"], TOKENS, "{answer}");
        answer[0]["notificationId"].as_str().unwrap().to_string()
    }

    fn accepted(&self) -> u64 {
        self.sims.stats().apns.accepted
    }

    /// Lets Herald run until the simulator accepted `more` notifications,
    /// starting a broadcast whenever none runs; answers whether one still
    /// ran at the end (so the kill that follows lands mid-broadcast).
    async fn run_for(&self, h: &Herald, token: &str, more: u64, broadcasts: &mut Vec<String>) -> bool {
        let target = self.accepted() + more;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let running = match broadcasts.last() {
                Some(id) => self.report(h, token, id).await["state"] == "RUNNING",
                None => false,
            };
            if self.accepted() >= target {
                return running;
            }
            if !running {
                broadcasts.push(self.broadcast(h, token).await);
            }
            assert!(Instant::now() < deadline, "no progress: {} of {target} accepted", self.accepted());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn sigkills_mid_broadcast_resend_about_what_was_in_flight() {
    let kills: u64 = std::env::var("HERALD_RESEND_KILLS").ok().and_then(|k| k.parse().ok()).unwrap_or(5);
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    println!("resends: {kills} kills, seed {seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.path().join("certs"))).await.unwrap();
    let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();
    let env = sim_env(&sims, dir.path());
    let w = World { http: crate::common::http_client(), env, data: dir.path().join("data"), sims };

    // Tenant and app through the API, then the clients straight into storage.
    let seeded = acme_with_apns_clients(&w.data, &w.env, &creds, TOKENS, 3_000_000).await;
    let tokens: Vec<String> = seeded.into_iter().map(|c| c.1).collect();

    // Some latency, and room at the simulator for all of `bulk_in_flight`.
    w.sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(20), max_concurrent_streams: Some(250), ..Default::default() },
        ..Default::default()
    });
    let mut broadcasts = Vec::new();
    let mut mid_broadcast = 0u64;
    for round in 0..kills {
        let h = Herald::start(&w.data, &w.env);
        let token = h.admin_token(&w.http).await;
        // Past the resends of the restart, into new sends.
        let landed = w.run_for(&h, &token, 1500 + rng.below(1500), &mut broadcasts).await;
        h.kill9();
        mid_broadcast += u64::from(landed);
        println!("kill {}: {} accepted, {} broadcasts started", round + 1, w.accepted(), broadcasts.len());
    }

    // The last restart completes every broadcast.
    w.sims.set_faults(Faults::default());
    let h = Herald::start(&w.data, &w.env);
    let token = h.admin_token(&w.http).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut resent = 0;
    for id in &broadcasts {
        let report = loop {
            let r = w.report(&h, &token, id).await;
            if r["state"] == "COMPLETED" {
                break r;
            }
            assert!(Instant::now() < deadline, "broadcast {id} did not complete: {r}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(report["counts"]["sent"], TOKENS, "every client counted once: {report}");
        resent += report["counts"]["resent"].as_u64().expect("the report counts resends");
    }
    h.kill9();

    let accepted = w.sims.accepted(Provider::Apns);
    let times = broadcasts.len() as u64;
    let short = tokens.iter().filter(|t| accepted.get(*t).copied().unwrap_or(0) < times).count();
    let deliveries: u64 = tokens.iter().map(|t| accepted.get(t).copied().unwrap_or(0)).sum();
    let duplicates = deliveries - deliveries.min(times * TOKENS);
    let per_kill = duplicates / mid_broadcast.max(1);
    println!(
        "resends: {kills} SIGKILLs ({mid_broadcast} mid-broadcast), {times} broadcasts x {TOKENS} tokens: \
         {deliveries} accepted, {duplicates} duplicates, {per_kill} per kill; reports count {resent} resent"
    );
    assert_eq!(short, 0, "every token accepted at least once per broadcast");
    assert!(mid_broadcast * 2 >= kills, "most kills landed mid-broadcast ({mid_broadcast} of {kills})");
    assert!(per_kill <= MAX_RESENDS_PER_KILL, "{per_kill} resends per kill");
    assert!(resent >= duplicates, "the reports' resent ({resent}) bounds the duplicates ({duplicates})");
}
