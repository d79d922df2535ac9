//! A small HTTPS client for the OAuth token endpoints of FCM (Google) and HMS
//! (Huawei), and the access-token cache both use.
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

/// How long one token request may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The largest token-endpoint answer read: a token answer is a few hundred
/// bytes, and a misbehaving endpoint must not make us buffer without bound.
const MAX_ANSWER: usize = 64 * 1024;

/// An HTTPS client for OAuth token endpoints, trusting the roots of the TLS
/// configuration it was built from. Cheap to clone (connections are shared).
#[derive(Clone)]
pub struct AuthHttp {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
}

impl std::fmt::Debug for AuthHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthHttp").field("timeout", &self.timeout).finish()
    }
}

impl AuthHttp {
    /// Uses `tls` for its roots and client settings; its ALPN list is replaced by
    /// `h2, http/1.1` (the provider pools' configuration offers only `h2`, and
    /// some token endpoints or proxies speak only HTTP/1.1). Plain `http://` URLs
    /// are allowed too, for local test endpoints.
    pub fn new(tls: Arc<rustls::ClientConfig>) -> AuthHttp {
        let mut config = (*tls).clone();
        // hyper-rustls insists on an empty list and fills it from the enabled versions.
        config.alpn_protocols.clear();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let client = Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(90)).build(https);
        AuthHttp { client, timeout: TIMEOUT }
    }

    /// POSTs `form` (`application/x-www-form-urlencoded`) to `url` and returns the
    /// status and body, whatever the status; an error only when no answer came
    /// (bad URL, connection or TLS failure, timeout after 10 s).
    pub async fn post_form(&self, url: &str, form: &[(&str, &str)]) -> Result<(u16, Bytes), String> {
        let uri: http::Uri = url.parse().map_err(|e| format!("bad token URL {url:?}: {e}"))?;
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter()).finish();
        let request = http::Request::post(uri)
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| format!("token request to {url}: {e}"))?;
        let exchange = async {
            let response =
                self.client.request(request).await.map_err(|e| format!("POST {url}: {}", error_chain(&e)))?;
            let status = response.status().as_u16();
            let body = Limited::new(response.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| format!("reading the answer of {url}: {e}"))?
                .to_bytes();
            Ok((status, body))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(format!("POST {url}: no answer within {} s", self.timeout.as_secs())),
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

/// Refresh this long before the provider says a token expires, so a token is
/// never used in its last minutes (clock skew, requests in flight, retries).
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// When an access token valid for `expires_in` seconds is refreshed: 5 minutes
/// before it expires, but never sooner than half its life, so an endpoint
/// granting short-lived tokens is not asked again on every send.
pub fn usable_for(expires_in: u64) -> Duration {
    let life = Duration::from_secs(expires_in);
    life.saturating_sub(REFRESH_MARGIN).max(life / 2)
}

struct Cached {
    token: Arc<str>,
    refresh_at: Instant,
}

struct Failure {
    at: Instant,
    error: String,
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

    fn fresh(&self) -> Option<Arc<str>> {
        let guard = self.current.read().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().filter(|c| Instant::now() < c.refresh_at).map(|c| c.token.clone())
    }

    /// The cached token, or a new one from `fetch` (which returns the token and
    /// its `expires_in` seconds).
    pub(crate) async fn get<F, Fut>(&self, fetch: F) -> Result<Arc<str>, String>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(String, u64), String>>,
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
        match fetch().await {
            Ok((token, expires_in)) => {
                let token: Arc<str> = token.into();
                let cached = Cached { token: token.clone(), refresh_at: Instant::now() + usable_for(expires_in) };
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(cached);
                metrics::counter!("herald_provider_auth_refreshes_total", "provider" => self.provider, "outcome" => "ok")
                    .increment(1);
                tracing::debug!(provider = self.provider, expires_in, "provider access token refreshed");
                Ok(token)
            }
            Err(error) => {
                tracing::warn!(provider = self.provider, %error, "provider access token refresh failed");
                metrics::counter!("herald_provider_auth_refreshes_total", "provider" => self.provider, "outcome" => "error")
                    .increment(1);
                *self.last_failure.write().unwrap_or_else(|e| e.into_inner()) =
                    Some(Failure { at: Instant::now(), error: error.clone() });
                Err(error)
            }
        }
    }

    /// Forgets the token, so the next caller fetches a new one.
    pub(crate) fn invalidate(&self) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Forgets the token only if it is still `refused`: when many sends with the
    /// same token are refused at once, the first invalidation and refresh must
    /// not be undone by the stragglers reporting the old token.
    pub(crate) fn invalidate_token(&self, refused: &str) {
        let mut guard = self.current.write().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_some_and(|c| &*c.token == refused) {
            *guard = None;
        }
    }
}

