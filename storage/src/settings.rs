//! Per-tenant runtime settings, one small record each.

use crate::keys::key;
use crate::store::{get, put, Store};
use crate::Result;
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

    pub fn set_login(&self, tenant: &str, c: &LoginConfig) -> Result<()> {
        put(&self.0.trees()?.settings, &key(&[tenant, "login"]), c)
    }
}
