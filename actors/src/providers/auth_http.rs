//! The OAuth side of FCM (Google) and HMS (Huawei): a small HTTPS client for
//! their token endpoints, behind the endpoint guard, and the access-token
//! cache both use ([`OAuth`], over each provider's [`Grant`]).
//!
//! Token requests are rare (one an hour per credential set), so this is a plain
//! hyper-util client rather than the pool's multiplexed HTTP/2 transport: it
//! speaks HTTP/1.1 or HTTP/2, whichever the endpoint picks by ALPN.

use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::{AuthError, Backend, Bearer};
use crate::guard::{EndpointPolicy, GuardedResolver, Reach};

/// How long one token request may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The largest token-endpoint answer read: a token answer is a few hundred
/// bytes, and a misbehaving endpoint must not make us buffer without bound.
pub const MAX_ANSWER: usize = 64 * 1024;

/// The shortest and longest life an access token is given, whatever
/// `expires_in` the endpoint answers (0 would mean a token request per send;
/// 2^63 seconds does not fit a clock).
pub const MIN_EXPIRES_IN: u64 = 60;
/// See [`MIN_EXPIRES_IN`]: a token is renewed at least daily.
pub const MAX_EXPIRES_IN: u64 = 24 * 3600;

type Open = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;
type Guarded = Client<HttpsConnector<HttpConnector<GuardedResolver>>, Full<Bytes>>;

/// An HTTPS client for OAuth token endpoints, trusting the roots of the TLS
/// configuration it was built from. A URL the [`EndpointPolicy`] trusts (an
/// endpoint the operator configured) is used as it is; any other is https
/// only and connected to only at public addresses. Cheap to clone.
#[derive(Clone)]
pub struct AuthHttp {
    open: Open,
    guarded: Guarded,
    policy: Arc<EndpointPolicy>,
    timeout: Duration,
}

impl std::fmt::Debug for AuthHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthHttp").field("timeout", &self.timeout).finish()
    }
}

fn transient(reason: String) -> AuthError {
    AuthError { status: 503, reason, transient: true }
}

impl AuthHttp {
    /// Uses `tls` for its roots and client settings; its ALPN list is replaced by
    /// `h2, http/1.1` (the provider pools' configuration offers only `h2`, and
    /// some token endpoints or proxies speak only HTTP/1.1).
    pub fn new(tls: Arc<rustls::ClientConfig>, policy: EndpointPolicy) -> AuthHttp {
        let mut config = (*tls).clone();
        // hyper-rustls insists on an empty list and fills it from the enabled versions.
        config.alpn_protocols.clear();
        let open = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config.clone())
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let mut http = HttpConnector::new_with_resolver(GuardedResolver { allow_private: false });
        http.enforce_http(false);
        let guarded = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = || Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(90)).clone();
        AuthHttp {
            open: client().build(open),
            guarded: client().build(guarded),
            policy: Arc::new(policy),
            timeout: TIMEOUT,
        }
    }

    /// POSTs `form` (`application/x-www-form-urlencoded`) to `url` and returns the
    /// status and (up to 64 KiB of the) body, whatever the status; an error
    /// when no answer came (bad or refused URL, connection or TLS failure,
    /// timeout after 10 s).
    pub async fn post_form(&self, url: &str, form: &[(&str, &str)]) -> Result<(u16, Bytes), AuthError> {
        let refused = |reason: String| AuthError { status: 412, reason, transient: false };
        let reach = self.policy.check(url).map_err(|e| refused(format!("token endpoint refused: {e}")))?;
        let uri: http::Uri = url.parse().map_err(|e| refused(format!("bad token URL {url:?}: {e}")))?;
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter()).finish();
        let request = http::Request::post(uri)
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| refused(format!("token request to {url}: {e}")))?;
        let exchange = async {
            let response = match reach {
                Reach::Trusted => self.open.request(request).await,
                Reach::Public => self.guarded.request(request).await,
            };
            let response = response.map_err(|e| match guard_refusal(&e) {
                Some(why) => refused(format!("token endpoint refused: {why}")),
                None => transient(format!("POST {url}: {}", error_chain(&e))),
            })?;
            let status = response.status().as_u16();
            let body = Limited::new(response.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| transient(format!("reading the answer of {url}: {e}")))?
                .to_bytes();
            Ok((status, body))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(transient(format!("POST {url}: no answer within {} s", self.timeout.as_secs()))),
        }
    }
}

