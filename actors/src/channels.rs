//! One tenant's provider channels: per app, its connection pools and
//! provider auth, built from the app's stored credentials on first use and
//! rebuilt when the app changes. The tenant's `Tenant` actor owns them:
//! when it stops (idle), they and their connections go with it.

use crate::credentials::AppCredentials;
use crate::delivery::{AppChannels, Deliverer};
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
        if let Some(mut c) = self.apps.get_mut(app).filter(|c| c.1.modified_ms == record.modified_ms) {
            c.0 = generation;
            return Ok(Some(c.1.clone()));
        }
        let creds = AppCredentials::load(store, &self.tenant, &record)?;
        let channels = Arc::new(self.deliverer.build(&self.tenant, app, record.modified_ms, creds));
        self.apps.insert(app.to_string(), (generation, channels.clone()));
        Ok(Some(channels))
    }
}
