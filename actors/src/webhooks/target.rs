//! The `WebhookTarget` actor: delivers one webhook's outbox in order.

use super::client::WebhookClient;
use super::signature::sign;
use super::WebhookSettings;
use base64::Engine as _;
use bytes::Bytes;
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
            _live: crate::telemetry::LiveActor::new("webhook_target"),
        })
    }

    async fn post_stop(&self, _myself: ActorRef<TargetMsg>, state: &mut TargetState) -> Result<(), ActorProcessingErr> {
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
        let due = deliver_due(&state.args).await;
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

/// Delivers every due entry, in order; answers how long until the next is due.
async fn deliver_due(a: &TargetArgs) -> Result<Option<Duration>, ActorProcessingErr> {
    loop {
        // Each attempt is recorded: on a full disk, wait (deliveries are late, never lost).
        if a.store.writable().is_err() {
            return Ok(Some(Duration::from_secs(1)));
        }
        let Some(webhook) = a.store.webhooks().get(&a.tenant, &a.id)? else { return Ok(None) };
        if !webhook.active {
            return Ok(None);
        }
        let batch = a.store.webhooks().pending(&a.tenant, &a.id, a.settings.concurrency.max(1))?;
        let now = now_ms();
        // Only the due prefix goes out, so order is kept.
        let due: Vec<_> = batch.into_iter().take_while(|(_, e)| e.next_attempt_ms <= now).collect();
        if due.is_empty() {
            let head = a.store.webhooks().pending(&a.tenant, &a.id, 1)?;
            return Ok(head.first().map(|(_, e)| Duration::from_millis(e.next_attempt_ms.saturating_sub(now).max(1))));
        }
        let results =
            futures::future::join_all(due.into_iter().map(|(key, entry)| attempt(a, &webhook, key, entry))).await;
        for gone in results {
            if let Some(reason) = gone? {
                if disable(a, &webhook.callback_url, &reason)? {
                    tracing::warn!(tenant = %a.tenant, webhook = %a.id, "receiver answered 410 Gone: webhook disabled");
                    return Ok(None);
                }
            }
        }
    }
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

/// One attempt; answers `Some(reason)` when the receiver asked to be disabled (410).
async fn attempt(
    a: &TargetArgs,
    w: &Webhook,
    key: Vec<u8>,
    mut entry: OutboxEntry,
) -> Result<Option<String>, ActorProcessingErr> {
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
    a.store.webhooks().settle(&a.tenant, &a.id, &key, &log, next)?;
    Ok((status == 410).then(|| format!("the receiver answered 410 Gone at {}", log.at_ms)))
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
