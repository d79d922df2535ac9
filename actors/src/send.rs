//! One send request: resolve the recipient to clients and tokens, deliver to one
//! client or all of a user's clients and wait for the answers, or create the
//! durable job of a topic broadcast.

use crate::channels::TenantChannels;
use crate::delivery::{AppChannels, Deliverer, Job, Prepared};
use crate::pool::Lane;
use crate::providers::Notification;
use herald_storage::deliveries::{BatchRecord, ClientOutcome, Job as BroadcastJob, JobApp, Report, SendRecord, State};
use herald_storage::now_ms;
use herald_storage::push_tokens::TokenRef;
use herald_storage::request_reads::Reach;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Who a send goes to: one client, every client of a user, or the subscribers of
/// a topic (a broadcast, delivered in the background).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recipient {
    /// One client of a user, answered when delivered.
    Client {
        /// The user the client must be linked to.
        user: String,
        /// The client's id; its valid tokens are sent to.
        client: String,
    },
    /// Every client of a user, answered when all are delivered.
    User {
        /// The user's id; an unknown user is [`SendError::NotFound`].
        user: String,
    },
    /// Every app of the tenant accepting the category: a broadcast job.
    Topic {
        /// Recorded as the broadcast report's recipient.
        topic: String,
    },
}

/// One notification to send, as the API hands it to [`Push::send`](crate::Push::send).
#[derive(Clone, Debug)]
pub struct SendRequest {
    /// The tenant sending: the request goes to its `Tenant` actor.
    pub tenant: String,
    /// Who receives it: decides between per-client outcomes and a broadcast job.
    pub recipient: Recipient,
    /// What is sent; its `id` is also the broadcast job's id.
    pub notification: Notification,
    /// Of a broadcast: notifications per second it is paced to (`None`: its tenant's bulk quota only).
    pub max_per_second: Option<u32>,
}

/// The outcome for one client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientResult {
    /// The client the outcome is for.
    pub client_id: String,
    /// What became of it (app, provider, state, code), as a report stores it.
    pub outcome: ClientOutcome,
}

/// One app of a broadcast: clients queued, or why none were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppQueued {
    /// The app this line is about; every app of the tenant has one, accepting or not.
    pub app: String,
    /// Its valid tokens when queued: the clients the broadcast tries (0 when refused).
    pub targeted: u64,
    /// Why the app is skipped (it does not accept the category); `None` when queued.
    pub refused: Option<String>,
}

/// What a send answers: the clients' outcomes (client and user sends), or the
/// queued broadcast (topic sends).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendAnswer {
    /// One outcome per client, once each has been delivered or has failed.
    Clients(Vec<ClientResult>),
    /// A broadcast queued: a `FanOut` actor delivers it in the background.
    Broadcast {
        /// The durable job, as its `FanOut` actor starts from it.
        job: Box<BroadcastJob>,
        /// Each app of the tenant: queued, or why not.
        apps: Vec<AppQueued>,
    },
}

/// Why a send has no answer per client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The recipient does not exist (an unknown client or user, or a client not the user's).
    #[error("{0}")]
    NotFound(String),
    /// The store, an actor or the providers' deadline failed; the message says which.
    #[error("{0}")]
    Internal(String),
}

impl From<herald_storage::Error> for SendError {
    fn from(e: herald_storage::Error) -> Self {
        SendError::Internal(e.to_string())
    }
}

fn failed(app: &str, code: u16, message: impl Into<String>) -> ClientOutcome {
    ClientOutcome {
        app: app.to_string(),
        provider: String::new(),
        state: State::Failed,
        code,
        message: Some(message.into()),
    }
}

