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
            at_zero();
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

/// The handles of the per-request series (`herald_http_requests_total`,
/// `herald_http_request_duration_seconds`), kept per label set: building
/// their keys and finding them in the recorder on every request was a few
/// percent of a one-client send's CPU. Bounded by routes × methods ×
/// statuses × existing tenants. Made after the recorder is installed (by
/// the engine), so the handles are the recorder's.
#[derive(Default)]
pub struct RequestSeries(dashmap::DashMap<RequestLabels, (metrics::Counter, metrics::Histogram)>);

/// Route, method, status and (for a known tenant's success) the tenant label.
type RequestLabels = (&'static str, http::Method, u16, Option<metrics::Label>);

impl RequestSeries {
    /// Counts one answered request and records its duration.
    pub(crate) fn record(
        &self,
        route: &'static str,
        method: &http::Method,
        status: u16,
        tenant: Option<metrics::Label>,
        elapsed: Duration,
    ) {
        let key = (route, method.clone(), status, tenant);
        if let Some(series) = self.0.get(&key) {
            series.0.increment(1);
            series.1.record(elapsed.as_secs_f64());
            return;
        }
        let (method, status) = (method.to_string(), status.to_string());
        let mut labels = vec![
            metrics::Label::new("route", route),
            metrics::Label::new("method", method.clone()),
            metrics::Label::new("status", status.clone()),
        ];
        labels.extend(key.3.clone());
        let counter = metrics::counter!("herald_http_requests_total", labels);
        let histogram = metrics::histogram!("herald_http_request_duration_seconds", "route" => route, "method" => method, "status" => status);
        counter.increment(1);
        histogram.record(elapsed.as_secs_f64());
        self.0.insert(key, (counter, histogram));
    }
}

/// The handles of `herald_send_duration_seconds` per recipient kind, made
/// at first use like [`RequestSeries`]'s: building the series' key and
/// finding it in the recorder on every send was two allocations of each.
#[derive(Default)]
pub struct SendSeries {
    client: OnceLock<metrics::Histogram>,
    user: OnceLock<metrics::Histogram>,
    topic: OnceLock<metrics::Histogram>,
}

impl SendSeries {
    /// The histogram of how long sends to `recipient`'s kind take, made at first use.
    pub(crate) fn of(&self, recipient: &herald_actors::send::Recipient) -> &metrics::Histogram {
        use herald_actors::send::Recipient;
        let (slot, label) = match recipient {
            Recipient::Client { .. } => (&self.client, "client"),
            Recipient::User { .. } => (&self.user, "user"),
            Recipient::Topic { .. } => (&self.topic, "topic"),
        };
        slot.get_or_init(|| metrics::histogram!("herald_send_duration_seconds", "recipient" => label))
    }
}

/// A handle of a recorder that is not installed: for an embedding program
/// that keeps its own recorder (Herald's series then go to it, and Herald's
/// `/metrics` shows nothing).
pub fn detached() -> PrometheusHandle {
    PrometheusBuilder::new().build_recorder().handle()
}

/// Creates the counters and histograms whose label values are known before
/// anything happens, so a healthy engine exports them at zero from start
/// (dashboards show 0 where they would show "No data"). Each route's
/// request series start at zero with its success status; other statuses
/// appear with their first answer. (Tenant-labelled series are registered by
/// the engine, which knows the tenants: `telemetry::export_at_zero`.)
fn at_zero() {
    use metrics::{counter, histogram};
    for provider in herald_actors::telemetry::PROVIDERS {
        counter!("herald_provider_retries_total", "provider" => provider).absolute(0);
        for outcome in ["ok", "error"] {
            counter!("herald_provider_auth_refreshes_total", "provider" => provider, "outcome" => outcome).absolute(0);
        }
        for lane in ["interactive", "bulk"] {
            let _ = histogram!("herald_provider_request_duration_seconds", "provider" => provider, "lane" => lane);
        }
    }
    for actor in ["tenant", "fanout", "webhook_target"] {
        counter!("herald_actor_restarts_total", "actor" => actor).absolute(0);
    }
    for reason in ["no_request", "idle", "per_ip"] {
        counter!("herald_connections_closed_total", "reason" => reason).absolute(0);
    }
    for recipient in ["client", "user", "topic"] {
        let _ = histogram!("herald_send_duration_seconds", "recipient" => recipient);
    }
    counter!("herald_log_lines_dropped_total").absolute(0);
    let _ = histogram!("herald_webhook_delivery_seconds");
    let _ = histogram!("herald_storage_flush_seconds");
    for kind in herald_storage::WRITE_FAILURE_KINDS {
        counter!("herald_storage_write_failures_total", "kind" => kind).absolute(0);
    }
    for kind in ["report", "outcome", "attempt", "idempotency_key", "schedule"] {
        counter!("herald_retention_deleted_total", "kind" => kind).absolute(0);
    }
    for outcome in ["sent", "failed"] {
        counter!("herald_scheduled_sends_total", "outcome" => outcome).absolute(0);
    }
    for limit in ["interactivePerSecond", "broadcastsPerDay", "pushTokens"] {
        counter!("herald_quota_refused_total", "limit" => limit).absolute(0);
    }
    for limit in ["bulkPerSecond", "maxPerSecond"] {
        counter!("herald_quota_throttled_total", "limit" => limit).absolute(0);
    }
    for work in ["broadcast", "webhook"] {
        counter!("herald_lease_fenced_total", "work" => work).absolute(0);
    }
    for route in crate::api::routes() {
        let status = route.doc.responses.iter().map(|(s, _)| *s).find(|s| (200..300).contains(s)).unwrap_or(200);
        let labels =
            [("route", route.path.to_string()), ("method", route.method.to_string()), ("status", status.to_string())];
        counter!("herald_http_requests_total", &labels).absolute(0);
        let _ = histogram!("herald_http_request_duration_seconds", &labels);
    }
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    for s in SERIES {
        match s.kind {
            Kind::Counter => describe_counter!(s.name, s.help),
            Kind::Gauge if s.name.ends_with("_bytes") => describe_gauge!(s.name, Unit::Bytes, s.help),
            Kind::Gauge => describe_gauge!(s.name, s.help),
            Kind::Histogram => describe_histogram!(s.name, Unit::Seconds, s.help),
        }
    }
}

/// The kind of a series, as Prometheus types it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only ever increases (`_total`); read it with `rate()`.
    Counter,
    /// A current value that goes up and down.
    Gauge,
    /// Observations in buckets (`_bucket`, `_sum`, `_count`).
    Histogram,
}