/// The fields of an OAuth token answer (RFC 6749 §5.1) both providers use.
#[derive(serde::Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// Reads a token endpoint's answer into (access token, expires_in seconds);
/// without `expires_in`, an hour (what Google and Huawei grant).
pub(crate) fn read_token_answer(provider: &str, status: u16, body: &[u8]) -> Result<(String, u64), String> {
    if status != 200 {
        return Err(format!("{provider} token endpoint answered {status}: {}", super::excerpt(body)));
    }
    let answer: TokenAnswer = serde_json::from_slice(body)
        .map_err(|e| format!("{provider} token endpoint answered 200 without a usable token ({e})"))?;
    if answer.access_token.is_empty() {
        return Err(format!("{provider} token endpoint answered an empty access token"));
    }
    Ok((answer.access_token, answer.expires_in.unwrap_or(3600)))
}

#[cfg(test)]
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
        super::AuthHttp::new(Arc::new(config))
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
    fn token_answers_are_read() {
        assert_eq!(
            read_token_answer("fcm", 200, br#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#),
            Ok(("ya29.x".to_owned(), 3599))
        );
        assert_eq!(read_token_answer("hms", 200, br#"{"access_token":"abc"}"#), Ok(("abc".to_owned(), 3600)));
        let e = read_token_answer("hms", 401, br#"{"error":1102,"sub_error":20152}"#).unwrap_err();
        assert!(e.contains("401") && e.contains("20152"), "{e}");
        assert!(read_token_answer("fcm", 200, b"not json").is_err());
        assert!(read_token_answer("fcm", 200, br#"{"access_token":""}"#).is_err());
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
        assert!(e.contains("POST http://127.0.0.1"), "{e}");
        let e = test_server::client().post_form("not a url", &[]).await.unwrap_err();
        assert!(e.contains("bad token URL"), "{e}");
    }

    #[tokio::test]
    async fn the_cache_is_single_flight() {
        let cache = Arc::new(TokenCache::new("test"));
        let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let cache = cache.clone();
            let fetches = fetches.clone();
            tasks.push(tokio::spawn(async move {
                cache
                    .get(|| async {
                        fetches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok(("t1".to_owned(), 3600))
                    })
                    .await
            }));
        }
        for t in tasks {
            assert_eq!(&*t.await.unwrap().unwrap(), "t1");
        }
        assert_eq!(fetches.load(std::sync::atomic::Ordering::SeqCst), 1);

        // A straggler's invalidation of an older token keeps the new one.
        cache.invalidate_token("t0");
        assert_eq!(cache.fresh().as_deref(), Some("t1"));
        cache.invalidate_token("t1");
        assert_eq!(cache.fresh(), None);
        let t = cache.get(|| async { Ok(("t2".to_owned(), 3600)) }).await.unwrap();
        assert_eq!(&*t, "t2");
        cache.invalidate();
        assert_eq!(cache.fresh(), None);
    }

    #[tokio::test]
    async fn a_failed_fetch_is_shared_with_waiting_callers_only() {
        let cache = Arc::new(TokenCache::new("test"));
        let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..5 {
            let cache = cache.clone();
            let fetches = fetches.clone();
            tasks.push(tokio::spawn(async move {
                cache
                    .get(|| async {
                        fetches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Err::<(String, u64), _>("down".to_owned())
                    })
                    .await
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap_err(), "down");
        }
        assert_eq!(fetches.load(std::sync::atomic::Ordering::SeqCst), 1);
        // A later caller tries again.
        let t = cache.get(|| async { Ok(("up".to_owned(), 3600)) }).await.unwrap();
        assert_eq!(&*t, "up");
    }
}
