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
//!
//! A claim not renewed for `stale()` is taken to be a dead engine's, and
//! the next request with its key runs again. The work renews its claim
//! every quarter of that while it runs: a topic send queuing a broadcast
//! to millions of tokens may work for longer, and must not run twice.

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
        let ours = (tenant.as_str(), key.as_str());
        let store = engine.store.idempotency();
        let (result, started) = renewing(&engine, ours, started, work(engine.clone())).await;
        let mine = (node.as_str(), engine.boot.as_str(), started);
        let encoded = result.and_then(|answer| {
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

/// Runs `work`, renewing the claim stamped `started` of `ours` every
/// quarter of [`stale`]; its result and the claim's stamp when it ended.
/// A renewal that fails is logged and tried again at the next; one that
/// finds the claim taken over stops renewing (the answer will not be stored).
async fn renewing<T>(engine: &Engine, ours: (&str, &str), mut started: u64, work: impl Future<Output = T>) -> (T, u64) {
    // At most hourly: a huge configured deadline must not overflow the clock.
    let every = Duration::from_millis(stale(engine) / 4).min(Duration::from_secs(3600));
    let mut renewal = tokio::time::interval(every);
    renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    renewal.tick().await; // the first tick is at once: the claim was just made
    let mut work = std::pin::pin!(work);
    let mut held = true;
    loop {
        tokio::select! {
            result = &mut work => return (result, started),
            _ = renewal.tick(), if held => {
                let mine = (engine.store.node_id(), engine.boot.as_str(), started);
                match engine.store.idempotency().renew(ours, mine, now_ms()) {
                    Ok(Some(stamp)) => started = stamp,
                    Ok(None) => held = false,
                    Err(e) => tracing::warn!(tenant = ours.0, error = %e, "renewing an idempotency claim"),
                }
            }
        }
    }
}

/// After how long (ms) a claim not renewed is taken to be a dead engine's:
/// three send deadlines, at least a minute, so that a busy engine's late
/// renewal is not mistaken for its death.
fn stale(engine: &Engine) -> u64 {
    ms(engine.config.send_deadline).saturating_mul(3).max(60_000)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

enum Claimed {
    /// This request runs; it claimed the key at this instant (ms).
    Run(u64),
    Replay(Answer),
}

/// Claims the key, or waits for the request that holds it, for at most the send deadline.
async fn claim(engine: &Engine, tenant: &str, key: &str, fingerprint: &[u8]) -> ApiResult<Claimed> {
    let deadline = Instant::now().checked_add(engine.config.send_deadline);
    let stale = stale(engine);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// A run longer than the staleness renews its claim: a request from
    /// another engine a staleness after the claim waits instead of running
    /// the send again, and the run's answer is stored under its renewed
    /// claim for retries to replay. The clock is paused: the runtime's
    /// timers jump forward, while the store's stamps follow the wall clock.
    #[tokio::test(start_paused = true)]
    async fn a_long_run_renews_its_claim() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::for_data_dir(dir.path());
        let engine = Engine::builder().config(config).metrics_recorder(false).build().await.unwrap();
        let (finish, finished) = tokio::sync::oneshot::channel::<()>();
        let work = |_| async move { finished.await.map_err(|_| ApiError::internal("dropped")).map(|()| 7) };
        let shared = engine.clone();
        let run = tokio::spawn(async move {
            let key = IdempotencyKey::parse("k").unwrap();
            once(shared, "acme", &key, b"fp".to_vec(), StatusCode::ACCEPTED, work).await
        });
        let ids = engine.store.idempotency();
        let claimed = loop {
            match ids.get("acme", "k").unwrap().map(|r| r.progress) {
                Some(herald_storage::idempotency::Progress::Running { started_ms, .. }) => break started_ms,
                _ => tokio::task::yield_now().await,
            }
        };

        std::thread::sleep(Duration::from_millis(5)); // the wall clock moves on
        tokio::time::sleep(Duration::from_millis(stale(&engine) / 4 + 1)).await; // a renewal is due
        let (stale, boot) = (stale(&engine), "another-process");
        let elsewhere = |now_ms| Claim {
            tenant: "acme",
            key: "k",
            fingerprint: b"fp",
            node: "another-engine",
            boot,
            now_ms,
            ttl_ms: ms(TTL),
            stale_ms: stale,
        };
        assert_eq!(ids.begin(&elsewhere(claimed + stale + 1)).unwrap(), Begin::Wait, "stale unless renewed");

        finish.send(()).unwrap();
        let answer = run.await.unwrap().unwrap();
        assert_eq!((answer.status, answer.body.as_slice(), answer.replayed), (StatusCode::ACCEPTED, &b"7"[..], false));
        let replay = Begin::Replay { status: 202, body: b"7".to_vec() };
        assert_eq!(ids.begin(&elsewhere(now_ms())).unwrap(), replay, "answered under the renewed claim");
        engine.shutdown().await;
    }
}