impl Kind {
    /// The Prometheus `# TYPE` word.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One documented series.
#[derive(Clone, Copy, Debug)]
pub struct Series {
    /// The metric name as exported (`herald_...`).
    pub name: &'static str,
    /// Its Prometheus type.
    pub kind: Kind,
    /// Its label names; `tenant` follows the `metrics_tenant_label` setting.
    pub labels: &'static [&'static str],
    /// What it measures, as the README's table and the `# HELP` line say.
    pub help: &'static str,
}

const fn series(name: &'static str, kind: Kind, labels: &'static [&'static str], help: &'static str) -> Series {
    Series { name, kind, labels, help }
}

/// Every series Herald exports: the one list the metrics test, the dashboard
/// test and the README's table are checked against. `tenant` follows
/// `--metrics-tenant-label` (absent when `off`, `other` beyond `top:N`).
#[rustfmt::skip]
pub const SERIES: &[Series] = &[
    series("herald_http_requests_total", Kind::Counter, &["route", "method", "status", "tenant"],
        "HTTP requests answered; tenant only on successful requests to a tenant's routes."),
    series("herald_http_request_duration_seconds", Kind::Histogram, &["route", "method", "status"],
        "Time to answer an HTTP request."),
    series("herald_send_duration_seconds", Kind::Histogram, &["recipient"],
        "Time the send API takes (recipient client, user or topic), provider answers included."),
    series("herald_notifications_total", Kind::Counter, &["provider", "outcome", "tenant"],
        "Notifications delivered to a provider, by outcome (sent, invalid, failed)."),
    series("herald_provider_request_duration_seconds", Kind::Histogram, &["provider", "lane"],
        "Duration of one request to a provider, connection set-up excluded; lane interactive (one client or user) or bulk (broadcasts)."),
    series("herald_provider_retries_total", Kind::Counter, &["provider"],
        "Provider requests retried after a transient answer (429, 5xx, lost connection)."),
    series("herald_provider_auth_refreshes_total", Kind::Counter, &["provider", "outcome"],
        "Provider credentials renewed (APNs JWTs signed, FCM and HMS OAuth tokens fetched)."),
    series("herald_pool_connections", Kind::Gauge, &["provider"],
        "HTTP/2 connections open to the providers."),
    series("herald_pool_streams_in_flight", Kind::Gauge, &["provider"],
        "HTTP/2 streams in flight to the providers."),
    series("herald_fanout_jobs_started_total", Kind::Counter, &["tenant"],
        "Broadcast runs started (a resumed broadcast counts again)."),
    series("herald_fanout_jobs_completed_total", Kind::Counter, &["tenant"],
        "Broadcasts completed."),
    series("herald_fanout_targeted_total", Kind::Counter, &["tenant"],
        "Clients targeted by broadcasts when queued; progress is notifications over targeted."),
    series("herald_fanout_notifications_total", Kind::Counter, &["tenant"],
        "Broadcast notifications done (any outcome)."),
    series("herald_scheduled_sends_total", Kind::Counter, &["outcome"],
        "Scheduled sends fired, by outcome (sent: handed to the send engine, whose report says the rest; failed: the send was refused, the schedule says why)."),
    series("herald_events_published_total", Kind::Counter, &["tenant"],
        "Events published (the engine's own and POST .../events)."),
    series("herald_webhook_attempts_total", Kind::Counter, &["outcome", "tenant"],
        "Webhook delivery attempts, by outcome (success, failure: a non-2xx answer, error: no answer)."),
    series("herald_webhook_outbox_depth", Kind::Gauge, &["tenant"],
        "Webhook deliveries waiting in the outboxes (due or scheduled for retry)."),
    series("herald_webhook_delivery_seconds", Kind::Histogram, &[],
        "Time from an event's publication to its successful delivery, retries included."),
    series("herald_actor_restarts_total", Kind::Counter, &["actor"],
        "Actors restarted by their supervisor after a failure (tenant, fanout, webhook_target)."),
    series("herald_actors_live", Kind::Gauge, &["kind"],
        "Actors alive, by kind (root, tenant, fanout, webhook_target); a tenant's actor stops after --tenant-idle-stop-s without work."),
    series("herald_connections_closed_total", Kind::Counter, &["reason"],
        "Connections Herald closed: no_request (no complete request head in time), idle (no request open for the idle timeout), per_ip (over the per-address cap)."),
    series("herald_storage_size_bytes", Kind::Gauge, &[], "Size of the database on disk (measured at scrape)."),
    series("herald_storage_free_bytes", Kind::Gauge, &[],
        "Free space of the data directory's disk; below --disk-reserve-mib writes are refused with 507 and /readyz answers 503."),
    series("herald_storage_flush_seconds", Kind::Histogram, &[], "Duration of one grouped storage flush."),
    series("herald_storage_write_failures_total", Kind::Counter, &["kind"],
        "Writes the database itself failed, by kind (no_space: the disk filled before a sample saw it below the reserve, io, corruption, other): each marks the store failed (/readyz 503) until the database is reopened, as soon as the disk has room."),
    series("herald_stored_reports", Kind::Gauge, &[],
        "Delivery reports stored (one per send), counted after a retention pass (on a large store, at most every 100 times the count's own duration)."),
    series("herald_stored_webhook_attempts", Kind::Gauge, &[],
        "Webhook delivery attempts stored, counted with `herald_stored_reports`."),
    series("herald_retention_deleted_total", Kind::Counter, &["kind"],
        "Records deleted past their retention, by kind (report, outcome, attempt, idempotency_key, schedule)."),
    series("herald_node_info", Kind::Gauge, &["node"],
        "Always 1, labelled with this engine's --node-id: joins a scrape target to the node named in logs and lease rows."),
    series("herald_nodes_live", Kind::Gauge, &[],
        "Engines sharing the database whose node lease is unexpired, this one included (1 on sled); per-engine rate limits are divided by it."),
    series("herald_leases_held", Kind::Gauge, &[],
        "Leases this engine holds: broadcast partitions, webhooks it delivers, the sweeper, its node lease."),
    series("herald_quota_refused_total", Kind::Counter, &["tenant", "limit"],
        "Requests refused with 429 past a tenant's quota, by limit (interactivePerSecond, broadcastsPerDay, pushTokens)."),
    series("herald_quota_throttled_total", Kind::Counter, &["tenant", "limit"],
        "Broadcast notifications that waited for their turn under a rate, by limit (bulkPerSecond, maxPerSecond)."),
    series("herald_log_lines_dropped_total", Kind::Counter, &[],
        "Log lines dropped because stderr was not read fast enough (the log thread's queue full): `herald serve` goes on answering rather than waiting for its log."),
    series("herald_lease_fenced_total", Kind::Counter, &["work"],
        "Writes refused because their lease moved to another engine (this one was paused or cut off past it), by work (broadcast, webhook)."),
];

/// The README's metrics table (its test checks the README holds exactly this).
pub fn markdown_table() -> String {
    let mut out = String::from("| series | type | labels | meaning |\n|---|---|---|---|\n");
    for s in SERIES {
        let labels = s.labels.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ");
        out.push_str(&format!("| `{}` | {} | {labels} | {} |\n", s.name, s.kind.as_str(), s.help));
    }
    out
}
