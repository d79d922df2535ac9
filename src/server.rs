//! The listener: HTTP/1.1 and HTTP/2 (h2c, or TLS with ALPN) on one port, with
//! graceful shutdown that lets in-flight requests finish.

use crate::config::Config;
use crate::engine::Engine;
use crate::router::{dispatch, PeerAddr};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

/// How long in-flight requests get to finish after a shutdown signal.
const DRAIN: Duration = Duration::from_secs(30);

/// A server running in this process (tests, embedding).
pub struct Running {
    pub addr: SocketAddr,
    pub engine: Arc<Engine>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops accepting, drains in-flight requests, and waits.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
        self.engine.shutdown().await;
    }
}

/// Binds the configured address, opens the engine and serves in a background task.
pub async fn spawn(config: Config) -> Result<Running, String> {
    let (listener, config) = bind(config).await?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let engine = Engine::open(config).await?;
    let tls = tls_acceptor(&engine)?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(engine.clone(), listener, tls, async {
        let _ = stopped.await;
    }));
    Ok(Running { addr, engine, stop, task })
}

/// Binds the listen address; when the public URL was derived from a port-0
/// address, it is derived again from the port actually bound.
pub async fn bind(mut config: Config) -> Result<(TcpListener, Config), String> {
    let listener = TcpListener::bind(config.listen).await.map_err(|e| format!("binding {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let derived = |a: SocketAddr| [format!("http://{a}"), format!("https://{a}")];
    if derived(config.listen).contains(&config.public_url) {
        let scheme = if config.tls.is_some() { "https" } else { "http" };
        config.public_url = format!("{scheme}://{addr}");
    }
    config.listen = addr;
    Ok((listener, config))
}

/// Accepts connections until `shutdown` completes, then drains.
pub async fn serve(
    engine: Arc<Engine>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let limits = engine.config.limits.clone();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.header_limit)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(1024)
        .max_header_list_size(u32::try_from(limits.header_limit).unwrap_or(u32::MAX));
    // Connections beyond the limit wait in the listen backlog until one closes.
    let slots = Arc::new(Semaphore::new(if limits.max_connections == 0 {
        Semaphore::MAX_PERMITS
    } else {
        limits.max_connections
    }));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(s) => s,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let engine = engine.clone();
        let service = service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            let engine = engine.clone();
            req.extensions_mut().insert(PeerAddr(peer));
            async move { Ok::<_, Infallible>(dispatch(engine, req).await) }
        });
        match &tls {
            None => {
                let conn = builder.serve_connection(TokioIo::new(stream), service).into_owned();
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _slot = slot;
                    if let Err(e) = conn.await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                });
            }
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                let builder = builder.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let _slot = slot;
                    let stream = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await {
                        Ok(Ok(s)) => s,
                        _ => return,
                    };
                    let conn = builder.serve_connection(TokioIo::new(stream), service).into_owned();
                    if let Err(e) = watcher.watch(conn).await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                });
            }
        }
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("in-flight requests did not finish within {DRAIN:?}");
    }
}

pub fn tls_acceptor(engine: &Engine) -> Result<Option<TlsAcceptor>, String> {
    let Some((cert, key)) = &engine.config.tls else {
        return Ok(None);
    };
    let certs = rustls_pemfile::certs(&mut std::io::BufReader::new(
        std::fs::File::open(cert).map_err(|e| format!("{}: {e}", cert.display()))?,
    ))
    .collect::<Result<Vec<_>, _>>()
    .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = rustls_pemfile::private_key(&mut std::io::BufReader::new(
        std::fs::File::open(key).map_err(|e| format!("{}: {e}", key.display()))?,
    ))
    .map_err(|e| format!("{}: {e}", key.display()))?
    .ok_or_else(|| format!("{}: no private key", key.display()))?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS configuration: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}
