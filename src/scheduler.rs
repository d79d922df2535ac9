//! The scheduler: fires scheduled sends at their time (see
//! `herald_storage::schedules`). Among engines sharing a database, the one
//! holding the `scheduler` lease fires; it looks for due schedules every
//! `TICK`, so a send leaves within about that of its time, and at start a
//! schedule that came due while no engine ran fires at once.
//!
//! Each due schedule is marked `Sending`, with the id its notification will
//! have, durably and under the lease, before anything is sent: a schedule
//! is never fired twice by engines that disagree about the lease. Its send
//! runs as a task of its own (up to `MAX_IN_FLIGHT` at a time), and its
//! outcome (`Sent`, or `Failed` with the reason) is stored under the lease
//! when the send answers: `Failed` only when the send was refused for what
//! it is (its user gone); one the engine could not make then (stopping,
//! storage unavailable) stays `Sending` and is tried again after `RETRY`.
//! A schedule found `Sending` and not running here
//! was left by an engine that died: if its notification's report exists it
//! was sent, otherwise it is sent again as the same notification.

use crate::engine::Engine;
use crate::error::ErrorKind;
use crate::models::push::PushNotificationEvent;
use herald_storage::leases::Lease;
use herald_storage::now_ms;
use herald_storage::schedules::{Due, Schedule};
use metrics::counter;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How often the lease holder looks for due schedules.
const TICK: Duration = Duration::from_millis(250);

/// How long a scheduled send that failed for a passing reason waits before it is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// Scheduled sends running at once on one engine; more wait for a later tick.
const MAX_IN_FLIGHT: usize = 256;

/// Schedules firing here: not to be fired again while they run.
type Running = Arc<Mutex<HashSet<(String, String)>>>;

/// Starts the scheduler; it stops with the engine.
pub(crate) fn spawn(engine: Weak<Engine>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut lease = None;
        let running: Running = Arc::default();
        loop {
            tick.tick().await;
            let Some(engine) = engine.upgrade() else { return };
            if engine.in_flight.is_closed() {
                return; // shutting down: what is due fires on the next start
            }
            if engine.store.writable().is_err() {
                continue;
            }
            match engine.store.leases().keep(&mut lease, "scheduler") {
                Ok(true) => {}
                Ok(false) => continue, // another engine fires
                Err(e) => {
                    tracing::warn!(error = %e, "could not take the scheduler's lease");
                    continue;
                }
            }
            if let Some(l) = &lease {
                if let Err(e) = fire_due(&engine, l, &running).await {
                    tracing::warn!(error = %e, "firing scheduled sends failed; trying again");
                }
            }
        }
    });
}

/// Fires every due schedule not running here, while there is room. One
/// that cannot be read is passed over (and logged), never blocking the rest.
async fn fire_due(engine: &Arc<Engine>, lease: &Lease, running: &Running) -> Result<(), herald_storage::Error> {
    let room = MAX_IN_FLIGHT.saturating_sub(lock(running).len());
    if room == 0 {
        return Ok(());
    }
    let due = engine.store.schedules().due(now_ms(), MAX_IN_FLIGHT.saturating_mul(2))?;
    let mut started = 0usize;
    for d in due {
        if started >= room {
            break;
        }
        let name = (d.tenant.clone(), d.id.clone());
        if lock(running).contains(&name) {
            continue;
        }
        let id = ulid::Ulid::generate().to_string();
        let s = match engine.store.schedules().fire(lease, &d, &id, now_ms()) {
            Ok(Some(s)) => s,
            Ok(None) => continue,
            Err(e @ herald_storage::Error::Fenced(_)) => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, tenant = %d.tenant, schedule = %d.id, "a due schedule could not be fired");
                continue;
            }
        };
        // Sending already, as another notification: left by an engine that died.
        let recovered = s.notification_id.as_deref() != Some(id.as_str());
        let notification = s.notification_id.clone().unwrap_or(id);
        if recovered && engine.store.deliveries().report(&d.tenant, &notification)?.is_some() {
            // Its send was accepted before that engine died.
            engine.store.schedules().finish(lease, &d, None, now_ms())?;
            continue;
        }
        engine.store.durable().await?;
        lock(running).insert(name.clone());
        started = started.saturating_add(1);
        let (engine, lease, running) = (engine.clone(), lease.clone(), running.clone());
        tokio::spawn(engine.in_flight.clone().track_future(async move {
            fire(&engine, &lease, &d, s, notification).await;
            lock(&running).remove(&name);
        }));
    }
    Ok(())
}

/// Sends one schedule's event as `notification` and stores the outcome.
async fn fire(engine: &Engine, lease: &Lease, d: &Due, s: Schedule, notification: String) {
    let sent = match serde_json::from_str::<PushNotificationEvent>(&s.event_json) {
        Ok(event) => {
            crate::ops::push::send_as(engine, &d.tenant, notification.clone(), event, Default::default()).await
        }
        Err(e) => Err(crate::error::ApiError::bad_request(format!("the stored event no longer decodes: {e}"))),
    };
    let failure = match sent {
        Ok(_) => None,
        // Refused for what it is (its user is gone...): it fails for good.
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::Invalid | ErrorKind::NotFound | ErrorKind::Forbidden | ErrorKind::Conflict
            ) =>
        {
            Some(e.message)
        }
        // The engine could not send now (stopping, storage unavailable): it
        // stays sending and is tried again as the same notification.
        Err(e) => {
            tracing::warn!(error = %e, schedule = %d.id, "a scheduled send could not be made; trying again");
            tokio::time::sleep(RETRY).await;
            return;
        }
    };
    let outcome = if failure.is_some() { "failed" } else { "sent" };
    counter!("herald_scheduled_sends_total", "outcome" => outcome).increment(1);
    let late = now_ms().saturating_sub(s.send_at_ms);
    tracing::info!(tenant = %d.tenant, schedule = %d.id, %notification, late_ms = late, outcome, "scheduled send fired");
    if let Err(e) = engine.store.schedules().finish(lease, d, failure, now_ms()) {
        tracing::warn!(error = %e, schedule = %d.id, "the scheduled send's outcome was not stored; it is looked at again");
        return;
    }
    if let Err(e) = engine.store.durable().await {
        tracing::warn!(error = %e, "flushing a scheduled send's outcome failed");
    }
}

fn lock(running: &Running) -> std::sync::MutexGuard<'_, HashSet<(String, String)>> {
    running.lock().unwrap_or_else(|p| p.into_inner())
}
