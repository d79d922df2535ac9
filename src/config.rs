//! Configuration: command-line flags, `HERALD_*` environment variables and an
//! optional TOML file, in that order of precedence, over built-in defaults.

use clap::Args;
use herald_actors::telemetry::TenantLabel;
use herald_actors::{Endpoints, PushSettings, WebhookSettings};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Every setting of `herald serve`, each optional so sources can be layered.
#[derive(Args, Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Address to listen on (HTTP/1.1 and HTTP/2 on one port).
    #[arg(long, env = "HERALD_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Directory of the database and the generated master key.
    #[arg(long, env = "HERALD_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where records live instead of the data directory: a
    /// `postgres://USER@HOST:PORT/DB` URL, which several engines may share
    /// (they need the same master key file).
    #[arg(long, env = "HERALD_STORE")]
    pub store: Option<String>,
    /// Connections to the `--store` database at most, 1 to 1000 (its `max_connections` bounds all engines' sum).
    #[arg(long, env = "HERALD_STORE_CONNECTIONS")]
    pub store_connections: Option<usize>,
    /// This engine's name among engines sharing a `--store` database (logs,
    /// metrics, lease rows): letters, digits, `.`, `_`, `-`, up to 64;
    /// generated once and kept in the data directory when absent.
    #[arg(long, env = "HERALD_NODE_ID")]
    pub node_id: Option<String>,
    /// How long an engine's leases last without a heartbeat: how soon
    /// another engine takes over the work of one that died (1s to 10m).
    #[arg(long, env = "HERALD_LEASE_TTL")]
    pub lease_ttl: Option<String>,
    /// Tokens per partition of a topic broadcast: the unit engines claim
    /// and resume (100 to 10000000).
    #[arg(long, env = "HERALD_BROADCAST_PARTITION")]
    pub broadcast_partition: Option<u64>,
    /// How long delivery reports and outcomes are kept (`7d`, `12h`, `30s`; `0` for ever).
    #[arg(long, env = "HERALD_REPORT_RETENTION")]
    pub report_retention: Option<String>,
    /// How long webhook delivery attempts are kept (`7d`, `12h`, `30s`; `0` for ever).
    #[arg(long, env = "HERALD_EVENT_RETENTION")]
    pub event_retention: Option<String>,
    /// Hex file with the 256-bit key that seals secrets (created in the data dir when absent).
    #[arg(long, env = "HERALD_MASTER_KEY_FILE")]
    pub master_key_file: Option<PathBuf>,
    /// Page cache of the sled databases in MiB: 11/16 for the records, 1/16 for the broadcast index, 4/16 for delivery records (the process uses a multiple of it).
    #[arg(long, env = "HERALD_CACHE_MIB")]
    pub cache_mib: Option<u64>,
    /// Bearer token of the platform operator (tenant creation); random when absent.
    #[arg(long, env = "HERALD_OPERATOR_TOKEN", hide_env_values = true)]
    pub operator_token: Option<String>,
    /// PEM certificate chain: serve TLS (with ALPN h2 and http/1.1).
    #[arg(long, env = "HERALD_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of the TLS certificate.
    #[arg(long, env = "HERALD_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Base URL clients reach Herald at; token issuers and discovery use it.
    #[arg(long, env = "HERALD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Largest accepted request body in bytes (413 beyond).
    #[arg(long, env = "HERALD_BODY_LIMIT")]
    pub body_limit: Option<usize>,
    /// Lifetime of access tokens in seconds.
    #[arg(long, env = "HERALD_ACCESS_TOKEN_TTL")]
    pub access_token_ttl: Option<u64>,
    /// Lifetime of refresh tokens in seconds.
    #[arg(long, env = "HERALD_REFRESH_TOKEN_TTL")]
    pub refresh_token_ttl: Option<u64>,
    /// Log format: `text` or `json`.
    #[arg(long, env = "HERALD_LOG_FORMAT")]
    pub log_format: Option<String>,
    /// APNs production base URL.
    #[arg(long, env = "HERALD_APNS_URL")]
    pub apns_url: Option<String>,
    /// APNs sandbox base URL (apps with `iosIsDevelopment`).
    #[arg(long, env = "HERALD_APNS_SANDBOX_URL")]
    pub apns_sandbox_url: Option<String>,
    /// FCM HTTP v1 base URL (the OAuth URL comes from each service account's `token_uri`).
    #[arg(long, env = "HERALD_FCM_URL")]
    pub fcm_url: Option<String>,
    /// Huawei Push Kit base URL.
    #[arg(long, env = "HERALD_HMS_URL")]
    pub hms_url: Option<String>,
    /// Huawei OAuth token URL.
    #[arg(long, env = "HERALD_HMS_TOKEN_URL")]
    pub hms_token_url: Option<String>,
    /// PEM file of CA certificates trusted for provider connections besides the web PKI.
    #[arg(long, env = "HERALD_EXTRA_CA_FILE")]
    pub extra_ca_file: Option<PathBuf>,
    /// Longest wait in seconds a provider's or webhook receiver's Retry-After can impose before a retry (at most a day).
    #[arg(long, env = "HERALD_MAX_RETRY_AFTER_S")]
    pub max_retry_after_s: Option<u64>,
    /// Let a service account's token_uri be plain http or a private address (tests, private deployments).
    #[arg(long, env = "HERALD_ALLOW_PRIVATE_PROVIDER_ENDPOINTS", num_args = 0..=1, default_missing_value = "true")]
    pub allow_private_provider_endpoints: Option<bool>,
    /// Broadcast notifications in flight at once, all broadcasts together.
    #[arg(long, env = "HERALD_BULK_IN_FLIGHT")]
    pub bulk_in_flight: Option<usize>,
    /// Seconds without a send or broadcast after which a tenant's actor stops, freeing its provider connections (0: never).
    #[arg(long, env = "HERALD_TENANT_IDLE_STOP_S")]
    pub tenant_idle_stop_s: Option<u64>,
    /// Nice steps (0 to 19) by which broadcast threads (batch work, `SCHED_BATCH`) run below the rest, so sends with a caller waiting go first on busy cores.
    #[arg(long, env = "HERALD_BULK_NICE")]
    pub bulk_nice: Option<u8>,
    /// Milliseconds a one-client or one-user send waits for the providers.
    #[arg(long, env = "HERALD_SEND_DEADLINE_MS")]
    pub send_deadline_ms: Option<u64>,
    /// Seconds before each webhook delivery attempt, comma-separated.
    #[arg(long, env = "HERALD_WEBHOOK_RETRY_SCHEDULE")]
    pub webhook_retry_schedule: Option<String>,
    /// Milliseconds a webhook receiver has to answer.
    #[arg(long, env = "HERALD_WEBHOOK_TIMEOUT_MS")]
    pub webhook_timeout_ms: Option<u64>,
    /// Deliver webhooks to loopback, private and link-local addresses.
    #[arg(long, env = "HERALD_WEBHOOK_ALLOW_PRIVATE", num_args = 0..=1, default_missing_value = "true")]
    pub webhook_allow_private: Option<bool>,
    /// Deliveries in flight per webhook (1 keeps events in order).
    #[arg(long, env = "HERALD_WEBHOOK_CONCURRENCY")]
    pub webhook_concurrency: Option<usize>,
    /// PEM certificate of an operator CA to issue tenant signers under (instead of a generated root).
    #[arg(long, env = "HERALD_CA_CERT", requires = "ca_key")]
    pub ca_cert: Option<PathBuf>,
    /// PEM (PKCS#8) private key of `--ca-cert`.
    #[arg(long, env = "HERALD_CA_KEY", requires = "ca_cert")]
    pub ca_key: Option<PathBuf>,
    /// Validity of client certificates issued from CSRs, in days.
    #[arg(long, env = "HERALD_CLIENT_CERT_VALIDITY_DAYS")]
    pub client_cert_validity_days: Option<u64>,
    /// The `tenant` label of metrics: `on`, `off`, or `top:N` (the first N tenants seen, the rest as `other`).
    #[arg(long, env = "HERALD_METRICS_TENANT_LABEL")]
    pub metrics_tenant_label: Option<String>,
    /// Milliseconds a client has to send a request's headers (slowloris).
    #[arg(long, env = "HERALD_HEADER_READ_TIMEOUT_MS")]
    pub header_read_timeout_ms: Option<u64>,
    /// Largest accepted request head (headers) in bytes (431 beyond; at least 8192).
    #[arg(long, env = "HERALD_HEADER_LIMIT")]
    pub header_limit: Option<usize>,
    /// Connections served at once; further ones wait to be accepted (0: no limit; unset: what the file-descriptor limit holds).
    #[arg(long, env = "HERALD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections one client address may hold open; more are closed at once (0: no limit).
    #[arg(long, env = "HERALD_MAX_CONNECTIONS_PER_IP")]
    pub max_connections_per_ip: Option<usize>,
    /// Seconds a connection with no request in progress stays open (HTTP/1.1 keep-alive and HTTP/2).
    #[arg(long, env = "HERALD_IDLE_TIMEOUT_S")]
    pub idle_timeout_s: Option<u64>,
    /// Milliseconds a request body has to arrive in full (408 beyond).
    #[arg(long, env = "HERALD_BODY_TIMEOUT_MS")]
    pub body_timeout_ms: Option<u64>,
    /// Bytes a second a request body must average once its first 5 seconds are over (408 below; 0: no minimum).
    #[arg(long, env = "HERALD_MIN_BODY_RATE")]
    pub min_body_rate: Option<u64>,
    /// Address of the operations listener, serving only /healthz, /readyz and /metrics.
    #[arg(long, env = "HERALD_OPS_LISTEN")]
    pub ops_listen: Option<SocketAddr>,
    /// MiB of free disk kept in reserve: below it writes are refused with 507 (0: none).
    #[arg(long, env = "HERALD_DISK_RESERVE_MIB")]
    pub disk_reserve_mib: Option<u64>,
    /// Sends a second per tenant on the send API (0: no limit).
    #[arg(long, env = "HERALD_SEND_RATE")]
    pub send_rate: Option<u32>,
    /// Burst of the per-tenant send limit.
    #[arg(long, env = "HERALD_SEND_BURST")]
    pub send_burst: Option<u32>,
    /// Token requests a second per user or client id of a realm (0: no limit).
    #[arg(long, env = "HERALD_TOKEN_RATE_PER_USER")]
    pub token_rate_per_user: Option<u32>,
    /// Burst of the per-user token limit.
    #[arg(long, env = "HERALD_TOKEN_BURST_PER_USER")]
    pub token_burst_per_user: Option<u32>,
    /// Token requests a second per client IP address (0: no limit).
    #[arg(long, env = "HERALD_TOKEN_RATE_PER_IP")]
    pub token_rate_per_ip: Option<u32>,
    /// Burst of the per-IP token limit.
    #[arg(long, env = "HERALD_TOKEN_BURST_PER_IP")]
    pub token_burst_per_ip: Option<u32>,
}

