//! The `WebhookTarget` actor: delivers one webhook's outbox in order.
//!
//! Engines sharing a database each have a target for a webhook with work;
//! the one holding the webhook's lease delivers, the others look again every
//! [`HELD_ELSEWHERE`] in case its holder died. Each attempt is recorded under
//! the lease: a holder that was paused past its lease and wakes has its late
//! record refused (`herald_lease_fenced_total{work="webhook"}`) and stops.

use super::client::WebhookClient;
use super::signature::sign;
use super::WebhookSettings;
use base64::Engine as _;
use bytes::Bytes;
use herald_storage::leases::Lease;
use herald_storage::webhooks::{Attempt, OutboxEntry, Settle, Webhook};
use herald_storage::{now_ms, Store};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::time::{Duration, Instant};

pub struct Target;

pub enum TargetMsg {
    /// The outbox or the webhook changed, or a retry is due.
    Wake,
}

pub struct TargetArgs {
    pub tenant: String,
    pub id: String,
    pub store: Store,
    pub client: WebhookClient,
    pub settings: WebhookSettings,
}

pub struct TargetState {
    args: TargetArgs,
    /// When the next scheduled wake fires, so a burst of events schedules one.
    next_wake_ms: Option<u64>,
    /// This outbox's share of its tenant's `herald_webhook_outbox_depth`.
    reported_depth: u64,
    /// The webhook's lease while this engine delivers it.
    lease: Option<Lease>,
    _live: crate::telemetry::LiveActor,
}

impl Actor for Target {
    type Msg = TargetMsg;
    type State = TargetState;
    type Arguments = TargetArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<TargetMsg>,
        args: TargetArgs,
    ) -> Result<TargetState, ActorProcessingErr> {
        myself.cast(TargetMsg::Wake)?;
        Ok(TargetState {
            args,
            next_wake_ms: None,
            reported_depth: 0,
            lease: None,
            _live: crate::telemetry::LiveActor::new("webhook_target"),
        })
    }

    async fn post_stop(&self, _myself: ActorRef<TargetMsg>, state: &mut TargetState) -> Result<(), ActorProcessingErr> {
        if let Some(lease) = state.lease.take() {
            let _ = state.args.store.leases().release(&lease);
        }
        let gauge = &crate::telemetry::tenant(&state.args.tenant).webhook_outbox_depth;
        gauge.decrement(state.reported_depth as f64);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<TargetMsg>,
        _msg: TargetMsg,
        state: &mut TargetState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(at) = state.next_wake_ms {
            if at <= now_ms() {
                state.next_wake_ms = None;
            }
        }
        let due = deliver_due(&state.args, &mut state.lease).await;
        report_depth(state);
        if let Some(delay) = due? {
            let at = now_ms().saturating_add(delay.as_millis() as u64);
            if state.next_wake_ms.is_none_or(|w| w > at) {
                state.next_wake_ms = Some(at);
                myself.send_after(delay, || TargetMsg::Wake);
            }
        }
        Ok(())
    }
}

/// Moves the tenant's outbox depth gauge by this outbox's change since last time.
fn report_depth(state: &mut TargetState) {
    let a = &state.args;
    let depth = a.store.webhooks().outbox_depth(&a.tenant, &a.id) as u64;
    let gauge = &crate::telemetry::tenant(&a.tenant).webhook_outbox_depth;
    gauge.increment(depth as f64 - state.reported_depth as f64);
    state.reported_depth = depth;
}

/// How soon an engine looks again at a webhook whose lease another holds.
const HELD_ELSEWHERE: Duration = Duration::from_secs(1);

/// Delivers every due entry, in order, under the webhook's lease; answers
/// how long until the next is due (or until the lease is worth trying again).
async fn deliver_due(a: &TargetArgs, lease: &mut Option<Lease>) -> Result<Option<Duration>, ActorProcessingErr> {
    let name = Webhook::lease_name(&a.tenant, &a.id);
    loop {
        // Each attempt is recorded: on a full disk, wait (deliveries are late, never lost).
        if a.store.writable().is_err() {
            return Ok(Some(Duration::from_secs(1)));
        }
        let webhook = a.store.webhooks().get(&a.tenant, &a.id)?.filter(|w| w.active);
        let Some(webhook) = webhook else {
            release(a, lease);
            return Ok(None);
        };
        let batch = a.store.webhooks().pending(&a.tenant, &a.id, a.settings.concurrency.max(1))?;
        let now = now_ms();
        // Only the due prefix goes out, so order is kept.
        let due: Vec<_> = batch.into_iter().take_while(|(_, e)| e.next_attempt_ms <= now).collect();
        if due.is_empty() {
            let head = a.store.webhooks().pending(&a.tenant, &a.id, 1)?;
            if let Some((_, e)) = head.first() {
                return Ok(Some(Duration::from_millis(e.next_attempt_ms.saturating_sub(now).max(1))));
            }
            // Empty: let another engine deliver its next event, then look
            // once more for one queued elsewhere while this one held the lease.
            let held = lease.is_some();
            release(a, lease);
            if held && a.store.webhooks().outbox_depth(&a.tenant, &a.id) > 0 {
                continue;
            }
            return Ok(None);
        }
        let held = match a.store.leases().keep(lease, &name)? {
            true => lease.clone().ok_or("lease kept")?,
            false => return Ok(Some(HELD_ELSEWHERE)),
        };
        let results =
            futures::future::join_all(due.into_iter().map(|(key, entry)| attempt(a, &held, &webhook, key, entry)))
                .await;
        for settled in results {
            match settled? {
                Settled::Recorded => {}
                Settled::Gone(reason) => {
                    if disable(a, &webhook.callback_url, &reason)? {
                        tracing::warn!(tenant = %a.tenant, webhook = %a.id, "receiver answered 410 Gone: webhook disabled");
                        release(a, lease);
                        return Ok(None);
                    }
                }
                Settled::Fenced => {
                    metrics::counter!("herald_lease_fenced_total", "work" => "webhook").increment(1);
                    tracing::warn!(tenant = %a.tenant, webhook = %a.id, "the webhook's lease moved to another engine: its attempt is not recorded here");
                    *lease = None;
                    return Ok(Some(HELD_ELSEWHERE));
                }
            }
        }
    }
}

