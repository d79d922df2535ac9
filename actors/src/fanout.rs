//! The `FanOut` actor: one topic broadcast, streamed from the token index in
//! batches with bounded in-flight sends, checkpointed after every batch.

use crate::delivery::{AppChannels, Deliverer, Job, Prepared};
use crate::pool::Lane;
use crate::providers::Notification;
use futures::stream::{FuturesUnordered, StreamExt};
use herald_storage::deliveries::{ClientOutcome, Job as BroadcastJob, Report, State};
use herald_storage::now_ms;
use herald_storage::push_tokens::TokenRef;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::collections::VecDeque;
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

/// Batches a broadcast keeps open (read but not yet committed) at most: the
/// next batch's sends start while the last tokens of the previous one finish.
const OPEN_BATCHES: usize = 3;

/// A batch read from the token index, committed once all its sends are done.
struct OpenBatch {
    last_client: String,
    remaining: usize,
    /// Undelivered clients: what the report lists besides the counts.
    undelivered: Vec<(String, ClientOutcome)>,
    counts: Report,
}

/// Delivers every remaining batch of the job; resumable from its checkpoint.
pub async fn run(d: &Arc<Deliverer>, job: &mut BroadcastJob) -> Result<(), ActorProcessingErr> {
    let store = d.store().clone();
    let n: Notification = serde_json::from_str(&job.notification_json)?;
    let mut report = store
        .deliveries()
        .report(&job.tenant, &job.id)?
        .unwrap_or_else(|| Report { id: job.id.clone(), ..Report::default() });
    let tenant = job.tenant.clone();
    let series = crate::telemetry::tenant(&tenant);
    series.fanout_jobs_started.increment(1);
    for i in 0..job.apps.len() {
        if job.apps[i].done {
            continue;
        }
        let app = job.apps[i].app.clone();
        // A deleted app has no channels: nothing to send to its clients.
        if let Some(channels) = d.channels(&tenant, &app).map_err(|e| format!("app {app}: {e}"))? {
            send_app(d, job, i, &mut report, &channels, &n).await?;
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

/// Streams one app's tokens from its cursor with at most `bulk_in_flight`
/// sends in flight (each holding one of the deliverer's bulk permits, which
/// all broadcasts share) across up to [`OPEN_BATCHES`] batches, committing each batch
/// (cursor, counts, undelivered clients) once all of its sends are done.
async fn send_app(
    d: &Arc<Deliverer>,
    job: &mut BroadcastJob,
    i: usize,
    report: &mut Report,
    channels: &AppChannels,
    n: &Notification,
) -> Result<(), ActorProcessingErr> {
    let store = d.store();
    let settings = d.settings();
    let prepared = Prepared::default();
    let send = Job { tenant: &job.tenant, channels, prepared: &prepared, notification: n };
    let mut read_cursor = job.apps[i].cursor.clone();
    let mut exhausted = false;
    let mut open: VecDeque<OpenBatch> = VecDeque::new();
    let mut first_seq = 0usize;
    let mut pending: VecDeque<(usize, String, TokenRef)> = VecDeque::new();
    let mut in_flight = FuturesUnordered::new();
    loop {
        while in_flight.len() < settings.bulk_in_flight.max(1) {
            if pending.is_empty() {
                if exhausted || open.len() >= OPEN_BATCHES {
                    break;
                }
                let batch = store.push_tokens().valid_of_app(
                    &job.tenant,
                    &channels.app,
                    read_cursor.as_deref(),
                    settings.batch_size,
                )?;
                let Some((last, _)) = batch.last() else {
                    exhausted = true;
                    break;
                };
                read_cursor = Some(last.clone());
                let seq = first_seq + open.len();
                open.push_back(OpenBatch {
                    last_client: last.clone(),
                    remaining: batch.len(),
                    undelivered: Vec::new(),
                    counts: Report::default(),
                });
                pending.extend(batch.into_iter().map(|(client, token)| (seq, client, token)));
            }
            let Some((seq, client, token)) = pending.pop_front() else { break };
            in_flight.push(async move {
                let _permit = d.bulk_permit().await;
                let outcome = d.deliver(&send, &client, &token, Lane::Bulk).await;
                (seq, client, outcome)
            });
        }
        let Some((seq, client, outcome)) = in_flight.next().await else { break };
        let batch = &mut open[seq - first_seq];
        batch.remaining -= 1;
        batch.counts.record(&outcome);
        if outcome.state != State::Sent {
            batch.undelivered.push((client, outcome));
        }
        while open.front().is_some_and(|b| b.remaining == 0) {
            let Some(done) = open.pop_front() else { break };
            first_seq += 1;
            report.add(&done.counts);
            job.apps[i].cursor = Some(done.last_client);
            store.deliveries().commit_batch(job, report, &done.undelivered)?;
            let sent: u64 = done.counts.by_app.values().map(|c| c.total()).sum();
            crate::telemetry::tenant(&job.tenant).fanout_notifications.increment(sent);
        }
    }
    Ok(())
}
