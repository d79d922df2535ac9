//! The `Root` supervisor: starts tenant actors on demand and restarts one that
//! fails after a backoff (see [`crate::supervision`]), without touching the
//! others; a tenant that cannot be started is logged, never Root's failure.

use crate::channels::TenantChannels;
use crate::delivery::Deliverer;
use crate::supervision::{Decision, RestartPolicy, Restarts};
use crate::telemetry::LiveActor;
use crate::tenant::{Activity, Tenant, TenantArgs, TenantMsg};
use dashmap::DashMap;
use ractor::{Actor, ActorProcessingErr, ActorRef, ActorStatus, RpcReplyPort, SupervisionEvent};
use std::collections::HashMap;
use std::sync::Arc;

/// The supervisor of tenant actors, one per engine, started by [`Push::start`](crate::Push::start).
pub struct Root;

/// What `Root` is sent: lookups by the engine, scheduled restarts by itself.
pub enum RootMsg {
    /// The tenant's actor, started when needed.
    Tenant(String, RpcReplyPort<Result<Running, String>>),
    /// Start a tenant again after its actor failed (scheduled), so its
    /// broadcasts resume without waiting for its next request.
    Restart(String),
}

/// What `Root` is started with.
pub struct RootArgs {
    /// Handed to every tenant actor it starts.
    pub deliverer: Arc<Deliverer>,
    /// Shared with the engine for lookups without a round trip through Root.
    pub registry: Arc<Registry>,
}

/// Whether an actor takes messages: starting (its `spawn` has returned, so
/// it will), running or upgrading. One found starting is used, not replaced.
pub(crate) fn alive<M: ractor::Message>(a: &ActorRef<M>) -> bool {
    matches!(a.get_status(), ActorStatus::Starting | ActorStatus::Running | ActorStatus::Upgrading)
}

/// A running tenant actor and what its sends use without a message to it.
#[derive(Clone)]
pub struct Running {
    /// The actor: its broadcasts, idle stop and supervision.
    pub actor: ActorRef<TenantMsg>,
    /// Its activity clock and sends in flight, which keep it from stopping idle.
    pub activity: Arc<Activity>,
    /// Its channels, which a send delivers through in a task of its own.
    pub channels: Arc<TenantChannels>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("actor", &self.actor.get_id()).field("activity", &self.activity).finish()
    }
}

/// The running tenant actors by tenant.
pub type Registry = DashMap<String, Running>;

/// Root's state: which tenant each actor is (to tell which one failed) and their
/// recent restarts.
pub struct RootState {
    deliverer: Arc<Deliverer>,
    registry: Arc<Registry>,
    names: HashMap<ractor::ActorId, String>,
    restarts: Restarts<String>,
    _live: LiveActor,
}

impl RootState {
    async fn start_tenant(&mut self, myself: &ActorRef<RootMsg>, tenant: &str) -> Result<Running, ActorProcessingErr> {
        // A tenant that stopped (idle) but whose end Root has not seen yet is replaced.
        if let Some(a) = self.registry.get(tenant).filter(|a| alive(&a.actor)) {
            return Ok(a.clone());
        }
        let activity = Arc::new(Activity::new());
        let channels = Arc::new(TenantChannels::new(tenant, self.deliverer.clone()));
        let args = TenantArgs {
            tenant: tenant.to_string(),
            deliverer: self.deliverer.clone(),
            activity: activity.clone(),
            channels: channels.clone(),
        };
        let (actor, _) = Actor::spawn_linked(None, Tenant, args, myself.get_cell()).await?;
        self.names.insert(actor.get_id(), tenant.to_string());
        let running = Running { actor, activity, channels };
        self.registry.insert(tenant.to_string(), running.clone());
        Ok(running)
    }
}

impl Actor for Root {
    type Msg = RootMsg;
    type State = RootState;
    type Arguments = RootArgs;

    async fn pre_start(&self, _myself: ActorRef<Self::Msg>, args: RootArgs) -> Result<RootState, ActorProcessingErr> {
        let state = RootState {
            deliverer: args.deliverer,
            registry: args.registry,
            names: HashMap::new(),
            restarts: Restarts::new(RestartPolicy::default()),
            _live: LiveActor::new("root"),
        };
        // Unfinished broadcasts resume when the claimer takes their partitions.
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: RootMsg,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RootMsg::Tenant(name, reply) => {
                let answer = state.start_tenant(&myself, &name).await.map_err(|e| e.to_string());
                let _ = reply.send(answer);
            }
            RootMsg::Restart(tenant) => {
                if let Err(e) = state.start_tenant(&myself, &tenant).await {
                    tracing::error!(%tenant, error = %e, "tenant could not be restarted");
                }
            }
        }
        Ok(())
    }

    /// Never fails because a tenant did: the failed one is restarted after
    /// its backoff, or left to start on its next request when it fails too often.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failure) = match evt {
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err)),
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            _ => return Ok(()),
        };
        let Some(tenant) = state.names.remove(&cell.get_id()) else { return Ok(()) };
        state.registry.remove_if(&tenant, |_, a| a.actor.get_id() == cell.get_id());
        let Some(err) = failure else { return Ok(()) };
        match state.restarts.on_failure(&tenant, std::time::Instant::now()) {
            Decision::RestartAfter(delay) => {
                tracing::error!(%tenant, error = %err, ?delay, "tenant actor failed; restarting it");
                metrics::counter!("herald_actor_restarts_total", "actor" => "tenant").increment(1);
                myself.send_after(delay, move || RootMsg::Restart(tenant));
            }
            Decision::GiveUp => {
                tracing::error!(%tenant, error = %err, "tenant actor failed too often; it starts again on its next request");
            }
        }
        Ok(())
    }
}