/// hyper-util's errors say only "client error (Connect)"; the cause is below.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The guard's refusal ([`GuardedResolver`]) below a connection error.
fn guard_refusal(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::PermissionDenied {
                return Some(io.to_string());
            }
        }
        source = s.source();
    }
    None
}

/// Refresh this long before the provider says a token expires, so a token is
/// never used in its last minutes (clock skew, requests in flight, retries).
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// When an access token valid for `expires_in` seconds is refreshed: 5 minutes
/// before it expires, but never sooner than half its life, so an endpoint
/// granting short-lived tokens is not asked again on every send.
pub fn usable_for(expires_in: u64) -> Duration {
    let life = Duration::from_secs(expires_in);
    // Halving a duration cannot overflow.
    #[allow(clippy::arithmetic_side_effects)]
    let half = life / 2;
    life.saturating_sub(REFRESH_MARGIN).max(half)
}

struct Cached {
    bearer: Bearer,
    refresh_at: Instant,
}

struct Failure {
    at: Instant,
    error: AuthError,
}

/// An OAuth access token shared by every send of one credential set.
///
/// The hot path is one read lock. A refresh is single flight: the first caller
/// to find the token stale fetches a new one while the others wait on the same
/// async mutex and then take its result, so a burst of sends after expiry makes
/// one token request, not thousands. A failed fetch is likewise shared with the
/// callers that were already waiting for it.
pub(crate) struct TokenCache {
    provider: &'static str,
    current: RwLock<Option<Cached>>,
    last_failure: RwLock<Option<Failure>>,
    refresh: tokio::sync::Mutex<()>,
}

impl TokenCache {
    pub(crate) fn new(provider: &'static str) -> TokenCache {
        TokenCache {
            provider,
            current: RwLock::new(None),
            last_failure: RwLock::new(None),
            refresh: tokio::sync::Mutex::new(()),
        }
    }

    fn fresh(&self) -> Option<Bearer> {
        let guard = self.current.read().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().filter(|c| Instant::now() < c.refresh_at).map(|c| c.bearer.clone())
    }

    /// The cached token, or a new one from `fetch` (which returns the token and
    /// its `expires_in` seconds, at most [`MAX_EXPIRES_IN`]). A token a header
    /// cannot carry is a failed fetch (502).
    pub(crate) async fn get<F, Fut>(&self, fetch: F) -> Result<Bearer, AuthError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(String, u64), AuthError>>,
    {
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        let arrived = Instant::now();
        let _flight = self.refresh.lock().await;
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        {
            let failure = self.last_failure.read().unwrap_or_else(|e| e.into_inner());
            if let Some(f) = failure.as_ref().filter(|f| f.at >= arrived) {
                return Err(f.error.clone());
            }
        }
        let fetched = fetch().await.and_then(|(token, expires_in)| {
            let bearer = Bearer::new("Bearer", &token).map_err(|_| AuthError {
                status: 502,
                reason: "the token endpoint answered an access token a header cannot carry".into(),
                transient: false,
            })?;
            Ok((bearer, expires_in))
        });
        match fetched {
            Ok((bearer, expires_in)) => {
                let now = Instant::now();
                let refresh_at = now.checked_add(usable_for(expires_in)).unwrap_or(now);
                *self.current.write().unwrap_or_else(|e| e.into_inner()) =
                    Some(Cached { bearer: bearer.clone(), refresh_at });
                metrics::counter!("herald_provider_auth_refreshes_total", "provider" => self.provider, "outcome" => "ok")
                    .increment(1);
                tracing::debug!(provider = self.provider, expires_in, "provider access token refreshed");
                Ok(bearer)
            }
            Err(error) => {
                tracing::warn!(provider = self.provider, error = %error.reason, "provider access token refresh failed");
                metrics::counter!("herald_provider_auth_refreshes_total", "provider" => self.provider, "outcome" => "error")
                    .increment(1);
                *self.last_failure.write().unwrap_or_else(|e| e.into_inner()) =
                    Some(Failure { at: Instant::now(), error: error.clone() });
                Err(error)
            }
        }
    }

