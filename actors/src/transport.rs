//! One HTTP/2 connection over TLS to a provider, multiplexing many streams.
//!
//! Built on h2 directly (not hyper's client) because the pool needs what h2
//! exposes: the peer's SETTINGS_MAX_CONCURRENT_STREAMS and GOAWAY.

use crate::providers::WireRequest;
use bytes::{Bytes, BytesMut};
use http::uri::PathAndQuery;
use http::{HeaderMap, Method, Uri};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Where a pool connects: the authority of a base URL and the TLS to use.
#[derive(Clone)]
pub struct Target {
    /// `host:port`, for the TCP connection and the `:authority` of requests.
    pub authority: http::uri::Authority,
    /// TLS of the connection: web PKI and extra CAs, plus the client identity of APNs
    /// certificate auth.
    pub tls: Arc<rustls::ClientConfig>,
    /// Connect only if the host resolves to public addresses (see
    /// [`crate::guard`]): an origin a tenant's client named (a Web Push
    /// subscription), not one the operator configured.
    pub public_only: bool,
}

/// Where a provider's pools connect.
pub enum Route {
    /// One target: the provider's configured endpoint (APNs, FCM, HMS).
    Fixed(Target),
    /// The origin each request names ([`crate::providers::WireRequest::authority`]),
    /// a pool per origin (Web Push: each subscription names its push service).
    PerOrigin {
        /// TLS of every connection.
        tls: Arc<rustls::ClientConfig>,
        /// See [`Target::public_only`].
        public_only: bool,
    },
}

impl From<Target> for Route {
    fn from(target: Target) -> Route {
        Route::Fixed(target)
    }
}

impl Target {
    /// From an `https://host[:port]` base URL; `tls` must offer ALPN `h2`.
    pub fn from_url(base: &str, tls: Arc<rustls::ClientConfig>) -> Result<Target, TransportError> {
        let uri: Uri = base.parse().map_err(|_| TransportError::Config(format!("bad provider URL {base}")))?;
        if uri.scheme_str() != Some("https") {
            return Err(TransportError::Config(format!("provider URL {base} must be https")));
        }
        let authority = uri.authority().cloned().ok_or_else(|| TransportError::Config(format!("no host in {base}")))?;
        Ok(Target { authority, tls, public_only: false })
    }

    /// The TCP addresses to connect to: the host's addresses, and with
    /// [`Target::public_only`] only if none of its addresses is private or
    /// loopback (checked on what is connected to, so a name cannot be
    /// re-pointed between check and connect).
    async fn resolve(&self) -> Result<Vec<std::net::SocketAddr>, TransportError> {
        let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host(self.addr())
            .await
            .map_err(|e| TransportError::Connect(format!("resolving {}: {e}", self.authority.host())))?
            .collect();
        if self.public_only && addrs.iter().any(|a| crate::guard::is_forbidden_ip(a.ip())) {
            return Err(TransportError::Forbidden(format!(
                "{} resolves to a private or loopback address",
                self.authority.host()
            )));
        }
        Ok(addrs)
    }

    fn addr(&self) -> String {
        format!("{}:{}", self.authority.host(), self.authority.port_u16().unwrap_or(443))
    }
}

/// The most of an answer's body read: providers answer in a few hundred
/// bytes, and one that never stops must not make us buffer without bound.
pub const MAX_ANSWER: usize = 64 * 1024;

/// A provider's answer (its body cut at [`MAX_ANSWER`]).
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status, read with the body by the provider.
    pub status: u16,
    /// The answer's headers (`apns-id`, `retry-after`...).
    pub headers: HeaderMap,
    /// The body, at most [`MAX_ANSWER`] bytes.
    pub body: Bytes,
}

