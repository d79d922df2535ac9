//! Provider auth tokens that must outlive a restart: APNs accepts a new provider
//! token for a key at most every 20 minutes, so a restarted engine reuses the
//! token its predecessor signed.

use crate::keys::key;
use crate::store::{get, put, Store};
use crate::Result;
use serde::{Deserialize, Serialize};

/// A provider auth token (APNs JWT) as last signed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderToken {
    /// The key the token was signed with (APNs `kid`).
    pub key_id: String,
    /// The signed token (a JWT).
    pub token: String,
    /// Unix seconds of issue.
    pub issued_at: u64,
}

/// The persisted provider tokens, written outside transactions.
pub struct ProviderTokens<'a>(&'a Store);

impl Store {
    /// The provider tokens of this store.
    pub fn provider_tokens(&self) -> ProviderTokens<'_> {
        ProviderTokens(self)
    }
}

impl ProviderTokens<'_> {
    /// The token last signed for an app and provider; `None` before the first.
    pub fn get(&self, tenant: &str, app: &str, provider: &str) -> Result<Option<ProviderToken>> {
        get(&self.0.trees()?.provider_tokens, &key(&[tenant, app, provider]))
    }

    /// Stores the token just signed, replacing the previous one.
    pub fn put(&self, tenant: &str, app: &str, provider: &str, token: &ProviderToken) -> Result<()> {
        put(&self.0.trees()?.provider_tokens, &key(&[tenant, app, provider]), token)
    }
}
