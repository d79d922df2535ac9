//! The listeners: the public port (HTTP/1.1 and HTTP/2, h2c or TLS with ALPN)
//! and the optional operations port (probes and metrics only, so a flood on
//! the public port never starves them), each with graceful shutdown that lets
//! in-flight requests finish.
//!
//! Layout: `mod.rs` binds and accepts; `watch.rs` closes connections that
//! idle or say nothing and caps connections per client address.

mod watch;

use crate::config::{AbuseLimits, Config};
use crate::engine::Engine;
use crate::router::{dispatch_from, dispatch_ops};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use watch::{Activity, PerIp};

/// How long in-flight requests get to finish after a shutdown signal.
const DRAIN: Duration = Duration::from_secs(30);

/// Connections the operations port serves at once (probes and scrapers).
const OPS_CONNECTIONS: usize = 64;

/// A server running in this process (tests, embedding).
pub struct Running {
    /// The API listener's bound address (the real port when `listen` asked for port 0).
    pub addr: SocketAddr,
    /// The operations listener's address, when one was configured.
    pub ops_addr: Option<SocketAddr>,
    /// The engine it serves, for calling the library API beside HTTP.
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

/// The bound sockets: the public port and, when configured, the operations port.
pub struct Listeners {
    /// The API port (`listen`).
    pub public: TcpListener,
    /// The operations port (`ops_listen`); `None` when not configured.
    pub ops: Option<TcpListener>,
}

/// Binds the configured addresses, opens the engine and serves in a background task.
pub async fn spawn(config: Config) -> Result<Running, String> {
    let (listeners, config) = bind(config).await?;
    let addr = listeners.public.local_addr().map_err(|e| e.to_string())?;
    let ops_addr = listeners.ops.as_ref().and_then(|l| l.local_addr().ok());
    let engine = Engine::open(config).await?;
    let tls = tls_acceptor(&engine)?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(engine.clone(), listeners, tls, async {
        let _ = stopped.await;
    }));
    Ok(Running { addr, ops_addr, engine, stop, task })
}

/// Binds the listen addresses; when the public URL was derived from a port-0
/// address, it is derived again from the port actually bound.
pub async fn bind(mut config: Config) -> Result<(Listeners, Config), String> {
    let public = TcpListener::bind(config.listen).await.map_err(|e| format!("binding {}: {e}", config.listen))?;
    let addr = public.local_addr().map_err(|e| e.to_string())?;
    let derived = |a: SocketAddr| [format!("http://{a}"), format!("https://{a}")];
    if derived(config.listen).contains(&config.public_url) {
        let scheme = if config.tls.is_some() { "https" } else { "http" };
        config.public_url = format!("{scheme}://{addr}");
    }
    config.listen = addr;
    let ops = match config.ops_listen {
        Some(at) => {
            let l = TcpListener::bind(at).await.map_err(|e| format!("binding the operations port {at}: {e}"))?;
            config.ops_listen = Some(l.local_addr().map_err(|e| e.to_string())?);
            Some(l)
        }
        None => None,
    };
    Ok((Listeners { public, ops }, config))
}

/// The soft limit of open file descriptors of this process.
pub fn fd_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// Raises the soft file-descriptor limit to the hard one, where allowed, so
/// the default connection limit can be generous; returns the limit in force.
pub fn raise_fd_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            tracing::warn!(error = %e, "could not raise the file-descriptor limit");
        }
    }
    fd_limit()
}

/// Which routes a port serves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Port {
    Public,
    /// `/healthz`, `/readyz` and `/metrics` only.
    Ops,
}

/// Accepts connections on every listener until `shutdown` completes, then drains.
pub async fn serve(
    engine: Arc<Engine>,
    listeners: Listeners,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let stop = CancellationToken::new();
    let public = accept_loop(engine.clone(), listeners.public, tls, Port::Public, stop.clone());
    let ops = async {
        if let Some(l) = listeners.ops {
            accept_loop(engine.clone(), l, None, Port::Ops, stop.clone()).await;
        }
    };
    let signal = async {
        shutdown.await;
        stop.cancel();
    };
    tokio::join!(public, ops, signal);
}

fn builder(limits: &AbuseLimits) -> auto::Builder<TokioExecutor> {
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
    builder
}

/// Why the server closed a connection, as the metrics label it.
fn count_closed(reason: &'static str) {
    metrics::counter!("herald_connections_closed_total", "reason" => reason).increment(1);
}

async fn accept_loop(
    engine: Arc<Engine>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    port: Port,
    stop: CancellationToken,
) {
    let limits = engine.config.limits.clone();
    let builder = builder(&limits);
    // Connections beyond the limit wait in the listen backlog until one closes.
    let slots = Arc::new(Semaphore::new(match port {
        Port::Public => limits.connections(),
        Port::Ops => OPS_CONNECTIONS,
    }));
    let per_ip = PerIp::default();
    let graceful = GracefulShutdown::new();
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(s) => s,
                Err(_) => break,
            },
            _ = stop.cancelled() => break,
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
            _ = stop.cancelled() => break,
        };
        let Some(ip_slot) = per_ip.acquire(peer.ip(), limits.max_connections_per_ip) else {
            count_closed("per_ip");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let watcher = graceful.watcher();
        let conn = Connection { engine: engine.clone(), builder: builder.clone(), peer, port };
        let tls = tls.clone();
        tokio::spawn(async move {
            let _held = (slot, ip_slot);
            conn.serve(stream, tls, watcher).await;
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("in-flight requests did not finish within {DRAIN:?}");
    }
}

/// One accepted connection.
struct Connection {
    engine: Arc<Engine>,
    builder: auto::Builder<TokioExecutor>,
    peer: SocketAddr,
    port: Port,
}

impl Connection {
    /// Serves the connection until the client closes it, it fails, or its
    /// watchdog expires (no request head in time, or idle too long).
    async fn serve(self, stream: TcpStream, tls: Option<TlsAcceptor>, watcher: hyper_util::server::graceful::Watcher) {
        let limits = &self.engine.config.limits;
        let (first, idle) = (limits.header_read_timeout, limits.idle_timeout);
        let activity = Activity::new();
        let (engine, peer, port) = (self.engine.clone(), self.peer, self.port);
        let requests = activity.clone();
        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let engine = engine.clone();
            let open = requests.begin();
            async move {
                let answer = match port {
                    Port::Public => dispatch_from(engine, req, Some(peer.ip())).await,
                    // Boxed: this future is in every request's task, the
                    // public port's too, and the ops port's is the larger.
                    Port::Ops => Box::pin(dispatch_ops(engine, req)).await,
                };
                drop(open);
                Ok::<_, Infallible>(answer)
            }
        });
        let served = async {
            let result = match tls {
                None => watcher.watch(self.builder.serve_connection(TokioIo::new(stream), service).into_owned()).await,
                Some(acceptor) => {
                    let Ok(Ok(stream)) = tokio::time::timeout(first, acceptor.accept(stream)).await else {
                        count_closed("no_request");
                        return;
                    };
                    watcher.watch(self.builder.serve_connection(TokioIo::new(stream), service).into_owned()).await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        };
        tokio::select! {
            _ = served => {}
            _ = activity.expired(first, idle) => {
                count_closed(if activity.has_served() { "idle" } else { "no_request" });
            }
        }
    }
}

/// The TLS acceptor of the configured certificate and key (ALPN h2 and http/1.1);
/// `None` without TLS; an error names the file that cannot be read or used.
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