impl Settings {
    /// `self` where set, else `other`.
    pub fn or(self, other: Settings) -> Settings {
        Settings {
            listen: self.listen.or(other.listen),
            data_dir: self.data_dir.or(other.data_dir),
            store: self.store.or(other.store),
            store_connections: self.store_connections.or(other.store_connections),
            node_id: self.node_id.or(other.node_id),
            lease_ttl: self.lease_ttl.or(other.lease_ttl),
            broadcast_partition: self.broadcast_partition.or(other.broadcast_partition),
            report_retention: self.report_retention.or(other.report_retention),
            event_retention: self.event_retention.or(other.event_retention),
            master_key_file: self.master_key_file.or(other.master_key_file),
            cache_mib: self.cache_mib.or(other.cache_mib),
            operator_token: self.operator_token.or(other.operator_token),
            tls_cert: self.tls_cert.or(other.tls_cert),
            tls_key: self.tls_key.or(other.tls_key),
            public_url: self.public_url.or(other.public_url),
            body_limit: self.body_limit.or(other.body_limit),
            access_token_ttl: self.access_token_ttl.or(other.access_token_ttl),
            refresh_token_ttl: self.refresh_token_ttl.or(other.refresh_token_ttl),
            log_format: self.log_format.or(other.log_format),
            apns_url: self.apns_url.or(other.apns_url),
            apns_sandbox_url: self.apns_sandbox_url.or(other.apns_sandbox_url),
            fcm_url: self.fcm_url.or(other.fcm_url),
            hms_url: self.hms_url.or(other.hms_url),
            hms_token_url: self.hms_token_url.or(other.hms_token_url),
            extra_ca_file: self.extra_ca_file.or(other.extra_ca_file),
            max_retry_after_s: self.max_retry_after_s.or(other.max_retry_after_s),
            allow_private_provider_endpoints: self
                .allow_private_provider_endpoints
                .or(other.allow_private_provider_endpoints),
            bulk_in_flight: self.bulk_in_flight.or(other.bulk_in_flight),
            tenant_idle_stop_s: self.tenant_idle_stop_s.or(other.tenant_idle_stop_s),
            bulk_nice: self.bulk_nice.or(other.bulk_nice),
            send_deadline_ms: self.send_deadline_ms.or(other.send_deadline_ms),
            webhook_retry_schedule: self.webhook_retry_schedule.or(other.webhook_retry_schedule),
            webhook_timeout_ms: self.webhook_timeout_ms.or(other.webhook_timeout_ms),
            webhook_allow_private: self.webhook_allow_private.or(other.webhook_allow_private),
            webhook_concurrency: self.webhook_concurrency.or(other.webhook_concurrency),
            ca_cert: self.ca_cert.or(other.ca_cert),
            ca_key: self.ca_key.or(other.ca_key),
            client_cert_validity_days: self.client_cert_validity_days.or(other.client_cert_validity_days),
            metrics_tenant_label: self.metrics_tenant_label.or(other.metrics_tenant_label),
            header_read_timeout_ms: self.header_read_timeout_ms.or(other.header_read_timeout_ms),
            header_limit: self.header_limit.or(other.header_limit),
            max_connections: self.max_connections.or(other.max_connections),
            max_connections_per_ip: self.max_connections_per_ip.or(other.max_connections_per_ip),
            idle_timeout_s: self.idle_timeout_s.or(other.idle_timeout_s),
            body_timeout_ms: self.body_timeout_ms.or(other.body_timeout_ms),
            min_body_rate: self.min_body_rate.or(other.min_body_rate),
            ops_listen: self.ops_listen.or(other.ops_listen),
            disk_reserve_mib: self.disk_reserve_mib.or(other.disk_reserve_mib),
            send_rate: self.send_rate.or(other.send_rate),
            send_burst: self.send_burst.or(other.send_burst),
            token_rate_per_user: self.token_rate_per_user.or(other.token_rate_per_user),
            token_burst_per_user: self.token_burst_per_user.or(other.token_burst_per_user),
            token_rate_per_ip: self.token_rate_per_ip.or(other.token_rate_per_ip),
            token_burst_per_ip: self.token_burst_per_ip.or(other.token_burst_per_ip),
        }
    }

