// Tests assert by unwrapping and panicking, and compute with small numbers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

//! sled's segment cleaner on an idle database, in a test binary of its own:
//! it counts the bytes this process writes (`/proc/self/io`), which no
//! other test may add to.
//!
//! sled 0.34.7 as released never stops cleaning a database whose file is
//! half free: it relocates the segment it has just written, ahead of the
//! segments at the file's end, which are never cleaned, so the file never
//! shrinks and the relocations never end. A Herald store whose index had
//! seen a few hundred thousand token registrations rewrote ~1.2 MB/s of it
//! for as long as it ran, idle or not. Herald builds against a copy of sled
//! with that fixed (`vendor/sled/HERALD.md`); this is the fix's test.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

/// Segments and flushes far smaller and more frequent than Herald's, so that
/// 60 000 small writes fragment the file and the cleaner runs fast.
fn open(dir: &std::path::Path) -> sled::Db {
    sled::Config::new()
        .path(dir)
        .cache_capacity(4 << 20)
        .use_compression(true)
        .compression_factor(5)
        .segment_size(64 << 10)
        .flush_every_ms(Some(20))
        .open()
        .unwrap()
}

/// Bytes this process has handed to `write` calls so far.
fn written() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap();
    let line = io.lines().find(|l| l.starts_with("wchar:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn an_idle_database_stops_rewriting_itself() {
    let dir = tempfile::tempdir().unwrap();
    // Random keys rewritten over three rounds leave every segment part dead,
    // as token registrations leave the broadcast index.
    {
        let db = open(dir.path());
        let tree = db.open_tree("tokens_by_app").unwrap();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for round in 0..3u64 {
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let key = format!("t\0app\0{:016x}", (x % 40_000).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                tree.insert(key, format!("{x:064x}{round}").as_bytes()).unwrap();
            }
        }
        db.flush().unwrap();
    }
    // Reopened, one write (as a store's open marks its index unclean), then nothing.
    let db = open(dir.path());
    db.insert("state", "unclean").unwrap();
    db.flush().unwrap();
    let size = db.size_on_disk().unwrap();

    // Settled: under 16 KiB written in a whole second. The cleaner may first
    // rewrite the file about once; unfixed, it writes the file's size every
    // few seconds for ever.
    let (started, base) = (Instant::now(), written());
    let mut window = (Instant::now(), base);
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = written();
        if now - window.1 > 16 << 10 {
            window = (Instant::now(), now);
        } else if window.0.elapsed() >= Duration::from_secs(1) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "sled still rewrites an idle database of {size} bytes after 30 s ({} bytes so far)",
            now - base
        );
    }
}
