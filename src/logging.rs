//! `herald serve`'s log: lines to stderr, written by a thread of their own.
//!
//! A request logs a line at the default `info`. Written on the runtime
//! worker, that was a system call per request, and a reader of stderr that
//! stalled (a log shipper down, a full pipe) blocked every worker and every
//! send with it. The lines are queued to the `herald-log` thread, which
//! writes what arrives together at once. While the reader does not read,
//! the queue fills to [`QUEUE_LINES`]; past that, lines are dropped rather
//! than sends held up, and counted (`herald_log_lines_dropped_total`).

use std::sync::OnceLock;
use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};

/// Lines waiting for the log thread at most: about a second of requests at
/// full load, some 3 MiB.
pub const QUEUE_LINES: usize = 16_384;

/// The lines dropped so far, once `herald serve` logs through the queue.
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Logs to stderr at `HERALD_LOG` (default `info`), as JSON when `json`.
/// The guard writes the queue when dropped (at a stop); a crash loses the
/// lines still queued.
pub(crate) fn init(json: bool) -> WorkerGuard {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HERALD_LOG").unwrap_or_else(|_| "info".into());
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUE_LINES)
        .thread_name("herald-log")
        .finish(std::io::BufWriter::with_capacity(64 * 1024, std::io::stderr()));
    let _ = DROPPED.set(writer.error_counter());
    // Colours only for a terminal: a file or a journal would keep the escape codes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(writer);
    let _ = if json { builder.json().try_init() } else { builder.try_init() };
    guard
}

/// Sets `herald_log_lines_dropped_total` to the lines dropped so far (read
/// at each scrape; 0 when Herald is embedded and logs through its host).
pub(crate) fn export_dropped_lines() {
    if let Some(dropped) = DROPPED.get() {
        metrics::counter!("herald_log_lines_dropped_total").absolute(dropped.dropped_lines() as u64);
    }
}
