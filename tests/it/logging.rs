//! `herald serve`'s log lines: written by a thread of their own, so a reader
//! of stderr that stalls never holds up requests.

use crate::common::{signal, writes_by_thread_name, writes_since, Herald, Signal};
use std::io::{BufRead, BufReader};

/// `herald serve` logging at `info`, its stderr piped and not read until
/// the test reads it (`herald`'s data in `dir`).
fn start(dir: &tempfile::TempDir) -> Herald {
    Herald::start_piping_stderr(&dir.path().join("data"), &[("HERALD_LOG", "info".into())])
}

/// `n` requests to `/healthz` on one connection, each answered within 10 s
/// (a regression fails here, not hangs).
async fn requests(herald: &Herald, http: &reqwest::Client, n: u64) {
    for i in 0..n {
        let r = http.get(format!("{}/healthz", herald.base)).send().await;
        let r = r.unwrap_or_else(|e| panic!("request {i} while stderr is not read: {e}"));
        assert!(r.status().is_success());
        r.bytes().await.unwrap();
    }
}

/// Stops Herald (SIGTERM) while reading its stderr: the lines, to the end.
fn stop_reading_stderr(herald: &mut Herald) -> Vec<String> {
    let stderr = herald.child.stderr.take().expect("stderr piped");
    let reader = std::thread::spawn(move || BufReader::new(stderr).lines().map_while(Result::ok).collect());
    signal(&herald.child, Signal::TERM);
    assert!(herald.child.wait().unwrap().success());
    reader.join().unwrap()
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build().unwrap()
}

fn request_lines(lines: &[String]) -> u64 {
    lines.iter().filter(|l| l.contains("request") && l.contains("/healthz")).count() as u64
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
    let dir = tempfile::tempdir().unwrap();
    let mut herald = start(&dir);
    let http = http();
    // One connection, warmed up: the counted requests open none.
    requests(&herald, &http, 1).await;
    let pid = herald.child.id();
    let before = writes_by_thread_name(pid);
    requests(&herald, &http, REQUESTS).await;
    let spent = writes_since(pid, &before);
    let of = |name: &str| spent.get(name).copied().unwrap_or(0);
    let workers = of("tokio-rt-worker");
    assert!(
        workers < REQUESTS * 3 / 2,
        "{workers} writes by the runtime workers for {REQUESTS} requests (answers only: {REQUESTS}); all threads: {spent:?}"
    );
    assert!(of("herald-log") >= 1, "the log thread wrote nothing: {spent:?}");

    let lines = stop_reading_stderr(&mut herald);
    // Not a terminal: no colour escape codes in the file or journal.
    assert!(lines.iter().all(|l| !l.contains('\x1b')), "escape codes in {:?}", lines.first());
    assert_eq!(request_lines(&lines), REQUESTS + 1, "request lines on stderr");
}

/// A reader that stalls for longer than the queue holds costs log lines,
/// never answers: past [`herald::logging::QUEUE_LINES`] waiting, lines are
/// dropped and counted in `herald_log_lines_dropped_total`.
#[tokio::test]
async fn lines_past_the_queue_are_dropped_and_counted_while_stderr_is_not_read() {
    let sent = herald::logging::QUEUE_LINES as u64 * 3 / 2;
    let dir = tempfile::tempdir().unwrap();
    let mut herald = start(&dir);
    let http = http();
    requests(&herald, &http, sent).await;
    let metrics = http.get(format!("{}/metrics", herald.base)).send().await.unwrap().text().await.unwrap();
    let dropped: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("herald_log_lines_dropped_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("herald_log_lines_dropped_total in /metrics"));

    let written = request_lines(&stop_reading_stderr(&mut herald));
    assert!(dropped > 0, "nothing dropped while {sent} lines waited for a reader ({written} written)");
    assert!(written >= herald::logging::QUEUE_LINES as u64 / 2, "{written} lines written of {sent}");
    // Every line is either written or counted (the scrape's own line comes after the count).
    assert!(written + dropped >= sent, "{written} written + {dropped} dropped < {sent} requests");
}
