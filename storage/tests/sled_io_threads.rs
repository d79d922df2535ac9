// Tests assert by unwrapping and panicking, and compute with small numbers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

//! sled's I/O thread pool, in a test binary of its own: it counts the
//! context switches of this process's `sled-io` threads, which no other
//! test may add to.
//!
//! sled 0.34.7 as released wakes every idle thread of its pool (seven or
//! more) for each task it queues, such as the write of a log buffer that a
//! flush seals; all but one find nothing to do and sleep again. During a
//! broadcast those wake-ups took ~8% of Herald's CPU. Herald builds against
//! a copy of sled that wakes one (`vendor/sled/HERALD.md`); this is its test.
#![cfg(target_os = "linux")]

/// This process's threads named `sled-io-*` (their `/proc/self/task` entries).
fn sled_io_threads() -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .map(|t| t.path())
        .filter(|t| std::fs::read_to_string(t.join("comm")).is_ok_and(|c| c.starts_with("sled-io")))
        .collect()
}

/// Voluntary context switches so far of this process's `sled-io` threads.
fn sled_io_switches() -> u64 {
    sled_io_threads()
        .iter()
        .filter_map(|t| std::fs::read_to_string(t.join("status")).ok())
        .filter_map(|status| {
            let line = status.lines().find(|l| l.starts_with("voluntary_ctxt_switches:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

#[test]
fn a_flush_wakes_one_io_thread() {
    let dir = tempfile::tempdir().unwrap();
    // No timed flushes: only the test's own flushes queue work.
    let db = sled::Config::new().path(dir.path()).flush_every_ms(None).open().unwrap();
    let write_and_flush = |i: u32| {
        db.insert(i.to_be_bytes(), vec![7u8; 100]).unwrap();
        db.flush().unwrap();
    };
    // The pool starts its threads on first use; let them all go idle.
    (0..20).for_each(write_and_flush);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let threads = sled_io_threads().len();
    assert!(threads >= 7, "sled's pool keeps seven idle threads; found {threads}");

    const FLUSHES: u32 = 200;
    let before = sled_io_switches();
    (100..100 + FLUSHES).for_each(write_and_flush);
    let per_flush = (sled_io_switches() - before) as f64 / f64::from(FLUSHES);
    eprintln!("{per_flush:.2} sled-io context switches per flush");
    // One thread wakes, writes the buffer and sleeps again: two switches per
    // flush here (under load too). Waking every idle thread: 7.4.
    assert!(per_flush < 4.0, "{per_flush:.1} sled-io context switches per flush");
}
