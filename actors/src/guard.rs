//! The private-address guard of every outbound URL a tenant chooses: webhook
//! receivers and the OAuth `token_uri` of an FCM service account.
//!
//! The guard is applied to the addresses a name resolves to (inside the
//! connector's resolver, so the checked address is the one connected to: a DNS
//! name cannot be re-pointed at an internal host between check and connect),
//! and to IP literals in the URL, which the connector does not resolve.

use futures::future::BoxFuture;
use hyper_util::client::legacy::connect::dns::Name;
use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll};
use std::time::Duration;

/// How long saving a tenant-named endpoint waits for its host to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);

/// Loopback, private, link-local, unique-local, unspecified, broadcast, shared
/// (CGNAT) and documentation addresses: never reached on a tenant's word
/// unless allowed.
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

/// The IP address a URL's host is written as (`10.0.0.1`, `[::1]`), if it is one.
pub fn literal_ip(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// The first forbidden address among `addrs`: what the guard refuses a name for.
fn first_forbidden(addrs: &[SocketAddr]) -> Option<IpAddr> {
    addrs.iter().map(SocketAddr::ip).find(|ip| is_forbidden_ip(*ip))
}

/// Resolves `host` (within [`RESOLVE_TIMEOUT`]) and refuses it when it does not
/// resolve or any of its addresses is forbidden, as [`GuardedResolver`] does
/// when connecting.
pub async fn refuse_resolved(host: &str, port: u16) -> Result<(), String> {
    let addrs: Vec<SocketAddr> =
        match tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port))).await {
            Err(_) => return Err(format!("{host} did not resolve within {} s", RESOLVE_TIMEOUT.as_secs())),
            Ok(Err(e)) => return Err(format!("{host} does not resolve: {e}")),
            Ok(Ok(addrs)) => addrs.collect(),
        };
    if addrs.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    match first_forbidden(&addrs) {
        Some(ip) => Err(format!("refused: {host} resolves to {ip}, a private or loopback address")),
        None => Ok(()),
    }
}

/// Refuses a URL whose host is a forbidden IP literal (names are checked when
/// resolved, by [`GuardedResolver`]).
pub fn refuse_literal(uri: &http::Uri) -> Result<(), String> {
    match uri.host().and_then(literal_ip) {
        Some(ip) if is_forbidden_ip(ip) => Err(format!("refused: {ip} is a private or loopback address")),
        _ => Ok(()),
    }
}

/// Resolves names and refuses forbidden addresses (unless `allow_private`).
#[derive(Clone)]
pub struct GuardedResolver {
    /// Let names resolve to private and loopback addresses too (tests, the simulators,
    /// the `--allow-private-*` flags).
    pub allow_private: bool,
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
            if !allow && first_forbidden(&addrs).is_some() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!("{name} resolves to a private or loopback address"),
                ));
            }
            Ok(addrs.into_iter())
        })
    }
}

/// How far a provider endpoint named by a tenant (a service account's
/// `token_uri`) may be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The origin of an endpoint the operator configured, or private endpoints
    /// are allowed: used as it is.
    Trusted,
    /// Anything else: https only, and connected to only if its name resolves
    /// to public addresses.
    Public,
}

/// Which provider endpoints a tenant may name: https URLs of public hosts, or
/// the origin (scheme, host, port) of an endpoint the operator configured
/// (`HERALD_FCM_URL` and the like, demo mode's simulators), or anything when
/// `--allow-private-provider-endpoints` is set.
#[derive(Clone, Debug, Default)]
pub struct EndpointPolicy {
    trusted: Vec<(String, String, u16)>,
    allow_private: bool,
}

fn origin(uri: &http::Uri) -> Option<(String, String, u16)> {
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.trim_end_matches('.').to_ascii_lowercase();
    let port = uri.port_u16().or(match scheme.as_str() {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    })?;
    Some((scheme, host, port))
}

