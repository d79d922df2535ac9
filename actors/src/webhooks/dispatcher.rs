//! The `WebhookDispatcher`: one `WebhookTarget` per webhook with work, started
//! on demand and restarted when it fails.

use super::client::WebhookClient;
use super::target::{Target, TargetArgs, TargetMsg};
use super::WebhookSettings;
use crate::supervision::{Decision, RestartPolicy, Restarts};
use herald_storage::Store;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::HashMap;

/// The supervisor of webhook targets, one per engine, started by [`Push::start`](crate::Push::start).
pub struct Dispatcher;

/// What the dispatcher is sent, by the event bus.
pub enum DispatcherMsg {
    /// Wake (starting if needed) the target of (tenant, webhook).
    Wake(String, String),
}

/// What the dispatcher is started with.
pub struct DispatcherArgs {
    /// Where the outboxes are read from.
    pub store: Store,
    /// How webhooks are delivered, handed to every target.
    pub settings: WebhookSettings,
}

pub struct DispatcherState {
    store: Store,
    settings: WebhookSettings,
    client: WebhookClient,
    targets: HashMap<(String, String), ActorRef<TargetMsg>>,
    names: HashMap<ActorId, (String, String)>,
    restarts: Restarts<(String, String)>,
}

impl DispatcherState {
    async fn wake(
        &mut self,
        myself: &ActorRef<DispatcherMsg>,
        tenant: String,
        id: String,
    ) -> Result<(), ActorProcessingErr> {
        let key = (tenant, id);
        if let Some(t) = self.targets.get(&key) {
            if t.cast(TargetMsg::Wake).is_ok() {
                return Ok(());
            }
        }
        let args = TargetArgs {
            tenant: key.0.clone(),
            id: key.1.clone(),
            store: self.store.clone(),
            client: self.client.clone(),
            settings: self.settings.clone(),
        };
        let (actor, _) = Actor::spawn_linked(None, Target, args, myself.get_cell()).await?;
        self.names.insert(actor.get_id(), key.clone());
        self.targets.insert(key, actor);
        Ok(())
    }
}

impl Actor for Dispatcher {
    type Msg = DispatcherMsg;
    type State = DispatcherState;
    type Arguments = DispatcherArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<DispatcherMsg>,
        args: DispatcherArgs,
    ) -> Result<DispatcherState, ActorProcessingErr> {
        let client =
            WebhookClient::new(args.settings.allow_private, args.settings.timeout, args.settings.max_retry_after);
        // Outboxes left by the previous run are delivered now.
        for (tenant, w) in args.store.webhooks().all()? {
            if w.active && args.store.webhooks().outbox_depth(&tenant, &w.id) > 0 {
                myself.cast(DispatcherMsg::Wake(tenant, w.id))?;
            }
        }
        Ok(DispatcherState {
            store: args.store,
            settings: args.settings,
            client,
            targets: HashMap::new(),
            names: HashMap::new(),
            restarts: Restarts::new(RestartPolicy::default()),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<DispatcherMsg>,
        msg: DispatcherMsg,
        state: &mut DispatcherState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            DispatcherMsg::Wake(tenant, id) => state.wake(&myself, tenant, id).await,
        }
    }

    /// Never fails because a target did: the failed one is woken again after
    /// its backoff, or paused (until its next event) when it fails too often.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<DispatcherMsg>,
        evt: SupervisionEvent,
        state: &mut DispatcherState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failure) = match evt {
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err)),
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            _ => return Ok(()),
        };
        let Some(key) = state.names.remove(&cell.get_id()) else { return Ok(()) };
        state.targets.remove(&key);
        let Some(err) = failure else { return Ok(()) };
        match state.restarts.on_failure(&key, std::time::Instant::now()) {
            Decision::RestartAfter(delay) => {
                tracing::error!(tenant = %key.0, webhook = %key.1, error = %err, ?delay, "webhook target failed; restarting it");
                metrics::counter!("herald_actor_restarts_total", "actor" => "webhook_target").increment(1);
                myself.send_after(delay, move || DispatcherMsg::Wake(key.0, key.1));
            }
            Decision::GiveUp => {
                tracing::error!(tenant = %key.0, webhook = %key.1, error = %err, "webhook target failed too often; paused until its next event");
            }
        }
        Ok(())
    }
}
