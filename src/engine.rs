//! The engine: everything a request handler needs, shared behind one `Arc`.

use crate::auth::KeyCache;
use crate::config::Config;
use herald_actors::Push;
use herald_storage::{Store, StoreOptions};
use metrics_exporter_prometheus::PrometheusHandle;
use std::sync::Arc;

/// One running engine: storage, keys, actors and configuration. Build one with
/// [`Engine::builder`] to embed Herald, or let `herald serve` do it.
pub struct Engine {
    /// The configuration it was opened with.
    pub config: Config,
    /// The embedded database: every operation reads and writes through it.
    pub store: Store,
    /// The tenants' token keys, unsealed on first use, and verified tokens.
    pub keys: KeyCache,
    /// The platform operator's bearer token.
    pub operator_token: String,
    /// Renders the Prometheus recorder's metrics for `/metrics`.
    pub metrics: PrometheusHandle,
    /// The push engine's supervisor tree.
    pub push: Push,
    /// Requests in flight through [`Engine::http_service`], drained by [`Engine::shutdown`].
    pub(crate) in_flight: tokio_util::task::TaskTracker,
    /// The periodic tasks that take leases, stopped by [`Engine::shutdown`].
    pub(crate) background: crate::background::Background,
    /// The root CA and the tenants' signers.
    pub pki: Arc<crate::pki::Authority>,
    /// Rate limits of the send API and the token endpoint.
    pub limits: crate::rate_limit::Limits,
    /// The engines sharing the database, as this one's heartbeat sees them.
    pub cluster: Arc<crate::node::Cluster>,
    /// Unique to this run of the engine: an idempotency claim of another
    /// run under the same node id is a dead process's (see `ops::idempotency`).
    pub(crate) boot: String,
    /// This engine, for work that must outlive the request that started it.
    me: std::sync::Weak<Engine>,
    /// The tenants' quotas; they also pace broadcasts.
    pub quotas: Arc<crate::quotas::Quotas>,
    /// The per-request series' handles.
    pub(crate) request_series: crate::metrics::RequestSeries,
    /// The send duration series' handles.
    pub(crate) send_series: crate::metrics::SendSeries,
}

impl Engine {
    /// Opens storage and starts the actors; no listener is started.
    pub async fn open(config: Config) -> Result<Arc<Engine>, String> {
        Engine::open_with(config, true).await
    }

    /// [`Engine::open`], installing Herald's Prometheus recorder as the
    /// process's or not (`install_recorder`: see [`crate::EngineBuilder::metrics_recorder`]).
    pub async fn open_with(config: Config, install_recorder: bool) -> Result<Arc<Engine>, String> {
        install_crypto_providers();
        // Before anything counts: what is recorded without a recorder is lost.
        let metrics = if install_recorder { crate::metrics::handle() } else { crate::metrics::detached() };
        let node_id = crate::node::node_id(config.node_id.as_deref(), &config.data_dir)?;
        let store = Store::open(&StoreOptions {
            node_id,
            lease_ttl: config.lease_ttl,
            store_url: config.store.clone(),
            connections: config.store_connections,
            master_key_file: config.master_key_file.clone(),
            cache_bytes: config.cache_bytes,
            disk_reserve_bytes: config.disk_reserve_bytes,
            ..StoreOptions::new(&config.data_dir)
        })
        .map_err(|e| match &config.store {
            // The URL may hold a password: it is not repeated.
            Some(_) => format!("opening the store: {e}"),
            None => format!("opening storage in {}: {e}", config.data_dir.display()),
        })?;
        let operator_token = match &config.operator_token {
            Some(t) => t.clone(),
            None => random_token()?,
        };
        let background = crate::background::Background::default();
        let cluster = crate::node::start(&background, store.clone(), config.lease_ttl)?;
        crate::sweeper::spawn(&background, store.clone(), config.clock.clone(), config.retention);
        herald_actors::telemetry::set_tenant_label(config.metrics_tenant_label);
        let tenants = store.tenants().list().map_err(|e| format!("listing tenants: {e}"))?;
        herald_actors::telemetry::export_at_zero(tenants.iter().map(|t| t.id.as_str()));
        for t in &tenants {
            if let Some(limits) = store.limits().get(&t.id).map_err(|e| format!("reading quotas: {e}"))? {
                crate::quotas::export_at_zero(&t.id, &limits);
            }
        }
        let push = Push::start(store.clone(), config.push.clone(), config.webhooks.clone()).await?;
        let root = crate::pki::root::Root::load_or_create(&store, &config.data_dir, config.pki.ca.as_ref())?;
        let pki = crate::pki::Authority::new(store.clone(), root, config.pki.client_cert_validity);
        pki.recover()?;
        spawn_recovery(&background, &pki, config.lease_ttl);
        let engine = Arc::new_cyclic(|me| Engine {
            boot: ulid::Ulid::generate().to_string(),
            me: me.clone(),
            pki,
            limits: crate::rate_limit::Limits::from_config(&config, cluster.clone()),
            quotas: Arc::new(crate::quotas::Quotas::new(store.clone(), cluster.clone())),
            request_series: crate::metrics::RequestSeries::default(),
            send_series: crate::metrics::SendSeries::default(),
            cluster,
            config,
            store,
            keys: KeyCache::default(),
            operator_token,
            metrics,
            push,
            in_flight: Default::default(),
            background,
        });
        engine.push.set_pacer(engine.quotas.clone());
        crate::scheduler::spawn(Arc::downgrade(&engine));
        // What the engine caches of a tenant lives no longer than its actor.
        let weak = Arc::downgrade(&engine);
        engine.push.on_tenant_stopped(move |tenant| {
            if let Some(engine) = weak.upgrade() {
                engine.keys.forget(tenant);
                engine.store.forget_caches(tenant);
            }
        });
        Ok(engine)
    }
}

impl Engine {
    /// This engine, shared: for tasks that outlive the call that starts them.
    pub(crate) fn shared(&self) -> crate::error::ApiResult<Arc<Engine>> {
        self.me.upgrade().ok_or_else(|| crate::error::ApiError::internal("the engine is shutting down"))
    }
}

/// Queues again, every few leases' lifetimes, the issuances left
/// `REQUESTED` (an engine sharing the database died mid-way); their leases
/// keep one engine at each.
fn spawn_recovery(
    background: &crate::background::Background,
    pki: &Arc<crate::pki::Authority>,
    lease_ttl: std::time::Duration,
) {
    let pki = Arc::downgrade(pki);
    background.spawn(|stop| async move {
        let mut tick = tokio::time::interval(lease_ttl.saturating_mul(3));
        tick.tick().await;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let Some(pki) = pki.upgrade() else { return };
            if let Err(e) = pki.recover() {
                tracing::warn!(error = %e, "could not look for issuances to recover");
            }
        }
    });
}

/// One crypto provider each for rustls and jsonwebtoken, chosen explicitly so
/// neither has to guess at run time.
pub fn install_crypto_providers() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
}

/// 256 random bits, base64url: operator tokens and client secrets.
pub fn random_token() -> Result<String, String> {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).map_err(|_| "no randomness")?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}
