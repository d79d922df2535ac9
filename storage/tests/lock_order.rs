// Tests assert by unwrapping and panicking, and compute with small numbers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

//! Lock order between the engine's leases and sled's transactions, in a
//! test binary of its own: sled's concurrency control is one lock for the
//! whole process, so a deadlock here would stop every other sled test of
//! the process with it.

use herald_storage::broadcasts::Part;
use herald_storage::webhooks::{Attempt, Settle};
use herald_storage::Store;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A write under a lease inside a transaction (a webhook attempt settled)
/// and a fenced write outside one (a broadcast batch committed) run
/// together without end. The two once took the engine's lease table and
/// sled's transaction lock in opposite orders, and a cancel during a
/// broadcast with a webhook stopped every write of the process.
#[test]
fn fenced_writes_in_and_out_of_transactions_never_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&herald_storage::test_options(dir.path())).unwrap();
    let lease = store.leases().acquire("part/t/j/0").unwrap().unwrap();
    let (done, finished) = mpsc::channel();
    let run_for = Duration::from_secs(3);
    let attempt =
        Attempt { event_id: "e".into(), attempt: 1, at_ms: 1, status: 200, duration_ms: 1, response: String::new() };
    {
        let (store, lease, done, attempt) = (store.clone(), lease.clone(), done.clone(), attempt.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut n = 0u64;
            while started.elapsed() < run_for {
                store.webhooks().settle(&lease, ("t", "w"), b"entry", &attempt, Settle::Delivered).unwrap();
                n += 1;
            }
            done.send(("settled", n)).unwrap();
        });
    }
    {
        let (store, lease) = (store.clone(), lease.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut n = 0u64;
            let part = Part { app: "a".into(), ..Default::default() };
            while started.elapsed() < run_for {
                store.broadcasts().commit(&lease, ("t", "j", 0), &part, Vec::new()).unwrap();
                n += 1;
            }
            done.send(("committed", n)).unwrap();
        });
    }
    for _ in 0..2 {
        let (what, n) = finished.recv_timeout(Duration::from_secs(30)).expect("a writer is stuck: deadlock");
        assert!(n > 0, "{what}: no write went through");
        eprintln!("{what}: {n} writes");
    }
}
