//! Durable writes per second: grouped flushes (what the API does) against one
//! flush per write, with 64 concurrent writers. Both run in the same process and
//! on the same disk, so their ratio is what to read.
//!
//! And the report write of one interactive send: Herald's (one record in its
//! own, uncompressed database) against the same record compressed (sled
//! compresses every write on its own, with a new zstd context each time) and
//! against a report and an outcome written in one transaction (sled
//! transactions are expensive). The bytes on disk per report are printed.
//!
//! And a broadcast's walk of its app's token index (`valid_of_app` in the
//! fan-out's batches of 256), per client: from pages sled must read from its
//! log again (a 4 MiB index cache, the default's, against an index larger than
//! that, as at 200 000 tokens and up) against pages all held in the cache.
//! The first is what each broadcast pays; the ratio is what a more compact
//! index would win (see "Peak RSS at 1M tokens" in the README).

// Benchmarks and examples: a failure is a visible abort, not a served request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use herald_storage::clients::Client;
use herald_storage::deliveries::{ClientOutcome, Report, State};
use herald_storage::push_tokens::{PushProvider, PushToken};
use herald_storage::{Store, StoreOptions};
use sled::Transactional;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const WRITERS: u64 = 64;

fn client(id: u64) -> Client {
    Client {
        id: format!("{id:026}"),
        app_name: "shop".into(),
        platform: "android".into(),
        lock_state: "NONE".into(),
        ..Client::default()
    }
}

async fn round(store: &Store, next: &Arc<AtomicU64>, grouped: bool) {
    let mut tasks = Vec::with_capacity(WRITERS as usize);
    for _ in 0..WRITERS {
        let (store, next) = (store.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let id = next.fetch_add(1, Ordering::Relaxed);
            store.clients().create("bench", &client(id)).expect("create");
            if grouped {
                store.durable().await.expect("durable");
            } else {
                tokio::task::spawn_blocking(move || store.flush_now().expect("flush")).await.expect("join");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
}

fn durable_creates(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&StoreOptions::new(dir.path().to_path_buf())).expect("store");
    let next = Arc::new(AtomicU64::new(0));
    let mut group = c.benchmark_group("durable_creates");
    group.throughput(Throughput::Elements(WRITERS));
    group.sample_size(20);
    for (name, grouped) in [("grouped_flush", true), ("flush_per_write", false)] {
        group.bench_with_input(BenchmarkId::new(name, WRITERS), &grouped, |b, &grouped| {
            b.to_async(&rt).iter(|| round(&store, &next, grouped));
        });
    }
    group.finish();
}

fn send_report(n: u64) -> (Report, Vec<(String, ClientOutcome)>) {
    let outcome =
        ClientOutcome { app: "shop".into(), provider: "apns".into(), state: State::Sent, code: 200, message: None };
    let mut report = Report {
        id: ulid::Ulid::generate().to_string(),
        kind: "client".into(),
        recipient: format!("user{n}/{n:026}"),
        created_ms: herald_storage::now_ms(),
        completed_ms: Some(herald_storage::now_ms()),
        ..Report::default()
    };
    report.targeted.insert("shop".into(), 1);
    report.record(&outcome);
    (report, vec![(format!("{n:026}"), outcome)])
}

fn report_writes(c: &mut Criterion) {
    let mut group = c.benchmark_group("send_report_write");
    group.throughput(Throughput::Elements(1));
    // Herald's store: delivery records in their own database, uncompressed.
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&StoreOptions::new(dir.path().to_path_buf())).expect("store");
    let mut n = 0;
    group.bench_function("herald", |b| {
        b.iter(|| {
            n += 1;
            let (report, outcomes) = send_report(n);
            store.deliveries().finish_send("bench", &report, &outcomes).expect("report");
        })
    });
    store.flush_now().expect("flush");
    drop(store);
    print_bytes("herald (deliveries database)", &dir.path().join("deliveries"), n);

    // Two alternatives on plain sled trees, written the same way: the record
    // compressed (zstd level 5, the records database's), and the report and
    // outcome as two records in one transaction (the layout before).
    let record = |n| {
        let (report, outcomes) = send_report(n);
        serde_json::to_vec(&(&report, &outcomes)).expect("encode")
    };
    for (name, compressed) in [("one_record_zstd_5", true), ("report_and_outcome_transaction", false)] {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = sled::Config::new()
            .path(dir.path())
            .use_compression(compressed)
            .compression_factor(5)
            .open()
            .expect("sled");
        let (reports, outcomes) = (db.open_tree("reports").expect("tree"), db.open_tree("outcomes").expect("tree"));
        let mut n = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                let id = ulid::Ulid::generate().to_string();
                if compressed {
                    reports.insert(id.as_bytes(), record(n)).expect("write");
                    return;
                }
                let (report, outs) = send_report(n);
                let report_value = serde_json::to_vec(&report).expect("encode");
                let out_value = serde_json::to_vec(&outs[0].1).expect("encode");
                (&reports, &outcomes)
                    .transaction(|(r, o)| {
                        r.insert(id.as_bytes(), report_value.as_slice())?;
                        o.insert(outs[0].0.as_bytes(), out_value.as_slice())?;
                        Ok::<_, sled::transaction::ConflictableTransactionError<()>>(())
                    })
                    .expect("write");
            })
        });
        db.flush().expect("flush");
        drop(db);
        print_bytes(name, dir.path(), n);
    }
    group.finish();
}

