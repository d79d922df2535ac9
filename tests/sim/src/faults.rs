//! Fault injection: what `POST /faults` and [`crate::Simulators::set_faults`] configure.
//!
//! A [`Faults`] document replaces the previous one entirely; `{}` clears every fault. Each
//! provider has its own section; a section's faults apply to every token unless a rule names
//! `tokens`. See the crate documentation for the JSON shape.
//!
//! Hot-path cost when no fault is set: one relaxed atomic load per request.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use http::header::RETRY_AFTER;
use http::{HeaderValue, Response};
use serde::{Deserialize, Serialize};

use crate::util::Body;
use crate::Provider;

/// The faults of all four simulators.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// Faults of the APNs simulator.
    #[serde(default, skip_serializing_if = "ProviderFaults::is_empty")]
    pub apns: ProviderFaults,
    /// Faults of the FCM simulator.
    #[serde(default, skip_serializing_if = "ProviderFaults::is_empty")]
    pub fcm: ProviderFaults,
    /// Faults of the HMS simulator.
    #[serde(default, skip_serializing_if = "ProviderFaults::is_empty")]
    pub hms: ProviderFaults,
    /// Faults of the Web Push simulator (`tokens` and `dead_tokens` are subscription ids).
    #[serde(default, skip_serializing_if = "ProviderFaults::is_empty")]
    pub webpush: ProviderFaults,
}

impl Faults {
    /// The section of one provider.
    pub fn provider(&self, p: Provider) -> &ProviderFaults {
        match p {
            Provider::Apns => &self.apns,
            Provider::Fcm => &self.fcm,
            Provider::Hms => &self.hms,
            Provider::Webpush => &self.webpush,
        }
    }

    /// Whether no fault at all is set.
    pub fn is_empty(&self) -> bool {
        self.apns.is_empty() && self.fcm.is_empty() && self.hms.is_empty() && self.webpush.is_empty()
    }
}

/// The faults of one simulator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderFaults {
    /// Tokens answered as unregistered (APNs 410 `Unregistered`, FCM 404 `UNREGISTERED`,
    /// HMS illegal token), in addition to the built-in `dead…` prefix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dead_tokens: Vec<String>,
    /// Error answers, tried in order; the first rule that fires answers the request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<StatusFault>,
    /// Delay before every answer (token endpoints included), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// Each connection serves this many requests (HTTP/2 streams), then is shut down
    /// gracefully with GOAWAY: requests in flight complete, the client must reconnect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goaway_after_streams: Option<u64>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised on new connections, instead of the
    /// configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_streams: Option<u32>,
    /// Probability (0.0–1.0) that a request, instead of being answered, has its whole
    /// connection dropped (TCP close without GOAWAY).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_connection_rate: Option<f64>,
    /// FCM and HMS: treat every access token issued so far as expired (FCM 401
    /// `UNAUTHENTICATED`, HMS 401 `80200003`), to exercise token refresh. Tokens granted
    /// after the fault is set are valid.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expire_access_tokens: bool,
    /// A further delay drawn uniformly from 0 to this many milliseconds per answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_jitter_ms: Option<u64>,
    /// Seed of the connection-reset and latency-jitter draws; random when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// FCM and HMS: the `expires_in` of OAuth token answers, any JSON value (`0`,
    /// `9223372036854775808`, `-5`, `"soon"`), instead of the real lifetime. Only the
    /// answer says it: the tokens stay valid for the real lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<serde_json::Value>,
}

impl ProviderFaults {
    /// Whether this section sets nothing.
    pub fn is_empty(&self) -> bool {
        self == &ProviderFaults::default()
    }
}

/// Which requests a [`StatusFault`] applies to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultEndpoint {
    /// Send requests (the default).
    #[default]
    Send,
    /// OAuth token requests (FCM, HMS).
    Token,
    /// Both.
    Any,
}

