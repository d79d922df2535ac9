//! The connection pools of one provider channel: one pool to its configured
//! endpoint, or, for a provider whose requests each name their origin (Web
//! Push: a subscription names its push service), a pool per origin, opened
//! on first use. A handful of push services serve every browser, but the
//! origins come from clients: at most [`MAX_ORIGINS`] pools are kept, an idle
//! one (or, failing that, any) giving way to a new origin.

use crate::pool::{Lane, Pool, PoolLimits};
use crate::providers::WireRequest;
use crate::transport::{Reply, Route, Target, TransportError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most origins one channel keeps a pool for.
pub const MAX_ORIGINS: usize = 64;

/// The pools of one channel.
// One per channel, built once and never moved while in use: the variants'
// size difference costs nothing, a box would cost a pointer chase per request.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Pools {
    /// The provider's one endpoint.
    One(Pool),
    /// A pool per origin.
    PerOrigin(Origins),
}

/// A pool per origin, opened on demand.
pub(crate) struct Origins {
    provider: &'static str,
    tls: Arc<rustls::ClientConfig>,
    public_only: bool,
    limits: PoolLimits,
    pools: Mutex<HashMap<http::uri::Authority, Arc<Pool>>>,
}

impl Pools {
    pub(crate) fn new(provider: &'static str, route: Route, limits: PoolLimits) -> Pools {
        match route {
            Route::Fixed(target) => Pools::One(Pool::new(provider, target, limits)),
            Route::PerOrigin { tls, public_only } => {
                Pools::PerOrigin(Origins { provider, tls, public_only, limits, pools: Mutex::new(HashMap::new()) })
            }
        }
    }

    /// Sends `req` through the pool of its target.
    pub(crate) async fn post(&self, lane: Lane, req: WireRequest) -> Result<Reply, TransportError> {
        match self {
            Pools::One(pool) => pool.post(lane, req).await,
            Pools::PerOrigin(origins) => {
                let authority = req
                    .authority
                    .clone()
                    .ok_or_else(|| TransportError::Config("the request names no origin".into()))?;
                origins.pool(authority)?.post(lane, req).await
            }
        }
    }
}

impl Origins {
    fn pool(&self, authority: http::uri::Authority) -> Result<Arc<Pool>, TransportError> {
        let mut pools = self.pools.lock().map_err(|_| TransportError::Config("pools lock poisoned".into()))?;
        if let Some(pool) = pools.get(&authority) {
            return Ok(pool.clone());
        }
        if pools.len() >= MAX_ORIGINS {
            // A request in flight keeps its pool alive (its `Arc`) until it is answered.
            let idle = pools.iter().find(|(_, p)| p.connections() == 0).or_else(|| pools.iter().next());
            if let Some(gone) = idle.map(|(a, _)| a.clone()) {
                pools.remove(&gone);
            }
        }
        let target = Target { authority: authority.clone(), tls: self.tls.clone(), public_only: self.public_only };
        let pool = Arc::new(Pool::new(self.provider, target, self.limits.clone()));
        pools.insert(authority, pool.clone());
        Ok(pool)
    }

    /// Origins with a pool now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.pools.lock().map(|p| p.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn origins_are_bounded() {
        let tls = crate::transport::tls_config(&[], None).unwrap();
        let Pools::PerOrigin(origins) =
            Pools::new("webpush", Route::PerOrigin { tls, public_only: true }, PoolLimits::default())
        else {
            panic!("per origin")
        };
        for i in 0..(MAX_ORIGINS + 10) {
            origins.pool(format!("push{i}.example:443").parse().unwrap()).unwrap();
        }
        assert_eq!(origins.len(), MAX_ORIGINS);
        let a = origins.pool("push.example:443".parse().unwrap()).unwrap();
        assert!(Arc::ptr_eq(&a, &origins.pool("push.example:443".parse().unwrap()).unwrap()));
    }

    /// A subscription's private address is never connected to unless allowed.
    #[tokio::test]
    async fn private_origins_are_refused_when_public_only() {
        let tls = crate::transport::tls_config(&[], None).unwrap();
        let pools = Pools::new("webpush", Route::PerOrigin { tls, public_only: true }, PoolLimits::default());
        let req = WireRequest {
            authority: Some("localhost:9".parse().unwrap()),
            path: "/x".into(),
            headers: http::HeaderMap::new(),
            body: bytes::Bytes::new(),
        };
        let e = pools.post(Lane::Bulk, req).await.unwrap_err();
        assert!(matches!(e, TransportError::Forbidden(_)), "{e}");
    }
}
