//! Per-tenant runtime settings, one small record each.

use crate::keys::key;
use crate::store::{get, Store};
use crate::{Result, Tx};
use serde::{Deserialize, Serialize};

/// Spec 002 login runtime configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginConfig {
    pub enable_inference: bool,
}

pub struct Settings<'a>(&'a Store);

impl Store {
    pub fn settings(&self) -> Settings<'_> {
        Settings(self)
    }
}

impl Settings<'_> {
    pub fn login(&self, tenant: &str) -> Result<LoginConfig> {
        Ok(get(&self.0.trees()?.settings, &key(&[tenant, "login"]))?.unwrap_or_default())
    }
}

impl Tx<'_> {
    pub fn login_config(&self, tenant: &str) -> Result<LoginConfig> {
        Ok(self.get(&self.t.settings, &key(&[tenant, "login"]))?.unwrap_or_default())
    }

    pub fn set_login_config(&self, tenant: &str, c: &LoginConfig) -> Result<()> {
        self.put(&self.t.settings, &key(&[tenant, "login"]), c)
    }
}
