//! # herald-sim: APNs, FCM, HMS and Web Push simulators
//!
//! Herald's tests, demo mode and load benchmark must never reach Apple, Google, Huawei or a
//! browser's push service.
//! They talk to these simulators instead, which behave like the real services where Herald
//! can tell: HTTP/2 over TLS, the same authentication (APNs ES256 provider tokens or client
//! certificates, Google service-account OAuth, Huawei client credentials), the same header
//! and payload checks, and the same status codes and reason strings. They count what they
//! receive and can inject faults.
//!
//! Start them in-process with [`Simulators::start`], or run the `herald-sim` binary. Generate
//! credentials they accept with [`generate_credentials`] (`herald-sim --gen-credentials DIR`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), herald_sim::SimError> {
//! use herald_sim::{SimConfig, Simulators};
//! let sims = Simulators::start(SimConfig::local("target/sim-certs")).await?;
//! let creds = sims.generate_credentials(std::path::Path::new("target/demo-creds"))?;
//! println!("APNs at {}, key id {}", sims.apns_url(), creds.apns_key_id);
//! sims.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! ## Tokens
//!
//! Any device token starting with `dead` is unknown to every simulator (APNs 410
//! `Unregistered`, FCM 404 `UNREGISTERED`, HMS illegal token). APNs device tokens must be
//! 64 hex characters, so `dead` + 60 hex digits is a well-formed unregistered APNs token.
//! A Web Push subscription whose id (the endpoint's path) starts with `dead` answers 410.
//!
//! Web Push subscriptions are minted by [`Simulators::webpush_subscription`] (or
//! [`webpush_subscription`] from the cert dir): their keys derive from the id, so the
//! simulator decrypts every message sent to them (see `webpush`).
//!
//! ## Faults (`POST /faults`, [`Simulators::set_faults`])
//!
//! A document replaces all faults; `{}` clears them. Sections are per provider; all fields
//! are optional.
//!
//! ```json
//! {
//!   "apns": {
//!     "dead_tokens": ["<token>", "..."],
//!     "status": [
//!       { "status": 429, "count": 3, "retry_after": 2 },
//!       { "status": 503, "rate": 0.1, "seed": 42 },
//!       { "status": 500, "count": 1, "tokens": ["<token>"], "reason": "InternalServerError" }
//!     ],
//!     "latency_ms": 20,
//!     "goaway_after_streams": 1000,
//!     "max_concurrent_streams": 100,
//!     "reset_connection_rate": 0.001
//!   },
//!   "fcm": { "status": [{ "status": 503, "count": 1, "endpoint": "token" }], "expire_access_tokens": true },
//!   "hms": { "dead_tokens": ["<token>"], "expires_in": 0,
//!            "status": [{ "status": 429, "retry_after_header": "1e20", "body": "endless" }] }
//! }
//! ```
//!
//! * `status` rules are tried in order on requests that passed validation; the first that
//!   fires answers with the provider's own error for that status (APNs 429
//!   `TooManyRequests`, 500 `InternalServerError`, 503 `ServiceUnavailable`; FCM 429
//!   `RESOURCE_EXHAUSTED`/`QUOTA_EXCEEDED`, 500 `INTERNAL`, 503 `UNAVAILABLE`; HMS HTTP 429
//!   code `80300013`, 500/503 code `81000001`). `count`: the next N matching requests;
//!   `rate`: probability per request (deterministic with `seed`); both: at that rate until
//!   N fired; neither: every request. `tokens` restricts the rule to those tokens.
//!   `retry_after` (seconds) sets `retry-after`, default 1 for 429. `endpoint`: `send`
//!   (default), `token` (OAuth endpoints) or `any`.
//! * Faulted requests count as `rejected`, never `accepted`.
//! * `goaway_after_streams`: each connection serves N requests, then GOAWAY (graceful:
//!   in-flight requests complete; the client must reconnect).
//! * `max_concurrent_streams`: SETTINGS_MAX_CONCURRENT_STREAMS for new connections.
//! * `reset_connection_rate`: share of requests whose connection is dropped unanswered.
//! * `expire_access_tokens` (FCM, HMS): tokens granted before now answer as expired.
//! * Hostile answers, for clients that must survive them: `retry_after_header` writes
//!   `retry-after` as given (`"1e20"`, `"-5"`, an HTTP date); `body` makes the answer's
//!   body (the provider's error body, then spaces) `{"oversized": N}` bytes longer,
//!   `"endless"`, or a never-ending `{"drip_ms": N}` trickle; `expires_in` (FCM, HMS)
//!   replaces the lifetime OAuth answers announce (any JSON value: `0`,
//!   `9223372036854775808`), while the tokens stay valid for the real one.
//!
//! ## Stats (`GET /stats`, [`Simulators::stats`])
//!
//! ```json
//! { "apns": { "requests": 12, "accepted": 10, "rejected": 2,
//!             "by_reason": { "Unregistered": 1, "BadPriority": 1 },
//!             "by_status": { "200": 10, "400": 1, "410": 1 },
//!             "first_accepted_ms": 1700000000000, "last_accepted_ms": 1700000000100,
//!             "distinct_tokens": 10, "connections": 1, "open_connections": 1,
//!             "token_grants": 0, "jwt_verifications": 1, "goaways": 0, "connection_resets": 0 },
//!   "fcm": { ... }, "hms": { ... } }
//! ```
//!
//! HMS counts per token (a request may carry up to 1000). See `control` for the other
//! routes (`/requests`, `/accepted`, `/reset`, `/ca.pem`).
//!
//! ## Layout
//!
//! - `server`, `tls`: the TLS listeners (HTTP/2 or HTTP/1.1) and the simulators' own CA
//! - `provider`: the four simulated services; `apns`, `fcm`, `hms`, `webpush`: each one's endpoints
//! - `jwt`, `credentials`: verifying what Herald signs; generating credentials the simulators accept
//! - `control`: the plain-HTTP control API for tests, scripts and the load benchmark
//! - `faults`, `body`: injected faults and hostile answers
//! - `state`, `stats`, `record`: shared state, counters, the last requests in full
//! - `files`, `util`, `error`: atomic writes, small helpers, the error type

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod apns;
mod body;
mod control;
mod credentials;
mod error;
mod faults;
mod fcm;
mod files;
mod hms;
mod jwt;
mod provider;
mod record;
mod server;
mod state;
mod stats;
mod tls;
mod util;
mod webpush;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

