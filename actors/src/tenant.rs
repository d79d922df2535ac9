//! The `Tenant` actor: the owner of one tenant's runtime (its provider
//! channels and connection pools, its running broadcasts) and the supervisor
//! of the broadcast partitions this engine claimed (see [`crate::claims`]).
//! Sends deliver through its channels in tasks of their own, without a
//! message (see [`Push::send_many`](crate::Push::send_many)); they count as
//! its activity. It stops when idle, freeing them, and is started again by
//! the next send. A failing partition is restarted from its
//! checkpoint after a backoff, and given up (its broadcast ends `FAILED`)
//! after too many restarts (see [`crate::supervision`]).

use crate::channels::TenantChannels;
use crate::delivery::Deliverer;
use crate::fanout::{FanOut, FanOutArgs};
use crate::supervision::{Decision, RestartPolicy, Restarts};
use crate::telemetry::LiveActor;
use herald_storage::broadcasts::Part;
use herald_storage::deliveries::Job;
use herald_storage::leases::Lease;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The actor of one tenant, started by `Root` on the tenant's first request and
/// stopped when idle.
pub struct Tenant;

/// What a `Tenant` actor is sent: by the claimer, by itself (timers), by tests.
pub enum TenantMsg {
    /// Run a partition this engine claimed: its lease, job, number and state.
    Part(Box<(Lease, Job, u32, Part)>),
    /// Run a partition again from its checkpoint (scheduled after a failure).
    Resume(Lease),
    /// Stop if idle (see [`PushSettings::tenant_idle_stop`](crate::PushSettings)).
    IdleCheck,
    /// Fail on purpose: proves supervision in tests.
    Crash,
}

/// What `Root` starts (or restarts) a tenant's actor with.
pub struct TenantArgs {
    /// The tenant's id: the channels, broadcasts and metrics are this tenant's.
    pub tenant: String,
    /// What every tenant's deliveries share (store, TLS, OAuth clients, bulk budget).
    pub deliverer: Arc<Deliverer>,
    /// Shared with the engine's registry: requests count as activity without a message.
    pub activity: Arc<Activity>,
    /// Built by `Root` with the actor, shared with the registry for sends.
    pub channels: Arc<TenantChannels>,
}

/// When the tenant last had work (a send, a broadcast, or any request of
/// its: see [`Push::touch`](crate::Push::touch)) and its sends in flight,
/// without a message to the actor.
#[derive(Debug)]
pub struct Activity {
    started: Instant,
    /// Milliseconds after `started`.
    last_ms: AtomicU64,
    /// One-client and one-user sends in progress.
    sends: AtomicUsize,
}

/// `n` sends of a tenant in progress, until dropped.
pub(crate) struct Sending {
    activity: Arc<Activity>,
    n: usize,
}

impl Drop for Sending {
    fn drop(&mut self) {
        self.activity.sends.fetch_sub(self.n, Ordering::AcqRel);
        self.activity.touch();
    }
}

impl Activity {
    pub(crate) fn new() -> Activity {
        Activity { started: Instant::now(), last_ms: AtomicU64::new(0), sends: AtomicUsize::new(0) }
    }

    /// Counts `n` sends in progress until the guard drops: the actor does not stop idle meanwhile.
    pub(crate) fn sending(self: &Arc<Self>, n: usize) -> Sending {
        self.sends.fetch_add(n, Ordering::AcqRel);
        self.touch();
        Sending { activity: self.clone(), n }
    }