    /// Forgets the token only if it is still `refused`: when many sends with the
    /// same token are refused at once, the first invalidation and refresh must
    /// not be undone by the stragglers reporting the old token. (There is no
    /// unconditional invalidation: under load it would discard fresh tokens.)
    pub(crate) fn invalidate_token(&self, refused: &str) {
        let mut guard = self.current.write().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_some_and(|c| c.bearer.token() == refused) {
            *guard = None;
        }
    }
}

/// How one provider asks its token endpoint for an access token.
pub trait Grant: Send + Sync + 'static {
    /// The provider the token is for (messages and metrics).
    const PROVIDER: Backend;
    /// The token endpoint.
    fn url(&self) -> &str;
    /// The form of one token request.
    fn form(&self) -> Result<Vec<(&'static str, String)>, String>;
}

/// The OAuth2 access token of one credential set: fetched from the grant's
/// endpoint, cached until 5 minutes before it expires, renewed after a refusal.
pub struct OAuth<G> {
    grant: G,
    http: AuthHttp,
    cache: TokenCache,
}

impl<G: Grant> OAuth<G> {
    /// An access token source for `grant`; the first [`OAuth::token`] fetches.
    pub fn new(grant: G, http: AuthHttp) -> OAuth<G> {
        OAuth { grant, http, cache: TokenCache::new(G::PROVIDER.as_str()) }
    }

    /// The credentials tokens are fetched with (the engine itself never reads them back).
    pub fn grant(&self) -> &G {
        &self.grant
    }

    /// A valid access token: the cached one, or a new one (one fetch shared by
    /// all concurrent callers).
    pub async fn token(&self) -> Result<Bearer, AuthError> {
        self.cache.get(|| self.fetch()).await
    }

    /// The provider refused `token`: the next [`OAuth::token`] fetches a new
    /// one, unless another send did already (the call that is safe under load).
    pub fn refused(&self, token: &str) {
        self.cache.invalidate_token(token);
    }

    async fn fetch(&self) -> Result<(String, u64), AuthError> {
        let form = self.grant.form().map_err(|reason| AuthError { status: 500, reason, transient: false })?;
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = self.http.post_form(self.grant.url(), &form).await?;
        read_token_answer(status, &body)
    }
}

impl<G: Grant> super::Authorizer for OAuth<G> {
    async fn authorize(&self) -> Result<Option<Bearer>, AuthError> {
        self.token().await.map(Some)
    }

    fn refused(&self, bearer: Option<&Bearer>) {
        if let Some(refused) = bearer {
            OAuth::refused(self, refused.token());
        }
    }
}

impl<G: Grant + std::fmt::Debug> std::fmt::Debug for OAuth<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth").field("grant", &self.grant).finish_non_exhaustive()
    }
}

/// Reads a token endpoint's answer (RFC 6749 §5.1) into (access token,
/// expires_in seconds). `expires_in` is clamped to [`MIN_EXPIRES_IN`] ..=
/// [`MAX_EXPIRES_IN`], whatever number (or text) the endpoint wrote; without
/// one, an hour (what Google and Huawei grant).
///
/// The error says the status and the endpoint's error code, never the
/// answer's text: a tenant's `token_uri` must not turn sends into a way to
/// read what another host answers.
pub fn read_token_answer(status: u16, body: &[u8]) -> Result<(String, u64), AuthError> {
    let answer: Option<serde_json::Map<String, serde_json::Value>> = serde_json::from_slice(body).ok();
    let field = |name: &str| answer.as_ref().and_then(|a| a.get(name));
    if status != 200 {
        let codes: Vec<String> = ["error", "sub_error"].iter().filter_map(|k| field(k).and_then(short_code)).collect();
        let codes = if codes.is_empty() { String::new() } else { format!(" ({})", codes.join(", ")) };
        let reason = format!("the token endpoint answered {status}{codes}");
        return Err(match status {
            429 | 500..=599 => transient(reason),
            _ => {
                AuthError { status: if (400..500).contains(&status) { status } else { 502 }, reason, transient: false }
            }
        });
    }
    let token = match field("access_token") {
        Some(serde_json::Value::String(t)) if !t.is_empty() => t.clone(),
        _ => return Err(transient("the token endpoint answered 200 without an access token".into())),
    };
    let expires_in = match field("expires_in") {
        None | Some(serde_json::Value::Null) => 3600,
        Some(v) => clamp_expires_in(v),
    };
    Ok((token, expires_in))
}

