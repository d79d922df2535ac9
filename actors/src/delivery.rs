//! Delivery of one notification to clients of one app: the provider channel of
//! each app (pool and auth), the payload prepared once per app, retries, and
//! what a provider's answer does to the stored token.

use crate::credentials::{ApnsAuth, AppCredentials};
use crate::pool::{Lane, Pool};
use crate::providers::auth_http::AuthHttp;
use crate::providers::{apns, fcm, hms, Backend, FormatError, Notification, Outcome, WireRequest};
use crate::settings::PushSettings;
use crate::transport::{tls_config, Target, TransportError};
use crate::webhooks::EventBus;
use herald_storage::deliveries::{ClientOutcome, State};
use herald_storage::provider_tokens::ProviderToken;
use herald_storage::push_tokens::{PushProvider, TokenRef};
use herald_storage::{now_ms, Store};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The backend a stored provider value is delivered through; `None` for GCM.
pub fn backend_of(p: PushProvider) -> Option<Backend> {
    match p {
        PushProvider::Apn | PushProvider::Apns => Some(Backend::Apns),
        PushProvider::Fcm | PushProvider::Fcmf => Some(Backend::Fcm),
        PushProvider::Hpk => Some(Backend::Hms),
        PushProvider::Gcm => None,
    }
}

struct ApnsChannel {
    pool: Pool,
    jwt: Option<apns::ApnsJwt>,
    topic: String,
    tenant: String,
    /// `iat` of the provider token last saved, so a restart reuses it.
    saved_iat: AtomicU64,
}

struct FcmChannel {
    pool: Pool,
    auth: fcm::FcmAuth,
    project_id: String,
}

struct HmsChannel {
    pool: Pool,
    auth: hms::HmsAuth,
    app_id: String,
}

/// Everything needed to send for one app, built from its stored configuration.
pub struct AppChannels {
    pub app: String,
    pub(crate) modified_ms: u64,
    pub categories: Vec<String>,
    legacy_fcm_only: bool,
    apns: Result<Option<ApnsChannel>, String>,
    fcm: Result<Option<FcmChannel>, String>,
    hms: Result<Option<HmsChannel>, String>,
}

/// One notification going to clients of one app.
#[derive(Clone, Copy)]
pub struct Job<'a> {
    pub tenant: &'a str,
    pub channels: &'a AppChannels,
    pub prepared: &'a Prepared,
    pub notification: &'a Notification,
}

/// One notification's payloads for one app, each built on first use.
#[derive(Default)]
pub struct Prepared {
    apns: OnceLock<Result<apns::ApnsPayload, FormatError>>,
    fcm: OnceLock<Result<fcm::FcmPayload, FormatError>>,
    hms: OnceLock<Result<hms::HmsPayload, FormatError>>,
}

/// What the engine does when a tenant's actor stops (see [`Deliverer::on_tenant_stopped`]).
type TenantStopped = Box<dyn Fn(&str) + Send + Sync>;

/// What every tenant's deliveries share: the store, TLS and OAuth clients,
/// and the budget of broadcast notifications in flight. The channels and
/// pools of each tenant's apps are its `Tenant` actor's
/// ([`TenantChannels`](crate::channels::TenantChannels)).
pub struct Deliverer {
    store: Store,
    events: Arc<EventBus>,
    settings: PushSettings,
    tls: Arc<rustls::ClientConfig>,
    auth_http: AuthHttp,
    /// `bulk_in_flight` permits, one per broadcast notification in flight.
    /// The semaphore is first come, first served, so concurrent broadcasts
    /// share the permits evenly.
    bulk_permits: tokio::sync::Semaphore,
    /// Called when a tenant's actor stops, to drop what the engine caches of it.
    tenant_stopped: OnceLock<TenantStopped>,
}

fn failed(app: &str, provider: &str, code: u16, message: impl Into<String>) -> ClientOutcome {
    ClientOutcome {
        app: app.to_string(),
        provider: provider.to_string(),
        state: State::Failed,
        code,
        message: Some(message.into()),
    }
}