    pub(crate) fn touch(&self) {
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        self.started.elapsed().saturating_sub(Duration::from_millis(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// A tenant actor's runtime: its channels, its running fan-outs and their restarts.
pub struct TenantState {
    tenant: String,
    deliverer: Arc<Deliverer>,
    /// The tenant's provider channels and their connection pools, shared
    /// with its sends and fan-outs; freed when the actor stops.
    channels: Arc<TenantChannels>,
    /// Running partitions by actor, with their lease, to restart a failed one.
    fanouts: HashMap<ActorId, Lease>,
    /// Recent restarts of each partition (by lease name).
    restarts: Restarts<String>,
    activity: Arc<Activity>,
    /// The periodic idle check, ended with the actor.
    idle_timer: Option<tokio::task::JoinHandle<()>>,
    _live: LiveActor,
}

impl Actor for Tenant {
    type Msg = TenantMsg;
    type State = TenantState;
    type Arguments = TenantArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: TenantArgs,
    ) -> Result<TenantState, ActorProcessingErr> {
        // Checked a few times per idle period (at most every 30 s).
        let idle_timer = args.deliverer.settings().tenant_idle_stop.map(|idle| {
            // A quarter of a duration cannot overflow.
            #[allow(clippy::arithmetic_side_effects)]
            let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
            myself.send_interval(every, || TenantMsg::IdleCheck)
        });
        Ok(TenantState {
            channels: args.channels,
            tenant: args.tenant,
            deliverer: args.deliverer,
            fanouts: HashMap::new(),
            restarts: Restarts::new(RestartPolicy::default()),
            activity: args.activity,
            idle_timer,
            _live: LiveActor::new("tenant"),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: TenantMsg,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TenantMsg::Part(claimed) => {
                state.activity.touch();
                let (lease, job, n, part) = *claimed;
                if state.fanouts.values().any(|l| l.name == lease.name) {
                    return Ok(());
                }
                let args = FanOutArgs { channels: state.channels.clone(), lease: lease.clone(), job, part: (n, part) };
                // On the bulk threads: ractor runs an actor where it is spawned.
                let spawn = Actor::spawn_linked(None, FanOut, args, myself.get_cell());
                let started: Result<_, ActorProcessingErr> = match state.deliverer.bulk().spawn(spawn).await {
                    Ok(started) => started.map_err(Into::into),
                    Err(e) => Err(format!("starting a broadcast partition: {e}").into()),
                };
                match started {
                    Ok((actor, _)) => {
                        state.fanouts.insert(actor.get_id(), lease);
                    }
                    Err(e) => {
                        state.deliverer.claims().wake();
                        return Err(e);
                    }
                }
            }
            TenantMsg::Resume(lease) => {
                let store = state.deliverer.store();
                let found = herald_storage::broadcasts::parse_part_lease(&lease.name).and_then(|(t, job, n)| {
                    let part = store.broadcasts().part(&t, &job, n).ok().flatten()?;
                    Some((store.broadcasts().job(&t, &job).ok().flatten()?, n, part))
                });
                match found {
                    Some((job, n, part)) if !part.done => {
                        myself.cast(TenantMsg::Part(Box::new((lease, job, n, part))))?
                    }
                    _ => state.deliverer.claims().wake(),
                }
            }
            TenantMsg::IdleCheck => {
                let idle = state.deliverer.settings().tenant_idle_stop;
                let quiet = state.fanouts.is_empty() && state.activity.sends.load(Ordering::Acquire) == 0;
                if quiet && idle.is_some_and(|idle| state.activity.idle_for() >= idle) {
                    tracing::debug!(tenant = %state.tenant, "tenant idle: stopping its actor");
                    myself.stop(Some("idle".into()));
                }
            }
            // A failure on request (`Push::crash_tenant`), to exercise supervision in
            // tests: ractor turns the handler's panic into the actor's failure.
            #[allow(clippy::panic)]
            TenantMsg::Crash => panic!("tenant {} crashed on request", state.tenant),
        }
        Ok(())
    }

    /// Ends the idle timer and drops the tenant's caches elsewhere in the
    /// engine (see [`Deliverer::on_tenant_stopped`]); its channels and pools
    /// go with the state. The next actor builds them again on first use.
    async fn post_stop(&self, _myself: ActorRef<Self::Msg>, state: &mut TenantState) -> Result<(), ActorProcessingErr> {
        if let Some(timer) = state.idle_timer.take() {
            timer.abort();
        }
        state.deliverer.tenant_stopped(&state.tenant);
        Ok(())
    }

    /// Never fails because a broadcast did: a failed one is restarted after
    /// its backoff (a delayed message) or given up.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        match evt {
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                if let Some(lease) = state.fanouts.remove(&cell.get_id()) {
                    state.restarts.forget(&lease.name);
                    state.deliverer.claims().wake();
                }
            }
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some(lease) = state.fanouts.remove(&cell.get_id()) else { return Ok(()) };
                match state.restarts.on_failure(&lease.name, Instant::now()) {
                    Decision::RestartAfter(delay) => {
                        tracing::error!(tenant = %state.tenant, partition = %lease.name, error = %err, ?delay, "broadcast partition failed; restarting from its checkpoint");
                        metrics::counter!("herald_actor_restarts_total", "actor" => "fanout").increment(1);
                        myself.send_after(delay, move || TenantMsg::Resume(lease));
                    }
                    Decision::GiveUp => {
                        let reason = format!("the fan-out failed on every restart: {err}");
                        if let Err(e) = crate::fanout::give_up(&state.deliverer, &lease, &reason) {
                            tracing::error!(tenant = %state.tenant, partition = %lease.name, error = %e, "could not mark the broadcast failed");
                        }
                        state.deliverer.claims().wake();
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}
