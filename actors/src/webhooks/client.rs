//! The HTTP client of webhook deliveries, behind the private-address guard
//! ([`crate::guard`]).

use crate::guard::{refuse_literal, GuardedResolver};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// What webhook receivers see in `User-Agent` (their logs and firewalls tell Herald's deliveries by it).
pub const USER_AGENT: &str = concat!("Herald-Webhooks/", env!("CARGO_PKG_VERSION"));

/// The answer to one delivery.
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<Duration>,
    /// The first 2 KiB of the body.
    pub body: String,
}

/// The HTTPS client of webhook deliveries, shared by every target: the address guard,
/// the attempt timeout and the `Retry-After` cap.
#[derive(Clone)]
pub struct WebhookClient {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector<GuardedResolver>>, Full<Bytes>>,
    allow_private: bool,
    timeout: Duration,
    max_retry_after: Duration,
}

impl WebhookClient {
    /// A receiver's `Retry-After` is honoured up to `max_retry_after`.
    pub fn new(allow_private: bool, timeout: Duration, max_retry_after: Duration) -> WebhookClient {
        let mut http = HttpConnector::new_with_resolver(GuardedResolver { allow_private });
        http.enforce_http(false);
        http.set_connect_timeout(Some(timeout));
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(30)).build(https);
        WebhookClient { client, allow_private, timeout, max_retry_after }
    }

    /// POSTs `body` to `url` with `headers` (and Herald's `User-Agent`); an error is a refusal, a connection
    /// failure or a timeout, described for the attempt log.
    pub async fn post(&self, url: &str, headers: Vec<(&'static str, String)>, body: Bytes) -> Result<Answer, String> {
        let uri: http::Uri = url.parse().map_err(|_| format!("invalid callback URL {url}"))?;
        if !self.allow_private {
            refuse_literal(&uri)?;
        }
        let mut req = http::Request::builder()
            .method(http::Method::POST)
            .uri(uri)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::USER_AGENT, USER_AGENT);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let req = req.body(Full::new(body)).map_err(|e| e.to_string())?;
        let send = async {
            let resp = self.client.request(req).await.map_err(|e| {
                let mut msg = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    msg = format!("{msg}: {s}");
                    source = s.source();
                }
                msg
            })?;
            let status = resp.status().as_u16();
            // Bounded like a provider's: seconds or a date, never negative, at most `max_retry_after`.
            let retry_after = crate::providers::retry_after(resp.headers()).map(|d| d.min(self.max_retry_after));
            let mut body = resp.into_body();
            let mut excerpt = Vec::new();
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.map_err(|e| e.to_string())?.into_data() {
                    excerpt.extend_from_slice(&data[..data.len().min(2048_usize.saturating_sub(excerpt.len()))]);
                    if excerpt.len() >= 2048 {
                        break;
                    }
                }
            }
            Ok(Answer { status, retry_after, body: String::from_utf8_lossy(&excerpt).into_owned() })
        };
        match tokio::time::timeout(self.timeout, send).await {
            Ok(r) => r,
            Err(_) => Err(format!("timed out after {:?}", self.timeout)),
        }
    }
}
