//! One tenant's provider channels: per app, its connection pools and
//! provider auth, built from the app's stored credentials on first use and
//! rebuilt when the app changes. The tenant's `Tenant` actor owns them:
//! when it stops (idle), they and their connections go with it.

use crate::credentials::AppCredentials;
use crate::delivery::{AppChannels, Deliverer};
use dashmap::mapref::entry::Entry;
use dashmap::DashMap;
use std::sync::Arc;

/// A tenant's provider channels per app, owned by its `Tenant` actor and shared
/// with its sends and fan-outs; dropped, connections included, when the actor stops.
pub struct TenantChannels {
    tenant: String,
    deliverer: Arc<Deliverer>,
    /// Channels per app, with the store's apps generation they were last checked at.
    apps: DashMap<String, (u64, Arc<AppChannels>)>,
}

impl TenantChannels {
    pub(crate) fn new(tenant: &str, deliverer: Arc<Deliverer>) -> TenantChannels {
        TenantChannels { tenant: tenant.to_string(), deliverer, apps: DashMap::new() }
    }

    pub(crate) fn deliverer(&self) -> &Arc<Deliverer> {
        &self.deliverer
    }

    /// The channels of an app, rebuilt when its configuration changed; `None`
    /// when the app does not exist.
    pub fn of_app(&self, app: &str) -> Result<Option<Arc<AppChannels>>, String> {
        let store = self.deliverer.store();
        // Read before the record: an app written meanwhile moves it on, so
        // the next send checks again.
        let generation = store.apps_generation();
        if let Some(c) = self.apps.get(app).filter(|c| c.0 == generation) {
            return Ok(Some(c.1.clone()));
        }
        let Some(record) = store.apps().get(&self.tenant, app).map_err(|e| e.to_string())? else {
            self.apps.remove(app);
            return Ok(None);
        };
        // One build per version of the app, under its entry: sends that
        // start together (a broadcast's partitions) share it. Each build
        // signs an APNs provider token of its own, and Apple refuses a
        // second within 20 minutes as too frequent an update (a restart
        // would then take up the refused one).
        match self.apps.entry(app.to_string()) {
            Entry::Occupied(mut c) if c.get().1.modified_ms == record.modified_ms => {
                c.get_mut().0 = generation;
                Ok(Some(c.get().1.clone()))
            }
            entry => {
                let creds = AppCredentials::load(store, &self.tenant, &record)?;
                let channels = Arc::new(self.deliverer.build(&self.tenant, app, record.modified_ms, creds));
                entry.insert((generation, channels.clone()));
                Ok(Some(channels))
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::webhooks::EventBus;
    use herald_storage::apps::App;

    /// A deliverer over a store in `dir` holding tenant `acme`'s app `shop`
    /// (no credentials).
    pub(crate) fn deliverer_of_shop(dir: &std::path::Path) -> Arc<Deliverer> {
        let store = herald_storage::Store::open(&herald_storage::StoreOptions::new(dir)).unwrap();
        store.apps().create("acme", &App { name: "shop".into(), ..Default::default() }).unwrap();
        let bus = Arc::new(EventBus::new(store.clone()));
        Arc::new(Deliverer::new(store, crate::PushSettings::default(), bus).unwrap())
    }

    /// Sends that find an app's channels unbuilt at the same moment all get
    /// the one built for them.
    #[test]
    fn sends_starting_together_share_one_build() {
        let dir = tempfile::tempdir().unwrap();
        let deliverer = deliverer_of_shop(dir.path());
        for _ in 0..20 {
            let channels = TenantChannels::new("acme", deliverer.clone());
            let barrier = std::sync::Barrier::new(8);
            let built: Vec<Arc<AppChannels>> = std::thread::scope(|scope| {
                let sends: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| {
                            barrier.wait();
                            channels.of_app("shop").unwrap().unwrap()
                        })
                    })
                    .collect();
                sends.into_iter().map(|s| s.join().unwrap()).collect()
            });
            assert!(built.iter().all(|c| Arc::ptr_eq(c, &built[0])), "one build for all");
        }
    }
}
