//! The state the simulators share: counters, faults, registered credentials, issued access
//! tokens. One per [`crate::Simulators`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dashmap::DashMap;

use crate::credentials::Registry;
use crate::faults::FaultState;
use crate::record::RequestLog;
use crate::stats::{Counters, Stats};
use crate::util::{now_ms, random_alnum};
use crate::Provider;

/// An OAuth access token the FCM or HMS simulator granted.
pub(crate) struct AccessToken {
    pub(crate) provider: Provider,
    /// FCM: the project id; HMS: the client (app) id.
    pub(crate) owner: Arc<str>,
    /// Its grant number ([`crate::faults::FaultState::grant`]).
    pub(crate) grant: u64,
    pub(crate) expires_ms: u64,
}

/// Why an access token was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TokenProblem {
    /// Never issued (or issued by the other provider).
    Unknown,
    /// Past its lifetime, or expired by the `expire_access_tokens` fault.
    Expired,
    /// Issued for another project / app.
    WrongOwner,
}

pub(crate) struct SimState {
    counters: [Counters; 4],
    logs: [RequestLog; 4],
    pub(crate) faults: FaultState,
    pub(crate) registry: Registry,
    access_tokens: DashMap<String, AccessToken>,
    /// APNs: per key id, the `iat` of the last provider token accepted, for Apple's
    /// "no more than one new token per 20 minutes" rule.
    pub(crate) apns_last_iat: Mutex<HashMap<String, u64>>,
    pub(crate) max_concurrent_streams: u32,
    pub(crate) ca_pem: String,
    /// What the Web Push simulator derives its subscriptions' keys from.
    pub(crate) webpush_keys: crate::webpush::SubscriptionKeys,
}

impl SimState {
    pub(crate) fn new(
        registry: Registry,
        ca_pem: String,
        max_concurrent_streams: u32,
        webpush_keys: crate::webpush::SubscriptionKeys,
    ) -> Self {
        SimState {
            counters: Default::default(),
            logs: Default::default(),
            faults: FaultState::default(),
            registry,
            access_tokens: DashMap::new(),
            apns_last_iat: Mutex::new(HashMap::new()),
            max_concurrent_streams,
            ca_pem,
            webpush_keys,
        }
    }

    pub(crate) fn counters(&self, p: Provider) -> &Counters {
        &self.counters[p.index()]
    }

    pub(crate) fn log(&self, p: Provider) -> &RequestLog {
        &self.logs[p.index()]
    }

    pub(crate) fn stats(&self) -> Stats {
        Stats {
            apns: self.counters(Provider::Apns).snapshot(),
            fcm: self.counters(Provider::Fcm).snapshot(),
            hms: self.counters(Provider::Hms).snapshot(),
            webpush: self.counters(Provider::Webpush).snapshot(),
        }
    }

    /// Zeroes counters, clears recorded requests and faults, and forgets the APNs provider
    /// token history (so a restarted Herald signing a new token is not refused with
    /// `TooManyProviderTokenUpdates`). Issued OAuth access tokens stay valid, as Herald
    /// caches them.
    pub(crate) fn reset(&self) {
        for p in Provider::ALL {
            self.counters(p).reset();
            self.log(p).clear();
        }
        self.faults.set(Default::default());
        self.apns_last_iat.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Grants an access token valid for `lifetime_secs`.
    pub(crate) fn grant_token(&self, provider: Provider, owner: Arc<str>, prefix: &str, lifetime_secs: u64) -> String {
        let token = format!("{prefix}{}", random_alnum(64));
        let now = now_ms();
        self.access_tokens.insert(
            token.clone(),
            AccessToken {
                provider,
                owner,
                grant: self.faults.grant(),
                expires_ms: now.saturating_add(lifetime_secs.saturating_mul(1000)),
            },
        );
        self.counters(provider).token_grants.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        token
    }

    /// Checks an access token presented to `provider` for `owner`.
    pub(crate) fn check_token(&self, provider: Provider, token: &str, owner: &str) -> Result<(), TokenProblem> {
        let Some(t) = self.access_tokens.get(token) else {
            return Err(TokenProblem::Unknown);
        };
        if t.provider != provider {
            return Err(TokenProblem::Unknown);
        }
        let now = now_ms();
        if now >= t.expires_ms || t.grant < self.faults.tokens_expired_before(provider) {
            return Err(TokenProblem::Expired);
        }
        if &*t.owner != owner {
            return Err(TokenProblem::WrongOwner);
        }
        Ok(())
    }
}
