//! Per-tenant runtime settings, one small record each.

use crate::keys::key;
use crate::store::{get, Store};
use crate::{Result, Tx};
use serde::{Deserialize, Serialize};

/// Spec 002 login runtime configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginConfig {
    /// Whether login runs the risk inference.
    pub enable_inference: bool,
}

/// Reads of per-tenant settings; writes go through [`Tx`].
pub struct Settings<'a>(&'a Store);

impl Store {
    /// The settings of this store.
    pub fn settings(&self) -> Settings<'_> {
        Settings(self)
    }
}

impl Settings<'_> {
    /// The tenant's login configuration; the default when never set.
    pub fn login(&self, tenant: &str) -> Result<LoginConfig> {
        Ok(get(&self.0.trees()?.settings, &key(&[tenant, "login"]))?.unwrap_or_default())
    }
}

impl Tx<'_> {
    /// The tenant's login configuration, read inside the transaction; the default when never set.
    pub fn login_config(&self, tenant: &str) -> Result<LoginConfig> {
        Ok(self.get(&self.t.settings, &key(&[tenant, "login"]))?.unwrap_or_default())
    }

    /// Replaces the tenant's login configuration.
    pub fn set_login_config(&self, tenant: &str, c: &LoginConfig) -> Result<()> {
        self.put(&self.t.settings, &key(&[tenant, "login"]), c)
    }
}
