//! Apple Push Notification service: the HTTP/2 request (`POST /3/device/{token}`),
//! the meaning of its answers, and the ES256 provider token of token auth.
//!
//! A notification is formatted once ([`prepare`]) and the same body and headers
//! go to every device token; only the path (and the bearer) differ per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::json;

use super::Notification;
use super::{header_value, retry_after, unix_now, AuthError, Backend, Bearer, BuildEnv, Built, FormatError};
use super::{Outcome, Priority, Provider, WireRequest};
use crate::credentials::{ApnsAuth, ApnsCredentials, AppCredentials};
use crate::transport::{tls_config, Target};
use herald_storage::provider_tokens::ProviderToken;

/// The longest `apns-expiration` we ask for. Apple keeps undelivered
/// notifications for a limited time anyway; 30 days bounds what we promise.
pub const MAX_TTL_SECS: i64 = 30 * 24 * 3600;

/// Apple refuses `apns-collapse-id` values longer than this (400 `BadCollapseId`).
pub const MAX_COLLAPSE_ID: usize = 64;

static APNS_TOPIC: HeaderName = HeaderName::from_static("apns-topic");
static APNS_PUSH_TYPE: HeaderName = HeaderName::from_static("apns-push-type");
static APNS_PRIORITY: HeaderName = HeaderName::from_static("apns-priority");
static APNS_EXPIRATION: HeaderName = HeaderName::from_static("apns-expiration");
static APNS_COLLAPSE_ID: HeaderName = HeaderName::from_static("apns-collapse-id");
static APNS_ID: HeaderName = HeaderName::from_static("apns-id");

/// A notification formatted for APNs: prepared once per notification and app;
/// the same body goes to every token.
#[derive(Clone, Debug)]
pub struct ApnsPayload {
    body: Bytes,
    /// The headers that do not depend on the token, `content-length`
    /// included: built once, cloned per token as the bare client's are
    /// (copying a map is cheaper than hashing each name into a new one).
    headers: HeaderMap,
}

impl ApnsPayload {
    /// The JSON body (for tests and logs).
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The token-independent headers (for tests and logs).
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The request for one device token: `POST /3/device/{token}`, with
    /// `authorization: bearer <jwt>` under token auth (`None` under certificate
    /// auth, where the TLS client certificate authenticates the connection).
    pub fn request(&self, token: &str, bearer: Option<&Bearer>) -> WireRequest {
        let mut path = String::with_capacity(token.len().saturating_add(10));
        path.push_str("/3/device/");
        super::push_path_segment(&mut path, token);
        let mut headers = self.headers.clone();
        if let Some(jwt) = bearer {
            headers.insert(http::header::AUTHORIZATION, jwt.header().clone());
        }
        WireRequest { authority: None, path, headers, body: self.body.clone() }
    }
}

/// Formats `n` for the app whose bundle id is `topic`.
///
/// Headers: `apns-topic`; `apns-push-type` `alert`, or `background` when silent;
/// `apns-priority` 10/5/1 for HIGH/NORMAL/LOW, but always 5 for a background
/// push (Apple refuses 10 there); `apns-expiration` now + time to live, capped at
/// 30 days (`0`, "deliver once or drop", for a ttl of 0 or less; absent without a
/// ttl); `apns-collapse-id` from the collapse key.
///
/// Body: `{"aps": {"alert": {..}, "sound", "mutable-content": 1}, <customData>,
/// "sender": {"tenantId", "userId"}, "notificationId", "category"}`. A silent
/// push has `{"aps": {"content-available": 1}}` and the same data, no alert.
/// `mutable-content` lets the app's notification service extension rewrite the
/// alert from the data (decrypt, localise, attach media) before it is shown.
pub fn prepare(n: &Notification, topic: &str) -> Result<ApnsPayload, FormatError> {
    prepare_at(n, topic, unix_now())
}

fn prepare_at(n: &Notification, topic: &str, now: u64) -> Result<ApnsPayload, FormatError> {
    let mut headers = HeaderMap::with_capacity(6);
    headers.insert(APNS_TOPIC.clone(), header_value("apns-topic (the bundle id)", topic)?);
    let (push_type, priority) = if n.silent {
        ("background", "5")
    } else {
        let p = match n.priority {
            Priority::High => "10",
            Priority::Normal => "5",
            Priority::Low => "1",
        };
        ("alert", p)
    };
    headers.insert(APNS_PUSH_TYPE.clone(), HeaderValue::from_static(push_type));
    headers.insert(APNS_PRIORITY.clone(), HeaderValue::from_static(priority));
    if let Some(ttl) = n.time_to_live {
        let expiration = if ttl <= 0 { 0 } else { now.saturating_add(ttl.min(MAX_TTL_SECS) as u64) };
        headers.insert(APNS_EXPIRATION.clone(), HeaderValue::from(expiration));
    }
    if let Some(key) = &n.collapse_key {
        if key.len() > MAX_COLLAPSE_ID {
            return Err(FormatError {
                status: 400,
                message: format!("collapseKey of {} bytes exceeds APNs' {MAX_COLLAPSE_ID}-byte limit", key.len()),
            });
        }
        headers.insert(APNS_COLLAPSE_ID.clone(), header_value("collapseKey", key)?);
    }

    let body = serde_json::to_vec(&Body(n))
        .map_err(|e| FormatError { status: 400, message: format!("cannot encode the APNs payload: {e}") })?;
    super::check_size(body.len(), "APNs'")?;
    headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    Ok(ApnsPayload { body: Bytes::from(body), headers })
}

