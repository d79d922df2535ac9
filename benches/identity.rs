//! User lists and searches of a 100 000-user tenant through the HTTP API
//! (`cargo bench --bench identity`), each beside the same client fetching one
//! user by id in the same run, so the ratio says what the list itself costs.
//! `-- --users N` sizes the tenant.

// Benchmarks and examples: a failure is a visible abort, not a served request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

// The integration tests' helpers, of which the benchmark uses a few.
#[path = "../tests/it/common/mod.rs"]
#[allow(dead_code)]
mod common;
use common::*;
use herald_storage::users::User;
use reqwest::{Method, StatusCode};
use std::collections::BTreeMap;
use std::time::Instant;

const RUNS: usize = 200;

fn p(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

fn main() {
    let users = match std::env::args().skip_while(|a| a != "--users").nth(1) {
        Some(n) => n.parse().expect("--users takes a count"),
        None => 100_000,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    runtime.expect("a tokio runtime").block_on(lists_and_searches(users));
}

async fn lists_and_searches(users: usize) {
    let s = TestServer::start().await;
    s.create_tenant("big").await;
    s.create_tenant("small").await;
    let admin = s.admin_token("big").await;
    let store = s.running.as_ref().unwrap().engine.store.clone();
    let seeded = Instant::now();
    for i in 0..users {
        let u = User {
            id: uuid::Uuid::new_v4().to_string(),
            username: format!("user{i:06}"),
            email: Some(format!("user{i:06}@example.com")),
            first_name: Some(format!("First{}", i % 1000)),
            last_name: Some(format!("Last{}", i % 997)),
            enabled: i % 10 != 0,
            email_verified: i % 2 == 0,
            realm_roles: vec![if i % 100 == 0 { "auditor".into() } else { "member".into() }],
            client_roles: BTreeMap::from([("shop".into(), vec![format!("tier{}", i % 50)])]),
            groups: vec![format!("group{}", i % 200)],
            attributes: BTreeMap::from([("employeeId".into(), vec![format!("E{i}")])]),
            created_ms: 1_700_000_000_000 + i as u64,
            ..User::default()
        };
        store.users().create("big", &u).unwrap();
    }
    store.flush_now().unwrap();
    println!("seeded {users} users in {:.1} s", seeded.elapsed().as_secs_f64());

    let one = store.users().by_index("big", herald_storage::users::Index::Attribute("employeeId", "E4242"));
    let one = one.expect("seeded users").pop().expect("user E4242").id;
    let cases = [
        ("baseline: one user by id", format!("/users/id/{one}")),
        ("by attribute (index)", "/users/by-attribute?key=employeeId&value=E54321".to_string()),
        ("role, 1 000 users, page of 100", "/roles/auditor/users?limit=100&offset=500".to_string()),
        ("group, 500 users, filtered", "/groups/group7/users?isUserEnabled=true&orderBy=desc".to_string()),
        ("client role, 2 000 users", "/clients/shop/roles/tier3/users?limit=50".to_string()),
        ("search key over all users", "/users?key=user09999&limit=20".to_string()),
        ("list all, page 1", "/users?limit=100".to_string()),
        ("list all, page 50", "/users?limit=100&offset=4900".to_string()),
        (
            "list all by firstName desc, page 3",
            "/users?limit=100&offset=200&orderByKey=firstName&orderBy=desc".to_string(),
        ),
    ];
    let mut baseline = 0.0;
    for (name, path) in cases {
        let url = format!("/auth/realms/big{path}");
        let mut times = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let t = Instant::now();
            let (st, b) = s.call(Method::GET, &url, Some(&admin), None).await;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(st, StatusCode::OK, "{b}");
        }
        times.sort_by(|a, b| a.total_cmp(b));
        let p99 = p(&times, 0.99);
        if baseline == 0.0 {
            baseline = p99;
        }
        println!(
            "{name:36} p50 {:8.2} ms   p99 {p99:8.2} ms   p99 / baseline {:6.1}   ({RUNS} runs)",
            p(&times, 0.5),
            p99 / baseline
        );
    }
    s.shutdown().await;
}
