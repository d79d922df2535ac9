//! The rest of a tenant's realm besides users: postal addresses, token sessions,
//! login-failure counters (brute-force protection), and realm configuration
//! (LDAP components, app settings, resend-OTP counters).

use crate::keys::{key, last_part, prefix, Key};
use crate::store::{get, Store};
use crate::{Result, Secret, Tx};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::BTreeMap;

/// One postal address of a user (all optional but the postal code).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Address {
    /// Assigned when the address is added; unique among the user's addresses.
    pub id: String,
    /// The one required field.
    pub postal_code: String,
    /// First name of the addressee.
    pub first_name: Option<String>,
    /// Last name of the addressee.
    pub last_name: Option<String>,
    /// The caller's classification of the address.
    pub address_type: Option<String>,
    /// A label the user gave the address.
    pub address_title: Option<String>,
    /// City name.
    pub city: Option<String>,
    /// City code in the caller's reference data.
    pub city_code: Option<String>,
    /// Town name.
    pub town: Option<String>,
    /// Town code in the caller's reference data.
    pub town_code: Option<String>,
    /// District name.
    pub district: Option<String>,
    /// District code in the caller's reference data.
    pub district_code: Option<String>,
    /// The rest of the address, free text.
    pub address_details: Option<String>,
    /// Directions, free text.
    pub directions: Option<String>,
    /// Whether this is the user's default address.
    pub default_address: bool,
}

/// A login session: the one refresh token (by `jti`) that may still be used.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Session {
    /// The user the session belongs to.
    pub user_id: String,
    /// `jti` of the only refresh token that may still be used; each refresh moves it to the next.
    pub refresh_jti: String,
    /// When the session was opened, ms since the epoch.
    pub created_ms: u64,
}

/// Keycloak's per-user login-failure record.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LoginFailure {
    /// Consecutive failures since the last success or reset.
    pub num_failures: u32,
    /// When the last failure happened, ms since the epoch.
    pub last_failure_ms: u64,
    /// No login is accepted before this instant (ms).
    pub not_before_ms: u64,
}

/// An LDAP user-federation component; `bindCredential` is kept sealed apart.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LdapComponent {
    /// Component id, unique in the tenant.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Keycloak provider id (`ldap`).
    pub provider_id: String,
    /// Keycloak provider type (the user-storage SPI class).
    pub provider_type: String,
    /// The realm the component belongs to.
    pub parent_id: String,
    /// Keycloak's component configuration (multi-valued), without `bindCredential`.
    pub config: BTreeMap<String, Vec<String>>,
    /// The LDAP bind password, sealed under [`LdapComponent::secret_context`]; `None` when unset.
    pub bind_credential: Option<Secret>,
}

impl LdapComponent {
    /// The sealing context of a component's bind credential.
    pub fn secret_context(tenant: &str, id: &str) -> String {
        format!("tenant/{tenant}/ldap/{id}/bindCredential")
    }
}

/// Resend-OTP counter of one user.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OtpCounter {
    /// Start of the current counting window, ms since the epoch.
    pub window_start_ms: u64,
    /// Resends within that window.
    pub count: u32,
    /// No resend is accepted before this instant (ms); 0 when not locked.
    pub locked_until_ms: u64,
}

/// Reads of the realm records of this module; writes go through [`Tx`].
pub struct Identity<'a>(&'a Store);

impl Store {
    /// The realm records (addresses, sessions, failures, configuration) of this store.
    pub fn identity(&self) -> Identity<'_> {
        Identity(self)
    }
}