/// A number of seconds (or its text), clamped; anything else, the minimum.
fn clamp_expires_in(v: &serde_json::Value) -> u64 {
    let secs = match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match secs {
        // `as` saturates; NaN fails both comparisons and takes the minimum.
        Some(s) if s >= MAX_EXPIRES_IN as f64 => MAX_EXPIRES_IN,
        Some(s) if s >= MIN_EXPIRES_IN as f64 => s as u64,
        _ => MIN_EXPIRES_IN,
    }
}

/// An OAuth error code fit to repeat: a number, or a short word of
/// `[A-Za-z0-9_.-]` (RFC 6749 codes, Huawei's numbers).
fn short_code(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        serde_json::Value::String(s)
            if !s.is_empty()
                && s.len() <= 40
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) =>
        {
            Some(s.clone())
        }
        _ => None,
    }
}

#[cfg(test)]
// Test code is exempt from the workspace lints (clippy.toml exempts its unwraps and panics).
#[allow(clippy::arithmetic_side_effects)]
pub(crate) mod test_server {
    //! A loopback HTTP/1.1 token endpoint for unit tests: answers every request
    //! with the next canned answer (the last one repeats) after an optional delay,
    //! and records the request bodies.

    use std::convert::Infallible;
    use std::net::SocketAddr;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    pub struct TokenServer {
        pub url: String,
        pub bodies: Arc<Mutex<Vec<String>>>,
    }

    impl TokenServer {
        pub fn requests(&self) -> usize {
            self.bodies.lock().unwrap().len()
        }
    }