/// "Answer `status` to the next `count` requests" or "to a `rate` share of requests".
///
/// With `count` only, the next `count` matching requests fail. With `rate` only, each
/// matching request fails with that probability, for ever (deterministic for a given `seed`).
/// With both, requests fail at that rate until `count` have failed. With neither, every
/// matching request fails.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusFault {
    /// The HTTP status: 429, 500 and 503 are the usual ones; 400, 403, 404, 410 and 413 work
    /// too. The body is the provider's own error for that status (see the README).
    pub status: u16,
    /// How many requests fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// The probability that a matching request fails, 0.0–1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Seed of the `rate` draws; random when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Only requests to these tokens (HMS: carrying one of them); all when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
    /// `retry-after` header, in seconds. Defaults to 1 for 429 and to none otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// `retry-after` header written as given, any text (`"1e20"`, `"-5"`, an HTTP date);
    /// replaces `retry_after`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_header: Option<String>,
    /// What the answer's body does after the provider's error body: grow by N bytes
    /// (`{"oversized": N}`), never end (`"endless"`), or trickle one byte every N ms,
    /// never ending (`{"drip_ms": N}`). The filler is spaces, so the body still
    /// parses as the provider's JSON once a client stops reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyFault>,
    /// Replaces the provider's reason (APNs `reason`, FCM `errorCode`, HMS `code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Send requests (default), token requests, or any.
    #[serde(default, skip_serializing_if = "is_default_endpoint")]
    pub endpoint: FaultEndpoint,
}

/// A hostile answer body (see [`StatusFault::body`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyFault {
    /// The body grows by this many bytes.
    Oversized(u64),
    /// The body never ends: filler as fast as the client reads it.
    Endless,
    /// One byte every this many milliseconds, never ending.
    DripMs(u64),
}

fn is_default_endpoint(e: &FaultEndpoint) -> bool {
    *e == FaultEndpoint::Send
}

/// A status fault that fired: how to answer.
#[derive(Debug, Clone)]
pub(crate) struct FiredFault {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<u64>,
    pub(crate) retry_after_header: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) body: Option<BodyFault>,
}

impl FiredFault {
    /// Adds the fault's `retry-after` (`retry_after_header` as written, else
    /// `retry_after` seconds) to the provider's error answer, and marks its body
    /// for the body fault (the listener applies it, see `crate::body`).
    pub(crate) fn apply(&self, mut resp: Response<Body>) -> Response<Body> {
        let value = match &self.retry_after_header {
            Some(raw) => HeaderValue::from_str(raw).ok(),
            None => self.retry_after.map(HeaderValue::from),
        };
        if let Some(v) = value {
            resp.headers_mut().insert(RETRY_AFTER, v);
        }
        if let Some(b) = self.body {
            resp.extensions_mut().insert(b);
        }
        resp
    }
}

/// A status rule with its run-time state.
struct ActiveRule {
    spec: StatusFault,
    tokens: HashSet<String>,
    remaining: Option<AtomicU64>,
    draws: AtomicU64,
    seed: u64,
}

/// A rate draw: true with probability `rate`, deterministic in (seed, n).
fn draw(seed: u64, n: u64, rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    if rate <= 0.0 || rate.is_nan() {
        return false;
    }
    ((splitmix(seed, n) >> 11) as f64 / (1u64 << 53) as f64) < rate
}

/// The `n`th value of SplitMix64 from `seed`: for one seed, a bijection of
/// `n`, so distinct `n` never collide (the load benchmark's device tokens).
pub fn splitmix(seed: u64, n: u64) -> u64 {
    let mut z = seed.wrapping_add(n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl ActiveRule {
    fn new(spec: StatusFault) -> ActiveRule {
        ActiveRule {
            tokens: spec.tokens.iter().cloned().collect(),
            remaining: spec.count.map(AtomicU64::new),
            draws: AtomicU64::new(0),
            seed: spec.seed.unwrap_or_else(rand::random),
            spec,
        }
    }

    fn applies_to(&self, endpoint: FaultEndpoint) -> bool {
        self.spec.endpoint == FaultEndpoint::Any || self.spec.endpoint == endpoint
    }

    fn matches<'a>(&self, mut tokens: impl Iterator<Item = &'a str>) -> bool {
        self.tokens.is_empty() || tokens.any(|t| self.tokens.contains(t))
    }

    fn fire(&self) -> Option<FiredFault> {
        if let Some(rate) = self.spec.rate {
            let n = self.draws.fetch_add(1, Ordering::Relaxed);
            if !draw(self.seed, n, rate) {
                return None;
            }
        }
        if let Some(remaining) = &self.remaining {
            remaining.fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1)).ok()?;
        }
        Some(FiredFault {
            status: self.spec.status,
            retry_after: self.spec.retry_after.or((self.spec.status == 429).then_some(1)),
            retry_after_header: self.spec.retry_after_header.clone(),
            reason: self.spec.reason.clone(),
            body: self.spec.body,
        })
    }
}