    /// The settings of a TOML file (the `--config` file); unknown keys are an error, naming the file.
    pub fn from_toml_file(path: &std::path::Path) -> Result<Settings, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// How long reports and webhook attempts are kept unless configured.
const DEFAULT_RETENTION: &str = "7d";

/// The resolved configuration the engine runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address of the API listener (default `127.0.0.1:8080`).
    pub listen: SocketAddr,
    /// The operations listener (probes and metrics only), when configured.
    pub ops_listen: Option<SocketAddr>,
    /// Free disk below which writes are refused (507).
    pub disk_reserve_bytes: u64,
    /// Directory of the database and the generated master key (default `./data`).
    pub data_dir: PathBuf,
    /// Where records live when not in the data directory (a database URL).
    pub store: Option<String>,
    /// Connections to that database at most.
    pub store_connections: usize,
    /// This engine's node id; `None`: the one kept in `data_dir` (generated once).
    pub node_id: Option<String>,
    /// How long leases last without a heartbeat (default 10 s).
    pub lease_ttl: Duration,
    /// How long reports and webhook attempts are kept.
    pub retention: crate::sweeper::Retention,
    /// File of the sealing master key; `None`: the one generated in `data_dir`.
    pub master_key_file: Option<PathBuf>,
    /// sled's page cache in bytes.
    pub cache_bytes: u64,
    /// Bearer token of the operator routes; `None`: the engine makes a random one when it opens.
    pub operator_token: Option<String>,
    /// `(certificate chain, private key)` PEM files: serve TLS; `None`: plain HTTP.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Base URL clients reach Herald at: token issuers, discovery; default from the scheme and `listen`.
    pub public_url: String,
    /// Largest request body in bytes (413 beyond; default 1 MiB).
    pub body_limit: usize,
    /// Lifetime of access tokens, in seconds (default 300).
    pub access_token_ttl: u64,
    /// Lifetime of refresh tokens, in seconds (default 1800).
    pub refresh_token_ttl: u64,
    /// Log as JSON lines instead of text.
    pub log_json: bool,
    /// The clock of login-failure and lock decisions; tests move it.
    pub clock: crate::auth::brute_force::Clock,
    /// Provider endpoints, extra CA, bulk concurrency and the tenant actors' idle stop.
    pub push: PushSettings,
    /// How long a one-client or one-user send waits for the providers (default 10 s).
    pub send_deadline: Duration,
    /// Webhook delivery: retry schedule, timeout, concurrency, private addresses.
    pub webhooks: WebhookSettings,
    /// The certificate authority and client certificate validity.
    pub pki: PkiSettings,
    /// The `tenant` label of metrics: on, off or the first N tenants (default on).
    pub metrics_tenant_label: TenantLabel,
    /// Limits against abusive clients: timeouts, sizes, connections, rates.
    pub limits: AbuseLimits,
}

