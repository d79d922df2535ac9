//! The push engine as the rest of Herald sees it: send, report, shut down.

use crate::channels::TenantChannels;
use crate::delivery::Deliverer;
use crate::finishing::Finishing;
use crate::root::{Registry, Root, RootArgs, RootMsg, Running};
use crate::send::{self, Recipient, SendAnswer, SendError, SendRequest};
use crate::settings::PushSettings;
use crate::tenant::TenantMsg;
use crate::webhooks::{Dispatcher, DispatcherArgs, DispatcherMsg, EventBus, WebhookSettings};
use futures::FutureExt;
use herald_storage::Store;
use ractor::{Actor, ActorRef};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

/// The push engine, started once per process: the tenant supervisor tree, the
/// webhook dispatcher, and what every tenant's deliveries share.
pub struct Push {
    root: ActorRef<RootMsg>,
    dispatcher: ActorRef<DispatcherMsg>,
    registry: Arc<Registry>,
    deliverer: Arc<Deliverer>,
    events: Arc<EventBus>,
}

impl Push {
    /// Starts the supervisor trees; unfinished broadcasts and outboxes resume.
    pub async fn start(store: Store, settings: PushSettings, webhooks: WebhookSettings) -> Result<Push, String> {
        let events = Arc::new(EventBus::new(store.clone()));
        let (dispatcher, _) =
            Actor::spawn(None, Dispatcher, DispatcherArgs { store: store.clone(), settings: webhooks })
                .await
                .map_err(|e| format!("starting the webhook dispatcher: {e}"))?;
        events.attach(dispatcher.clone());
        let deliverer = Arc::new(Deliverer::new(store, settings, events.clone())?);
        let registry = Arc::new(Registry::new());
        let args = RootArgs { deliverer: deliverer.clone(), registry: registry.clone() };
        let (root, _) = Actor::spawn(None, Root, args).await.map_err(|e| format!("starting the root actor: {e}"))?;
        crate::claims::start(deliverer.clone(), root.clone());
        Ok(Push { root, dispatcher, registry, deliverer, events })
    }

    async fn tenant(&self, tenant: &str) -> Result<Running, SendError> {
        if let Some(a) = self.registry.get(tenant).filter(|a| crate::root::alive(&a.actor)) {
            return Ok(a.clone());
        }
        let answer =
            self.root.call(|reply| RootMsg::Tenant(tenant.to_string(), reply), Some(Duration::from_secs(10))).await;
        match answer {
            Ok(ractor::rpc::CallResult::Success(Ok(a))) => Ok(a),
            Ok(ractor::rpc::CallResult::Success(Err(e))) => Err(SendError::Internal(e)),
            other => Err(SendError::Internal(format!("tenant actor unavailable: {other:?}"))),
        }
    }

    /// Sends through the tenant's actor; waits at most `deadline` for providers.
    pub async fn send(&self, req: SendRequest, deadline: Duration) -> Result<SendAnswer, SendError> {
        let running = self.tenant(&req.tenant).await?;
        let queues_broadcast = matches!(req.recipient, Recipient::Topic { .. });
        // The usual send, alone: no batch to gather (one vector and join less per send).
        let sends = move |channels: Arc<TenantChannels>, until| async move {
            let answer = send::execute(&channels, req, until).await;
            announce(&channels, &answer);
            answer
        };
        run(running, 1, queues_broadcast, deadline, sends).await?
    }

    /// Sends requests of `tenant` together (a batch), concurrently, through
    /// the channels of its actor (started if needed), without a message to
    /// it; one answer per request, in order; waits at most `deadline` for
    /// providers.
    pub async fn send_many(
        &self,
        tenant: &str,
        reqs: Vec<SendRequest>,
        deadline: Duration,
    ) -> Result<Vec<Result<SendAnswer, SendError>>, SendError> {
        let running = self.tenant(tenant).await?;
        let queues_broadcast = reqs.iter().any(|r| matches!(r.recipient, Recipient::Topic { .. }));
        let count = reqs.len();
        let sends = move |channels: Arc<TenantChannels>, until| async move {
            let answers = send::execute_many(&channels, reqs, until).await;
            answers.iter().for_each(|answer| announce(&channels, answer));
            answers
        };
        run(running, count, queues_broadcast, deadline, sends).await
    }