/// The body APNs receives, written straight to JSON: a one-client send
/// formats its notification once, so a tree of values built, cloned into
/// and dropped per send was most of [`prepare`]'s cost.
struct Body<'a>(&'a Notification);

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let mut top = s.serialize_map(None)?;
        for (k, v) in &n.custom_data {
            // `aps` is Apple's dictionary and the keys written below are
            // Herald's: custom data replaces none of them.
            let ours =
                matches!(k.as_str(), "aps" | "notificationId" | "category") || (k == "sender" && n.sender.is_some());
            if !ours {
                top.serialize_entry(k, v)?;
            }
        }
        if let Some((tenant, user)) = &n.sender {
            top.serialize_entry("sender", &Sender { tenant_id: tenant, user_id: user })?;
        }
        top.serialize_entry("notificationId", &n.id)?;
        top.serialize_entry("category", &n.category)?;
        top.serialize_entry("aps", &Aps(n))?;
        top.end()
    }
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Sender<'a> {
    tenant_id: &'a str,
    user_id: &'a str,
}

/// `aps`: `content-available` of a silent push; else the alert (when it has
/// a field), the sound and `mutable-content`.
struct Aps<'a>(&'a Notification);

impl Serialize for Aps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let mut aps = s.serialize_map(None)?;
        if n.silent {
            aps.serialize_entry("content-available", &1)?;
            return aps.end();
        }
        let alert = Alert {
            title: n.title.as_deref(),
            body: n.body.as_deref(),
            title_loc_key: n.title_loc_key.as_deref(),
            title_loc_args: &n.title_loc_args,
            loc_key: n.body_loc_key.as_deref(),
            loc_args: &n.body_loc_args,
        };
        if !alert.is_empty() {
            aps.serialize_entry("alert", &alert)?;
        }
        if let Some(sound) = &n.sound {
            aps.serialize_entry("sound", sound)?;
        }
        aps.serialize_entry("mutable-content", &1)?;
        aps.end()
    }
}

#[derive(serde::Serialize)]
#[serde(rename_all = "kebab-case")]
struct Alert<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title_loc_key: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    title_loc_args: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    loc_key: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    loc_args: &'a [String],
}

impl Alert<'_> {
    fn is_empty(&self) -> bool {
        [self.title, self.body, self.title_loc_key, self.loc_key].iter().all(Option::is_none)
            && self.title_loc_args.is_empty()
            && self.loc_args.is_empty()
    }
}

