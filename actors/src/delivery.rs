//! Delivery of one notification to clients of one app: the provider channel of
//! each app (a [`Provider`] and its pool), the payload prepared once per app,
//! the one attempt loop every provider goes through, and what a provider's
//! answer does to the stored token.

use crate::credentials::AppCredentials;
use crate::origins::Pools;
use crate::pool::Lane;
use crate::providers::apns::Apns;
use crate::providers::auth_http::AuthHttp;
use crate::providers::fcm::Fcm;
use crate::providers::hms::Hms;
use crate::providers::webpush::WebPush;
use crate::providers::{Authorizer, Backend, Bearer, BuildEnv, FormatError, Notification, Outcome, Provider};
use crate::settings::PushSettings;
use crate::transport::{tls_config, TransportError};
use crate::webhooks::EventBus;
use herald_storage::deliveries::{ClientOutcome, State};
use herald_storage::push_tokens::{PushProvider, TokenRef};
use herald_storage::{now_ms, Store};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;

/// The backend a stored provider value is delivered through; `None` for GCM.
pub fn backend_of(p: PushProvider) -> Option<Backend> {
    match p {
        PushProvider::Apn | PushProvider::Apns => Some(Backend::Apns),
        PushProvider::Fcm | PushProvider::Fcmf => Some(Backend::Fcm),
        PushProvider::Hpk => Some(Backend::Hms),
        PushProvider::Web => Some(Backend::WebPush),
        PushProvider::Gcm => None,
    }
}

/// How many tokens of `p` one request may carry (HMS: 1000; others: 1).
pub fn batch_limit(p: PushProvider) -> usize {
    match backend_of(p) {
        Some(Backend::Apns) => Apns::MAX_TOKENS,
        Some(Backend::Fcm) => Fcm::MAX_TOKENS,
        Some(Backend::Hms) => Hms::MAX_TOKENS,
        Some(Backend::WebPush) => WebPush::MAX_TOKENS,
        None => 1,
    }
}

/// One provider of one app: the provider, what authorizes its requests, and
/// its connection pools.
pub(crate) struct Channel<P: Provider> {
    provider: P,
    auth: P::Auth,
    pools: Pools,
}

/// An app's channel of one provider, or why there is none (412 or 501, per client).
type Slot<P> = Result<Channel<P>, FormatError>;

/// Everything needed to send for one app, built from its stored configuration.
pub struct AppChannels {
    /// The app's name: the `app` of every outcome sent through these channels.
    pub app: String,
    pub(crate) modified_ms: u64,
    /// Categories the app accepted when the channels were built; others are refused.
    pub categories: Vec<String>,
    apns: Slot<Apns>,
    fcm: Slot<Fcm>,
    hms: Slot<Hms>,
    webpush: Slot<WebPush>,
}

/// One notification going to clients of one app.
#[derive(Clone, Copy)]
pub struct Job<'a> {
    /// The tenant sending: the key of its stored tokens and its metric series.
    pub tenant: &'a str,
    /// The app's channels the clients are reached through.
    pub channels: &'a AppChannels,
    /// The notification's payloads for this app, built once and shared by its clients.
    pub prepared: &'a Prepared,
    /// What is sent, provider-neutral; its `id` names the delivery in logs and reports.
    pub notification: &'a Notification,
    /// When the caller stops waiting (interactive sends): a provider asking
    /// for a longer wait fails the send at once instead.
    pub deadline: Option<Instant>,
}

/// One notification's payloads for one app, each built on first use.
#[derive(Default)]
pub struct Prepared {
    apns: Payload<Apns>,
    fcm: Payload<Fcm>,
    hms: Payload<Hms>,
    webpush: Payload<WebPush>,
}

type Payload<P> = OnceLock<Result<<P as Provider>::Payload, FormatError>>;

/// What the engine does when a tenant's actor stops (see [`Deliverer::on_tenant_stopped`]).
type TenantStopped = Box<dyn Fn(&str) + Send + Sync>;