/// Why a request got no answer; the attempt loop retries all but `Config`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TransportError {
    /// The target cannot be reached as configured (URL, host name, TLS trust or client
    /// identity): the send fails with 500.
    #[error("configuration: {0}")]
    Config(String),
    /// TCP, TLS or the HTTP/2 handshake failed: nothing was sent.
    #[error("connecting: {0}")]
    Connect(String),
    /// The peer refused the stream before processing it (GOAWAY, REFUSED_STREAM):
    /// always safe to send again.
    #[error("refused before processing: {0}")]
    Refused(String),
    /// The connection broke while the request was in flight: it may or may not
    /// have been processed.
    #[error("connection lost: {0}")]
    Lost(String),
    /// No connection within 10 s, or no answer within the pool's `request_timeout`.
    #[error("timed out")]
    Timeout,
    /// The endpoint guard refused the target (a private address a tenant named):
    /// never connected to, never retried.
    #[error("refused: {0}")]
    Forbidden(String),
}

/// How often [`Connection::capacity`] reads the peer's stream limit: on each
/// of a connection's first this many calls, then on every this-many-th.
const CAPACITY_FRESH_READS: usize = 64;

/// One live HTTP/2 connection.
pub struct Connection {
    send: h2::client::SendRequest<Bytes>,
    authority: http::uri::Authority,
    /// Streams this process has open on the connection.
    pub(crate) in_flight: AtomicUsize,
    alive: Arc<AtomicBool>,
    /// Streams opened since connect, for logs and GOAWAY-after-N tests.
    pub(crate) opened: AtomicUsize,
    /// The peer's stream limit as last read, and how often it was asked
    /// for (see [`Connection::capacity`]).
    peer_streams: AtomicUsize,
    capacity_reads: AtomicUsize,
}

