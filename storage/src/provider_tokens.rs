//! Provider auth tokens that must outlive a restart: APNs accepts a new provider
//! token for a key at most every 20 minutes, so a restarted engine reuses the
//! token its predecessor signed.

use crate::keys::key;
use crate::store::{get, put, Store};
use crate::Result;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderToken {
    /// The key the token was signed with (APNs `kid`).
    pub key_id: String,
    pub token: String,
    /// Unix seconds of issue.
    pub issued_at: u64,
}

pub struct ProviderTokens<'a>(&'a Store);

impl Store {
    pub fn provider_tokens(&self) -> ProviderTokens<'_> {
        ProviderTokens(self)
    }
}

impl ProviderTokens<'_> {
    pub fn get(&self, tenant: &str, app: &str, provider: &str) -> Result<Option<ProviderToken>> {
        get(&self.0.trees()?.provider_tokens, &key(&[tenant, app, provider]))
    }

    pub fn put(&self, tenant: &str, app: &str, provider: &str, token: &ProviderToken) -> Result<()> {
        put(&self.0.trees()?.provider_tokens, &key(&[tenant, app, provider]), token)
    }
}