    /// Counts a request of `tenant` as work: its actor (started if needed)
    /// and what it bounds (channels, the engine's caches of the tenant) stay
    /// while the tenant has requests. Call it only for an existing tenant.
    pub async fn touch(&self, tenant: &str) -> Result<(), SendError> {
        self.tenant(tenant).await?.activity.touch();
        Ok(())
    }

    /// Sets what happens to the engine's caches of a tenant when its actor
    /// stops (see [`Deliverer::on_tenant_stopped`]).
    pub fn on_tenant_stopped(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        self.deliverer.on_tenant_stopped(f);
    }

    /// Sets what paces broadcasts (see [`crate::delivery::Pacer`]).
    pub fn set_pacer(&self, pacer: Arc<dyn crate::delivery::Pacer>) {
        self.deliverer.set_pacer(pacer);
    }

    /// Makes the tenant's actor fail, to exercise supervision.
    pub async fn crash_tenant(&self, tenant: &str) -> Result<(), SendError> {
        let a = self.tenant(tenant).await?.actor;
        a.cast(TenantMsg::Crash).map_err(|e| SendError::Internal(e.to_string()))
    }

    /// What every tenant's deliveries share (store, TLS, OAuth clients, bulk budget).
    pub fn deliverer(&self) -> &Arc<Deliverer> {
        &self.deliverer
    }

    /// The event bus webhooks are fed from.
    pub fn events(&self) -> &Arc<EventBus> {
        &self.events
    }

    /// Stops both supervisor trees without waiting for them (see [`Push::shutdown`]).
    pub fn stop(&self) {
        self.root.stop(None);
        self.dispatcher.stop(None);
    }

    /// Stops both supervisor trees and waits (at most `timeout` each) until
    /// they have: unfinished broadcasts and outboxes resume at the next start.
    pub async fn shutdown(&self, timeout: Duration) {
        let _ = self.root.stop_and_wait(None, Some(timeout)).await;
        let _ = self.dispatcher.stop_and_wait(None, Some(timeout)).await;
    }
}

/// Runs `count` sends of a tenant's actor `running` (`sends`, given its
/// channels and when to stop waiting for providers), counted as the
/// actor's activity so that it does not stop idle under them. They go on in
/// a task of their own if the caller stops waiting ([`Finishing`]), so it
/// cannot cut one off between the provider's answer and its record.
async fn run<T, F>(
    running: Running,
    count: usize,
    queues_broadcast: bool,
    deadline: Duration,
    sends: impl FnOnce(Arc<TenantChannels>, Option<tokio::time::Instant>) -> F,
) -> Result<T, SendError>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let sending = running.activity.sending(count);
    // Boxed where it is made: a one-client send's future is 5 KiB (5 280
    // bytes measured), and each wrapper below, and every caller's future up
    // to the router's box, would otherwise copy it whole when it moves.
    let work = Box::pin(sends(running.channels, tokio::time::Instant::now().checked_add(deadline)));
    // A send that panics answers 500 (as when it ran in a task of its own), not a dropped connection.
    let task = Finishing::new(
        AssertUnwindSafe(async move {
            let out = work.await;
            drop(sending);
            out
        })
        .catch_unwind(),
    );
    // Queuing a broadcast reads its apps' whole token indexes (seconds at
    // millions): storage work that ends, not a wait for providers. Cut off,
    // it would still queue the broadcast behind a 500, and a retry would
    // send it twice. Each one-client or one-user send stops at the deadline
    // on its own; the grace lets them answer first.
    let answered = if queues_broadcast {
        Ok(task.await)
    } else {
        tokio::time::timeout(deadline.saturating_add(Duration::from_secs(1)), task).await
    };
    match answered {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(_)) => Err(SendError::Internal("the send failed: it panicked".into())),
        Err(_) => Err(SendError::Internal("the providers did not answer within the deadline".into())),
    }
}

/// What a queued broadcast tells the rest: its targeted tokens counted, the
/// claim loop woken to deliver it.
fn announce(channels: &TenantChannels, answer: &Result<SendAnswer, SendError>) {
    if let Ok(SendAnswer::Broadcast { job, apps }) = answer {
        let targeted: u64 = apps.iter().map(|a| a.targeted).sum();
        crate::telemetry::tenant(&job.tenant).fanout_targeted.increment(targeted);
        channels.deliverer().claims().wake();
    }
}
