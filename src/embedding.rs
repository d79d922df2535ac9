//! Herald as a library: build an [`Engine`] in-process, mount its HTTP API in
//! the embedding program's own server, or call its main operations directly.
//!
//! ```no_run
//! # async fn run() -> Result<(), herald::Error> {
//! use herald::Engine;
//! let engine = Engine::builder()
//!     .data_dir("/var/lib/my-app/herald")
//!     .public_url("https://push.example.com")
//!     .tune(|config| config.send_deadline = std::time::Duration::from_secs(5))
//!     .build()
//!     .await?;
//! let service = engine.http_service(); // a hyper `Service` for your own listener
//! # drop(service);
//! engine.shutdown().await;
//! # Ok(()) }
//! ```

use crate::config::{Config, Settings};
use crate::engine::Engine;
use crate::error::ApiError as Error;
use crate::http::Response;
use herald_actors::Endpoints;
use http::Request;
use std::convert::Infallible;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How long [`Engine::shutdown`] waits for in-flight requests and actors.
const DRAIN: Duration = Duration::from_secs(30);

/// Collects an engine's configuration; [`EngineBuilder::build`] opens it.
pub struct EngineBuilder {
    config: Config,
    install_recorder: bool,
}

impl Engine {
    /// Starts from the defaults of `herald serve` with data in `./data`.
    pub fn builder() -> EngineBuilder {
        EngineBuilder { config: Config::for_data_dir("./data"), install_recorder: true }
    }
}

impl EngineBuilder {
    /// Starts from everything `herald serve` takes: its flags and
    /// environment (embed [`Settings`] in the program's own clap command
    /// with `#[command(flatten)]`), or its config file
    /// ([`Settings::from_toml_file`]), resolved exactly as `serve` does.
    ///
    /// ```
    /// # fn run() -> Result<(), herald::Error> {
    /// let file = herald::config::Settings { data_dir: Some("/var/lib/app/herald".into()), ..Default::default() };
    /// let builder = herald::EngineBuilder::from_settings(file)?.public_url("https://push.example.com");
    /// # drop(builder); Ok(()) }
    /// ```
    pub fn from_settings(settings: Settings) -> Result<EngineBuilder, Error> {
        let config = Config::resolve(settings).map_err(Error::bad_request)?;
        Ok(EngineBuilder { config, install_recorder: true })
    }

    /// Whether Herald installs its Prometheus recorder as the process's
    /// (the default). A program with its own recorder says `false`: Herald's
    /// series then go to that recorder, and Herald's `/metrics` is empty.
    pub fn metrics_recorder(mut self, install: bool) -> Self {
        self.install_recorder = install;
        self
    }

    /// Replaces the whole configuration (e.g. one resolved from a TOML file).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Where the database and the generated master key live.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.data_dir = dir.into();
        self
    }

    /// The URL clients reach the mounted API at (token issuer, discovery).
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.config.public_url = url.into();
        self
    }

    /// The operator token for tenant creation over HTTP; random when not set.
    pub fn operator_token(mut self, token: impl Into<String>) -> Self {
        self.config.operator_token = Some(token.into());
        self
    }

    /// Provider base URLs (the real services by default).
    pub fn endpoints(mut self, endpoints: Endpoints) -> Self {
        self.config.push.endpoints = endpoints;
        self
    }

    /// PEM CA certificates trusted for provider connections besides the web PKI.
    pub fn extra_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.config.push.extra_ca_pem = pem.into();
        self
    }

    /// Any other setting: pool limits, retries, deadlines, webhook schedule...
    pub fn tune(mut self, f: impl FnOnce(&mut Config)) -> Self {
        f(&mut self.config);
        self
    }

    /// Opens storage and starts the actors; unfinished work resumes. An
    /// engine that cannot start is [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable).
    pub async fn build(self) -> Result<Arc<Engine>, Error> {
        Engine::open_with(self.config, self.install_recorder)
            .await
            .map_err(|e| Error::new(http::StatusCode::SERVICE_UNAVAILABLE, e))
    }
}

/// The whole HTTP API as a hyper service, for the embedding program's server.
#[derive(Clone)]
pub struct HttpService {
    engine: Arc<Engine>,
}

impl<B> hyper::service::Service<Request<B>> for HttpService
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, req: Request<B>) -> Self::Future {
        let engine = self.engine.clone();
        let tracked = self.engine.in_flight.track_future(async move { crate::router::dispatch(engine, req).await });
        Box::pin(async move { Ok(tracked.await) })
    }
}

impl Engine {
    /// The HTTP API (every route of `herald serve`) to mount in a hyper server.
    pub fn http_service(self: &Arc<Self>) -> HttpService {
        HttpService { engine: self.clone() }
    }

    /// Waits for requests in flight through [`Engine::http_service`], stops the
    /// actors (broadcasts and outboxes resume at the next start), flushes,
    /// frees this engine's leases and closes the store (on sled, with the
    /// snapshot that keeps the next start short). The engine serves nothing after.
    pub async fn shutdown(&self) {
        self.in_flight.close();
        if tokio::time::timeout(DRAIN, self.in_flight.wait()).await.is_err() {
            tracing::warn!("in-flight requests did not finish within {DRAIN:?}");
        }
        self.push.shutdown(DRAIN).await;
        if let Err(e) = self.store.durable().await {
            tracing::warn!(error = %e, "final flush failed");
        }
        // What this engine held (partitions, webhooks, its node lease) is
        // taken over by the others at once rather than when the leases expire;
        // first its background tasks stop, so that none takes a lease again.
        self.background.stop(DRAIN).await;
        if let Err(e) = self.store.leases().free_all_mine() {
            tracing::warn!(error = %e, "could not free this engine's leases; they expire");
        }
        // Last: the next start reads the snapshot this writes (see `Store::close`).
        let store = self.store.clone();
        match tokio::task::spawn_blocking(move || store.close()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "could not close the databases; the next start replays their log"),
            Err(e) => tracing::warn!(error = %e, "closing the databases stopped"),
        }
    }
}