    pub async fn start(answers: Vec<(u16, String)>, delay: Duration) -> TokenServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(answers);
        let recorded = bodies.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let recorded = recorded.clone();
                let answers = answers.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let recorded = recorded.clone();
                        let answers = answers.clone();
                        async move {
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            let n = {
                                let mut r = recorded.lock().unwrap();
                                r.push(String::from_utf8_lossy(&body).into_owned());
                                r.len()
                            };
                            tokio::time::sleep(delay).await;
                            let (status, text) = answers[(n - 1).min(answers.len() - 1)].clone();
                            Ok::<_, Infallible>(
                                http::Response::builder()
                                    .status(status)
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(text)))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service).await;
                });
            }
        });
        TokenServer { url: format!("http://{addr}/token"), bodies }
    }

    /// A client for the plain-HTTP test endpoint (the TLS roots are never used).
    pub fn client() -> super::AuthHttp {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        super::AuthHttp::new(Arc::new(config), crate::guard::EndpointPolicy::new([], true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_refreshed_five_minutes_early_but_not_before_half_life() {
        assert_eq!(usable_for(3600), Duration::from_secs(3300));
        assert_eq!(usable_for(3599), Duration::from_secs(3299));
        assert_eq!(usable_for(400), Duration::from_secs(200));
        assert_eq!(usable_for(0), Duration::ZERO);
    }

    #[test]
    fn token_answers_are_read_and_bounded() {
        let read = |status, body: &str| read_token_answer(status, body.as_bytes());
        assert_eq!(
            read(200, r#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#),
            Ok(("ya29.x".to_owned(), 3599))
        );
        assert_eq!(read(200, r#"{"access_token":"abc"}"#), Ok(("abc".to_owned(), 3600)));
        for (expires_in, clamped) in [
            ("0", 60),
            ("-5", 60),
            ("9223372036854775808", 86_400),
            ("18446744073709551616", 86_400),
            ("1e300", 86_400),
            ("120.9", 120),
            ("\"7200\"", 7200),
            ("\"soon\"", 60),
            ("[1]", 60),
            ("null", 3600),
        ] {
            let body = format!(r#"{{"access_token":"t","expires_in":{expires_in}}}"#);
            assert_eq!(read(200, &body), Ok(("t".to_owned(), clamped)), "{expires_in}");
        }
        let e =
            read(401, r#"{"error":1102,"sub_error":20152,"error_description":"invalid client_secret"}"#).unwrap_err();
        assert_eq!(
            e,
            AuthError { status: 401, reason: "the token endpoint answered 401 (1102, 20152)".into(), transient: false }
        );
        let e = read(400, r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#).unwrap_err();
        assert_eq!(e.reason, "the token endpoint answered 400 (invalid_grant)");
        // What the endpoint wrote never comes back, beyond a short code.
        let e = read(403, r#"{"error":"<html>secret internal page</html>"}"#).unwrap_err();
        assert_eq!(e.reason, "the token endpoint answered 403");
        let e = read(200, "root:x:0:0:root:/root:/bin/bash").unwrap_err();
        assert!(!e.reason.contains("root"), "{e:?}");
        assert!(read(503, "").unwrap_err().transient);
        assert!(read(429, "").unwrap_err().transient);
        assert_eq!(read(302, "").unwrap_err().status, 502);
        assert!(read(200, r#"{"access_token":""}"#).is_err());
        assert!(read(200, r#"{"access_token":5}"#).is_err());
    }

    #[tokio::test]
    async fn post_form_sends_an_encoded_form() {
        let server = test_server::start(vec![(200, r#"{"ok":true}"#.into())], Duration::ZERO).await;
        let (status, body) = test_server::client()
            .post_form(&server.url, &[("grant_type", "client_credentials"), ("client_secret", "a&b =c")])
            .await
            .unwrap();
        assert_eq!(status, 200);
        assert_eq!(&body[..], br#"{"ok":true}"#);
        assert_eq!(server.bodies.lock().unwrap()[0], "grant_type=client_credentials&client_secret=a%26b+%3Dc");
    }

    #[tokio::test]
    async fn post_form_reports_unreachable_endpoints() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let e = test_server::client().post_form(&format!("http://127.0.0.1:{port}/token"), &[]).await.unwrap_err();
        assert!(e.reason.contains("POST http://127.0.0.1") && e.transient, "{e:?}");
        let e = test_server::client().post_form("not a url", &[]).await.unwrap_err();
        assert!(e.reason.contains("not a URL") && !e.transient, "{e:?}");
    }

    #[tokio::test]
    async fn the_guard_holds_on_literals_and_resolved_names() {
        let server = test_server::start(vec![(200, r#"{"access_token":"t"}"#.into())], Duration::ZERO).await;
        let port = server.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/token").to_owned();
        let _ = rustls::crypto::ring::default_provider().install_default();
        let tls = rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let guarded = AuthHttp::new(Arc::new(tls), EndpointPolicy::new(["https://push.example"], false));
        for url in
            [server.url.clone(), format!("https://127.0.0.1:{port}/token"), format!("https://localhost:{port}/token")]
        {
            let e = guarded.post_form(&url, &[]).await.unwrap_err();
            assert!(!e.transient && e.status == 412, "{url}: {e:?}");
            assert!(e.reason.contains("private or loopback") || e.reason.contains("https"), "{url}: {e:?}");
        }
        assert_eq!(server.requests(), 0, "nothing reached the private endpoint");
    }

    /// `n` concurrent callers of `cache`, each fetching (after 50 ms) `answer`
    /// if it is the one to fetch; their results, and how many fetches ran.
    async fn concurrently(
        cache: &Arc<TokenCache>,
        n: usize,
        answer: Result<(String, u64), AuthError>,
    ) -> (Vec<Result<String, AuthError>>, usize) {
        let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let (cache, fetches, answer) = (cache.clone(), fetches.clone(), answer.clone());
                tokio::spawn(async move {
                    let fetch = || async {
                        fetches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        answer
                    };
                    cache.get(fetch).await.map(|b| b.token().to_owned())
                })
            })
            .collect();
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap());
        }
        (results, fetches.load(std::sync::atomic::Ordering::SeqCst))
    }

    #[tokio::test]
    async fn the_cache_is_single_flight() {
        let cache = Arc::new(TokenCache::new("test"));
        let (results, fetches) = concurrently(&cache, 20, Ok(("t1".to_owned(), 3600))).await;
        assert!(results.iter().all(|r| r.as_deref() == Ok("t1")));
        assert_eq!(fetches, 1);

        // A straggler's invalidation of an older token keeps the new one.
        cache.invalidate_token("t0");
        assert_eq!(cache.fresh().map(|b| b.token().to_owned()).as_deref(), Some("t1"));
        cache.invalidate_token("t1");
        assert!(cache.fresh().is_none());
        let t = cache.get(|| async { Ok(("t2".to_owned(), 3600)) }).await.unwrap();
        assert_eq!((t.token(), t.header().to_str().unwrap()), ("t2", "Bearer t2"));
        assert!(t.header().is_sensitive(), "kept out of logs and HPACK's table");
    }

    #[derive(Debug)]
    struct TestGrant(String);

    impl Grant for TestGrant {
        const PROVIDER: Backend = Backend::Hms;

        fn url(&self) -> &str {
            &self.0
        }

        fn form(&self) -> Result<Vec<(&'static str, String)>, String> {
            Ok(vec![("grant_type", "test".into())])
        }
    }

    #[tokio::test]
    async fn one_token_request_serves_concurrent_callers_and_a_refusal_renews_it() {
        let server = test_server::start(
            vec![
                (200, r#"{"access_token":"one","expires_in":3599,"token_type":"Bearer"}"#.into()),
                (200, r#"{"access_token":"two","expires_in":3599,"token_type":"Bearer"}"#.into()),
            ],
            Duration::from_millis(50),
        )
        .await;
        let auth = Arc::new(OAuth::new(TestGrant(server.url.clone()), test_server::client()));
        let callers: Vec<_> = (0..10)
            .map(|_| {
                let auth = auth.clone();
                tokio::spawn(async move { auth.token().await })
            })
            .collect();
        for c in callers {
            assert_eq!(c.await.unwrap().unwrap().token(), "one");
        }
        assert_eq!(server.requests(), 1, "one fetch for concurrent callers");
        assert_eq!(auth.token().await.unwrap().token(), "one");
        assert_eq!(server.requests(), 1, "cached");
        assert_eq!(server.bodies.lock().unwrap()[0], "grant_type=test");
        auth.refused("zero");
        assert_eq!(auth.token().await.unwrap().token(), "one", "a straggler's refusal of an older token");
        auth.refused("one");
        assert_eq!(auth.token().await.unwrap().token(), "two");
        assert_eq!(server.requests(), 2);
    }

    #[tokio::test]
    async fn a_failed_fetch_is_shared_with_waiting_callers_only() {
        let cache = Arc::new(TokenCache::new("test"));
        let (results, fetches) = concurrently(&cache, 5, Err(transient("down".to_owned()))).await;
        assert!(results.iter().all(|r| r.as_ref().is_err_and(|e| e.reason == "down")));
        assert_eq!(fetches, 1);
        // A later caller tries again.
        let t = cache.get(|| async { Ok(("up".to_owned(), 3600)) }).await.unwrap();
        assert_eq!(t.token(), "up");
    }

    #[tokio::test]
    async fn a_token_a_header_cannot_carry_is_a_failed_fetch() {
        let cache = TokenCache::new("test");
        let e = cache.get(|| async { Ok(("ya29.\r\nx-injected: 1".to_owned(), 3600)) }).await.unwrap_err();
        assert_eq!((e.status, e.transient), (502, false), "{e:?}");
        assert!(e.reason.contains("header"), "{e:?}");
        assert!(!e.reason.contains("ya29"), "the answer's text is not echoed: {e:?}");
        assert!(cache.fresh().is_none(), "nothing cached");
    }
}