/// The certificate authority: an operator CA, or a root generated in the data dir.
#[derive(Debug, Clone)]
pub struct PkiSettings {
    /// `(certificate, key)` PEM files of the operator's CA.
    pub ca: Option<(PathBuf, PathBuf)>,
    /// Lifetime of issued client certificates (1 to 3650 days; default 365).
    pub client_cert_validity: Duration,
}

/// Limits against abusive clients (slowloris, floods, credential stuffing); 0 disables a rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbuseLimits {
    /// From accept to the first complete request head (idle connect-only sockets included).
    pub header_read_timeout: Duration,
    /// Largest request head in bytes (431 beyond; at least 8192, default 64 KiB).
    pub header_limit: usize,
    /// `None`: what the process's file-descriptor limit holds (see [`AbuseLimits::connections`]).
    pub max_connections: Option<usize>,
    /// 0: no limit.
    pub max_connections_per_ip: usize,
    /// A connection with no request in progress for this long is closed.
    pub idle_timeout: Duration,
    /// A request body must have arrived in full within this.
    pub body_timeout: Duration,
    /// Bytes a second a body must average after [`BODY_GRACE`]; 0: no minimum.
    pub min_body_rate: u64,
    /// Sends a second per tenant on the send API (default 10 000).
    pub send_rate: u32,
    /// Burst of the send limit (default twice the rate).
    pub send_burst: u32,
    /// Token requests a second per user or client id of a realm (default 20).
    pub token_rate_per_user: u32,
    /// Burst of the per-user token limit (default five times the rate).
    pub token_burst_per_user: u32,
    /// Token requests a second per client IP address (default 500).
    pub token_rate_per_ip: u32,
    /// Burst of the per-IP token limit (default twice the rate).
    pub token_burst_per_ip: u32,
}