/// Answers a send: the clients' outcomes, or the queued broadcast. `deadline`:
/// when the caller stops waiting for the clients' outcomes.
pub async fn execute(
    channels: &TenantChannels,
    req: SendRequest,
    deadline: Option<tokio::time::Instant>,
) -> Result<SendAnswer, SendError> {
    let d = channels.deliverer();
    match &req.recipient {
        Recipient::Topic { .. } => {
            // Counting the targeted tokens and cutting the job into
            // partitions reads each app's whole index once (2.6 s at a
            // million): off the runtime's worker threads, whose other tasks
            // (other tenants' sends) would wait meanwhile, at broadcasts' priority.
            let deliverer = d.clone();
            let (job, apps) = d
                .bulk()
                .spawn_blocking(move || broadcast(&deliverer, &req))
                .await
                .map_err(|e| SendError::Internal(format!("queuing the broadcast stopped: {e}")))??;
            d.store().durable().await?;
            Ok(SendAnswer::Broadcast { job: Box::new(job), apps })
        }
        _ => {
            let (results, record) = interactive(channels, &req, deadline).await?;
            // The notification has reached the providers: that, not the report, is
            // what the answer acknowledges. On sled the report is written with
            // others' (read from memory until then) and joins the next grouped
            // flush, rather than holding the answer for an insert and a flush of
            // its own; on PostgreSQL it is one insert, awaited.
            d.store().deliveries().record_send(&req.tenant, record).await?;
            Ok(SendAnswer::Clients(results))
        }
    }
}

/// [`execute`] for each request of a batch, concurrently; one answer per
/// request, in order. When the notification ids are consecutive (see
/// `herald_storage::deliveries::BatchRecord`), the one-client and one-user
/// sends are recorded in one record, written once all are delivered;
/// otherwise each in its own, as [`execute`] does.
pub async fn execute_many(
    channels: &TenantChannels,
    reqs: Vec<SendRequest>,
    deadline: Option<tokio::time::Instant>,
) -> Vec<Result<SendAnswer, SendError>> {
    if reqs.len() < 2 {
        return futures::future::join_all(reqs.into_iter().map(|r| execute(channels, r, deadline))).await;
    }
    // Each request's future (4 848 bytes measured) boxed where it is made:
    // join_all would otherwise copy it whole into its queue, then into that
    // queue's task.
    let delivered = futures::future::join_all(reqs.iter().map(|req| {
        Box::pin(async move {
            match &req.recipient {
                Recipient::Topic { .. } => execute(channels, req.clone(), deadline).await.map(Delivered::Queued),
                _ => interactive(channels, req, deadline)
                    .await
                    .map(|(results, record)| Delivered::Sent(results, Box::new(record))),
            }
        })
    }))
    .await;
    // The answers, a client send's without its record; the records by notification id.
    let mut answers = Vec::with_capacity(delivered.len());
    let mut sent = Vec::with_capacity(delivered.len());
    for (delivered, req) in delivered.into_iter().zip(&reqs) {
        answers.push(delivered.map(|d| match d {
            Delivered::Queued(answer) => answer,
            Delivered::Sent(results, record) => {
                sent.push((req.notification.id.clone(), *record));
                SendAnswer::Clients(results)
            }
        }));
    }
    let (store, tenant) = (channels.deliverer().store().deliveries(), reqs.first().map_or("", |r| r.tenant.as_str()));
    let written = match BatchRecord::of(sent) {
        Ok(batch) => store.finish_batch(tenant, &batch),
        Err(sent) => record_each(&store, tenant, sent).await,
    };
    match written {
        Ok(()) => answers,
        Err(e) => answers
            .into_iter()
            .map(|a| match a? {
                SendAnswer::Clients(_) => Err(SendError::Internal(e.to_string())),
                queued => Ok(queued),
            })
            .collect(),
    }
}

/// Writes the records of a batch's sends one by one (their ids are not consecutive).
async fn record_each(
    store: &herald_storage::deliveries::Deliveries<'_>,
    tenant: &str,
    sent: Vec<(String, SendRecord)>,
) -> herald_storage::Result<()> {
    for (_, record) in sent {
        store.record_send(tenant, record).await?;
    }
    Ok(())
}

