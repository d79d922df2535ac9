//! Where the providers are and how hard to push them.

use crate::guard::EndpointPolicy;
use crate::pool::PoolLimits;
use std::time::Duration;

/// Base URLs of the providers; the defaults are the real services, tests and
/// the demo point them at the simulators.
#[derive(Clone, Debug)]
pub struct Endpoints {
    /// APNs for production builds.
    pub apns: String,
    /// APNs for development builds (apps with `iosIsDevelopment`).
    pub apns_sandbox: String,
    /// FCM's HTTP v1 API.
    pub fcm: String,
    /// Push Kit's send API.
    pub hms: String,
    /// Push Kit's OAuth token endpoint (client-credentials grant).
    pub hms_token: String,
}

impl Default for Endpoints {
    fn default() -> Self {
        Endpoints {
            apns: "https://api.push.apple.com".into(),
            apns_sandbox: "https://api.sandbox.push.apple.com".into(),
            fcm: "https://fcm.googleapis.com".into(),
            hms: "https://push-api.cloud.huawei.com".into(),
            hms_token: "https://oauth-login.cloud.huawei.com/oauth2/v3/token".into(),
        }
    }
}

/// How the push engine is configured (from the command line): where the providers
/// are, what TLS trusts, pool limits, retries, broadcast budget, idle stop.
#[derive(Clone, Debug)]
pub struct PushSettings {
    /// Base URLs of the providers (the simulators' in tests and the demo).
    pub endpoints: Endpoints,
    /// PEM CA certificates trusted besides the web PKI roots (the simulators' CA).
    pub extra_ca_pem: Vec<u8>,
    /// Connection and stream limits of every provider pool.
    pub limits: PoolLimits,
    /// Attempts per token for transient failures (429, 5xx, lost connections);
    /// broadcast tokens get twice as many.
    pub max_attempts: u32,
    /// First retry delay; doubled per attempt unless the provider says when.
    pub retry_base: Duration,
    /// The longest wait a provider's `Retry-After` (or the backoff) imposes
    /// before a retry (`--max-retry-after-s`).
    pub max_retry_after: Duration,
    /// Let tenants name provider endpoints (a service account's `token_uri`)
    /// at plain http or private addresses (`--allow-private-provider-endpoints`).
    pub allow_private_endpoints: bool,
    /// Tokens a broadcast reads and checkpoints at a time: small, because a
    /// kill -9 resends up to `bulk_in_flight` plus about two batches.
    pub batch_size: usize,
    /// Notifications all broadcasts together keep in flight at most, shared
    /// fairly between them: enough to keep the connections busy, few enough
    /// that interactive sends do not queue behind a long line of bulk work in
    /// Herald and at the provider (Little's law: at 40 000/s, 1 000 in
    /// flight is 25 ms of queue), however many broadcasts run.
    pub bulk_in_flight: usize,
    /// Tokens per partition of a topic broadcast: the unit engines sharing a
    /// database claim, checkpoint and take over (`--broadcast-partition`).
    pub partition_size: u64,
    /// Partitions this engine runs at once; more wait for a free slot here
    /// or are claimed by another engine.
    pub partitions_per_node: usize,
    /// A tenant's actor with no send and no broadcast for this long stops,
    /// freeing its provider channels and pools; `None`: never.
    pub tenant_idle_stop: Option<Duration>,
    /// Broadcast work (partitions, their connections, queuing a topic send)
    /// runs on threads of its own, as batch work (`SCHED_BATCH`: it never
    /// preempts on waking), this many nice steps below the engine's,
    /// so that sends with a caller waiting run first when the cores are
    /// busy (`--bulk-nice`, see [`crate::bulk`]); `None`: on the caller's
    /// runtime, for embedding programs that want no threads of Herald's.
    pub bulk_nice: Option<u8>,
}

impl Default for PushSettings {
    fn default() -> Self {
        PushSettings {
            endpoints: Endpoints::default(),
            extra_ca_pem: Vec::new(),
            limits: PoolLimits::default(),
            max_attempts: 5,
            retry_base: Duration::from_millis(200),
            max_retry_after: Duration::from_secs(3600),
            allow_private_endpoints: false,
            batch_size: 256,
            bulk_in_flight: 1000,
            partition_size: 10_000,
            partitions_per_node: 4,
            tenant_idle_stop: Some(Duration::from_secs(300)),
            bulk_nice: Some(10),
        }
    }
}

impl PushSettings {
    /// The provider endpoints a tenant may name (a service account's
    /// `token_uri`): https at public addresses, or the origin of an endpoint
    /// configured here or of Google's own token endpoint, the default of a
    /// service account without `token_uri` (see [`EndpointPolicy`]).
    pub fn endpoint_policy(&self) -> EndpointPolicy {
        let e = &self.endpoints;
        let configured = [&e.apns, &e.apns_sandbox, &e.fcm, &e.hms, &e.hms_token].map(String::as_str);
        let known = configured.into_iter().chain([crate::providers::fcm::DEFAULT_TOKEN_URI]);
        EndpointPolicy::new(known, self.allow_private_endpoints)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::Reach;

    /// Google's token endpoint, a service account's default `token_uri`, is
    /// trusted as a configured endpoint is: a save does not resolve it.
    #[tokio::test]
    async fn the_default_token_uri_is_trusted() {
        let policy = PushSettings::default().endpoint_policy();
        let uri = crate::providers::fcm::DEFAULT_TOKEN_URI;
        assert_eq!(policy.check_resolved(uri).await, Ok(Reach::Trusted));
        assert_eq!(policy.check("https://fcm.googleapis.com/v1/token"), Ok(Reach::Trusted));
        assert!(policy.check("http://oauth2.googleapis.com/token").is_err());
    }
}