/// One provider's faults, compiled for fast checks.
pub(crate) struct ActiveFaults {
    dead: HashSet<String>,
    rules: Vec<ActiveRule>,
    pub(crate) latency_ms: Option<u64>,
    pub(crate) goaway_after_streams: Option<u64>,
    pub(crate) max_concurrent_streams: Option<u32>,
    reset_rate: Option<f64>,
    reset_draws: AtomicU64,
    reset_seed: u64,
    jitter_ms: Option<u64>,
    jitter_draws: AtomicU64,
    pub(crate) expires_in: Option<serde_json::Value>,
}

impl ActiveFaults {
    fn new(spec: &ProviderFaults) -> ActiveFaults {
        ActiveFaults {
            dead: spec.dead_tokens.iter().cloned().collect(),
            rules: spec.status.iter().cloned().map(ActiveRule::new).collect(),
            latency_ms: spec.latency_ms.filter(|ms| *ms > 0),
            goaway_after_streams: spec.goaway_after_streams.filter(|n| *n > 0),
            max_concurrent_streams: spec.max_concurrent_streams,
            reset_rate: spec.reset_connection_rate.filter(|r| *r > 0.0),
            reset_draws: AtomicU64::new(0),
            reset_seed: spec.seed.unwrap_or_else(rand::random),
            jitter_ms: spec.latency_jitter_ms.filter(|ms| *ms > 0),
            jitter_draws: AtomicU64::new(0),
            expires_in: spec.expires_in.clone(),
        }
    }

    /// Whether `token` was declared dead by a fault.
    pub(crate) fn is_dead(&self, token: &str) -> bool {
        !self.dead.is_empty() && self.dead.contains(token)
    }

    /// The first status rule that fires for a request to `tokens` at `endpoint`.
    pub(crate) fn status_for<'a>(
        &self,
        endpoint: FaultEndpoint,
        tokens: impl Iterator<Item = &'a str> + Clone,
    ) -> Option<FiredFault> {
        self.rules.iter().filter(|r| r.applies_to(endpoint) && r.matches(tokens.clone())).find_map(ActiveRule::fire)
    }

    /// The delay before this answer: the fixed latency plus a seeded draw of the jitter.
    pub(crate) fn delay_ms(&self) -> Option<u64> {
        let jitter = self.jitter_ms.map(|max| {
            let n = self.jitter_draws.fetch_add(1, Ordering::Relaxed);
            splitmix(self.reset_seed ^ 0x6A09_E667_F3BC_C908, n).checked_rem(max.saturating_add(1)).unwrap_or(0)
        });
        match (self.latency_ms, jitter) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        }
    }

    /// Whether this request should drop its connection.
    pub(crate) fn should_reset(&self) -> bool {
        self.reset_rate
            .is_some_and(|rate| draw(self.reset_seed, self.reset_draws.fetch_add(1, Ordering::Relaxed), rate))
    }
}

/// The faults in force, swapped as a whole by `set`.
#[derive(Default)]
pub(crate) struct FaultState {
    /// Per provider: is any fault set? Checked before taking the lock.
    active: [AtomicBool; 4],
    current: RwLock<Current>,
    /// Access tokens granted so far, all providers (see [`FaultState::grant`]).
    grants: AtomicU64,
}

#[derive(Default)]
struct Current {
    spec: Faults,
    compiled: [Option<Arc<ActiveFaults>>; 4],
    /// Access tokens granted before this grant number count as expired, per
    /// provider: the grants made when `expire_access_tokens` was last switched on
    /// (a count, not a clock, so a token granted in the same millisecond is
    /// told apart).
    expired_before: [u64; 4],
}

impl FaultState {
    /// Replaces every fault.
    pub(crate) fn set(&self, faults: Faults) {
        let mut cur = self.current.write().unwrap_or_else(|p| p.into_inner());
        for p in Provider::ALL {
            let spec = faults.provider(p);
            let i = p.index();
            if spec.expire_access_tokens && !cur.spec.provider(p).expire_access_tokens {
                cur.expired_before[i] = self.grants.load(Ordering::Acquire).saturating_add(1);
            }
            if !spec.expire_access_tokens {
                cur.expired_before[i] = 0;
            }
            cur.compiled[i] = (!spec.is_empty()).then(|| Arc::new(ActiveFaults::new(spec)));
            self.active[i].store(cur.compiled[i].is_some(), Ordering::Release);
        }
        cur.spec = faults;
    }

    /// The faults as last set.
    pub(crate) fn get(&self) -> Faults {
        self.current.read().unwrap_or_else(|p| p.into_inner()).spec.clone()
    }