impl Deliverer {
    pub fn new(store: Store, settings: PushSettings, events: Arc<EventBus>) -> Result<Deliverer, String> {
        let tls = tls_config(&settings.extra_ca_pem, None).map_err(|e| e.to_string())?;
        let auth_http = AuthHttp::new(auth_tls(&tls));
        let bulk_permits = tokio::sync::Semaphore::new(settings.bulk_in_flight.max(1));
        Ok(Deliverer { store, events, settings, tls, auth_http, bulk_permits, tenant_stopped: OnceLock::new() })
    }

    /// Waits for a bulk permit; a broadcast holds one per notification in flight.
    pub(crate) async fn bulk_permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        // The semaphore is never closed; without a permit a send simply goes ahead.
        self.bulk_permits.acquire().await.ok()
    }

    /// The event bus for what deliveries reveal (dead tokens, finished broadcasts).
    pub fn events(&self) -> &EventBus {
        &self.events
    }

    /// Sets what a tenant's actor calls when it stops (once; later calls are
    /// ignored): the engine's caches of that tenant (its signing key, user
    /// directory...) live no longer than its actor.
    pub fn on_tenant_stopped(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.tenant_stopped.set(Box::new(f));
    }

    pub(crate) fn tenant_stopped(&self, tenant: &str) {
        if let Some(f) = self.tenant_stopped.get() {
            f(tenant);
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn settings(&self) -> &PushSettings {
        &self.settings
    }

    /// Builds an app's channels (pools not connected yet) from its stored credentials.
    pub(crate) fn build(&self, tenant: &str, app: &str, modified_ms: u64, creds: AppCredentials) -> AppChannels {
        let e = &self.settings.endpoints;
        let limits = self.settings.limits.clone();
        let apns = creds
            .apns
            .map(|a| -> Result<ApnsChannel, String> {
                let base = if a.sandbox { &e.apns_sandbox } else { &e.apns };
                let (tls, jwt) = match a.auth {
                    ApnsAuth::Token { key, key_id, team_id } => {
                        let jwt = apns::ApnsJwt::new(&key, &key_id, &team_id)?;
                        if let Ok(Some(saved)) = self.store.provider_tokens().get(tenant, app, "apns") {
                            if saved.key_id == key_id {
                                jwt.adopt(&saved.token, saved.issued_at);
                            }
                        }
                        (self.tls.clone(), Some(jwt))
                    }
                    ApnsAuth::Certificate { cert_pem, key_pem } => (
                        tls_config(&self.settings.extra_ca_pem, Some((&cert_pem, &key_pem)))
                            .map_err(|e| e.to_string())?,
                        None,
                    ),
                };
                let target = Target::from_url(base, tls).map_err(|e| e.to_string())?;
                Ok(ApnsChannel {
                    pool: Pool::new("apns", target, limits.clone()),
                    jwt,
                    topic: a.topic,
                    tenant: tenant.to_string(),
                    saved_iat: AtomicU64::new(0),
                })
            })
            .transpose();
        let fcm = creds
            .fcm
            .map(|sa| -> Result<FcmChannel, String> {
                let target = Target::from_url(&e.fcm, self.tls.clone()).map_err(|e| e.to_string())?;
                let project_id = sa.project_id.clone();
                Ok(FcmChannel {
                    pool: Pool::new("fcm", target, limits.clone()),
                    auth: fcm::FcmAuth::new(sa, self.auth_http.clone())?,
                    project_id,
                })
            })
            .transpose();
        let hms = creds
            .hms
            .map(|(id, secret)| -> Result<HmsChannel, String> {
                let target = Target::from_url(&e.hms, self.tls.clone()).map_err(|e| e.to_string())?;
                let auth = hms::HmsAuth::new(&id, &secret, &e.hms_token, self.auth_http.clone());
                Ok(HmsChannel { pool: Pool::new("hms", target, limits.clone()), auth, app_id: id })
            })
            .transpose();
        AppChannels {
            app: app.to_string(),
            modified_ms,
            categories: creds.categories,
            legacy_fcm_only: creds.legacy_fcm_only,
            apns,
            fcm,
            hms,
        }
    }

    /// Sends to one client's token and records what the answer means for it.
    pub async fn deliver(&self, job: &Job<'_>, client_id: &str, token: &TokenRef, lane: Lane) -> ClientOutcome {
        let Job { tenant, channels: ch, prepared, notification: n } = *job;
        let app = ch.app.as_str();
        let Some(backend) = backend_of(token.provider) else {
            return failed(app, "", 501, "legacy GCM tokens and FCM server keys are no longer supported by Google: register an FCM v1 token and configure fcmServiceAccountJSON");
        };
        let provider = backend.as_str();
        let series = crate::telemetry::tenant(tenant);
        let outcome = match self.attempts(ch, prepared, n, backend, &token.token, lane).await {
            Ok(o) => o,
            Err(e) => {
                series.notification(provider, "failed");
                return failed(app, provider, e.status, e.message);
            }
        };
        match outcome {
            Outcome::Sent { .. } => {
                series.notification(provider, "sent");
                ClientOutcome {
                    app: app.to_string(),
                    provider: provider.to_string(),
                    state: State::Sent,
                    code: 200,
                    message: None,
                }
            }
            Outcome::Dead { status, reason } => {
                series.notification(provider, "invalid");
                match self.store.push_tokens().invalidate(tenant, client_id, &token.token, now_ms()) {
                    Ok(true) => self.events.emit(
                        tenant,
                        "push",
                        "PUSH_TOKEN_INVALIDATED",
                        serde_json::json!({ "astClientId": client_id, "appName": app, "provider": provider, "status": status, "reason": reason }),
                    ),
                    Ok(false) => {}
                    Err(e) => tracing::error!(tenant, client_id, error = %e, "could not mark a dead token invalid"),
                }
                ClientOutcome {
                    app: app.to_string(),
                    provider: provider.to_string(),
                    state: State::Invalid,
                    code: status,
                    message: Some(reason),
                }
            }
            Outcome::Retry { status, reason, .. }
            | Outcome::AuthRefused { status, reason }
            | Outcome::Failed { status, reason } => {
                series.notification(provider, "failed");
                failed(app, provider, status, reason)
            }
        }
    }

    /// Up to `max_attempts` tries (twice that on the bulk lane): transient answers
    /// and lost connections wait and retry; a refused auth token is renewed once.
    async fn attempts(
        &self,
        ch: &AppChannels,
        p: &Prepared,
        n: &Notification,
        backend: Backend,
        token: &str,
        lane: Lane,
    ) -> Result<Outcome, FormatError> {
        let unconfigured =
            |what: &str| FormatError { status: 412, message: format!("app {} has no {what} credentials", ch.app) };
        let mut last = Outcome::Failed { status: 503, reason: "no attempt made".into() };
        let mut auth_renewed = false;
        // A broadcast has time a waiting caller has not: twice the tries, so a fault
        // streak does not drop its token (the long soak, ~10 % faulty answers, lost
        // 4 of 200 000 tokens to five straight failures).
        let tries = match lane {
            Lane::Interactive => self.settings.max_attempts.max(1),
            Lane::Bulk => self.settings.max_attempts.max(1) * 2,
        };
        for attempt in 0..tries {
            let result = match backend {
                Backend::Apns => {
                    let c = ch
                        .apns
                        .as_ref()
                        .map_err(|e| FormatError { status: 412, message: e.clone() })?
                        .as_ref()
                        .ok_or_else(|| unconfigured("APNs"))?;
                    let payload = p.apns.get_or_init(|| apns::prepare(n, &c.topic)).as_ref().map_err(Clone::clone)?;
                    let bearer = c.jwt.as_ref().map(|j| j.current());
                    self.save_jwt(&ch.app, c);
                    let req = payload.request(token, bearer.as_deref());
                    self.post(&c.pool, lane, &req, apns::parse_response).await
                }
                Backend::Fcm => {
                    let c = ch.fcm.as_ref().map_err(|e| FormatError { status: 412, message: e.clone() })?.as_ref().ok_or_else(|| {
                        if ch.legacy_fcm_only {
                            FormatError { status: 501, message: "the app has only a legacy FCM server key (androidApiKey), which Google no longer accepts: configure fcmServiceAccountJSON".into() }
                        } else {
                            unconfigured("FCM")
                        }
                    })?;
                    let payload = p.fcm.get_or_init(|| fcm::prepare(n)).as_ref().map_err(Clone::clone)?;
                    match c.auth.token().await {
                        Ok(bearer) => {
                            let req = payload.request(&c.project_id, token, &bearer)?;
                            self.post(&c.pool, lane, &req, fcm::parse_response).await
                        }
                        Err(e) => Outcome::Retry { status: 503, reason: format!("FCM auth: {e}"), after: None },
                    }
                }
                Backend::Hms => {
                    let c = ch
                        .hms
                        .as_ref()
                        .map_err(|e| FormatError { status: 412, message: e.clone() })?
                        .as_ref()
                        .ok_or_else(|| unconfigured("HMS"))?;
                    let payload = p.hms.get_or_init(|| hms::prepare(n)).as_ref().map_err(Clone::clone)?;
                    match c.auth.token().await {
                        Ok(bearer) => {
                            let req = payload.request(&c.app_id, &[token], &bearer)?;
                            self.post(&c.pool, lane, &req, |s, h, b| {
                                hms::parse_response(s, h, b, &[token])
                                    .into_iter()
                                    .next()
                                    .unwrap_or(Outcome::Failed { status: 502, reason: "empty HMS answer".into() })
                            })
                            .await
                        }
                        Err(e) => Outcome::Retry { status: 503, reason: format!("HMS auth: {e}"), after: None },
                    }
                }
            };
            match result {
                Outcome::Retry { after, .. } if attempt + 1 < tries => {
                    metrics::counter!("herald_provider_retries_total", "provider" => backend.as_str()).increment(1);
                    let backoff = self.settings.retry_base * 2u32.saturating_pow(attempt);
                    tokio::time::sleep(after.unwrap_or(backoff).min(Duration::from_secs(60))).await;
                    last = result;
                }
                Outcome::AuthRefused { .. } if !auth_renewed => {
                    auth_renewed = true;
                    self.renew_auth(ch, backend);
                    last = result;
                }
                other => return Ok(other),
            }
        }
        Ok(last)
    }

    /// Saves the APNs provider token when it changed since last saved.
    fn save_jwt(&self, app: &str, c: &ApnsChannel) {
        let Some(jwt) = &c.jwt else { return };
        let (token, iat) = jwt.snapshot();
        if c.saved_iat.swap(iat, Ordering::AcqRel) != iat {
            let saved = ProviderToken { key_id: jwt.key_id().to_string(), token: token.to_string(), issued_at: iat };
            if let Err(e) = self.store.provider_tokens().put(&c.tenant, app, "apns", &saved) {
                tracing::warn!(error = %e, "could not save the APNs provider token");
            }
        }
    }

    fn renew_auth(&self, ch: &AppChannels, backend: Backend) {
        match backend {
            Backend::Apns => {
                if let Ok(Some(c)) = &ch.apns {
                    if let Some(j) = &c.jwt {
                        j.refused();
                    }
                }
            }
            Backend::Fcm => {
                if let Ok(Some(c)) = &ch.fcm {
                    c.auth.invalidate();
                }
            }
            Backend::Hms => {
                if let Ok(Some(c)) = &ch.hms {
                    c.auth.invalidate();
                }
            }
        }
    }

    async fn post(
        &self,
        pool: &Pool,
        lane: Lane,
        req: &WireRequest,
        parse: impl Fn(u16, &http::HeaderMap, &[u8]) -> Outcome,
    ) -> Outcome {
        match pool.post(lane, req).await {
            Ok(reply) => parse(reply.status, &reply.headers, &reply.body),
            Err(TransportError::Config(e)) => Outcome::Failed { status: 500, reason: e },
            Err(e) => Outcome::Retry { status: 503, reason: e.to_string(), after: Some(Duration::ZERO) },
        }
    }
}

/// The OAuth endpoints speak HTTP/1.1 or HTTP/2: the same roots, both ALPNs.
fn auth_tls(tls: &Arc<rustls::ClientConfig>) -> Arc<rustls::ClientConfig> {
    let mut c = (**tls).clone();
    c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(c)
}