/// How fast broadcasts may go: the engine paces each to its tenant's bulk
/// quota and its own `maxPerSecond` (see [`Deliverer::set_pacer`]).
pub trait Pacer: Send + Sync {
    /// Takes `n` notifications of broadcast `job` of `tenant` (paced to
    /// `max_per_second` besides the tenant's quota); answers how long to wait
    /// before sending them (zero: at once).
    fn reserve(&self, tenant: &str, job: &str, max_per_second: Option<u32>, n: usize) -> Duration;
}

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
    /// Paces broadcasts; unset: they go as fast as `bulk_in_flight` allows.
    pacer: OnceLock<Arc<dyn Pacer>>,
    /// The broadcast partitions this engine runs (see `claims`).
    claims: Arc<crate::claims::Claims>,
    /// Where broadcast work runs.
    bulk: crate::bulk::Bulk,
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
    pub(crate) fn new(store: Store, settings: PushSettings, events: Arc<EventBus>) -> Result<Deliverer, String> {
        let tls = tls_config(&settings.extra_ca_pem, None).map_err(|e| e.to_string())?;
        let auth_http = AuthHttp::new(tls.clone(), settings.endpoint_policy());
        let bulk_permits = tokio::sync::Semaphore::new(settings.bulk_in_flight.max(1));
        let claims = Arc::default();
        let bulk = crate::bulk::Bulk::start(settings.bulk_nice)?;
        Ok(Deliverer {
            bulk,
            store,
            events,
            settings,
            tls,
            auth_http,
            bulk_permits,
            tenant_stopped: OnceLock::new(),
            pacer: OnceLock::new(),
            claims,
        })
    }

    /// Where broadcast work runs (see [`crate::bulk`]).
    pub fn bulk(&self) -> &crate::bulk::Bulk {
        &self.bulk
    }

    /// What this engine claims of the broadcasts (see `claims`).
    pub fn claims(&self) -> &Arc<crate::claims::Claims> {
        &self.claims
    }

    /// Waits for `n` bulk permits (at most `bulk_in_flight`); a broadcast holds
    /// one per notification in flight.
    pub(crate) async fn bulk_permits(&self, n: usize) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let n = n.clamp(1, self.settings.bulk_in_flight.max(1));
        // The semaphore is never closed; without a permit a send simply goes ahead.
        self.bulk_permits.acquire_many(u32::try_from(n).unwrap_or(u32::MAX)).await.ok()
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

    /// Sets what paces broadcasts (once; later calls are ignored).
    pub fn set_pacer(&self, pacer: Arc<dyn Pacer>) {
        let _ = self.pacer.set(pacer);
    }

    /// See [`Pacer::reserve`]; zero without a pacer.
    pub(crate) fn pace(&self, tenant: &str, job: &str, max_per_second: Option<u32>, n: usize) -> Duration {
        self.pacer.get().map_or(Duration::ZERO, |p| p.reserve(tenant, job, max_per_second, n))
    }

    pub(crate) fn tenant_stopped(&self, tenant: &str) {
        if let Some(f) = self.tenant_stopped.get() {
            f(tenant);
        }
    }

    /// The store tokens are read from and outcomes (dead tokens) written to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The settings the engine started with (endpoints, limits, retries, broadcasts).
    pub fn settings(&self) -> &PushSettings {
        &self.settings
    }

    /// Builds an app's channels (pools not connected yet) from its stored credentials.
    pub(crate) fn build(&self, tenant: &str, app: &str, modified_ms: u64, creds: AppCredentials) -> AppChannels {
        let env = BuildEnv {
            settings: &self.settings,
            tls: &self.tls,
            auth_http: &self.auth_http,
            store: &self.store,
            tenant,
            app,
        };
        let fcm = match creds.fcm {
            None if creds.legacy_fcm_only => Err(FormatError { status: 501, message: "the app has only a legacy FCM server key (androidApiKey), which Google no longer accepts: configure fcmServiceAccountJSON".into() }),
            _ => channel(&creds, &env),
        };
        AppChannels {
            app: app.to_string(),
            modified_ms,
            apns: channel(&creds, &env),
            fcm,
            hms: channel(&creds, &env),
            webpush: channel(&creds, &env),
            categories: creds.categories,
        }
    }

    /// Sends to one client's token and records what the answer means for it.
    pub async fn deliver(&self, job: &Job<'_>, client_id: &str, token: &TokenRef, lane: Lane) -> ClientOutcome {
        let Some(backend) = backend_of(token.provider) else {
            return legacy_gcm(&job.channels.app);
        };
        let answer = self.send_through(job, backend, &[token.token.as_str()], lane).await.pop();
        let answer = answer.unwrap_or_else(|| Outcome::Failed { status: 502, reason: "no answer".into() });
        self.record(job, backend, client_id, token, answer)
    }

    /// Sends to clients' tokens, those of a provider that batches (HMS) in
    /// requests of up to its batch size, and records what the answers mean
    /// for each token; one outcome per client, in order.
    pub async fn deliver_all(&self, job: &Job<'_>, clients: &[(&str, &TokenRef)], lane: Lane) -> Vec<ClientOutcome> {
        let mut outcomes: Vec<Option<ClientOutcome>> = vec![None; clients.len()];
        for backend in [Backend::Apns, Backend::Fcm, Backend::Hms, Backend::WebPush] {
            let of: Vec<usize> =
                (0..clients.len()).filter(|i| backend_of(clients[*i].1.provider) == Some(backend)).collect();
            if of.is_empty() {
                continue;
            }
            let tokens: Vec<&str> = of.iter().map(|i| clients[*i].1.token.as_str()).collect();
            let answers = self.send_through(job, backend, &tokens, lane).await;
            for (i, answer) in of.into_iter().zip(answers) {
                outcomes[i] = Some(self.record(job, backend, clients[i].0, clients[i].1, answer));
            }
        }
        outcomes.into_iter().map(|o| o.unwrap_or_else(|| legacy_gcm(&job.channels.app))).collect()
    }

    /// The outcomes of sending `job` to `tokens` of `backend`.
    async fn send_through(&self, job: &Job<'_>, backend: Backend, tokens: &[&str], lane: Lane) -> Vec<Outcome> {
        let (ch, p) = (job.channels, job.prepared);
        match backend {
            Backend::Apns => self.send(&ch.apns, &p.apns, job, tokens, lane).await,
            Backend::Fcm => self.send(&ch.fcm, &p.fcm, job, tokens, lane).await,
            Backend::Hms => self.send(&ch.hms, &p.hms, job, tokens, lane).await,
            Backend::WebPush => self.send(&ch.webpush, &p.webpush, job, tokens, lane).await,
        }
    }

    /// The outcomes of sending `job` to `tokens` through the app's channel of `P`.
    async fn send<P: Provider>(
        &self,
        slot: &Slot<P>,
        prepared: &Payload<P>,
        job: &Job<'_>,
        tokens: &[&str],
        lane: Lane,
    ) -> Vec<Outcome> {
        let all = |e: &FormatError| vec![Outcome::Failed { status: e.status, reason: e.message.clone() }; tokens.len()];
        let ch = match slot {
            Ok(ch) => ch,
            Err(e) => return all(e),
        };
        let payload = match prepared.get_or_init(|| ch.provider.prepare(job.notification)) {
            Ok(payload) => payload,
            Err(e) => return all(e),
        };
        if tokens.len() <= P::MAX_TOKENS {
            return ch.attempts(&self.settings, payload, tokens, lane, job.deadline).await;
        }
        let mut outcomes = Vec::with_capacity(tokens.len());
        for batch in tokens.chunks(P::MAX_TOKENS.max(1)) {
            outcomes.extend(ch.attempts(&self.settings, payload, batch, lane, job.deadline).await);
        }
        outcomes
    }

    /// What an outcome means for the stored token, the metrics and the result.
    fn record(&self, job: &Job<'_>, backend: Backend, client_id: &str, token: &TokenRef, o: Outcome) -> ClientOutcome {
        let (tenant, app, provider) = (job.tenant, job.channels.app.as_str(), backend.as_str());
        let series = crate::telemetry::tenant(tenant);
        match o {
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
                // The token marked invalid and its event in one write.
                let data = serde_json::json!({ "astClientId": client_id, "appName": app, "provider": provider, "status": status, "reason": reason });
                let event = crate::webhooks::Event::new(tenant, "push", "PUSH_TOKEN_INVALIDATED", data);
                let now = now_ms();
                let invalidated = self.store.transact(|tx| {
                    if tx.invalidate_push_token(tenant, client_id, &token.token, now)? {
                        crate::webhooks::queue(tx, &event)?;
                    }
                    Ok::<_, herald_storage::Error>(())
                });
                if let Err(e) = invalidated {
                    tracing::error!(tenant, client_id, error = %e, "could not mark a dead token invalid");
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
}

fn legacy_gcm(app: &str) -> ClientOutcome {
    failed(app, "", 501, "legacy GCM tokens and FCM server keys are no longer supported by Google: register an FCM v1 token and configure fcmServiceAccountJSON")
}

/// The channel of `P` for the app's credentials, or why there is none.
fn channel<P: Provider>(creds: &AppCredentials, env: &BuildEnv<'_>) -> Slot<P> {
    let unusable = |message: String| FormatError { status: 412, message };
    let built = P::build(creds, env)
        .ok_or_else(|| unusable(format!("app {} has no {} credentials", env.app, P::BACKEND.name())))?;
    let (provider, auth, route) = built.map_err(unusable)?;
    Ok(Channel { provider, auth, pools: Pools::new(P::BACKEND.as_str(), route, env.settings.limits.clone()) })
}

impl<P: Provider> Channel<P> {
    /// The attempt loop every provider shares, for at most
    /// [`Provider::MAX_TOKENS`] tokens. Up to `max_attempts` tries
    /// (twice that on the bulk lane) for the tokens whose answer is transient
    /// (429, 5xx, a lost connection or GOAWAY): each waits what the provider
    /// asked (`Retry-After`, at most `max_retry_after`) or an exponential
    /// backoff. A refused auth token is renewed once, then tried again at once.
    /// Tokens with a final answer (sent, dead, failed) are never sent again: of
    /// an HMS batch with some illegal tokens, none is retried.
    async fn attempts(
        &self,
        s: &PushSettings,
        payload: &P::Payload,
        tokens: &[&str],
        lane: Lane,
        deadline: Option<Instant>,
    ) -> Vec<Outcome> {
        // A broadcast has time a waiting caller has not: twice the tries, so a fault
        // streak does not drop its token (the long soak, ~10 % faulty answers, lost
        // 4 of 200 000 tokens to five straight failures).
        let tries = match lane {
            Lane::Interactive => s.max_attempts.max(1),
            Lane::Bulk => s.max_attempts.max(1).saturating_mul(2),
        };
        let mut done: Vec<Option<Outcome>> = vec![None; tokens.len()];
        // The tokens to try again (indexes), with their latest outcome.
        let mut pending: Vec<(usize, Outcome)> = Vec::new();
        let mut again: Vec<&str> = Vec::new();
        let mut renewed = false;
        for attempt in 0..tries {
            let before = std::mem::take(&mut pending);
            again.clear();
            again.extend(before.iter().map(|(i, _)| tokens[*i]));
            let (answers, bearer) = self.attempt(payload, if attempt == 0 { tokens } else { &again }, lane).await;
            let mut refused = false;
            for (k, answer) in answers.into_iter().enumerate() {
                let i = if attempt == 0 { k } else { before[k].0 };
                match answer {
                    Outcome::Retry { .. } => pending.push((i, answer)),
                    Outcome::AuthRefused { .. } if !renewed => {
                        refused = true;
                        pending.push((i, answer));
                    }
                    last => done[i] = Some(last),
                }
            }
            if pending.is_empty() || attempt.saturating_add(1) == tries {
                break;
            }
            if refused {
                renewed = true;
                self.auth.refused(bearer.as_ref());
                continue;
            }
            let wait = delay(s, attempt, &pending);
            let now = Instant::now();
            if deadline.is_some_and(|d| now.checked_add(wait).is_none_or(|t| t >= d)) {
                for (_, o) in &mut pending {
                    if let Outcome::Retry { reason, .. } = o {
                        reason.push_str(&format!(" (asked to retry in {} s, past the send deadline)", wait.as_secs()));
                    }
                }
                break;
            }
            metrics::counter!("herald_provider_retries_total", "provider" => P::BACKEND.as_str()).increment(1);
            tokio::time::sleep(wait).await;
        }
        for (i, last) in pending {
            done[i] = Some(last);
        }
        done.into_iter()
            .map(|o| o.unwrap_or_else(|| Outcome::Failed { status: 502, reason: "no answer for this token".into() }))
            .collect()
    }

    /// One request for `tokens`: one outcome per token, and the bearer it carried.
    async fn attempt(&self, payload: &P::Payload, tokens: &[&str], lane: Lane) -> (Vec<Outcome>, Option<Bearer>) {
        let all = |o: Outcome| vec![o; tokens.len()];
        let bearer = match self.auth.authorize().await {
            Ok(bearer) => bearer,
            Err(e) => return (all(e.outcome(P::BACKEND)), None),
        };
        let request = match self.provider.request(payload, tokens, bearer.as_ref()) {
            Ok(r) => r,
            Err(e) => return (all(Outcome::Failed { status: e.status, reason: e.message }), bearer),
        };
        let mut answers = match self.pools.post(lane, request).await {
            Ok(reply) => P::read(reply.status, &reply.headers, &reply.body, tokens),
            Err(TransportError::Config(e)) => all(Outcome::Failed { status: 500, reason: e }),
            Err(e @ TransportError::Forbidden(_)) => all(Outcome::Failed { status: 403, reason: e.to_string() }),
            // Lost connections and GOAWAY: at once, on another connection.
            Err(e) => all(Outcome::Retry { status: 503, reason: e.to_string(), after: Some(Duration::ZERO) }),
        };
        answers.resize(tokens.len(), Outcome::Failed { status: 502, reason: "no answer for this token".into() });
        (answers, bearer)
    }
}

/// How long to wait before trying `pending` again: the longest wait a
/// provider asked for, else `retry_base` doubled per attempt; never more than
/// `max_retry_after`.
fn delay(s: &PushSettings, attempt: u32, pending: &[(usize, Outcome)]) -> Duration {
    let asked = pending.iter().filter_map(|(_, o)| match o {
        Outcome::Retry { after, .. } => *after,
        _ => None,
    });
    let backoff = || s.retry_base.checked_mul(2u32.saturating_pow(attempt)).unwrap_or(Duration::MAX);
    asked.max().unwrap_or_else(backoff).min(s.max_retry_after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_bounded() {
        let s = PushSettings { max_retry_after: Duration::from_secs(30), ..PushSettings::default() };
        let retry = |after: Option<Duration>| (0, Outcome::Retry { status: 429, reason: String::new(), after });
        assert_eq!(delay(&s, 0, &[retry(None)]), Duration::from_millis(200));
        assert_eq!(delay(&s, 3, &[retry(None)]), Duration::from_millis(1600));
        assert_eq!(delay(&s, 40, &[retry(None)]), Duration::from_secs(30), "the backoff never overflows");
        assert_eq!(delay(&s, 0, &[retry(Some(Duration::from_secs(2))), retry(None)]), Duration::from_secs(2));
        assert_eq!(delay(&s, 0, &[retry(Some(Duration::MAX))]), Duration::from_secs(30), "capped");
        assert_eq!(delay(&s, 2, &[retry(Some(Duration::ZERO))]), Duration::ZERO);
    }
}