/// What an APNs answer means for the token.
///
/// 200: sent (with Apple's `apns-id`). 410 (`Unregistered`, `ExpiredToken`) and
/// 400 `BadDeviceToken`: the token is dead. 403 `ExpiredProviderToken` or
/// `InvalidProviderToken`: our JWT was refused, refresh it. 429
/// (`TooManyRequests`, `TooManyProviderTokenUpdates`) and 5xx: retry, after
/// `retry-after` when given. Anything else (bad topic, payload, headers, a
/// missing or bad certificate) is a permanent failure of this notification.
pub fn parse_response(status: u16, headers: &http::HeaderMap, body: &[u8]) -> Outcome {
    if status == 200 {
        let id = headers.get(&APNS_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
        return Outcome::Sent { id };
    }
    let reason = reason(status, body);
    match (status, reason.as_str()) {
        (410, _) | (400, "BadDeviceToken") => Outcome::Dead { status, reason },
        (403, "ExpiredProviderToken" | "InvalidProviderToken") => Outcome::AuthRefused { status, reason },
        (429, _) | (500..=599, _) => Outcome::Retry { status, reason, after: retry_after(headers) },
        _ => Outcome::Failed { status, reason },
    }
}

/// Apple's `{"reason": "..."}`, or what the body says when it is not that.
fn reason(status: u16, body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Answer {
        reason: String,
    }
    let answer = serde_json::from_slice::<Answer>(body).ok();
    super::reason(status, body, answer.as_ref().map(|a| a.reason.as_str()), None)
}

/// A new provider token is signed once the current one is this old. Apple
/// refuses tokens older than an hour and refreshes more frequent than every 20
/// minutes; 40 minutes is safely between.
pub const JWT_REFRESH_AFTER: Duration = Duration::from_secs(40 * 60);

/// After a refusal, a token younger than this is kept: signing again so soon
/// would be answered `TooManyProviderTokenUpdates`.
pub const JWT_MIN_AGE_FOR_REFRESH: Duration = Duration::from_secs(20 * 60);

/// A source of Unix time in seconds; tests substitute their own.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

struct Signed {
    bearer: Bearer,
    iat: u64,
}

/// The ES256 provider token of APNs token auth, shared by every request of one
/// key: reused until it is 40 minutes old, then replaced by a newly signed one.
///
/// [`ApnsJwt::current`] runs for every request, so its common path is a read
/// lock and a [`Bearer`] clone; signing happens under the write lock, once.
pub struct ApnsJwt {
    key: EcdsaKeyPair,
    rng: SystemRandom,
    key_id: String,
    /// `base64url({"alg":"ES256","kid":..}) + "."`, fixed for the key.
    header: String,
    /// `{"iss":"<team id>","iat":` up to the timestamp.
    claims_prefix: String,
    clock: Clock,
    current: RwLock<Signed>,
}

impl std::fmt::Debug for ApnsJwt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApnsJwt").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl ApnsJwt {
    /// From the `.p8` key (PKCS#8, PEM `-----BEGIN PRIVATE KEY-----` or raw DER),
    /// its key id and the team id. Signs the first token at once, so a bad key
    /// is reported when the app is configured, not on its first send.
    pub fn new(key: &[u8], key_id: &str, team_id: &str) -> Result<ApnsJwt, String> {
        Self::with_clock(key, key_id, team_id, Arc::new(unix_now))
    }

    /// As [`ApnsJwt::new`], reading the time from `clock` (Unix seconds), so tests
    /// can move time.
    pub fn with_clock(key: &[u8], key_id: &str, team_id: &str, clock: Clock) -> Result<ApnsJwt, String> {
        let key = signing_key(key)?;
        let rng = SystemRandom::new();
        if key_id.is_empty() || team_id.is_empty() {
            return Err("the APNs key id and team id must not be empty".into());
        }
        let header = serde_json::to_vec(&json!({ "alg": "ES256", "kid": key_id }))
            .map_err(|e| format!("cannot encode the JWT header: {e}"))?;
        let iss = serde_json::to_string(team_id).map_err(|e| format!("cannot encode the team id: {e}"))?;
        let (header, claims_prefix) =
            (format!("{}.", URL_SAFE_NO_PAD.encode(header)), format!("{{\"iss\":{iss},\"iat\":"));
        let now = clock();
        let bearer = sign(&key, &rng, &header, &claims_prefix, now)?;
        count_refresh();
        Ok(ApnsJwt {
            key,
            rng,
            key_id: key_id.to_owned(),
            header,
            claims_prefix,
            clock,
            current: RwLock::new(Signed { bearer, iat: now }),
        })
    }

    /// The key id (the JWT's `kid`).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The token to send now: the current one while it is under 40 minutes old,
    /// else a newly signed one.
    pub fn current(&self) -> Bearer {
        self.signed().0
    }

    /// [`ApnsJwt::current`] and its `iat`, to save.
    fn signed(&self) -> (Bearer, u64) {
        let now = (self.clock)();
        {
            let guard = self.current.read().unwrap_or_else(|e| e.into_inner());
            if now.saturating_sub(guard.iat) < JWT_REFRESH_AFTER.as_secs() {
                return (guard.bearer.clone(), guard.iat);
            }
        }
        self.replace_if(|iat| now.saturating_sub(iat) >= JWT_REFRESH_AFTER.as_secs(), now)
    }

    /// Apple refused the token (`AuthRefused`). A token at least 20 minutes old
    /// is replaced; a younger one is kept, since Apple would refuse a new one as
    /// too frequent an update and a young token's refusal points at the key or
    /// the clock, not at its age.
    pub fn refused(&self) {
        let now = (self.clock)();
        let age = {
            let guard = self.current.read().unwrap_or_else(|e| e.into_inner());
            now.saturating_sub(guard.iat)
        };
        if age < JWT_MIN_AGE_FOR_REFRESH.as_secs() {
            tracing::warn!(
                key_id = %self.key_id,
                age_secs = age,
                "APNs refused a provider token younger than 20 minutes; keeping it (check the key, team id and clock)"
            );
            return;
        }
        self.replace_if(|iat| now.saturating_sub(iat) >= JWT_MIN_AGE_FOR_REFRESH.as_secs(), now);
    }

    /// Under the write lock: signs a new token if `stale(iat)` still holds (another
    /// thread may have replaced it meanwhile), and returns the token in force.
    fn replace_if(&self, stale: impl Fn(u64) -> bool, now: u64) -> (Bearer, u64) {
        let mut guard = self.current.write().unwrap_or_else(|e| e.into_inner());
        if stale(guard.iat) {
            match sign(&self.key, &self.rng, &self.header, &self.claims_prefix, now) {
                Ok(bearer) => {
                    *guard = Signed { bearer, iat: now };
                    count_refresh();
                    tracing::debug!(key_id = %self.key_id, "APNs provider token refreshed");
                }
                // Only the system RNG can fail here; the old token may still work.
                Err(e) => tracing::error!(key_id = %self.key_id, error = %e, "cannot sign an APNs provider token"),
            }
        }
        (guard.bearer.clone(), guard.iat)
    }
}

