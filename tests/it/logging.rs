//! `herald serve`'s log lines: written by a thread of their own, so a reader
//! of stderr that stalls never holds up requests.

use crate::common::{signal, Signal, OPERATOR};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStderr, Command, Stdio};

/// `herald serve` at log level `info` with its stderr piped and not read
/// until the test takes it; killed when dropped (a failing test leaks none).
struct Logging {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Logging {
    fn start() -> Logging {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut child = Command::new(env!("CARGO_BIN_EXE_herald"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .env("HERALD_OPERATOR_TOKEN", OPERATOR)
            .env("HERALD_LOG", "info")
            .envs(crate::common::store_for(&data).map(|url| ("HERALD_STORE", url)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let base = loop {
            let line = lines.next().expect("herald prints its address").unwrap();
            if let Some(url) = line.strip_prefix("herald listening on ") {
                break url.trim().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Logging { child, base, _dir: dir }
    }

    /// `n` requests to `/healthz` on one connection, each answered within
    /// 10 s (a regression fails here, not hangs).
    async fn requests(&self, http: &reqwest::Client, n: u64) {
        for i in 0..n {
            let r = http.get(format!("{}/healthz", self.base)).send().await;
            let r = r.unwrap_or_else(|e| panic!("request {i} while stderr is not read: {e}"));
            assert!(r.status().is_success());
            r.bytes().await.unwrap();
        }
    }

    /// Reads stderr to its end in a thread: its lines, once Herald stopped.
    fn read_stderr(&mut self) -> std::thread::JoinHandle<Vec<String>> {
        let stderr: ChildStderr = self.child.stderr.take().unwrap();
        std::thread::spawn(move || BufReader::new(stderr).lines().map_while(Result::ok).collect())
    }

    fn stop(&mut self) {
        signal(&self.child, Signal::TERM);
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for Logging {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build().unwrap()
}

fn request_lines(lines: &[String]) -> u64 {
    lines.iter().filter(|l| l.contains("request") && l.contains("/healthz")).count() as u64
}

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
/// reads stderr; and a reader of stderr that stalls left them blocked on a
/// full pipe once 64 KiB were waiting, every request with them. Below the
/// queue's bound every line is written once the reader reads again, those
/// queued at SIGTERM included, without colour codes (not a terminal).
#[tokio::test]
async fn request_lines_are_written_off_the_runtime_workers_and_none_is_lost() {
    const REQUESTS: u64 = 2_000; // ~250 KB of lines: well past a pipe's buffer
    let mut herald = Logging::start();
    let http = http();
    // One connection, warmed up: the counted requests open none.
    herald.requests(&http, 1).await;
    let before = writes_by_thread_name(herald.child.id());
    herald.requests(&http, REQUESTS).await;
    let after = writes_by_thread_name(herald.child.id());
    let spent =
        |name: &str| after.get(name).copied().unwrap_or(0).saturating_sub(before.get(name).copied().unwrap_or(0));
    let workers = spent("tokio-rt-worker");
    assert!(
        workers < REQUESTS * 3 / 2,
        "{workers} writes by the runtime workers for {REQUESTS} requests (answers only: {REQUESTS}); all threads: {after:?}"
    );
    assert!(spent("herald-log") >= 1, "the log thread wrote nothing: {after:?}");

    let reader = herald.read_stderr();
    herald.stop();
    let lines = reader.join().unwrap();
    // Not a terminal: no colour escape codes in the file or journal.
    assert!(lines.iter().all(|l| !l.contains('\x1b')), "escape codes in {:?}", lines.first());
    assert_eq!(request_lines(&lines), REQUESTS + 1, "request lines on stderr");
}

/// A reader that stalls for longer than the queue holds costs log lines,
/// never answers: past [`herald::logging::QUEUE_LINES`] waiting, lines are
/// dropped and counted in `herald_log_lines_dropped_total`.
#[tokio::test]
async fn lines_past_the_queue_are_dropped_and_counted_while_stderr_is_not_read() {
    let requests = herald::logging::QUEUE_LINES as u64 * 3 / 2;
    let mut herald = Logging::start();
    let http = http();
    herald.requests(&http, requests).await;
    let metrics = http.get(format!("{}/metrics", herald.base)).send().await.unwrap().text().await.unwrap();
    let dropped: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("herald_log_lines_dropped_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("herald_log_lines_dropped_total in /metrics"));

    let reader = herald.read_stderr();
    herald.stop();
    let written = request_lines(&reader.join().unwrap());
    assert!(dropped > 0, "nothing dropped while {requests} lines waited for a reader ({written} written)");
    assert!(written >= herald::logging::QUEUE_LINES as u64 / 2, "{written} lines written of {requests}");
    // Every line is either written or counted (the scrape's own line comes after the count).
    assert!(written + dropped >= requests, "{written} written + {dropped} dropped < {requests} requests");
}
