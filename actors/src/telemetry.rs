//! Metric handles of the per-tenant series, and the policy bounding the
//! `tenant` label (`--metrics-tenant-label=on|off|top:N`).
//!
//! Handles are registered once per tenant and cached, so counting a
//! notification costs a map read and an atomic add, never an allocation.

use dashmap::DashMap;
use metrics::{Counter, Gauge, Label, SharedString};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, RwLock};

/// How tenants appear in the `tenant` label.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TenantLabel {
    /// Every tenant its own value.
    #[default]
    On,
    /// No `tenant` label at all.
    Off,
    /// The first N tenants seen get their own value, the rest share `other`
    /// (a label never moves once given, so counters stay monotonic).
    Top(usize),
}

impl FromStr for TenantLabel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(TenantLabel::On),
            "off" => Ok(TenantLabel::Off),
            _ => s
                .strip_prefix("top:")
                .and_then(|n| n.parse().ok())
                .map(TenantLabel::Top)
                .ok_or_else(|| format!("expected on, off or top:N, got {s}")),
        }
    }
}

impl std::fmt::Display for TenantLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TenantLabel::On => f.write_str("on"),
            TenantLabel::Off => f.write_str("off"),
            TenantLabel::Top(n) => write!(f, "top:{n}"),
        }
    }
}

/// Providers in the order of [`TenantSeries::notifications`].
pub const PROVIDERS: [&str; 4] = ["apns", "fcm", "hms", "webpush"];
/// Notification outcomes in the order of [`TenantSeries::notifications`].
pub const OUTCOMES: [&str; 3] = ["sent", "invalid", "failed"];
/// Webhook attempt outcomes in the order of [`TenantSeries::webhook_attempts`].
pub const WEBHOOK_OUTCOMES: [&str; 3] = ["success", "failure", "error"];

/// The handles of every series labelled by tenant, for one label value.
pub struct TenantSeries {
    /// The `tenant` label (None when the label is off), for series built ad hoc.
    pub label: Option<Label>,
    /// `herald_notifications_total`, by provider then outcome.
    pub notifications: [[Counter; 3]; 4],
    /// `herald_fanout_jobs_started_total`: broadcast runs started, a resumed one again.
    pub fanout_jobs_started: Counter,
    /// `herald_fanout_jobs_completed_total`: broadcasts completed.
    pub fanout_jobs_completed: Counter,
    /// `herald_fanout_targeted_total`: clients broadcasts target, counted when queued.
    pub fanout_targeted: Counter,
    /// `herald_fanout_notifications_total`: broadcast notifications done, any outcome.
    pub fanout_notifications: Counter,
    /// `herald_webhook_attempts_total`, by [`WEBHOOK_OUTCOMES`].
    pub webhook_attempts: [Counter; 3],
    /// `herald_webhook_outbox_depth`: deliveries waiting; each outbox adds its share.
    pub webhook_outbox_depth: Gauge,
    /// `herald_events_published_total`: events published, the engine's and the API's.
    pub events_published: Counter,
}

impl TenantSeries {
    fn register(value: Option<SharedString>) -> TenantSeries {
        let label = value.map(|v| Label::new("tenant", v));
        let with = |extra: &[(&'static str, &'static str)]| -> Vec<Label> {
            extra.iter().map(|&(k, v)| Label::from_static_parts(k, v)).chain(label.clone()).collect()
        };
        let notifications = PROVIDERS.map(|p| {
            OUTCOMES.map(|o| metrics::counter!("herald_notifications_total", with(&[("provider", p), ("outcome", o)])))
        });
        TenantSeries {
            notifications,
            fanout_jobs_started: metrics::counter!("herald_fanout_jobs_started_total", with(&[])),
            fanout_jobs_completed: metrics::counter!("herald_fanout_jobs_completed_total", with(&[])),
            fanout_targeted: metrics::counter!("herald_fanout_targeted_total", with(&[])),
            fanout_notifications: metrics::counter!("herald_fanout_notifications_total", with(&[])),
            webhook_attempts: WEBHOOK_OUTCOMES
                .map(|o| metrics::counter!("herald_webhook_attempts_total", with(&[("outcome", o)]))),
            webhook_outbox_depth: metrics::gauge!("herald_webhook_outbox_depth", with(&[])),
            events_published: metrics::counter!("herald_events_published_total", with(&[])),
            label,
        }
    }

    /// Counts one notification's outcome; unknown names count as `failed`.
    pub fn notification(&self, provider: &str, outcome: &str) {
        let p = PROVIDERS.iter().position(|x| *x == provider).unwrap_or(1);
        let o = OUTCOMES.iter().position(|x| *x == outcome).unwrap_or(2);
        self.notifications[p][o].increment(1);
    }
}

