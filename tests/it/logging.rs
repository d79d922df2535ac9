//! `herald serve`'s log lines: written by a thread of their own, none lost.

use crate::common::{signal, Signal, OPERATOR};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

/// Write system calls (`syscw` of proc(5)) of process `pid` so far, by thread name.
fn writes_by_thread_name(pid: u32) -> BTreeMap<String, u64> {
    let mut by_name = BTreeMap::<String, u64>::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("Herald's /proc entry").flatten() {
        let (Ok(comm), Ok(io)) =
            (std::fs::read_to_string(task.path().join("comm")), std::fs::read_to_string(task.path().join("io")))
        else {
            continue; // the thread ended meanwhile
        };
        let writes = io.lines().find_map(|l| l.strip_prefix("syscw: ")).and_then(|n| n.trim().parse::<u64>().ok());
        *by_name.entry(comm.trim().to_string()).or_default() += writes.unwrap_or(0);
    }
    by_name
}

/// At the default level every request logs a line. The runtime workers
/// hand it over and go on: they make one write per request (its answer),
/// where writing the line too made two, each a system call into whatever
/// reads stderr; and a reader of stderr that stalls (a log shipper down)
/// left them blocked on a full pipe once 64 KiB were waiting, every request
/// with them. Every line is still written once the reader reads again,
/// those queued at SIGTERM included, without colour codes (not a terminal).
#[tokio::test]
async fn request_lines_are_written_off_the_runtime_workers_and_none_is_lost() {
    const REQUESTS: u64 = 2_000; // ~250 KB of lines: well past a pipe's buffer
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .env("HERALD_OPERATOR_TOKEN", OPERATOR)
        .env("HERALD_LOG", "info")
        .envs(crate::common::store_for(&dir.path().join("data")).map(|url| ("HERALD_STORE", url)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let base = loop {
        let line = lines.next().expect("herald prints its address").unwrap();
        if let Some(url) = line.strip_prefix("herald listening on ") {
            break url.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    // Nothing reads stderr until the requests are answered. A regression
    // fails here, not hangs.
    let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build().unwrap();
    // One connection, warmed up: the counted requests open none.
    assert!(http.get(format!("{base}/healthz")).send().await.unwrap().status().is_success());
    let before = writes_by_thread_name(child.id());
    for i in 0..REQUESTS {
        let r = http.get(format!("{base}/healthz")).send().await;
        let r = r.unwrap_or_else(|e| panic!("request {i} while stderr is not read: {e}"));
        assert!(r.status().is_success());
        r.bytes().await.unwrap();
    }
    let after = writes_by_thread_name(child.id());
    let spent =
        |name: &str| after.get(name).copied().unwrap_or(0).saturating_sub(before.get(name).copied().unwrap_or(0));
    let workers = spent("tokio-rt-worker");
    assert!(
        workers < REQUESTS * 3 / 2,
        "{workers} writes by the runtime workers for {REQUESTS} requests (answers only: {REQUESTS}); all threads: {after:?}"
    );
    assert!(spent("herald-log") >= 1, "the log thread wrote nothing: {after:?}");

    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
        let lines: Vec<String> = lines.map_while(Result::ok).collect();
        // Not a terminal: no colour escape codes in the file or journal.
        assert!(lines.iter().all(|l| !l.contains('\x1b')), "escape codes in {:?}", lines.first());
        lines.iter().filter(|l| l.contains("request") && l.contains("/healthz")).count() as u64
    });
    signal(&child, Signal::TERM);
    assert!(child.wait().unwrap().success());
    assert_eq!(reader.join().unwrap(), REQUESTS + 1, "request lines on stderr");
}
