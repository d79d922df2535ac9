//! Running a send once per idempotency key (see `herald_storage::idempotency`).
//!
//! The first request with a key claims it in the store and runs; its answer
//! (status and body) is stored with the key for [`TTL`], and a retry with
//! the same key and the same request gets that answer and sends nothing. A
//! retry while the first still runs, on this engine or another sharing the
//! database, reads the store until the answer is there, for at most the send
//! deadline (then 409). The same key with another request is a 422.
//!
//! What is stored: a 2xx answer, and a refusal that a retry would meet again
//! (400, 404, 422). A failure that may pass (429, 503, 507) frees the key,
//! so the retry runs. The work runs in a task of its own: a caller that goes
//! away (a client timing out) does not stop it, and its answer is still
//! stored for the retry.

use crate::engine::Engine;
use crate::error::{subsystem, ApiError, ApiResult, ErrorKind, Family};
use crate::models::idempotency::{IdempotencyKey, HEADER};
use herald_storage::idempotency::{Begin, Claim};
use herald_storage::now_ms;
use http::StatusCode;
use serde::Serialize;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an answer is kept with its key.
pub const TTL: Duration = Duration::from_secs(24 * 3600);

/// How often a retry waiting for the first request reads the store.
const POLL: Duration = Duration::from_millis(20);

/// An answer, fresh or replayed, as the HTTP route sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Its HTTP status.
    pub status: StatusCode,
    /// Its JSON body.
    pub body: Vec<u8>,
    /// It is the first request's, replayed.
    pub replayed: bool,
}

/// The fingerprint of a request: SHA-256 of the route's name and the body
/// as JSON (re-encoded, so spacing and key order do not matter).
pub fn fingerprint(route: &str, body: &impl Serialize) -> ApiResult<Vec<u8>> {
    let json = serde_json::to_vec(body).map_err(|e| ApiError::internal(format!("encoding the request: {e}")))?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(route.as_bytes());
    ctx.update(&[0]);
    ctx.update(&json);
    Ok(ctx.finish().as_ref().to_vec())
}

/// Runs `work` once for `key` of `tenant` (see the module documentation),
/// answering `status` and its result as JSON; or replays the first answer.
/// A refusal of the first run comes back as its error; replayed, as an
/// [`Answer`] with the error's status and body.
pub async fn once<T, F, Fut>(
    engine: Arc<Engine>,
    tenant: &str,
    key: &IdempotencyKey,
    fingerprint: Vec<u8>,
    status: StatusCode,
    work: F,
) -> ApiResult<Answer>
where
    T: Serialize + Send + 'static,
    F: FnOnce(Arc<Engine>) -> Fut + Send + 'static,
    Fut: Future<Output = ApiResult<T>> + Send + 'static,
{
    let (tenant, key) = (tenant.to_string(), key.as_str().to_string());
    let tracker = engine.in_flight.clone();
    let task = tokio::spawn(tracker.track_future(async move {
        let started = match claim(&engine, &tenant, &key, &fingerprint).await? {
            Claimed::Replay(answer) => return Ok(answer),
            Claimed::Run(started) => started,
        };
        let node = engine.store.node_id().to_string();
        let mine = (node.as_str(), engine.boot.as_str(), started);
        let ours = (tenant.as_str(), key.as_str());
        let store = engine.store.idempotency();
        let encoded = work(engine.clone()).await.and_then(|answer| {
            serde_json::to_vec(&answer).map_err(|e| ApiError::internal(format!("encoding the answer: {e}")))
        });
        match encoded {
            Ok(body) => {
                store.answer(ours, mine, status.as_u16(), &body)?;
                engine.store.durable().await?;
                Ok(Answer { status, body, replayed: false })
            }
            // A refusal the retry would meet again: kept as the answer.
            Err(e) if matches!(e.kind(), ErrorKind::Invalid | ErrorKind::NotFound) => {
                let body =
                    serde_json::to_vec(&e.body(Family::Admin { subsystem: subsystem::PUSH })).unwrap_or_default();
                store.answer(ours, mine, e.status.as_u16(), &body)?;
                engine.store.durable().await?;
                Err(e)
            }
            Err(e) => {
                store.abandon(ours, mine)?;
                Err(e)
            }
        }
    }));
    task.await.map_err(|e| ApiError::internal(format!("the idempotent send stopped: {e}")))?
}

enum Claimed {
    /// This request runs; it claimed the key at this instant (ms).
    Run(u64),
    Replay(Answer),
}

/// Claims the key, or waits for the request that holds it, for at most the send deadline.
async fn claim(engine: &Engine, tenant: &str, key: &str, fingerprint: &[u8]) -> ApiResult<Claimed> {
    let deadline = Instant::now().checked_add(engine.config.send_deadline);
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    // A claim this old is a dead engine's: the send it made is long over.
    let stale = ms(engine.config.send_deadline).saturating_mul(3).max(60_000);
    loop {
        let now = now_ms();
        let c = Claim {
            tenant,
            key,
            fingerprint,
            node: engine.store.node_id(),
            boot: &engine.boot,
            now_ms: now,
            ttl_ms: ms(TTL),
            stale_ms: stale,
        };
        match engine.store.idempotency().begin(&c)? {
            Begin::Run => return Ok(Claimed::Run(now)),
            Begin::Replay { status, body } => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::ACCEPTED);
                return Ok(Claimed::Replay(Answer { status, body, replayed: true }));
            }
            Begin::Mismatch => {
                return Err(ApiError {
                    field: Some(HEADER.to_string()),
                    ..ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!("{HEADER}: already used with another request within 24 h; use a new key"),
                    )
                })
            }
            Begin::Wait if deadline.is_some_and(|d| Instant::now() >= d) => {
                return Err(ApiError {
                    retry_after: Some(1),
                    field: Some(HEADER.to_string()),
                    ..ApiError::conflict(format!("{HEADER}: a request with this key is still in progress"))
                })
            }
            Begin::Wait => tokio::time::sleep(POLL).await,
        }
    }
}