impl Identity<'_> {
    /// A user's addresses; empty when none.
    pub fn addresses(&self, tenant: &str, user_id: &str) -> Result<Vec<Address>> {
        Ok(get(&self.0.trees()?.user_addresses, &key(&[tenant, user_id]))?.unwrap_or_default())
    }

    /// A stored refresh session; `None` when absent or ended.
    pub fn session(&self, tenant: &str, id: &str) -> Result<Option<Session>> {
        get(&self.0.trees()?.user_sessions, &key(&[tenant, id]))
    }

    /// Forgets ended sessions whose every token has expired by `now` (ms);
    /// returns how many.
    pub fn sweep_ended_sessions(&self, now: u64) -> Result<usize> {
        let tree = &self.0.trees()?.ended_sessions;
        let mut n: usize = 0;
        for kv in tree.iter() {
            let (k, v) = kv?;
            let until: u64 = crate::codec::decode(&v)?;
            if until <= now {
                tree.remove(k)?;
                n = n.saturating_add(1);
            }
        }
        Ok(n)
    }

    /// A user's login-failure record; `None` after a success or a reset.
    pub fn login_failure(&self, tenant: &str, user_id: &str) -> Result<Option<LoginFailure>> {
        get(&self.0.trees()?.login_failures, &key(&[tenant, user_id]))
    }

    /// A realm configuration record at `tenant, parts...`.
    pub fn config<T: DeserializeOwned>(&self, tenant: &str, parts: &[&str]) -> Result<Option<T>> {
        get(&self.0.trees()?.realm_config, &config_key(tenant, parts))
    }

    /// The resend-OTP counter of a user.
    pub fn otp_counter(&self, tenant: &str, user_id: &str) -> Result<Option<OtpCounter>> {
        self.config(tenant, &["otp", user_id])
    }

    /// The users holding a resend-OTP counter, read outside a transaction: an
    /// operation on all of them checks [`Tx::otp_counters_generation`]
    /// against [`Identity::otp_counters_generation`] read before this.
    pub fn otp_counter_users(&self, tenant: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for kv in self.0.trees()?.realm_config.scan_prefix(prefix(&[tenant, "otp"])) {
            out.push(last_part(&kv?.0));
        }
        Ok(out)
    }

    /// Moved on by every new resend-OTP counter of the tenant.
    pub fn otp_counters_generation(&self, tenant: &str) -> Result<u64> {
        Ok(get(&self.0.trees()?.generations, &otp_generation_key(tenant))?.unwrap_or(0))
    }
}

impl Tx<'_> {
    /// A user's addresses, read inside the transaction; empty when none.
    pub fn addresses(&self, tenant: &str, user_id: &str) -> Result<Vec<Address>> {
        Ok(self.get(&self.t.user_addresses, &key(&[tenant, user_id]))?.unwrap_or_default())
    }

    /// Replaces a user's whole address list.
    pub fn put_addresses(&self, tenant: &str, user_id: &str, list: &[Address]) -> Result<()> {
        self.put(&self.t.user_addresses, &key(&[tenant, user_id]), &list)
    }

    /// A stored refresh session, read inside the transaction.
    pub fn session(&self, tenant: &str, id: &str) -> Result<Option<Session>> {
        self.get(&self.t.user_sessions, &key(&[tenant, id]))
    }

    /// Stores a refresh session (new, or with its rotated `jti`).
    pub fn put_session(&self, tenant: &str, id: &str, s: &Session) -> Result<()> {
        self.put(&self.t.user_sessions, &key(&[tenant, id]), s)
    }

    /// Removes a refresh session (no error when absent); [`Tx::end_session`] also refuses its tokens.
    pub fn delete_session(&self, tenant: &str, id: &str) -> Result<()> {
        self.remove(&self.t.user_sessions, &key(&[tenant, id])).map(drop)
    }

    /// Ends session `id` (stored or not: a client's token has none): its
    /// refresh token stops working and its access tokens are refused until
    /// `until` (ms), when the last of them has expired.
    pub fn end_session(&self, tenant: &str, id: &str, until: u64) -> Result<()> {
        self.delete_session(tenant, id)?;
        self.put(&self.t.ended_sessions, &key(&[tenant, id]), &until)
    }

    /// A user's login-failure record, read inside the transaction.
    pub fn login_failure(&self, tenant: &str, user_id: &str) -> Result<Option<LoginFailure>> {
        self.get(&self.t.login_failures, &key(&[tenant, user_id]))
    }

    /// Stores a user's login-failure record.
    pub fn put_login_failure(&self, tenant: &str, user_id: &str, f: &LoginFailure) -> Result<()> {
        self.put(&self.t.login_failures, &key(&[tenant, user_id]), f)
    }

    /// Forgets a user's login failures (after a success or an admin reset).
    pub fn clear_login_failure(&self, tenant: &str, user_id: &str) -> Result<()> {
        self.remove(&self.t.login_failures, &key(&[tenant, user_id])).map(drop)
    }

    /// A realm configuration record at `tenant, parts...`.
    pub fn config<T: DeserializeOwned>(&self, tenant: &str, parts: &[&str]) -> Result<Option<T>> {
        self.get(&self.t.realm_config, &config_key(tenant, parts))
    }

    /// Stores a realm configuration record. Resend-OTP counters have their
    /// own methods ([`Tx::put_otp_counter`]).
    pub fn put_config<T: Serialize>(&self, tenant: &str, parts: &[&str], value: &T) -> Result<()> {
        self.put(&self.t.realm_config, &config_key(tenant, parts), value)
    }

    /// Stores a new realm configuration record; `Conflict(what)` if one is there.
    pub fn insert_config<T: Serialize>(
        &self,
        tenant: &str,
        parts: &[&str],
        value: &T,
        what: &'static str,
    ) -> Result<()> {
        let k = config_key(tenant, parts);
        if self.has(&self.t.realm_config, &k)? {
            return Err(crate::Error::Conflict(what));
        }
        self.put(&self.t.realm_config, &k, value)
    }

    /// A user's resend-OTP counter, read inside the transaction.
    pub fn otp_counter(&self, tenant: &str, user_id: &str) -> Result<Option<OtpCounter>> {
        self.config(tenant, &["otp", user_id])
    }

    /// Stores a user's resend-OTP counter; a new one moves the tenant's
    /// [`otp counters generation`](Identity::otp_counters_generation) on.
    pub fn put_otp_counter(&self, tenant: &str, user_id: &str, c: &OtpCounter) -> Result<()> {
        let k = config_key(tenant, &["otp", user_id]);
        if !self.has(&self.t.realm_config, &k)? {
            let g = otp_generation_key(tenant);
            let next = self.get::<u64>(&self.t.generations, &g)?.unwrap_or(0).wrapping_add(1);
            self.put(&self.t.generations, &g, &next)?;
        }
        self.put(&self.t.realm_config, &k, c)
    }

    /// Removes a user's resend-OTP counter; whether there was one.
    pub fn delete_otp_counter(&self, tenant: &str, user_id: &str) -> Result<bool> {
        self.remove(&self.t.realm_config, &config_key(tenant, &["otp", user_id]))
    }

    /// See [`Identity::otp_counters_generation`].
    pub fn otp_counters_generation(&self, tenant: &str) -> Result<u64> {
        Ok(self.get(&self.t.generations, &otp_generation_key(tenant))?.unwrap_or(0))
    }
}