impl EndpointPolicy {
    /// Trusts the origins of `configured` (the operator's provider URLs).
    pub fn new<'a>(configured: impl IntoIterator<Item = &'a str>, allow_private: bool) -> EndpointPolicy {
        let trusted = configured.into_iter().filter_map(|u| u.parse::<http::Uri>().ok()).filter_map(|u| origin(&u));
        EndpointPolicy { trusted: trusted.collect(), allow_private }
    }

    /// Whether `url` may be used, and how; the error says why not. A name is
    /// only checked for its form here: its addresses are checked when it is
    /// connected to.
    pub fn check(&self, url: &str) -> Result<Reach, String> {
        let uri: http::Uri = url.parse().map_err(|_| format!("{url:?} is not a URL"))?;
        let Some(o) = origin(&uri) else { return Err(format!("{url:?} is not an absolute http(s) URL")) };
        if self.allow_private || self.trusted.contains(&o) {
            return Ok(Reach::Trusted);
        }
        if o.0 != "https" {
            return Err(format!("{url} must be an https URL"));
        }
        refuse_literal(&uri)?;
        Ok(Reach::Public)
    }

    /// [`EndpointPolicy::check`], and a [`Reach::Public`] name's addresses
    /// now, when a tenant saves it ([`refuse_resolved`]: refused if it does
    /// not resolve in time or any address is private or loopback). What the
    /// policy trusts is not resolved, as it is not checked when connecting
    /// either. A name is still checked whenever it is connected to: it can be
    /// re-pointed after the save.
    pub async fn check_resolved(&self, url: &str) -> Result<Reach, String> {
        let reach = self.check(url)?;
        let uri: http::Uri = url.parse().map_err(|_| format!("{url:?} is not a URL"))?;
        match (reach, origin(&uri)) {
            (Reach::Public, Some((_, host, port))) if literal_ip(&host).is_none() => {
                refuse_resolved(&host, port).await?;
                Ok(reach)
            }
            _ => Ok(reach),
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

    #[test]
    fn the_endpoint_policy() {
        let p = EndpointPolicy::new(["https://127.0.0.1:8443", "https://push.example:443/x"], false);
        assert_eq!(p.check("https://127.0.0.1:8443/token"), Ok(Reach::Trusted));
        assert_eq!(p.check("https://PUSH.example/oauth"), Ok(Reach::Trusted), "same origin, default port");
        assert_eq!(p.check("https://oauth2.googleapis.com/token"), Ok(Reach::Public));
        assert_eq!(p.check("https://localhost:8443/token"), Ok(Reach::Public), "names are checked at connect time");
        for bad in [
            "http://127.0.0.1:9/token",
            "https://10.0.0.1/token",
            "https://127.0.0.1:8444/token",
            "https://[::1]/token",
            "https://[::ffff:10.0.0.1]/token",
            "http://oauth2.googleapis.com/token",
            "ftp://x/token",
            "/token",
            "not a url",
        ] {
            assert!(p.check(bad).is_err(), "{bad}");
        }
        let open = EndpointPolicy::new([], true);
        assert_eq!(open.check("http://127.0.0.1:9/token"), Ok(Reach::Trusted));
        assert_eq!(open.check("https://10.0.0.1/token"), Ok(Reach::Trusted));
    }

    /// A name is resolved when saved (only `localhost` here: tests resolve no
    /// external name), unless the policy trusts its origin.
    #[tokio::test]
    async fn a_saved_name_is_resolved() {
        let p = EndpointPolicy::new(["https://localhost:8443"], false);
        let e = p.check_resolved("https://localhost:9/token").await.unwrap_err();
        assert!(e.contains("localhost resolves to") && e.contains("private or loopback"), "{e}");
        assert!(p.check_resolved("http://localhost:9/token").await.unwrap_err().contains("https"));
        assert_eq!(p.check_resolved("https://localhost:8443/token").await, Ok(Reach::Trusted));
        assert_eq!(EndpointPolicy::new([], true).check_resolved("https://localhost:9/t").await, Ok(Reach::Trusted));
        assert_eq!(
            p.check_resolved("https://93.184.216.34/token").await,
            Ok(Reach::Public),
            "a literal is not resolved"
        );
        assert!(p.check_resolved("https://10.0.0.1/token").await.is_err());
    }
}
