//! The listeners: TLS accept loop, one hyper connection per client (HTTP/2 or HTTP/1.1 by
//! ALPN / preface), and the per-request steps every simulator shares: counting, the
//! connection-level faults (latency, GOAWAY after N streams, connection reset), reading the
//! body, dispatching to the provider, recording the request.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::body::AnswerBody;
use crate::faults::ActiveFaults;
use crate::record::RawRequest;
use crate::state::SimState;
use crate::util::{now_ms, Body};
use crate::{apns, fcm, hms, webpush, Provider};

/// Bodies larger than this are not read: every provider's limit is far below.
const MAX_BODY: usize = 256 * 1024;

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long shutdown waits for connections to finish before dropping them.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// What a provider handler answers, with the reason recorded for `/requests`.
pub(crate) struct Reply {
    pub(crate) response: Response<Body>,
    pub(crate) reason: Option<Cow<'static, str>>,
}

impl Reply {
    pub(crate) fn ok(response: Response<Body>) -> Reply {
        Reply { response, reason: None }
    }
}

/// Per-connection state.
pub(crate) struct ConnCtx {
    pub(crate) provider: Provider,
    /// APNs: the bundle id of the client certificate, if the client presented one.
    pub(crate) client_bundle: Option<Arc<str>>,
    /// APNs: provider tokens already verified on this connection.
    pub(crate) auth_cache: apns::AuthCache,
    streams: AtomicU64,
    goaway: Notify,
    reset: Notify,
    closed: Notify,
}

/// Spawns the accept loop of a simulator listener.
pub(crate) fn spawn_listener(
    listener: TcpListener,
    provider: Provider,
    acceptor: TlsAcceptor,
    state: Arc<SimState>,
    shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(accept_loop(listener, provider, acceptor, state, shutdown))
}

async fn accept_loop(
    listener: TcpListener,
    provider: Provider,
    acceptor: TlsAcceptor,
    state: Arc<SimState>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    conns.spawn(serve_connection(
                        tcp,
                        provider,
                        acceptor.clone(),
                        state.clone(),
                        shutdown.clone(),
                    ));
                }
                Err(e) => {
                    // Typically EMFILE under load: back off instead of spinning.
                    tracing::warn!("{provider} simulator: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    drain(conns).await;
}

/// Waits a little for connections to close gracefully, then drops the rest.
pub(crate) async fn drain(mut conns: JoinSet<()>) {
    let all = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(DRAIN_TIMEOUT, all).await.is_err() {
        conns.abort_all();
        while conns.join_next().await.is_some() {}
    }
}

/// Decrements the open-connections gauge when the connection task ends, however it ends.
struct OpenGuard<'a>(&'a AtomicU64);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn serve_connection(
    tcp: TcpStream,
    provider: Provider,
    acceptor: TlsAcceptor,
    state: Arc<SimState>,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = tcp.set_nodelay(true);
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::debug!("{provider} simulator: TLS handshake failed: {e}");
            return;
        }
        Err(_) => return,
    };
    let client_bundle = match provider {
        Provider::Apns => tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(crate::tls::apns_cert_bundle_id)
            .map(Arc::from),
        _ => None,
    };
    let counters = state.counters(provider);
    counters.connections.fetch_add(1, Ordering::Relaxed);
    counters.open_connections.fetch_add(1, Ordering::Relaxed);
    let _open = OpenGuard(&counters.open_connections);

    let ctx = Arc::new(ConnCtx {
        provider,
        client_bundle,
        auth_cache: apns::AuthCache::default(),
        streams: AtomicU64::new(0),
        goaway: Notify::new(),
        reset: Notify::new(),
        closed: Notify::new(),
    });
    let max_streams =
        state.faults.of(provider).and_then(|f| f.max_concurrent_streams).unwrap_or(state.max_concurrent_streams);

    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(max_streams)
        // Large windows: the load benchmark keeps many streams in flight per connection.
        .initial_stream_window_size(1024 * 1024)
        .initial_connection_window_size(16 * 1024 * 1024)
        .max_send_buf_size(1024 * 1024);

    let service = {
        let state = state.clone();
        let ctx = ctx.clone();
        service_fn(move |req| {
            let state = state.clone();
            let ctx = ctx.clone();
            async move { Ok::<_, Infallible>(handle_request(&state, &ctx, req).await) }
        })
    };
    // Boxed, so that it can be dropped (closing the socket) before `closed` is signalled.
    let mut conn = Box::pin(builder.serve_connection(TokioIo::new(tls), service));
    let mut closing = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("{provider} simulator: connection error: {e}");
                }
                break;
            }
            _ = ctx.goaway.notified(), if !closing => {
                closing = true;
                counters.goaways.fetch_add(1, Ordering::Relaxed);
                conn.as_mut().graceful_shutdown();
            }
            _ = ctx.reset.notified() => {
                counters.connection_resets.fetch_add(1, Ordering::Relaxed);
                break;
            }
            _ = shutdown.changed(), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
    drop(conn);
    ctx.closed.notify_waiters();
}