/// A provider token issued at `iat`: `header` is the encoded JOSE header and its
/// dot, `claims_prefix` the claims up to the timestamp.
fn sign(key: &EcdsaKeyPair, rng: &SystemRandom, header: &str, claims_prefix: &str, iat: u64) -> Result<Bearer, String> {
    let claims = format!("{claims_prefix}{iat}}}");
    let mut jwt =
        String::with_capacity(header.len().saturating_add(claims.len().saturating_mul(4) / 3).saturating_add(90));
    jwt.push_str(header);
    URL_SAFE_NO_PAD.encode_string(claims.as_bytes(), &mut jwt);
    let signature = key.sign(rng, jwt.as_bytes()).map_err(|_| "ECDSA signing failed".to_owned())?;
    jwt.push('.');
    URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut jwt);
    // base64url and dots: always a valid header.
    Bearer::new("bearer", &jwt).map_err(|e| e.message)
}

fn count_refresh() {
    metrics::counter!("herald_provider_auth_refreshes_total", "provider" => "apns", "outcome" => "ok").increment(1);
}

/// The signing key of APNs token auth: the `.p8` file, a PKCS#8 P-256 key as PEM
/// (`-----BEGIN PRIVATE KEY-----`) or DER. The one reader of that key, at send
/// time ([`ApnsJwt::new`]) and when an app is saved.
pub fn signing_key(key: &[u8]) -> Result<EcdsaKeyPair, String> {
    let der = pkcs8_der(key, "the APNs key", ".p8 file")?;
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
        .map_err(|e| format!("the APNs key is not a PKCS#8 P-256 key (.p8): {e}"))
}

/// The DER of a PKCS#8 key given as PEM (`PRIVATE KEY`) or as DER; `what`
/// and `file` name it in the error.
pub(crate) fn pkcs8_der(key: &[u8], what: &str, file: &str) -> Result<Vec<u8>, String> {
    let trimmed = key.trim_ascii_start();
    if !trimmed.starts_with(b"-----BEGIN") {
        return Ok(key.to_vec());
    }
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::PrivatePkcs8KeyDer::from_pem_slice(trimmed)
        .map(|k| k.secret_pkcs8_der().to_vec())
        .map_err(|e| format!("{what} is not a PEM \"PRIVATE KEY\" (PKCS#8 {file}): {e:?}"))
}

/// Survival across restarts: the token in force can be saved and taken up again.
impl ApnsJwt {
    /// Takes up a token saved by an earlier process when it is still young
    /// enough to reuse; true when adopted. Signing a new one instead would count
    /// as an update at Apple, which refuses more than one per 20 minutes.
    pub fn adopt(&self, token: &str, iat: u64) -> bool {
        let now = (self.clock)();
        if iat > now || now.saturating_sub(iat) >= JWT_REFRESH_AFTER.as_secs() {
            return false;
        }
        // A saved token a header cannot carry was not ours: sign anew.
        let Ok(bearer) = Bearer::new("bearer", token) else { return false };
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Signed { bearer, iat };
        true
    }
}

/// APNs for one app: its topic (the bundle id). Its requests carry the
/// provider token under token auth ([`ProviderTokenAuth`]); under
/// certificate auth the connection authenticates.
pub struct Apns {
    topic: String,
}

/// The provider token of token auth, or nothing (certificate auth).
pub struct ProviderTokenAuth(Option<SavedJwt>);

impl super::Authorizer for ProviderTokenAuth {
    async fn authorize(&self) -> Result<Option<Bearer>, AuthError> {
        Ok(match &self.0 {
            Some(saved) => Some(saved.current().await),
            None => None,
        })
    }

    /// Apple refused the token: replaced if it is old enough ([`ApnsJwt::refused`]).
    fn refused(&self, _: Option<&Bearer>) {
        if let Some(saved) = &self.0 {
            saved.jwt.refused();
        }
    }
}

/// The provider token of an app, saved whenever it changes, so that a
/// restarted process takes it up again rather than sign a new one (Apple
/// refuses more than one new token per 20 minutes).
struct SavedJwt {
    jwt: ApnsJwt,
    store: herald_storage::Store,
    tenant: String,
    app: String,
    /// `iat` of the token last saved.
    saved_iat: AtomicU64,
    /// `iat` of the token last made durable (one load per request), and
    /// the callers waiting for a newer one to be.
    durable_iat: AtomicU64,
    made_durable: tokio::sync::Notify,
}

