//! Durable writes per second: grouped flushes (what the API does) against one
//! flush per write, with 64 concurrent writers. Both run in the same process and
//! on the same disk, so their ratio is what to read.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use herald_storage::clients::Client;
use herald_storage::{Store, StoreOptions};
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

criterion_group!(benches, durable_creates);
criterion_main!(benches);