/// The steps every request goes through.
async fn handle_request(state: &SimState, ctx: &ConnCtx, req: Request<Incoming>) -> Response<AnswerBody> {
    let provider = ctx.provider;
    let counters = state.counters(provider);
    counters.request();
    let received_ms = now_ms();
    let stream_no = ctx.streams.fetch_add(1, Ordering::Relaxed).saturating_add(1);
    let faults = state.faults.of(provider);

    if let Some(f) = faults.as_deref() {
        if f.goaway_after_streams.is_some_and(|limit| stream_no >= limit) {
            ctx.goaway.notify_one();
        }
        if f.should_reset() {
            return reset_connection(state, ctx, req, received_ms).await.map(AnswerBody::Full);
        }
        if let Some(ms) = f.delay_ms() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    let (parts, body) = req.into_parts();
    let body = Limited::new(body, MAX_BODY).collect().await.map(|c| c.to_bytes()).ok();
    let mut reply = dispatch(state, ctx, &parts, body.as_ref(), faults.as_deref());
    let status = reply.response.status().as_u16();
    let plaintext = reply.response.extensions_mut().remove::<webpush::Plaintext>().map(|p| p.0);
    counters.status(status);
    state.log(provider).push(RawRequest {
        received_ms,
        method: parts.method,
        uri: parts.uri,
        version: parts.version,
        headers: parts.headers,
        body: body.unwrap_or_default(),
        status,
        reason: reply.reason,
        plaintext,
    });
    AnswerBody::answer(reply.response)
}

fn dispatch(
    state: &SimState,
    ctx: &ConnCtx,
    parts: &http::request::Parts,
    body: Option<&Bytes>,
    faults: Option<&ActiveFaults>,
) -> Reply {
    match ctx.provider {
        Provider::Apns => apns::handle(state, ctx, parts, body, faults),
        Provider::Fcm => fcm::handle(state, parts, body, faults),
        Provider::Hms => hms::handle(state, parts, body, faults),
        Provider::Webpush => webpush::handle(state, parts, body, faults),
    }
}

/// The `reset_connection_rate` fault: the connection is dropped instead of answering.
async fn reset_connection(state: &SimState, ctx: &ConnCtx, req: Request<Incoming>, received_ms: u64) -> Response<Body> {
    let (parts, _) = req.into_parts();
    state.log(ctx.provider).push(RawRequest {
        received_ms,
        method: parts.method,
        uri: parts.uri,
        version: parts.version,
        headers: parts.headers,
        body: Bytes::new(),
        status: 0,
        reason: Some(Cow::Borrowed("ConnectionReset")),
        plaintext: None,
    });
    let closed = ctx.closed.notified();
    tokio::pin!(closed);
    closed.as_mut().enable();
    ctx.reset.notify_one();
    // The connection task drops the connection; this answer goes nowhere. The timeout only
    // bounds the (unlikely) case of a connection that does not go away.
    let _ = tokio::time::timeout(Duration::from_secs(5), closed).await;
    crate::util::text_response(http::StatusCode::SERVICE_UNAVAILABLE, "connection reset")
}