fn print_bytes(what: &str, dir: &std::path::Path, n: u64) {
    println!("{what}: {n} reports, {:.0} bytes on disk per report", walk(dir) as f64 / n.max(1) as f64);
}

/// Bytes of the files under `dir`.
fn walk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => walk(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Clients of the walked app: an index of ~13 MiB in the log, over three
/// times the default index cache.
const WALKED: u64 = 100_000;

fn index_walk(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let opts = |cache_bytes: u64| StoreOptions { cache_bytes, ..StoreOptions::new(dir.path().to_path_buf()) };
    let store = Store::open(&opts(64 << 20)).expect("store");
    for id in 0..WALKED {
        let client = client(id);
        store.clients().create("bench", &client).expect("create");
        // A device token as APNs hands them out: 32 random-looking bytes in hex.
        let (a, b) = (splitmix(id), splitmix(id ^ 0x5eed));
        let token = PushToken {
            app_name: client.app_name.clone(),
            provider: PushProvider::Apns,
            token: format!("{a:016x}{b:016x}{:016x}{:016x}", splitmix(a), splitmix(b)),
            is_valid: true,
            updated_ms: 0,
        };
        store.push_tokens().set("bench", &client.id, &token).expect("token");
    }
    store.close().expect("close");
    drop(store);
    println!("index: {:.0} bytes on disk per client", walk(&dir.path().join("index")) as f64 / WALKED as f64);
    let mut group = c.benchmark_group("index_walk");
    group.throughput(Throughput::Elements(WALKED));
    group.sample_size(10);
    // 4 MiB for the index (a 16th), as with the default 64 MiB; 64 MiB, which holds it.
    for (name, cache_bytes) in [("pages_read_again", 64u64 << 20), ("pages_cached", 1 << 30)] {
        let store = Store::open(&opts(cache_bytes)).expect("store");
        assert_eq!(walk_index(&store), WALKED, "every client walked");
        group.bench_function(name, |b| b.iter(|| walk_index(&store)));
        store.close().expect("close");
    }
    group.finish();
}

/// One broadcast's read of the index, as the fan-out reads it.
fn walk_index(store: &Store) -> u64 {
    let (mut after, mut n) = (None::<String>, 0u64);
    loop {
        let batch = store.push_tokens().valid_of_app("bench", "shop", after.as_deref(), 256).expect("walk");
        let Some((last, _)) = batch.last() else { return n };
        n += batch.len() as u64;
        after = Some(last.clone());
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

criterion_group!(benches, durable_creates, report_writes, index_walk);
criterion_main!(benches);
