//! The `WebhookDispatcher`: one `WebhookTarget` per webhook with work, started
//! on demand and restarted when it fails.

use super::client::WebhookClient;
use super::target::{Target, TargetArgs, TargetMsg};
use super::WebhookSettings;
use herald_storage::Store;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::HashMap;

pub struct Dispatcher;

pub enum DispatcherMsg {
    /// Wake (starting if needed) the target of (tenant, webhook).
    Wake(String, String),
}

pub struct DispatcherArgs {
    pub store: Store,
    pub settings: WebhookSettings,
}

pub struct DispatcherState {
    store: Store,
    settings: WebhookSettings,
    client: WebhookClient,
    targets: HashMap<(String, String), ActorRef<TargetMsg>>,
    names: HashMap<ActorId, (String, String)>,
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
        let client = WebhookClient::new(args.settings.allow_private, args.settings.timeout);
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

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<DispatcherMsg>,
        evt: SupervisionEvent,
        state: &mut DispatcherState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failed) = match evt {
            SupervisionEvent::ActorFailed(cell, err) => {
                tracing::error!(error = %err, "webhook target failed; restarting it");
                (cell, true)
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, false),
            _ => return Ok(()),
        };
        if let Some(key) = state.names.remove(&cell.get_id()) {
            state.targets.remove(&key);
            if failed {
                metrics::counter!("herald_actor_restarts_total", "actor" => "webhook_target").increment(1);
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                state.wake(&myself, key.0, key.1).await?;
            }
        }
        Ok(())
    }
}
