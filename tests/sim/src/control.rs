//! The control API: plain HTTP/1.1 without TLS, for tests, scripts and the load benchmark.
//!
//! | route | what |
//! |---|---|
//! | `GET /stats` | [`crate::Stats`] |
//! | `GET /faults` | the faults in force |
//! | `POST /faults` | replace the faults ([`crate::Faults`]); `{}` clears them |
//! | `DELETE /faults` | clear the faults |
//! | `POST /reset` | zero counters, clear recorded requests, faults and the APNs token history |
//! | `GET /requests?provider=apns&limit=N` | the last N requests in full (default 100, at most 1000) |
//! | `GET /accepted?provider=apns` | `{"tokens": {"<token>": count}, "total": n, "distinct": n}` |
//! | `GET /ca.pem` | the CA certificate to trust |
//! | `GET /health` | `ok` |

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::faults::Faults;
use crate::record::RECORDED_REQUESTS;
use crate::state::SimState;
use crate::util::{json_response, text_response, Body};
use crate::Provider;

/// Spawns the control API's accept loop.
pub(crate) fn spawn(
    listener: TcpListener,
    state: Arc<SimState>,
    mut shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut conns = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((tcp, _)) => {
                        let state = state.clone();
                        let mut shutdown = shutdown.clone();
                        conns.spawn(async move {
                            let service = service_fn(move |req| {
                                let state = state.clone();
                                async move { Ok::<_, Infallible>(route(&state, req).await) }
                            });
                            let conn = hyper::server::conn::http1::Builder::new()
                                .timer(TokioTimer::new())
                                .serve_connection(TokioIo::new(tcp), service);
                            tokio::pin!(conn);
                            tokio::select! {
                                _ = conn.as_mut() => {}
                                _ = shutdown.changed() => {
                                    conn.as_mut().graceful_shutdown();
                                    let _ = conn.await;
                                }
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!("control API: accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                _ = shutdown.changed() => break,
            }
        }
        drop(listener);
        crate::server::drain(conns).await;
    })
}

/// The query parameter `name` of a request.
fn query_param(req: &Request<Incoming>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn provider_param(req: &Request<Incoming>) -> Result<Option<Provider>, String> {
    query_param(req, "provider").map(|p| p.parse()).transpose()
}

fn to_json<T: serde::Serialize>(value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(e) => text_response(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn route(state: &SimState, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().trim_end_matches('/').to_owned();
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/stats") => to_json(&state.stats()),
        (Method::GET, "/faults") => to_json(&state.faults.get()),
        (Method::POST | Method::PUT, "/faults") => {
            let body = match Limited::new(req.into_body(), 1024 * 1024).collect().await {
                Ok(c) => c.to_bytes(),
                Err(e) => return text_response(StatusCode::BAD_REQUEST, e.to_string()),
            };
            let faults: Faults = if body.iter().all(u8::is_ascii_whitespace) {
                Faults::default()
            } else {
                match serde_json::from_slice(&body) {
                    Ok(f) => f,
                    Err(e) => return text_response(StatusCode::BAD_REQUEST, format!("invalid faults: {e}")),
                }
            };
            state.faults.set(faults);
            to_json(&state.faults.get())
        }
        (Method::DELETE, "/faults") => {
            state.faults.set(Faults::default());
            to_json(&state.faults.get())
        }
        (Method::POST, "/reset") => {
            state.reset();
            json_response(StatusCode::OK, Bytes::from_static(b"{\"reset\":true}"))
        }
        (Method::GET, "/requests") => {
            let providers = match provider_param(&req) {
                Ok(Some(p)) => vec![p],
                Ok(None) => Provider::ALL.to_vec(),
                Err(e) => return text_response(StatusCode::BAD_REQUEST, e),
            };
            let limit =
                query_param(&req, "limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(100).min(RECORDED_REQUESTS);
            let mut requests: Vec<_> = providers.into_iter().flat_map(|p| state.log(p).last(p, limit)).collect();
            requests.sort_by_key(|r| r.received_ms);
            let skip = requests.len().saturating_sub(limit);
            let requests: Vec<_> = requests.into_iter().skip(skip).collect();
            to_json(&json!({ "requests": requests }))
        }
        (Method::GET, "/accepted") => {
            let provider = match provider_param(&req) {
                Ok(Some(p)) => p,
                Ok(None) => return text_response(StatusCode::BAD_REQUEST, "provider=apns|fcm|hms|webpush is required"),
                Err(e) => return text_response(StatusCode::BAD_REQUEST, e),
            };
            let tokens = state.counters(provider).accepted_tokens();
            let total: u64 = tokens.values().sum();
            to_json(&json!({ "tokens": tokens, "total": total, "distinct": tokens.len() }))
        }
        (Method::GET, "/ca.pem") => {
            let mut resp = text_response(StatusCode::OK, state.ca_pem.clone());
            resp.headers_mut()
                .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/x-pem-file"));
            resp
        }
        (Method::GET, "/health" | "") => text_response(StatusCode::OK, "ok"),
        _ => text_response(StatusCode::NOT_FOUND, "not found"),
    }
}