    /// The active faults of one provider, or `None` (cheaply) when it has none.
    pub(crate) fn of(&self, p: Provider) -> Option<Arc<ActiveFaults>> {
        if !self.active[p.index()].load(Ordering::Acquire) {
            return None;
        }
        self.current.read().unwrap_or_else(|pe| pe.into_inner()).compiled[p.index()].clone()
    }

    /// Numbers an access token being granted (from 1), for `expire_access_tokens`.
    pub(crate) fn grant(&self) -> u64 {
        self.grants.fetch_add(1, Ordering::AcqRel).saturating_add(1)
    }

    /// Access tokens of `p` with a grant number below this count as expired; 0 if none.
    pub(crate) fn tokens_expired_before(&self, p: Provider) -> u64 {
        if !self.active[p.index()].load(Ordering::Acquire) {
            return 0;
        }
        self.current.read().unwrap_or_else(|pe| pe.into_inner()).expired_before[p.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_seeded_and_bounded() {
        let spec =
            ProviderFaults { latency_ms: Some(5), latency_jitter_ms: Some(10), seed: Some(7), ..Default::default() };
        let (a, b) = (ActiveFaults::new(&spec), ActiveFaults::new(&spec));
        let da: Vec<u64> = (0..100).map(|_| a.delay_ms().unwrap()).collect();
        let db: Vec<u64> = (0..100).map(|_| b.delay_ms().unwrap()).collect();
        assert_eq!(da, db, "one seed, one sequence");
        assert!(da.iter().all(|d| (5..=15).contains(d)));
        assert!(da.iter().collect::<HashSet<_>>().len() > 5, "the delays vary");
        assert_eq!(ActiveFaults::new(&ProviderFaults::default()).delay_ms(), None);
    }

    #[test]
    fn count_rule_fires_n_times() {
        let rule = ActiveRule::new(StatusFault { status: 429, count: Some(2), ..Default::default() });
        assert!(rule.fire().is_some());
        let f = rule.fire().unwrap();
        assert_eq!(f.retry_after, Some(1));
        assert!(rule.fire().is_none());
    }

    #[test]
    fn rate_is_deterministic_and_close() {
        let hits = |seed| (0..10_000).filter(|n| draw(seed, *n, 0.1)).count();
        assert_eq!(hits(7), hits(7));
        let h = hits(7);
        assert!((800..1200).contains(&h), "{h}");
    }

    #[test]
    fn hostile_answers_are_configured_as_written() {
        let faults: Faults = serde_json::from_str(
            r#"{"apns": {"status": [{"status": 429, "retry_after_header": "1e20", "body": "endless"},
                                     {"status": 503, "body": {"oversized": 100000}},
                                     {"status": 500, "body": {"drip_ms": 250}}]},
                "fcm": {"expires_in": 9223372036854775808}}"#,
        )
        .unwrap();
        let rules = &faults.apns.status;
        assert_eq!(rules[0].body, Some(BodyFault::Endless));
        assert_eq!(rules[1].body, Some(BodyFault::Oversized(100_000)));
        assert_eq!(rules[2].body, Some(BodyFault::DripMs(250)));
        assert_eq!(faults.fcm.expires_in, Some(serde_json::json!(9_223_372_036_854_775_808u64)));
        let fired = ActiveRule::new(rules[0].clone()).fire().unwrap();
        let resp = fired.apply(crate::util::json_response(http::StatusCode::TOO_MANY_REQUESTS, "{}"));
        assert_eq!(resp.headers()[RETRY_AFTER], "1e20", "written as given, instead of the 429 default");
        assert_eq!(resp.extensions().get::<BodyFault>(), Some(&BodyFault::Endless));
    }

    #[test]
    fn token_filter() {
        let state = FaultState::default();
        state.set(Faults {
            apns: ProviderFaults {
                status: vec![StatusFault { status: 500, tokens: vec!["a".into()], ..Default::default() }],
                ..Default::default()
            },
            ..Default::default()
        });
        let f = state.of(Provider::Apns).unwrap();
        assert!(f.status_for(FaultEndpoint::Send, ["b"].into_iter()).is_none());
        assert!(f.status_for(FaultEndpoint::Send, ["a"].into_iter()).is_some());
        assert!(f.status_for(FaultEndpoint::Token, ["a"].into_iter()).is_none());
        assert!(state.of(Provider::Fcm).is_none());
        state.set(serde_json::from_str("{}").unwrap());
        assert!(state.of(Provider::Apns).is_none());
    }
}