/// A request of a batch once delivered: a broadcast queued (its job
/// written), or clients' outcomes with the record still to write.
enum Delivered {
    Queued(SendAnswer),
    Sent(Vec<ClientResult>, Box<SendRecord>),
}

/// Delivers a one-client or one-user send: the clients' outcomes, and the
/// record of the send, which the caller writes.
async fn interactive(
    channels: &TenantChannels,
    req: &SendRequest,
    deadline: Option<tokio::time::Instant>,
) -> Result<(Vec<ClientResult>, SendRecord), SendError> {
    let store = channels.deliverer().store();
    let tenant = req.tenant.as_str();
    // The clients, each with what a send needs of it.
    let (clients, kind, who) = match &req.recipient {
        Recipient::Client { user, client } => {
            let (reach, linked) = store.reach_linked(tenant, user, client).await?;
            if reach.state.is_none() {
                return Err(SendError::NotFound(format!("client {client} not found")));
            }
            if !linked {
                return Err(SendError::NotFound(format!("client {client} is not linked to user {user}")));
            }
            (vec![(client.clone(), reach)], "client", format!("{user}/{client}"))
        }
        Recipient::User { user } => {
            let ids: Vec<String> = store.links().of_user(tenant, user)?.into_iter().map(|l| l.client_id).collect();
            if ids.is_empty() && store.users().get_by_name(tenant, &user.to_lowercase())?.is_none() {
                return Err(SendError::NotFound(format!("user {user} not found")));
            }
            let reaches = store.reach(tenant, &ids).await?;
            (ids.into_iter().zip(reaches).collect(), "user", user.clone())
        }
        Recipient::Topic { .. } => return Err(SendError::Internal("a topic is not interactive".into())),
    };
    let n = &req.notification;
    let deliver = |client_id, target, prepared| deliver_to(channels, tenant, n, deadline, client_id, target, prepared);
    let results = match <[_; 1]>::try_from(clients) {
        // The usual send, one client: nothing to join or share.
        Ok([(client_id, reach)]) => {
            let target = target(channels, n, &client_id, reach);
            vec![deliver(client_id, target, Some(&Prepared::default())).await]
        }
        // A user's clients: concurrently, each app's payloads prepared once for its clients.
        Err(clients) => {
            let targets: Vec<(String, Result<Target, ClientOutcome>)> = clients
                .into_iter()
                .map(|(id, reach)| {
                    let target = target(channels, n, &id, reach);
                    (id, target)
                })
                .collect();
            let prepared: HashMap<String, Prepared> = targets
                .iter()
                .filter_map(|(_, t)| t.as_ref().ok())
                .map(|t| (t.channels.app.clone(), Prepared::default()))
                .collect();
            let prepared = &prepared;
            futures::future::join_all(targets.into_iter().map(|(client_id, target)| {
                let payloads = target.as_ref().ok().and_then(|t| prepared.get(&t.channels.app));
                deliver(client_id, target, payloads)
            }))
            .await
        }
    };
    let mut report = Report {
        id: req.notification.id.clone(),
        kind: kind.into(),
        recipient: who,
        created_ms: now_ms(),
        completed_ms: Some(now_ms()),
        ..Report::default()
    };
    for r in &results {
        let targeted = report.targeted.entry(r.outcome.app.clone()).or_default();
        *targeted = targeted.saturating_add(1);
        report.record(&r.outcome);
    }
    let mut outcomes: Vec<_> = results.iter().map(|r| (r.client_id.clone(), r.outcome.clone())).collect();
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((results, SendRecord { report, outcomes }))
}