impl Connection {
    /// Connects (TCP, TLS, HTTP/2 handshake) within 10 s.
    pub(crate) async fn open(target: &Target) -> Result<Arc<Connection>, TransportError> {
        // Boxed: a connection is opened rarely, but the pool's `post` awaits
        // this, so unboxed its ~2.9 KiB of TLS and handshake state would sit
        // in the future of every request, sent or not (a broadcast keeps a
        // thousand in flight, and moves each into its set of sends).
        let connect = Box::pin(async {
            let tcp = TcpStream::connect(&target.resolve().await?[..])
                .await
                .map_err(|e| TransportError::Connect(e.to_string()))?;
            let _ = tcp.set_nodelay(true);
            let name = rustls::pki_types::ServerName::try_from(target.authority.host().to_string())
                .map_err(|e| TransportError::Config(e.to_string()))?;
            let tls = TlsConnector::from(target.tls.clone())
                .connect(name, tcp)
                .await
                .map_err(|e| TransportError::Connect(format!("TLS: {e}")))?;
            h2::client::Builder::new()
                .initial_window_size(1 << 20)
                .initial_connection_window_size(16 << 20)
                .handshake::<_, Bytes>(tls)
                .await
                .map_err(|e| TransportError::Connect(format!("HTTP/2 handshake: {e}")))
        });
        let (send, conn) =
            tokio::time::timeout(Duration::from_secs(10), connect).await.map_err(|_| TransportError::Timeout)??;
        let alive = Arc::new(AtomicBool::new(true));
        let flag = alive.clone();
        let authority = target.authority.clone();
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%authority, error = %e, "provider connection ended");
            }
            flag.store(false, Ordering::Release);
        });
        let send = send.ready().await.map_err(|e| TransportError::Connect(e.to_string()))?;
        Ok(Arc::new(Connection {
            send,
            authority: target.authority.clone(),
            in_flight: AtomicUsize::new(0),
            alive,
            opened: AtomicUsize::new(0),
            peer_streams: AtomicUsize::new(0),
            capacity_reads: AtomicUsize::new(0),
        }))
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Streams the peer allows at once (its SETTINGS), at most `cap`.
    ///
    /// Reading the peer's limit takes the connection's stream lock, which
    /// every request and the connection's task contend for, and a pool asks
    /// before each request: so it is read on each of the first 64 calls
    /// (the peer's first SETTINGS arrive meanwhile) and on every 64th after.
    /// A limit the peer lowers later is seen within 64 requests; a stream
    /// past it meanwhile waits in h2's queue until one ends, it is not refused.
    pub fn capacity(&self, cap: usize) -> usize {
        let n = self.capacity_reads.fetch_add(1, Ordering::Relaxed);
        if n < CAPACITY_FRESH_READS || n.is_multiple_of(CAPACITY_FRESH_READS) {
            self.peer_streams.store(self.send.current_max_send_streams(), Ordering::Relaxed);
        }
        self.peer_streams.load(Ordering::Relaxed).clamp(1, cap)
    }

    /// Sends one POST and reads the whole answer, within `timeout`.
    pub async fn post(&self, req: WireRequest, timeout: Duration) -> Result<Reply, TransportError> {
        match tokio::time::timeout(timeout, self.exchange(req)).await {
            Ok(r) => r,
            Err(_) => Err(TransportError::Timeout),
        }
    }

    /// Takes `req` whole: its path and headers move into the h2 request uncopied.
    async fn exchange(&self, req: WireRequest) -> Result<Reply, TransportError> {
        let mut uri = http::uri::Parts::default();
        uri.scheme = Some(http::uri::Scheme::HTTPS);
        uri.authority = Some(self.authority.clone());
        uri.path_and_query = Some(PathAndQuery::try_from(req.path).map_err(|e| TransportError::Config(e.to_string()))?);
        let mut request = http::Request::new(());
        *request.method_mut() = Method::POST;
        *request.uri_mut() = Uri::from_parts(uri).map_err(|e| TransportError::Config(e.to_string()))?;
        *request.headers_mut() = req.headers;
        let body_len = req.body.len();
        request.headers_mut().entry(http::header::CONTENT_LENGTH).or_insert_with(|| http::HeaderValue::from(body_len));
        let mut send = self.send.clone().ready().await.map_err(|e| self.classify(e))?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        let (response, mut stream) = send.send_request(request, req.body.is_empty()).map_err(|e| self.classify(e))?;
        if !req.body.is_empty() {
            stream.send_data(req.body.clone(), true).map_err(|e| self.classify(e))?;
        }
        let response = response.await.map_err(|e| self.classify(e))?;
        let (parts, mut body) = response.into_parts();
        let mut buf = BytesMut::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| self.classify(e))?;
            let _ = body.flow_control().release_capacity(chunk.len());
            buf.extend_from_slice(&chunk[..chunk.len().min(MAX_ANSWER.saturating_sub(buf.len()))]);
            if buf.len() == MAX_ANSWER {
                // The rest is never read: dropping the stream resets it.
                break;
            }
        }
        Ok(Reply { status: parts.status.as_u16(), headers: parts.headers, body: buf.freeze() })
    }

    /// Refused streams are safe to resend; a GOAWAY also retires the connection.
    fn classify(&self, e: h2::Error) -> TransportError {
        if e.is_go_away() || e.is_io() {
            self.alive.store(false, Ordering::Release);
        }
        let refused = e.reason() == Some(h2::Reason::REFUSED_STREAM) || (e.is_go_away() && e.is_remote());
        if refused {
            TransportError::Refused(e.to_string())
        } else {
            TransportError::Lost(e.to_string())
        }
    }
}

/// TLS for provider connections: the platform's web PKI roots plus extra CA
/// certificates (PEM), ALPN `h2`, and optionally a client certificate (APNs
/// certificate auth).
pub fn tls_config(
    extra_ca_pem: &[u8],
    client_identity: Option<(&[u8], &[u8])>,
) -> Result<Arc<rustls::ClientConfig>, TransportError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in rustls_pemfile::certs(&mut &extra_ca_pem[..]) {
        let cert = cert.map_err(|e| TransportError::Config(format!("extra CA: {e}")))?;
        roots.add(cert).map_err(|e| TransportError::Config(format!("extra CA: {e}")))?;
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let mut config = match client_identity {
        None => builder.with_no_client_auth(),
        Some((cert_pem, key_pem)) => {
            let identity = crate::credentials::client_identity(cert_pem, key_pem)
                .map_err(|e| TransportError::Config(e.to_string()))?;
            builder.with_client_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(identity)))
        }
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}