/// The longest timeout a setting may ask for (longer ones are cut to it).
const DAY_S: u64 = 86_400;

/// How long a request body may take before [`AbuseLimits::min_body_rate`] applies.
pub const BODY_GRACE: Duration = Duration::from_secs(5);

impl AbuseLimits {
    /// The connection limit in force: the configured one, or three quarters of
    /// the file-descriptor limit (the rest is for storage, provider pools and
    /// webhooks) so that accepting never fails for want of descriptors.
    pub fn connections(&self) -> usize {
        match self.max_connections {
            Some(0) => tokio::sync::Semaphore::MAX_PERMITS,
            Some(n) => n,
            None => {
                let fds = crate::server::fd_limit();
                usize::try_from(fds.saturating_sub(fds / 4)).unwrap_or(usize::MAX).clamp(64, 1 << 20)
            }
        }
    }

    fn resolve(s: &Settings) -> AbuseLimits {
        let rate = |v: Option<u32>, default: u32| v.unwrap_or(default);
        let send_rate = rate(s.send_rate, 10_000);
        let token_rate_per_user = rate(s.token_rate_per_user, 20);
        let token_rate_per_ip = rate(s.token_rate_per_ip, 500);
        AbuseLimits {
            header_read_timeout: Duration::from_millis(
                s.header_read_timeout_ms.unwrap_or(10_000).clamp(1, DAY_S * 1000),
            ),
            header_limit: s.header_limit.unwrap_or(64 * 1024).max(8192),
            max_connections: s.max_connections,
            max_connections_per_ip: s.max_connections_per_ip.unwrap_or(256),
            idle_timeout: Duration::from_secs(s.idle_timeout_s.unwrap_or(60).clamp(1, DAY_S)),
            body_timeout: Duration::from_millis(s.body_timeout_ms.unwrap_or(30_000).clamp(1, DAY_S * 1000)),
            min_body_rate: s.min_body_rate.unwrap_or(1024),
            send_rate,
            send_burst: s.send_burst.unwrap_or(send_rate.saturating_mul(2)),
            token_rate_per_user,
            token_burst_per_user: s.token_burst_per_user.unwrap_or(token_rate_per_user.saturating_mul(5)),
            token_rate_per_ip,
            token_burst_per_ip: s.token_burst_per_ip.unwrap_or(token_rate_per_ip.saturating_mul(2)),
        }
    }
}