/// What one client of an interactive send gets: its delivery to `target`
/// with its app's `prepared` payloads, or the outcome `target` ended with.
async fn deliver_to(
    channels: &TenantChannels,
    tenant: &str,
    n: &Notification,
    deadline: Option<tokio::time::Instant>,
    client_id: String,
    target: Result<Target, ClientOutcome>,
    prepared: Option<&Prepared>,
) -> ClientResult {
    let outcome = match (target, prepared) {
        (Ok(t), Some(prepared)) => {
            let job = Job { tenant, channels: &t.channels, prepared, notification: n, deadline };
            channels.deliverer().deliver(&job, &client_id, &t.token, Lane::Interactive).await
        }
        (Ok(t), None) => failed(&t.channels.app, 500, "no payloads prepared for the app"),
        (Err(outcome), _) => outcome,
    };
    ClientResult { client_id, outcome }
}

/// Where one client of a send is reached: its app's channels and its token.
struct Target {
    channels: Arc<AppChannels>,
    token: TokenRef,
}

/// The channels and token of `client_id` (what a send needs of it:
/// `reach`), or the outcome that ends its send here: unknown, locked, no
/// valid token, its app unknown or not accepting the category.
fn target(channels: &TenantChannels, n: &Notification, client_id: &str, reach: Reach) -> Result<Target, ClientOutcome> {
    let Some(client) = reach.state else {
        return Err(failed("", 404, format!("client {client_id} not found")));
    };
    if client.locked {
        return Err(failed(&client.app_name, 423, "the client is locked"));
    }
    let Some(token) = reach.token else {
        return Err(failed(&client.app_name, 404, "the client has no push token"));
    };
    if !token.is_valid {
        return Err(failed(&token.app_name, 410, "the push token was reported invalid by the provider"));
    }
    let app = match channels.of_app(&token.app_name) {
        Ok(Some(c)) => c,
        Ok(None) => return Err(failed(&token.app_name, 404, format!("app {} not found", token.app_name))),
        Err(e) => return Err(failed(&token.app_name, 500, format!("app {}: {e}", token.app_name))),
    };
    if !app.categories.contains(&n.category) {
        return Err(failed(
            &token.app_name,
            400,
            format!("app {} does not accept category {}", token.app_name, n.category),
        ));
    }
    Ok(Target { channels: app, token: TokenRef { provider: token.provider, token: token.token } })
}

/// Writes the broadcast job: every app of the tenant accepting the category,
/// with the count of its valid tokens (kept beside the index, so a topic
/// send answers at once however many there are). The engine that claims
/// the job cuts it into partitions; `FanOut` actors deliver them.
fn broadcast(d: &Deliverer, req: &SendRequest) -> Result<(BroadcastJob, Vec<AppQueued>), SendError> {
    let store = d.store();
    let tenant = req.tenant.as_str();
    let (apps, _) = store.apps().list(tenant, 0, usize::MAX)?;
    let mut queued = Vec::new();
    let mut job_apps = Vec::new();
    let mut targeted = BTreeMap::new();
    for app in apps {
        let refused = (!app.categories.contains(&req.notification.category))
            .then(|| format!("app {} does not accept category {}", app.name, req.notification.category));
        let count = if refused.is_none() {
            let count = store.push_tokens().count_valid_of_app(tenant, &app.name)?;
            targeted.insert(app.name.clone(), count);
            job_apps.push(JobApp { app: app.name.clone(), cursor: None, done: false });
            count
        } else {
            0
        };
        queued.push(AppQueued { app: app.name, targeted: count, refused });
    }
    let notification_json = serde_json::to_string(&req.notification).map_err(|e| SendError::Internal(e.to_string()))?;
    let job = BroadcastJob {
        id: req.notification.id.clone(),
        tenant: tenant.to_string(),
        notification_json,
        apps: job_apps,
        created_ms: now_ms(),
        read_mark: None,
        parts: 0,
        max_per_second: req.max_per_second,
    };
    let mut report =
        Report { id: job.id.clone(), kind: "topic".into(), created_ms: job.created_ms, targeted, ..Report::default() };
    if let Recipient::Topic { topic } = &req.recipient {
        report.recipient = topic.clone();
    }
    store.deliveries().create_job(&job, &report, &[])?;
    Ok((job, queued))
}
