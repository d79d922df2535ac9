//! The `FanOut` actor: one topic broadcast, streamed from the token index in
//! batches with bounded in-flight sends, checkpointed after every batch.

use crate::delivery::{Deliverer, Job, Prepared};
use crate::pool::Lane;
use crate::providers::Notification;
use futures::StreamExt;
use herald_storage::deliveries::{Job as BroadcastJob, Report};
use herald_storage::now_ms;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::sync::Arc;

pub struct FanOut;

pub enum FanOutMsg {
    Run,
}

pub struct FanOutArgs {
    pub deliverer: Arc<Deliverer>,
    pub job: BroadcastJob,
}

pub struct FanOutState {
    deliverer: Arc<Deliverer>,
    job: BroadcastJob,
}

impl Actor for FanOut {
    type Msg = FanOutMsg;
    type State = FanOutState;
    type Arguments = FanOutArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: FanOutArgs,
    ) -> Result<FanOutState, ActorProcessingErr> {
        myself.cast(FanOutMsg::Run)?;
        Ok(FanOutState { deliverer: args.deliverer, job: args.job })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: FanOutMsg,
        state: &mut FanOutState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            FanOutMsg::Run => {
                run(&state.deliverer, &mut state.job).await?;
                myself.stop(Some("broadcast complete".into()));
            }
        }
        Ok(())
    }
}

/// Delivers every remaining batch of the job; resumable from its checkpoint.
pub async fn run(d: &Arc<Deliverer>, job: &mut BroadcastJob) -> Result<(), ActorProcessingErr> {
    let store = d.store().clone();
    let n: Notification = serde_json::from_str(&job.notification_json)?;
    let mut report = store
        .deliveries()
        .report(&job.tenant, &job.id)?
        .unwrap_or_else(|| Report { id: job.id.clone(), ..Report::default() });
    let settings = d.settings().clone();
    let tenant = job.tenant.clone();
    let series = crate::telemetry::tenant(&tenant);
    series.fanout_jobs_started.increment(1);
    for i in 0..job.apps.len() {
        if job.apps[i].done {
            continue;
        }
        let app = job.apps[i].app.clone();
        let channels = d.channels(&tenant, &app).map_err(|e| format!("app {app}: {e}"))?;
        let prepared = Prepared::default();
        loop {
            let batch =
                store.push_tokens().valid_of_app(&tenant, &app, job.apps[i].cursor.as_deref(), settings.batch_size)?;
            let Some((last, _)) = batch.last() else { break };
            let last = last.clone();
            if let Some(ch) = &channels {
                let sends = futures::stream::iter(batch).map(|(client, token)| {
                    let (store, tenant, id, ch, prepared, n) = (&store, &tenant, &job.id, ch, &prepared, &n);
                    async move {
                        // Recorded after the last checkpoint by a run that crashed: not sent again.
                        if let Ok(Some(done)) = store.deliveries().outcome(tenant, id, &client) {
                            return done;
                        }
                        let send = Job { tenant, channels: ch, prepared, notification: n };
                        let outcome = d.deliver(&send, &client, &token, Lane::Bulk).await;
                        if let Err(e) = store.deliveries().record_outcome(tenant, id, &client, &outcome) {
                            tracing::error!(error = %e, "could not record a broadcast outcome");
                        }
                        outcome
                    }
                });
                let mut outcomes = sends.buffer_unordered(settings.fanout_in_flight.max(1));
                while let Some(o) = outcomes.next().await {
                    report.record(&o);
                    series.fanout_notifications.increment(1);
                }
            }
            job.apps[i].cursor = Some(last);
            store.deliveries().checkpoint(job, &report, false)?;
        }
        job.apps[i].done = true;
        store.deliveries().checkpoint(job, &report, false)?;
    }
    report.completed_ms = Some(now_ms());
    store.deliveries().checkpoint(job, &report, true)?;
    let total = report.by_app.values().fold(herald_storage::deliveries::Counts::default(), |mut t, c| {
        t.sent += c.sent;
        t.invalid += c.invalid;
        t.failed += c.failed;
        t
    });
    d.events().emit(
        &job.tenant,
        "push",
        "BROADCAST_COMPLETED",
        serde_json::json!({ "notificationId": job.id, "targeted": report.targeted.values().sum::<u64>(), "sent": total.sent, "invalid": total.invalid, "failed": total.failed }),
    );
    store.durable().await?;
    series.fanout_jobs_completed.increment(1);
    tracing::info!(tenant = %job.tenant, job = %job.id, sent = report.by_app.values().map(|c| c.sent).sum::<u64>(), "broadcast complete");
    Ok(())
}