impl Config {
    /// Applies the defaults to layered settings and checks them; the error names the bad setting.
    pub fn resolve(s: Settings) -> Result<Config, String> {
        let limits = AbuseLimits::resolve(&s);
        let listen = s.listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080)));
        let tls = match (s.tls_cert, s.tls_key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => return Err("tls_cert and tls_key go together".into()),
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let log_json = match s.log_format.as_deref() {
            None | Some("text") => false,
            Some("json") => true,
            Some(other) => return Err(format!("log_format: expected text or json, got {other}")),
        };
        let defaults = Endpoints::default();
        let endpoints = Endpoints {
            apns: s.apns_url.unwrap_or(defaults.apns),
            apns_sandbox: s.apns_sandbox_url.unwrap_or(defaults.apns_sandbox),
            fcm: s.fcm_url.unwrap_or(defaults.fcm),
            hms: s.hms_url.unwrap_or(defaults.hms),
            hms_token: s.hms_token_url.unwrap_or(defaults.hms_token),
        };
        let extra_ca_pem = match &s.extra_ca_file {
            Some(p) => std::fs::read(p).map_err(|e| format!("extra_ca_file {}: {e}", p.display()))?,
            None => Vec::new(),
        };
        let max_retry_after = Duration::from_secs(s.max_retry_after_s.unwrap_or(3600).min(DAY_S));
        let defaults = WebhookSettings::default();
        let webhooks = WebhookSettings {
            retry_schedule: match &s.webhook_retry_schedule {
                Some(text) => WebhookSettings::parse_schedule(text).map_err(|e| format!("webhook_{e}"))?,
                None => defaults.retry_schedule,
            },
            timeout: s.webhook_timeout_ms.map(Duration::from_millis).unwrap_or(defaults.timeout),
            allow_private: s.webhook_allow_private.unwrap_or(false),
            concurrency: s.webhook_concurrency.unwrap_or(1).max(1),
            max_retry_after,
        };
        let ca = match (s.ca_cert, s.ca_key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => return Err("ca_cert and ca_key go together".into()),
        };
        let days = s.client_cert_validity_days.unwrap_or(365);
        if !(1..=3650).contains(&days) {
            return Err("client_cert_validity_days: must be from 1 to 3650".into());
        }
        let pki = PkiSettings { ca, client_cert_validity: Duration::from_secs(days.saturating_mul(86_400)) };
        let metrics_tenant_label = match &s.metrics_tenant_label {
            Some(text) => text.parse().map_err(|e| format!("metrics_tenant_label: {e}"))?,
            None => TenantLabel::On,
        };
        Ok(Config {
            pki,
            metrics_tenant_label,
            limits,
            webhooks,
            push: PushSettings {
                endpoints,
                extra_ca_pem,
                bulk_in_flight: match s.bulk_in_flight {
                    Some(0) => return Err("bulk_in_flight: must be at least 1".into()),
                    Some(n) => n,
                    None => PushSettings::default().bulk_in_flight,
                },
                partition_size: match s.broadcast_partition {
                    Some(n) if !(100..=10_000_000).contains(&n) => {
                        return Err("broadcast_partition: must be 100 to 10000000".into())
                    }
                    Some(n) => n,
                    None => PushSettings::default().partition_size,
                },
                max_retry_after,
                allow_private_endpoints: s.allow_private_provider_endpoints.unwrap_or(false),
                tenant_idle_stop: match s.tenant_idle_stop_s {
                    Some(0) => None,
                    Some(secs) => Some(Duration::from_secs(secs.min(DAY_S * 365))),
                    None => PushSettings::default().tenant_idle_stop,
                },
                bulk_nice: match s.bulk_nice {
                    Some(n) if n > 19 => return Err("bulk_nice: must be 0 to 19".into()),
                    Some(n) => Some(n),
                    None => PushSettings::default().bulk_nice,
                },
                ..PushSettings::default()
            },
            send_deadline: Duration::from_millis(s.send_deadline_ms.unwrap_or(10_000)),
            listen,
            ops_listen: s.ops_listen,
            disk_reserve_bytes: s.disk_reserve_mib.unwrap_or(64).saturating_mul(1 << 20),
            data_dir: s.data_dir.unwrap_or_else(|| PathBuf::from("./data")),
            store: s.store,
            store_connections: match s.store_connections {
                Some(n) if !(1..=1000).contains(&n) => return Err("store_connections: must be 1 to 1000".into()),
                Some(n) => n,
                None => herald_storage::StoreOptions::new(".").connections,
            },
            node_id: match s.node_id {
                Some(id) => Some(crate::node::valid_node_id(&id).map_err(|e| format!("node_id: {e}"))?),
                None => None,
            },
            lease_ttl: match s.lease_ttl.as_deref() {
                Some(text) => match humantime::parse_duration(text.trim()) {
                    Ok(ttl) if (Duration::from_secs(1)..=Duration::from_secs(600)).contains(&ttl) => ttl,
                    _ => return Err("lease_ttl: must be a duration from 1s to 10m".into()),
                },
                None => herald_storage::StoreOptions::new(".").lease_ttl,
            },
            retention: crate::sweeper::Retention {
                reports: crate::sweeper::parse_retention(
                    "report_retention",
                    s.report_retention.as_deref().unwrap_or(DEFAULT_RETENTION),
                )?,
                events: crate::sweeper::parse_retention(
                    "event_retention",
                    s.event_retention.as_deref().unwrap_or(DEFAULT_RETENTION),
                )?,
            },
            master_key_file: s.master_key_file,
            cache_bytes: match s.cache_mib {
                Some(0) => return Err("cache_mib: must be at least 1".into()),
                Some(mib) => mib << 20,
                None => herald_storage::StoreOptions::new(".").cache_bytes,
            },
            operator_token: s.operator_token,
            public_url: s.public_url.unwrap_or_else(|| format!("{scheme}://{listen}")),
            tls,
            body_limit: s.body_limit.unwrap_or(1024 * 1024),
            access_token_ttl: s.access_token_ttl.unwrap_or(300),
            refresh_token_ttl: s.refresh_token_ttl.unwrap_or(1800),
            log_json,
            clock: Default::default(),
        })
    }

    /// Defaults for a data directory, as the tests and the offline commands use.
    pub fn for_data_dir(dir: impl Into<PathBuf>) -> Config {
        let s = Settings { data_dir: Some(dir.into()), ..Settings::default() };
        Config::resolve(s).unwrap_or_else(|_| unreachable!("defaults always resolve"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_and_defaults() {
        let file: Settings = toml::from_str("listen = \"127.0.0.1:9000\"\nbody_limit = 10").unwrap();
        let cli = Settings { body_limit: Some(20), ..Settings::default() };
        let c = Config::resolve(cli.or(file)).unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.body_limit, 20);
        assert_eq!(c.public_url, "http://127.0.0.1:9000");
        assert!(toml::from_str::<Settings>("nonsense = 1").is_err());
        assert_eq!(c.limits.send_rate, 10_000, "generous defaults");
        let file: Settings = toml::from_str("send_rate = 0\ntoken_rate_per_ip = 7\nheader_limit = 10").unwrap();
        let c = Config::resolve(file).unwrap();
        assert_eq!((c.limits.send_rate, c.limits.token_rate_per_ip, c.limits.token_burst_per_ip), (0, 7, 14));
        assert_eq!(c.limits.header_limit, 8192, "hyper's minimum");
        let c = Config::resolve(toml::from_str("cache_mib = 16").unwrap()).unwrap();
        assert_eq!(c.cache_bytes, 16 << 20);
        assert!(Config::resolve(toml::from_str("cache_mib = 0").unwrap()).unwrap_err().contains("cache_mib"));
        let c = Config::resolve(toml::from_str("store_connections = 40").unwrap()).unwrap();
        assert_eq!(c.store_connections, 40);
        for bad in ["store_connections = 0", "store_connections = 1001"] {
            assert!(Config::resolve(toml::from_str(bad).unwrap()).unwrap_err().contains("store_connections"), "{bad}");
        }
        let c = Config::resolve(toml::from_str("bulk_in_flight = 64").unwrap()).unwrap();
        assert_eq!(c.push.bulk_in_flight, 64);
        let zero = Config::resolve(toml::from_str("bulk_in_flight = 0").unwrap()).unwrap_err();
        assert!(zero.contains("bulk_in_flight"), "{zero}");
        assert_eq!(Config::resolve(toml::from_str("bulk_nice = 4").unwrap()).unwrap().push.bulk_nice, Some(4));
        let low = Config::resolve(toml::from_str("bulk_nice = 20").unwrap()).unwrap_err();
        assert!(low.contains("bulk_nice"), "{low}");
        let c = Config::resolve(Settings::default()).unwrap();
        assert_eq!(
            (c.push.max_retry_after, c.webhooks.max_retry_after),
            (Duration::from_secs(3600), Duration::from_secs(3600))
        );
        assert!(!c.push.allow_private_endpoints);
        let c = Config::resolve(
            toml::from_str("max_retry_after_s = 99999999999\nallow_private_provider_endpoints = true").unwrap(),
        )
        .unwrap();
        assert_eq!(c.push.max_retry_after, Duration::from_secs(86_400), "at most a day");
        assert!(c.push.allow_private_endpoints);
    }
}