/// Gives the webhook's lease back, if this engine holds it.
fn release(a: &TargetArgs, lease: &mut Option<Lease>) {
    if let Some(l) = lease.take() {
        if let Err(e) = a.store.leases().release(&l) {
            tracing::warn!(tenant = %a.tenant, webhook = %a.id, error = %e, "could not release a webhook's lease; it expires");
        }
    }
}

/// How an attempt ended, once recorded.
enum Settled {
    Recorded,
    /// The receiver answered 410: the webhook is to be disabled, for this reason.
    Gone(String),
    /// Not recorded: the lease moved to another engine.
    Fenced,
}

/// Disables the webhook after its receiver at `url` answered 410, on the
/// record as stored now: an update made meanwhile is kept, and one that moved
/// the webhook to another URL is not disabled by the old URL's answer.
/// Answers whether the webhook is now disabled.
fn disable(a: &TargetArgs, url: &str, reason: &str) -> Result<bool, ActorProcessingErr> {
    let now = now_ms();
    let stored = a.store.webhooks().change(&a.tenant, &a.id, |w| {
        if !w.active || w.callback_url != url {
            return false;
        }
        w.active = false;
        w.disabled_reason = Some(reason.to_string());
        w.modified_ms = now;
        true
    })?;
    Ok(stored.is_none_or(|w| !w.active))
}

/// One attempt, recorded under `lease`.
async fn attempt(
    a: &TargetArgs,
    lease: &Lease,
    w: &Webhook,
    key: Vec<u8>,
    mut entry: OutboxEntry,
) -> Result<Settled, ActorProcessingErr> {
    let secret = a.store.unseal(&w.secret, &Webhook::secret_context(&a.tenant, &w.id, "secret"))?;
    let secret = String::from_utf8_lossy(&secret).into_owned();
    let timestamp = now_ms() / 1000;
    let mut headers = vec![
        ("webhook-id", entry.event_id.clone()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", sign(&secret, &entry.event_id, timestamp, entry.body.as_bytes())?),
    ];
    if let (Some(user), Some(password)) = (&w.auth_username, &w.auth_password) {
        let password = a.store.unseal(password, &Webhook::secret_context(&a.tenant, &w.id, "password"))?;
        let mut creds = user.as_bytes().to_vec();
        creds.push(b':');
        creds.extend_from_slice(&password);
        headers.push(("authorization", format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(creds))));
    }
    let started = Instant::now();
    let answer = a.client.post(&w.callback_url, headers, Bytes::from(entry.body.clone())).await;
    entry.attempts = entry.attempts.saturating_add(1);
    let (status, response, retry_after) = match &answer {
        Ok(r) => (r.status, r.body.clone(), r.retry_after),
        Err(e) => (0, e.clone(), None),
    };
    let log = Attempt {
        event_id: entry.event_id.clone(),
        attempt: entry.attempts,
        at_ms: now_ms(),
        status,
        duration_ms: started.elapsed().as_millis() as u64,
        response,
    };
    let success = (200..300).contains(&status);
    let outcome = if success {
        "success"
    } else if status == 0 {
        "error"
    } else {
        "failure"
    };
    let series = crate::telemetry::tenant(&a.tenant);
    let index = crate::telemetry::WEBHOOK_OUTCOMES.iter().position(|o| *o == outcome).unwrap_or(2);
    series.webhook_attempts[index].increment(1);
    let next = if success {
        metrics::histogram!("herald_webhook_delivery_seconds")
            .record(now_ms().saturating_sub(entry.created_ms) as f64 / 1000.0);
        Settle::Delivered
    } else if (entry.attempts as usize) < a.settings.retry_schedule.len() && status != 410 {
        let planned = a.settings.retry_schedule[entry.attempts as usize];
        let delay = jitter(planned).max(retry_after.unwrap_or_default());
        entry.next_attempt_ms = now_ms().saturating_add(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
        Settle::Retry(entry)
    } else {
        Settle::Failed(entry)
    };
    match a.store.webhooks().settle(lease, (&a.tenant, &a.id), &key, &log, next) {
        Ok(()) if status == 410 => Ok(Settled::Gone(format!("the receiver answered 410 Gone at {}", log.at_ms))),
        Ok(()) => Ok(Settled::Recorded),
        Err(herald_storage::Error::Fenced(_)) => Ok(Settled::Fenced),
        Err(e) => Err(e.into()),
    }
}

/// ±20 % around the planned delay, so retries of many targets spread out.
fn jitter(d: Duration) -> Duration {
    if d.is_zero() {
        return d;
    }
    let mut b = [0u8; 2];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    let unit = u16::from_le_bytes(b) as f64 / u16::MAX as f64; // 0..1
    Duration::try_from_secs_f64(d.as_secs_f64() * (0.8 + 0.4 * unit)).unwrap_or(d)
}