/// Tenant → series under one policy; the process has one (`GLOBAL`).
#[derive(Default)]
pub struct Registry {
    mode: RwLock<TenantLabel>,
    /// Tenant (or a reserved key starting with NUL, which no tenant id has) → its series.
    series: DashMap<String, Arc<TenantSeries>>,
    /// Tenants given their own label under `top:N`.
    own: AtomicUsize,
}

static GLOBAL: LazyLock<Registry> = LazyLock::new(Registry::default);

impl Registry {
    fn set_mode(&self, mode: TenantLabel) {
        let mut current = self.mode.write().unwrap_or_else(|e| e.into_inner());
        if *current != mode {
            *current = mode;
            self.series.clear();
            self.own.store(0, Ordering::Release);
        }
    }

    fn mode(&self) -> TenantLabel {
        *self.mode.read().unwrap_or_else(|e| e.into_inner())
    }

    fn tenant(&self, tenant: &str) -> Arc<TenantSeries> {
        if let Some(s) = self.series.get(tenant) {
            return s.clone();
        }
        let shared = |key: &str, value: Option<&'static str>| {
            self.series
                .entry(key.to_string())
                .or_insert_with(|| Arc::new(TenantSeries::register(value.map(SharedString::const_str))))
                .clone()
        };
        let own = || Arc::new(TenantSeries::register(Some(Arc::<str>::from(tenant).into())));
        let series = match self.mode() {
            TenantLabel::Off => shared("\0off", None),
            TenantLabel::On => own(),
            TenantLabel::Top(n) => {
                if self.own.fetch_add(1, Ordering::AcqRel) < n {
                    own()
                } else {
                    self.own.fetch_sub(1, Ordering::AcqRel);
                    shared("\0other", Some("other"))
                }
            }
        };
        self.series.entry(tenant.to_string()).or_insert(series).clone()
    }
}

/// Sets the tenant label policy (the engine does at start-up).
pub fn set_tenant_label(mode: TenantLabel) {
    GLOBAL.set_mode(mode)
}

/// The policy in force.
pub fn tenant_label() -> TenantLabel {
    GLOBAL.mode()
}

/// The series of a tenant already seen, if any.
pub fn known(tenant: &str) -> Option<Arc<TenantSeries>> {
    GLOBAL.series.get(tenant).map(|s| s.clone())
}

/// The series of one tenant, registered on first use.
pub fn tenant(tenant: &str) -> Arc<TenantSeries> {
    GLOBAL.tenant(tenant)
}

/// Registers the tenant-labelled series before anything happens, so they
/// export at zero from start: once without a `tenant` label (what every
/// policy can show before a tenant is seen, and all `off` ever shows) and,
/// under `on`, for each of `tenants`. (`top:N` gives labels in the order
/// tenants are seen, which registering here would change.)
pub fn export_at_zero<'a>(tenants: impl IntoIterator<Item = &'a str>) {
    drop(TenantSeries::register(None));
    if GLOBAL.mode() == TenantLabel::On {
        for t in tenants {
            GLOBAL.tenant(t);
        }
    }
}

/// One live actor of `kind` (root, tenant, fanout, webhook_target) in
/// `herald_actors_live`, for as long as the guard lives: kept in the actor's
/// state, it is dropped whether the actor stops or fails.
pub struct LiveActor(&'static str);

impl LiveActor {
    pub(crate) fn new(kind: &'static str) -> LiveActor {
        metrics::gauge!("herald_actors_live", "kind" => kind).increment(1.0);
        LiveActor(kind)
    }
}

impl Drop for LiveActor {
    fn drop(&mut self) {
        metrics::gauge!("herald_actors_live", "kind" => self.0).decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_policy() {
        assert_eq!("on".parse(), Ok(TenantLabel::On));
        assert_eq!("off".parse(), Ok(TenantLabel::Off));
        assert_eq!("top:5".parse(), Ok(TenantLabel::Top(5)));
        assert!("top:".parse::<TenantLabel>().is_err());
        assert!("all".parse::<TenantLabel>().is_err());
        assert_eq!(TenantLabel::Top(3).to_string(), "top:3");
    }

    #[test]
    fn top_n_bounds_the_label_values() {
        let r = Registry::default();
        r.set_mode(TenantLabel::Top(2));
        let values: Vec<String> = ["a", "b", "c", "d", "a"]
            .iter()
            .map(|t| r.tenant(t).label.as_ref().map(|l| l.value().to_string()).unwrap_or_default())
            .collect();
        assert_eq!(values, ["a", "b", "other", "other", "a"]);
        assert!(Arc::ptr_eq(&r.tenant("c"), &r.tenant("d")), "one shared set of handles for `other`");
        r.set_mode(TenantLabel::Off);
        assert!(r.tenant("a").label.is_none());
        r.set_mode(TenantLabel::On);
        assert_eq!(r.tenant("z").label.as_ref().map(|l| l.value().to_string()), Some("z".into()));
    }
}
