//! The rest of a tenant's realm besides users: postal addresses, token sessions,
//! login-failure counters (brute-force protection), and realm configuration
//! (LDAP components, app settings, resend-OTP counters).

use crate::keys::{key, prefix};
use crate::store::{get, put, Store};
use crate::{codec, Result, Secret};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::BTreeMap;

/// One postal address of a user (all optional but the postal code).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Address {
    pub id: String,
    pub postal_code: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub address_type: Option<String>,
    pub address_title: Option<String>,
    pub city: Option<String>,
    pub city_code: Option<String>,
    pub town: Option<String>,
    pub town_code: Option<String>,
    pub district: Option<String>,
    pub district_code: Option<String>,
    pub address_details: Option<String>,
    pub directions: Option<String>,
    pub default_address: bool,
}

/// A login session: the one refresh token (by `jti`) that may still be used.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Session {
    pub user_id: String,
    pub refresh_jti: String,
    pub created_ms: u64,
}

/// Keycloak's per-user login-failure record.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LoginFailure {
    pub num_failures: u32,
    pub last_failure_ms: u64,
    /// No login is accepted before this instant (ms).
    pub not_before_ms: u64,
}

/// An LDAP user-federation component; `bindCredential` is kept sealed apart.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LdapComponent {
    pub id: String,
    pub name: String,
    pub provider_id: String,
    pub provider_type: String,
    pub parent_id: String,
    pub config: BTreeMap<String, Vec<String>>,
    pub bind_credential: Option<Secret>,
}

impl LdapComponent {
    pub fn secret_context(tenant: &str, id: &str) -> String {
        format!("tenant/{tenant}/ldap/{id}/bindCredential")
    }
}

/// Resend-OTP counter of one user.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OtpCounter {
    pub window_start_ms: u64,
    pub count: u32,
    pub locked_until_ms: u64,
}

pub struct Identity<'a>(&'a Store);

impl Store {
    pub fn identity(&self) -> Identity<'_> {
        Identity(self)
    }
}

impl Identity<'_> {
    pub fn addresses(&self, tenant: &str, user_id: &str) -> Result<Vec<Address>> {
        Ok(get(&self.0.trees()?.user_addresses, &key(&[tenant, user_id]))?.unwrap_or_default())
    }

    pub fn put_addresses(&self, tenant: &str, user_id: &str, list: &[Address]) -> Result<()> {
        put(&self.0.trees()?.user_addresses, &key(&[tenant, user_id]), &list)
    }

    pub fn session(&self, tenant: &str, id: &str) -> Result<Option<Session>> {
        get(&self.0.trees()?.user_sessions, &key(&[tenant, id]))
    }

    pub fn put_session(&self, tenant: &str, id: &str, s: &Session) -> Result<()> {
        put(&self.0.trees()?.user_sessions, &key(&[tenant, id]), s)
    }

    /// Moves the session to `next` only if it still holds `current`: true when
    /// it did (a refresh token is used once), false when it was used already.
    pub fn rotate_session(&self, tenant: &str, id: &str, current: &Session, next: &Session) -> Result<bool> {
        let k = key(&[tenant, id]);
        let old = codec::encode(current)?;
        let new = codec::encode(next)?;
        Ok(self.0.trees()?.user_sessions.compare_and_swap(k, Some(old), Some(new))?.is_ok())
    }

    pub fn delete_session(&self, tenant: &str, id: &str) -> Result<()> {
        self.0.trees()?.user_sessions.remove(key(&[tenant, id]))?;
        Ok(())
    }

    pub fn login_failure(&self, tenant: &str, user_id: &str) -> Result<Option<LoginFailure>> {
        get(&self.0.trees()?.login_failures, &key(&[tenant, user_id]))
    }

    pub fn put_login_failure(&self, tenant: &str, user_id: &str, f: &LoginFailure) -> Result<()> {
        put(&self.0.trees()?.login_failures, &key(&[tenant, user_id]), f)
    }

    pub fn clear_login_failure(&self, tenant: &str, user_id: &str) -> Result<()> {
        self.0.trees()?.login_failures.remove(key(&[tenant, user_id]))?;
        Ok(())
    }

    /// A realm configuration record at `tenant, parts...`.
    pub fn config<T: DeserializeOwned>(&self, tenant: &str, parts: &[&str]) -> Result<Option<T>> {
        get(&self.0.trees()?.realm_config, &config_key(tenant, parts))
    }

    pub fn put_config<T: Serialize>(&self, tenant: &str, parts: &[&str], value: &T) -> Result<()> {
        put(&self.0.trees()?.realm_config, &config_key(tenant, parts), value)
    }

    pub fn delete_config(&self, tenant: &str, parts: &[&str]) -> Result<()> {
        self.0.trees()?.realm_config.remove(config_key(tenant, parts))?;
        Ok(())
    }

    /// Removes every configuration record under `tenant, parts...`; returns how many.
    pub fn delete_config_prefix(&self, tenant: &str, parts: &[&str]) -> Result<usize> {
        let tree = &self.0.trees()?.realm_config;
        let mut all = vec![tenant];
        all.extend_from_slice(parts);
        let mut n = 0;
        for kv in tree.scan_prefix(prefix(&all)) {
            let (k, _) = kv?;
            tree.remove(k)?;
            n += 1;
        }
        Ok(n)
    }
}

fn config_key(tenant: &str, parts: &[&str]) -> Vec<u8> {
    let mut all = vec![tenant];
    all.extend_from_slice(parts);
    key(&all)
}

/// The resend-OTP brute-force policy of a tenant (`realm_config` at `otp-policy`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OtpPolicy {
    pub enabled: bool,
    /// Resends accepted within one window.
    pub max_resends: u32,
    pub window_seconds: u64,
}

impl Default for OtpPolicy {
    fn default() -> Self {
        OtpPolicy { enabled: true, max_resends: 5, window_seconds: 900 }
    }
}
