//! The HTTP client of webhook deliveries, with the private-address guard.
//!
//! The guard is applied to the addresses a name resolves to (inside the
//! connector's resolver, so the checked address is the one connected to: a DNS
//! name cannot be re-pointed at an internal host between check and connect),
//! and to IP literals in the URL, which the connector does not resolve.

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll};
use std::time::Duration;

/// Loopback, private, link-local, unique-local, unspecified, broadcast and
/// documentation addresses: never a webhook receiver unless allowed.
pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.octets()[0] == 0
                || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_forbidden_ip(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            v6.is_loopback() || v6.is_unspecified() || (seg[0] & 0xfe00) == 0xfc00 || (seg[0] & 0xffc0) == 0xfe80
        }
    }
}

/// Resolves names and refuses forbidden addresses.
#[derive(Clone)]
pub struct GuardedResolver {
    allow_private: bool,
}

impl tower_service::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let allow = self.allow_private;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            if !allow && addrs.iter().any(|a| is_forbidden_ip(a.ip())) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!("{name} resolves to a private or loopback address"),
                ));
            }
            Ok(addrs.into_iter())
        })
    }
}

/// The answer to one delivery.
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<Duration>,
    /// The first 2 KiB of the body.
    pub body: String,
}

#[derive(Clone)]
pub struct WebhookClient {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector<GuardedResolver>>, Full<Bytes>>,
    allow_private: bool,
    timeout: Duration,
}

impl WebhookClient {
    pub fn new(allow_private: bool, timeout: Duration) -> WebhookClient {
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
        WebhookClient { client, allow_private, timeout }
    }

    /// POSTs `body` to `url` with `headers`; an error is a refusal, a connection
    /// failure or a timeout, described for the attempt log.
    pub async fn post(&self, url: &str, headers: Vec<(&'static str, String)>, body: Bytes) -> Result<Answer, String> {
        let uri: http::Uri = url.parse().map_err(|_| format!("invalid callback URL {url}"))?;
        if let Some(host) = uri.host() {
            if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
                if !self.allow_private && is_forbidden_ip(ip) {
                    return Err(format!("refused: {ip} is a private or loopback address"));
                }
            }
        }
        let mut req = http::Request::builder()
            .method(http::Method::POST)
            .uri(uri)
            .header(http::header::CONTENT_TYPE, "application/json");
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
            let retry_after = resp
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let mut body = resp.into_body();
            let mut excerpt = Vec::new();
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.map_err(|e| e.to_string())?.into_data() {
                    excerpt.extend_from_slice(&data[..data.len().min(2048 - excerpt.len().min(2048))]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_ranges_are_forbidden() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "100.64.0.1",
        ] {
            assert!(is_forbidden_ip(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111"] {
            assert!(!is_forbidden_ip(ip.parse().unwrap()), "{ip}");
        }
    }
}
