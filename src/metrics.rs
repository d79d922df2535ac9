//! The Prometheus recorder, installed once per process.
//!
//! Histograms get explicit buckets so they export as histograms that Grafana's
//! `histogram_quantile` can use, not as summaries.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Duration;

/// Buckets of every `_seconds` histogram: 100 µs to 30 s.
const SECONDS_BUCKETS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The process's recorder handle; the first call installs it.
pub fn handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
                .unwrap_or_else(|_| PrometheusBuilder::new());
            let handle = match builder.install_recorder() {
                Ok(h) => h,
                // Another recorder is installed (an embedding program's): render our own.
                Err(_) => PrometheusBuilder::new().build_recorder().handle(),
            };
            describe();
            let upkeep = handle.clone();
            std::thread::Builder::new()
                .name("herald-metrics-upkeep".into())
                .spawn(move || loop {
                    std::thread::sleep(Duration::from_secs(5));
                    upkeep.run_upkeep();
                })
                .ok();
            handle
        })
        .clone()
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!("herald_http_requests_total", "HTTP requests answered, by route, method and status.");
    describe_histogram!(
        "herald_http_request_duration_seconds",
        Unit::Seconds,
        "Time to answer an HTTP request, by route."
    );
    describe_histogram!("herald_storage_flush_seconds", Unit::Seconds, "Duration of one grouped storage flush.");
    describe_gauge!("herald_storage_size_bytes", Unit::Bytes, "Size of the database on disk.");
}