pub use credentials::{
    generate_credentials, register_credentials, ApnsRegistration, Credentials, FcmRegistration, HmsRegistration,
    Registration, SimUrls, DEMO_BUNDLE_ID,
};
pub use error::SimError;
pub use faults::{splitmix, BodyFault, FaultEndpoint, Faults, ProviderFaults, StatusFault};
pub use provider::Provider;
pub use record::{RecordedRequest, RECORDED_REQUESTS};
pub use stats::{ProviderStats, Stats};
pub use tls::install_crypto_provider;
pub use webpush::subscription as webpush_subscription;

use state::SimState;
use tls::Ca;

/// Default SETTINGS_MAX_CONCURRENT_STREAMS.
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 1000;

/// Where the simulators listen and keep their certificates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// The APNs simulator's address (port 0: any free port).
    pub apns: SocketAddr,
    /// The FCM simulator's address.
    pub fcm: SocketAddr,
    /// The HMS simulator's address.
    pub hms: SocketAddr,
    /// The Web Push simulator's address.
    pub webpush: SocketAddr,
    /// The control API's address (plain HTTP), if wanted.
    pub control: Option<SocketAddr>,
    /// The directory of the CA and the registered credentials; created if absent.
    pub cert_dir: PathBuf,
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised (default 1000).
    pub max_concurrent_streams: u32,
}

impl SimConfig {
    /// Every listener on `127.0.0.1`, any free port, control API included.
    pub fn local(cert_dir: impl Into<PathBuf>) -> SimConfig {
        let any = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        SimConfig {
            apns: any,
            fcm: any,
            hms: any,
            webpush: any,
            control: Some(any),
            cert_dir: cert_dir.into(),
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
        }
    }
}