fn otp_generation_key(tenant: &str) -> Key {
    key(&[tenant, "otp-counters"])
}

fn config_key(tenant: &str, parts: &[&str]) -> Key {
    let mut all = vec![tenant];
    all.extend_from_slice(parts);
    key(&all)
}

/// The resend-OTP brute-force policy of a tenant (`realm_config` at `otp-policy`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OtpPolicy {
    /// When false, resends are not counted or limited.
    pub enabled: bool,
    /// Resends accepted within one window.
    pub max_resends: u32,
    /// Length of the counting window, seconds.
    pub window_seconds: u64,
}

impl Default for OtpPolicy {
    fn default() -> Self {
        OtpPolicy { enabled: true, max_resends: 5, window_seconds: 900 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_otp_counter_moves_the_generation_and_a_count_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&crate::test_options(dir.path())).unwrap();
        let c = OtpCounter { count: 1, ..OtpCounter::default() };
        s.transact(|tx| tx.put_otp_counter("t", "u1", &c)).unwrap();
        s.transact(|tx| tx.put_otp_counter("t", "u1", &OtpCounter { count: 2, ..c.clone() })).unwrap();
        assert_eq!(s.identity().otp_counters_generation("t").unwrap(), 1);
        s.transact(|tx| tx.put_otp_counter("t", "u2", &c)).unwrap();
        s.transact(|tx| tx.put_config("t", &["otp-policy"], &OtpPolicy::default())).unwrap();
        assert_eq!(s.identity().otp_counters_generation("t").unwrap(), 2);
        assert_eq!(s.identity().otp_counter_users("t").unwrap(), ["u1", "u2"], "the policy is no counter");
        assert!(s.transact(|tx| tx.delete_otp_counter("t", "u1")).unwrap());
        assert!(!s.transact(|tx| tx.delete_otp_counter("t", "u1")).unwrap());
        assert_eq!(s.identity().otp_counter("t", "u2").unwrap().unwrap().count, 1);
    }

    #[test]
    fn an_ended_session_is_kept_until_its_tokens_expire() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&crate::test_options(dir.path())).unwrap();
        let session = Session { user_id: "u".into(), refresh_jti: "j".into(), created_ms: 1 };
        s.transact(|tx| tx.put_session("t", "s1", &session)).unwrap();
        s.transact(|tx| tx.end_session("t", "s1", 5_000)).unwrap();
        s.transact(|tx| tx.end_session("t", "s2", 9_000)).unwrap();
        assert!(s.identity().session("t", "s1").unwrap().is_none(), "the refresh session is gone");
        let ended = |tenant, id| futures::executor::block_on(s.user_token_standing(tenant, id, "u")).unwrap().0;
        assert!(ended("t", "s1"));
        assert!(!ended("other", "s1"), "per tenant");
        assert_eq!(s.identity().sweep_ended_sessions(5_000).unwrap(), 1);
        assert!(!ended("t", "s1"));
        assert!(ended("t", "s2"), "not expired yet");
    }
}