impl SavedJwt {
    fn new(jwt: ApnsJwt, env: &BuildEnv<'_>, adopted_iat: u64) -> SavedJwt {
        SavedJwt {
            jwt,
            store: env.store.clone(),
            tenant: env.tenant.to_string(),
            app: env.app.to_string(),
            saved_iat: AtomicU64::new(adopted_iat),
            durable_iat: AtomicU64::new(adopted_iat),
            made_durable: tokio::sync::Notify::new(),
        }
    }

    /// The token to present, durably saved before anyone presents it: a
    /// token Apple saw but a crash lost would have the restarted engine's
    /// new one refused for 20 minutes.
    async fn current(&self) -> Bearer {
        let (token, iat) = self.jwt.signed();
        if self.saved_iat.swap(iat, Ordering::AcqRel) != iat {
            let record = ProviderToken {
                key_id: self.jwt.key_id().to_string(),
                token: token.token().to_owned(),
                issued_at: iat,
            };
            let saved = self.store.provider_tokens().put(&self.tenant, &self.app, "apns", &record);
            let durable = match saved {
                Ok(()) => self.store.durable().await,
                Err(e) => Err(e),
            };
            if let Err(e) = durable {
                tracing::warn!(error = %e, "could not save the APNs provider token");
            }
            // Saved or not, it is used: without it nothing is sent at all.
            self.durable_iat.fetch_max(iat, Ordering::AcqRel);
            self.made_durable.notify_waiters();
        } else {
            // Its saver is making it durable. Registered before the check, so
            // the saver's wake-up cannot fall between the two.
            while self.durable_iat.load(Ordering::Acquire) < iat {
                let mut woken = std::pin::pin!(self.made_durable.notified());
                woken.as_mut().enable();
                if self.durable_iat.load(Ordering::Acquire) >= iat {
                    break;
                }
                woken.await;
            }
        }
        token
    }
}

impl Provider for Apns {
    const BACKEND: Backend = Backend::Apns;
    type Payload = ApnsPayload;
    type Auth = ProviderTokenAuth;

    fn build(creds: &AppCredentials, env: &BuildEnv<'_>) -> Option<Result<Built<Apns>, String>> {
        Some(built(creds.apns.as_ref()?, env))
    }

    fn prepare(&self, n: &Notification) -> Result<ApnsPayload, FormatError> {
        prepare(n, &self.topic)
    }

    fn request(&self, p: &ApnsPayload, tokens: &[&str], bearer: Option<&Bearer>) -> Result<WireRequest, FormatError> {
        Ok(p.request(super::only(tokens)?, bearer))
    }

    fn read(status: u16, headers: &http::HeaderMap, body: &[u8], tokens: &[&str]) -> Vec<Outcome> {
        super::for_each(parse_response(status, headers, body), tokens)
    }
}