/// The running simulators. Dropping them stops them too; [`Simulators::shutdown`] also waits.
pub struct Simulators {
    state: Arc<SimState>,
    apns: SocketAddr,
    fcm: SocketAddr,
    hms: SocketAddr,
    webpush: SocketAddr,
    control: Option<SocketAddr>,
    cert_dir: PathBuf,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, SimError> {
    TcpListener::bind(addr).await.map_err(|source| SimError::Bind { addr, source })
}

fn local_addr(l: &TcpListener, asked: SocketAddr) -> Result<SocketAddr, SimError> {
    l.local_addr().map_err(|source| SimError::Bind { addr: asked, source })
}

/// `scheme://host:port` for a listener, with an unspecified address shown as loopback.
fn url(scheme: &str, addr: SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => format!("{scheme}://127.0.0.1:{}", addr.port()),
        IpAddr::V4(ip) => format!("{scheme}://{ip}:{}", addr.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => format!("{scheme}://[::1]:{}", addr.port()),
        IpAddr::V6(ip) => format!("{scheme}://[{ip}]:{}", addr.port()),
    }
}

impl Simulators {
    /// Binds the listeners, loads (or creates) the CA in `cfg.cert_dir`, loads every
    /// credential set registered there, and starts serving. Must run inside a Tokio runtime.
    pub async fn start(cfg: SimConfig) -> Result<Simulators, SimError> {
        install_crypto_provider();
        std::fs::create_dir_all(&cfg.cert_dir).map_err(|e| SimError::io(&cfg.cert_dir, e))?;
        let ca = Ca::load_or_create(&cfg.cert_dir)?;
        let registry = credentials::Registry::load(&cfg.cert_dir);
        let apns_tls = TlsAcceptor::from(ca.server_config(true)?);
        let other_tls = TlsAcceptor::from(ca.server_config(false)?);

        let apns_l = bind(cfg.apns).await?;
        let fcm_l = bind(cfg.fcm).await?;
        let hms_l = bind(cfg.hms).await?;
        let webpush_l = bind(cfg.webpush).await?;
        let control_l = match cfg.control {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        let apns = local_addr(&apns_l, cfg.apns)?;
        let fcm = local_addr(&fcm_l, cfg.fcm)?;
        let hms = local_addr(&hms_l, cfg.hms)?;
        let webpush = local_addr(&webpush_l, cfg.webpush)?;
        let control = match (&control_l, cfg.control) {
            (Some(l), Some(asked)) => Some(local_addr(l, asked)?),
            _ => None,
        };

        let webpush_keys = webpush::SubscriptionKeys::load_or_create(&cfg.cert_dir)?;
        let state =
            Arc::new(SimState::new(registry, ca.cert_pem.clone(), cfg.max_concurrent_streams.max(1), webpush_keys));
        let (shutdown, rx) = watch::channel(false);
        let mut tasks = vec![
            server::spawn_listener(apns_l, Provider::Apns, apns_tls, state.clone(), rx.clone()),
            server::spawn_listener(fcm_l, Provider::Fcm, other_tls.clone(), state.clone(), rx.clone()),
            server::spawn_listener(hms_l, Provider::Hms, other_tls.clone(), state.clone(), rx.clone()),
            server::spawn_listener(webpush_l, Provider::Webpush, other_tls, state.clone(), rx.clone()),
        ];
        if let Some(l) = control_l {
            tasks.push(control::spawn(l, state.clone(), rx));
        }
        Ok(Simulators { state, apns, fcm, hms, webpush, control, cert_dir: cfg.cert_dir, shutdown, tasks })
    }

    /// The APNs simulator's address.
    pub fn apns_addr(&self) -> SocketAddr {
        self.apns
    }

    /// The FCM simulator's address.
    pub fn fcm_addr(&self) -> SocketAddr {
        self.fcm
    }

    /// The HMS simulator's address.
    pub fn hms_addr(&self) -> SocketAddr {
        self.hms
    }

    /// The Web Push simulator's address.
    pub fn webpush_addr(&self) -> SocketAddr {
        self.webpush
    }

    /// The Web Push simulator's base URL: subscription endpoints are `{webpush_url}/{id}`.
    pub fn webpush_url(&self) -> String {
        url("https", self.webpush)
    }

    /// Subscription `id` of the Web Push simulator, as a browser's
    /// `pushManager.subscribe()` gives it (`{"endpoint", "expirationTime", "keys"}`).
    /// An id starting with `dead` answers 410.
    pub fn webpush_subscription(&self, id: &str) -> serde_json::Value {
        webpush::subscription_json(&self.state.webpush_keys, &self.webpush_url(), id).0
    }

    /// The control API's address.
    pub fn control_addr(&self) -> Option<SocketAddr> {
        self.control
    }

    /// `https://127.0.0.1:PORT`: the APNs base URL (requests go to `/3/device/{token}`).
    pub fn apns_url(&self) -> String {
        url("https", self.apns)
    }

    /// The FCM base URL (requests go to `/v1/projects/{project}/messages:send`).
    pub fn fcm_url(&self) -> String {
        url("https", self.fcm)
    }

    /// The Google OAuth token endpoint (`{fcm_url}/token`).
    pub fn fcm_token_url(&self) -> String {
        format!("{}/token", self.fcm_url())
    }

    /// The HMS base URL (requests go to `/v1/{appId}/messages:send`).
    pub fn hms_url(&self) -> String {
        url("https", self.hms)
    }

    /// The Huawei OAuth token endpoint (`{hms_url}/oauth2/v3/token`).
    pub fn hms_token_url(&self) -> String {
        format!("{}/oauth2/v3/token", self.hms_url())
    }

    /// The control API's base URL (plain HTTP).
    pub fn control_url(&self) -> Option<String> {
        self.control.map(|a| url("http", a))
    }

    /// The cert dir in use.
    pub fn cert_dir(&self) -> &Path {
        &self.cert_dir
    }

    /// The URLs and cert dir, as [`generate_credentials`] wants them.
    pub fn urls(&self) -> SimUrls {
        SimUrls {
            cert_dir: self.cert_dir.clone(),
            apns_url: self.apns_url(),
            fcm_url: self.fcm_url(),
            hms_url: self.hms_url(),
            webpush_url: self.webpush_url(),
        }
    }

    /// Generates a credential set into `dir` that these simulators accept.
    pub fn generate_credentials(&self, dir: &Path) -> Result<Credentials, SimError> {
        generate_credentials(dir, &self.urls())
    }

    /// The CA certificate (PEM) that signed the simulators' server certificates.
    pub fn ca_pem(&self) -> String {
        self.state.ca_pem.clone()
    }

    /// What the simulators received (as `GET /stats`).
    pub fn stats(&self) -> Stats {
        self.state.stats()
    }

    /// Replaces the faults (as `POST /faults`); `Faults::default()` clears them.
    pub fn set_faults(&self, faults: Faults) {
        self.state.faults.set(faults);
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        self.state.faults.get()
    }

    /// Zeroes counters, clears recorded requests and faults, and forgets the APNs provider
    /// token history (as `POST /reset`). Issued OAuth access tokens stay valid.
    pub fn reset(&self) {
        self.state.reset();
    }

    /// Every token accepted by `provider`, with how often (as `GET /accepted`).
    pub fn accepted(&self, provider: Provider) -> HashMap<String, u64> {
        self.state.counters(provider).accepted_tokens()
    }

    /// The last `limit` requests `provider` received, oldest first (as `GET /requests`).
    pub fn requests(&self, provider: Provider, limit: usize) -> Vec<RecordedRequest> {
        self.state.log(provider).last(provider, limit)
    }

    /// Stops accepting, shuts connections down gracefully (GOAWAY), and waits for them
    /// (at most a couple of seconds).
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
    }
}

impl Drop for Simulators {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}