/// The channel parts of token or certificate auth, at the production or sandbox endpoint.
fn built(a: &ApnsCredentials, env: &BuildEnv<'_>) -> Result<Built<Apns>, String> {
    let e = &env.settings.endpoints;
    let base = if a.sandbox { &e.apns_sandbox } else { &e.apns };
    let (tls, jwt) = match &a.auth {
        ApnsAuth::Token { key, key_id, team_id } => {
            let jwt = ApnsJwt::new(key, key_id, team_id)?;
            // A token taken up from the store is durable already.
            let adopted_iat = match env.store.provider_tokens().get(env.tenant, env.app, "apns") {
                Ok(Some(saved)) if saved.key_id == *key_id && jwt.adopt(&saved.token, saved.issued_at) => {
                    saved.issued_at
                }
                _ => 0,
            };
            (env.tls.clone(), Some(SavedJwt::new(jwt, env, adopted_iat)))
        }
        ApnsAuth::Certificate { cert_pem, key_pem } => {
            let tls = tls_config(&env.settings.extra_ca_pem, Some((cert_pem, key_pem)));
            (tls.map_err(|e| e.to_string())?, None)
        }
    };
    let target = Target::from_url(base, tls).map_err(|e| e.to_string())?;
    Ok((Apns { topic: a.topic.clone() }, ProviderTokenAuth(jwt), target.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::sample as notification;
    use serde_json::Value;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn header<'a>(p: &'a ApnsPayload, name: &str) -> Option<&'a str> {
        p.headers().get(name).and_then(|v| v.to_str().ok())
    }

    fn body(p: &ApnsPayload) -> Value {
        serde_json::from_slice(p.body()).unwrap()
    }

    #[test]
    fn an_alert_push() {
        let mut n = notification();
        n.sound = Some("ping.caf".into());
        n.title_loc_key = Some("T_KEY".into());
        n.title_loc_args = vec!["a".into()];
        n.body_loc_key = Some("B_KEY".into());
        n.body_loc_args = vec!["b".into(), "c".into()];
        n.custom_data.insert("orderId".into(), json!(42));
        n.custom_data.insert("aps".into(), json!({"evil": true}));
        n.custom_data.insert("nested".into(), json!({"a": [1, 2]}));
        n.sender = Some(("acme".into(), "u1".into()));
        let p = prepare(&n, "com.herald.demo").unwrap();
        assert_eq!(header(&p, "apns-topic"), Some("com.herald.demo"));
        assert_eq!(header(&p, "apns-push-type"), Some("alert"));
        assert_eq!(header(&p, "apns-priority"), Some("10"));
        assert_eq!(header(&p, "apns-expiration"), None);
        assert_eq!(header(&p, "apns-collapse-id"), None);
        assert_eq!(
            body(&p),
            json!({
                "aps": {
                    "alert": {
                        "title": "Hello", "body": "World",
                        "title-loc-key": "T_KEY", "title-loc-args": ["a"],
                        "loc-key": "B_KEY", "loc-args": ["b", "c"],
                    },
                    "sound": "ping.caf",
                    "mutable-content": 1,
                },
                "orderId": 42,
                "nested": {"a": [1, 2]},
                "sender": {"tenantId": "acme", "userId": "u1"},
                "notificationId": "01HZX5J3K9Q8W7E6R5T4Y3U2I1",
                "category": "chat",
            })
        );
    }

    /// Custom data cannot replace Herald's keys, nor write one twice (a
    /// parser would take either copy).
    #[test]
    fn custom_data_does_not_replace_heralds_keys() {
        let mut n = notification();
        for k in ["aps", "notificationId", "category", "sender"] {
            n.custom_data.insert(k.into(), json!("forged"));
        }
        let raw = String::from_utf8(prepare(&n, "t").unwrap().body().to_vec()).unwrap();
        for k in ["\"aps\"", "\"notificationId\"", "\"category\""] {
            assert_eq!(raw.matches(k).count(), 1, "{k} in {raw}");
        }
        let body: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(body["notificationId"], "01HZX5J3K9Q8W7E6R5T4Y3U2I1");
        assert_eq!(body["category"], "chat");
        assert!(body["aps"]["alert"].is_object());
        // Without a sender of Herald's, a custom `sender` is the app's data.
        assert_eq!(body["sender"], "forged");
        n.sender = Some(("acme".into(), "u1".into()));
        let raw = String::from_utf8(prepare(&n, "t").unwrap().body().to_vec()).unwrap();
        assert_eq!(raw.matches("\"sender\"").count(), 1, "{raw}");
        assert_eq!(serde_json::from_str::<Value>(&raw).unwrap()["sender"], json!({"tenantId": "acme", "userId": "u1"}));
    }

    #[test]
    fn priorities() {
        let mut n = notification();
        for (p, want) in [(Priority::High, "10"), (Priority::Normal, "5"), (Priority::Low, "1")] {
            n.priority = p;
            assert_eq!(header(&prepare(&n, "t").unwrap(), "apns-priority"), Some(want));
        }
    }

    #[test]
    fn a_silent_push_is_background_at_priority_5() {
        let mut n = notification();
        n.silent = true;
        n.sound = Some("x".into());
        n.custom_data.insert("k".into(), json!("v"));
        let p = prepare(&n, "com.herald.demo").unwrap();
        assert_eq!(header(&p, "apns-push-type"), Some("background"));
        assert_eq!(header(&p, "apns-priority"), Some("5"));
        assert_eq!(
            body(&p),
            json!({
                "aps": {"content-available": 1},
                "k": "v",
                "notificationId": "01HZX5J3K9Q8W7E6R5T4Y3U2I1",
                "category": "chat",
            })
        );
    }

    #[test]
    fn expiration_is_capped_at_30_days() {
        let mut n = notification();
        n.time_to_live = Some(3600);
        let p = prepare_at(&n, "t", 1_000_000).unwrap();
        assert_eq!(header(&p, "apns-expiration"), Some("1003600"));
        n.time_to_live = Some(365 * 24 * 3600);
        let p = prepare_at(&n, "t", 1_000_000).unwrap();
        assert_eq!(header(&p, "apns-expiration"), Some("3592000"));
        n.time_to_live = Some(0);
        assert_eq!(header(&prepare_at(&n, "t", 1_000_000).unwrap(), "apns-expiration"), Some("0"));
        n.time_to_live = Some(-5);
        assert_eq!(header(&prepare_at(&n, "t", 1_000_000).unwrap(), "apns-expiration"), Some("0"));
        // prepare() uses the real clock.
        n.time_to_live = Some(60);
        let exp: u64 = header(&prepare(&n, "t").unwrap(), "apns-expiration").unwrap().parse().unwrap();
        assert!(exp.abs_diff(unix_now() + 60) <= 2);
    }

    #[test]
    fn collapse_id() {
        let mut n = notification();
        n.collapse_key = Some("thread-1".into());
        assert_eq!(header(&prepare(&n, "t").unwrap(), "apns-collapse-id"), Some("thread-1"));
        n.collapse_key = Some("x".repeat(64));
        assert!(prepare(&n, "t").is_ok());
        n.collapse_key = Some("x".repeat(65));
        let e = prepare(&n, "t").unwrap_err();
        assert_eq!(e.status, 400);
        assert!(e.message.contains("65 bytes"), "{e}");
        n.collapse_key = Some("a\nb".into());
        assert_eq!(prepare(&n, "t").unwrap_err().status, 400);
    }

    #[test]
    fn a_bad_topic_is_a_format_error() {
        assert_eq!(prepare(&notification(), "com.x\r\n").unwrap_err().status, 400);
    }

    #[test]
    fn the_4k_limit() {
        let mut n = notification();
        // Find the largest body that fits, then one byte more.
        let base = prepare(&n, "t").unwrap().body().len();
        n.custom_data.insert("pad".into(), json!(""));
        let with_key = prepare(&n, "t").unwrap().body().len();
        let fill = super::super::MAX_PAYLOAD - with_key;
        assert!(fill > 0 && base < with_key);
        n.custom_data.insert("pad".into(), json!("x".repeat(fill)));
        assert_eq!(prepare(&n, "t").unwrap().body().len(), 4096);
        n.custom_data.insert("pad".into(), json!("x".repeat(fill + 1)));
        let e = prepare(&n, "t").unwrap_err();
        assert_eq!(e.status, 413);
        assert_eq!(e.message, "payload of 4097 bytes exceeds APNs' 4096-byte limit");
    }

    #[test]
    fn the_request() {
        let p = prepare(&notification(), "com.herald.demo").unwrap();
        let r = p.request("abcd1234", Some(&Bearer::new("bearer", "h.c.s").unwrap()));
        assert_eq!(r.path, "/3/device/abcd1234");
        assert_eq!(r.body, *p.body());
        let auth = &r.headers[http::header::AUTHORIZATION];
        assert_eq!(auth, "bearer h.c.s");
        assert!(auth.is_sensitive());
        assert_eq!(r.headers.len(), p.headers().len() + 1);
        assert_eq!(r.headers[http::header::CONTENT_LENGTH], p.body().len().to_string().as_str());
        let r = p.request("ab/cd", None);
        assert_eq!(r.path, "/3/device/ab%2Fcd");
        assert!(!r.headers.contains_key(http::header::AUTHORIZATION));
    }

    fn answer(status: u16, retry: Option<&str>, body: &str) -> Outcome {
        let mut h = http::HeaderMap::new();
        if let Some(r) = retry {
            h.insert(http::header::RETRY_AFTER, r.parse().unwrap());
        }
        parse_response(status, &h, body.as_bytes())
    }

    #[test]
    fn answers() {
        let mut h = http::HeaderMap::new();
        h.insert("apns-id", "EC1BF194-B3B2-424A-89A9-5A918A6E6B5D".parse().unwrap());
        assert_eq!(
            parse_response(200, &h, b""),
            Outcome::Sent { id: Some("EC1BF194-B3B2-424A-89A9-5A918A6E6B5D".into()) }
        );
        assert_eq!(parse_response(200, &http::HeaderMap::new(), b""), Outcome::Sent { id: None });
        let dead = |status: u16, reason: &str| Outcome::Dead { status, reason: reason.into() };
        assert_eq!(
            answer(410, None, r#"{"reason":"Unregistered","timestamp":1700000000000}"#),
            dead(410, "Unregistered")
        );
        assert_eq!(answer(410, None, r#"{"reason":"ExpiredToken"}"#), dead(410, "ExpiredToken"));
        assert_eq!(answer(400, None, r#"{"reason":"BadDeviceToken"}"#), dead(400, "BadDeviceToken"));
        for reason in ["ExpiredProviderToken", "InvalidProviderToken"] {
            assert_eq!(
                answer(403, None, &format!(r#"{{"reason":"{reason}"}}"#)),
                Outcome::AuthRefused { status: 403, reason: reason.into() }
            );
        }
        assert_eq!(
            answer(429, Some("3"), r#"{"reason":"TooManyRequests"}"#),
            Outcome::Retry { status: 429, reason: "TooManyRequests".into(), after: Some(Duration::from_secs(3)) }
        );
        assert_eq!(
            answer(429, None, r#"{"reason":"TooManyProviderTokenUpdates"}"#),
            Outcome::Retry { status: 429, reason: "TooManyProviderTokenUpdates".into(), after: None }
        );
        for (status, reason) in [(500, "InternalServerError"), (503, "ServiceUnavailable")] {
            assert_eq!(
                answer(status, Some("1"), &format!(r#"{{"reason":"{reason}"}}"#)),
                Outcome::Retry { status, reason: reason.into(), after: Some(Duration::from_secs(1)) }
            );
        }
        for (status, reason) in [
            (400, "BadCollapseId"),
            (400, "TopicDisallowed"),
            (400, "DeviceTokenNotForTopic"),
            (403, "MissingProviderToken"),
            (403, "BadCertificate"),
            (413, "PayloadTooLarge"),
            (405, "MethodNotAllowed"),
        ] {
            assert_eq!(
                answer(status, None, &format!(r#"{{"reason":"{reason}"}}"#)),
                Outcome::Failed { status, reason: reason.into() }
            );
        }
        assert_eq!(answer(404, None, ""), Outcome::Failed { status: 404, reason: "Not Found".into() });
        assert_eq!(
            answer(400, None, "<html>bad</html>"),
            Outcome::Failed { status: 400, reason: "<html>bad</html>".into() }
        );
    }

    // A P-256 key generated by ring, as PKCS#8 DER and PEM.
    fn test_key() -> (Vec<u8>, String) {
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .unwrap()
            .as_ref()
            .to_vec();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&der);
        let lines: Vec<&str> = b64.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", lines.join("\n"));
        (der, pem)
    }

    fn decode(token: &str) -> (Value, Value, Vec<u8>) {
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let h = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        let c = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        (h, c, URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
    }

    #[test]
    fn the_jwt_is_a_valid_es256_token() {
        let (der, pem) = test_key();
        let jwt = ApnsJwt::new(pem.as_bytes(), "ABCDE12345", "TEAM123456").unwrap();
        let token = jwt.current().token().to_owned();
        let (h, c, sig) = decode(&token);
        assert_eq!(h, json!({"alg": "ES256", "kid": "ABCDE12345"}));
        assert_eq!(c["iss"], "TEAM123456");
        assert!(c["iat"].as_u64().unwrap().abs_diff(unix_now()) <= 2);
        assert_eq!(c.as_object().unwrap().len(), 2);
        // Verify with the public key.
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new()).unwrap();
        use ring::signature::KeyPair;
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            pair.public_key().as_ref().to_vec(),
        );
        let signed = &token[..token.rfind('.').unwrap()];
        public.verify(signed.as_bytes(), &sig).unwrap();
        // DER works too.
        assert!(ApnsJwt::new(&der, "K", "T").is_ok());
    }

    #[test]
    fn bad_keys_are_refused() {
        assert!(ApnsJwt::new(b"nonsense", "K", "T").is_err());
        assert!(ApnsJwt::new(b"-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----\n", "K", "T").is_err());
        let (_, pem) = test_key();
        assert!(ApnsJwt::new(pem.as_bytes(), "", "T").is_err());
    }

    #[test]
    fn the_jwt_is_reused_for_40_minutes_and_kept_on_early_refusals() {
        let (_, pem) = test_key();
        let now = Arc::new(AtomicU64::new(1_700_000_000));
        let clock = now.clone();
        let jwt =
            ApnsJwt::with_clock(pem.as_bytes(), "K", "T", Arc::new(move || clock.load(Ordering::SeqCst))).unwrap();
        let current = || jwt.current().token().to_owned();
        let first = current();
        let iat = |t: &str| decode(t).1["iat"].as_u64().unwrap();
        assert_eq!(iat(&first), 1_700_000_000);
        assert_eq!(jwt.current().header(), &format!("bearer {first}"), "the header carries the token");

        now.fetch_add(39 * 60 + 59, Ordering::SeqCst);
        assert_eq!(current(), first, "reused under 40 minutes");

        // Refused at 10 minutes old: kept.
        now.store(1_700_000_000 + 10 * 60, Ordering::SeqCst);
        jwt.refused();
        assert_eq!(current(), first, "kept when refused under 20 minutes");

        // Refused at 25 minutes old: replaced.
        now.store(1_700_000_000 + 25 * 60, Ordering::SeqCst);
        jwt.refused();
        let second = current();
        assert_ne!(second, first);
        assert_eq!(iat(&second), 1_700_000_000 + 25 * 60);

        // 40 minutes after the second one: a third.
        now.fetch_add(40 * 60, Ordering::SeqCst);
        let third = current();
        assert_ne!(third, second);
        assert_eq!(iat(&third), 1_700_000_000 + 65 * 60);
        assert_eq!(current(), third);

        // A saved token is taken up while young enough, else refused.
        let (token, iat) = jwt.signed();
        assert_eq!((token.token(), iat), (third.as_str(), 1_700_000_000 + 65 * 60));
        assert!(jwt.adopt("saved", iat - 10 * 60));
        assert_eq!(current(), "saved");
        assert!(!jwt.adopt("old", iat - 40 * 60));
        assert!(!jwt.adopt("future", iat + 60));
        assert!(!jwt.adopt("not\na header", iat - 10 * 60), "a token a header cannot carry is not adopted");
        assert_eq!(current(), "saved");
    }
}
