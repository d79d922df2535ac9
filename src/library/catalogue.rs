//! The catalogue of services a tenant offers. Every write moves the tenant's
//! catalogue resource version on; a read may wait until it reaches one the
//! caller saw (after its own write through another instance, say).

use super::apps::checked;
use crate::auth::{Access, Caller, ADMIN, ANY};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::catalogue::{check_uuid, CatalogueService, Versioned};
use crate::ops;
use crate::paging::Paging;
use herald_storage::catalogue::Service;
use http::StatusCode;
use std::time::{Duration, Instant};

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const READ: Access = Access::Tenant(ANY);
    pub const WRITE: Access = Access::Tenant(ADMIN);
}

/// How long an operation waits for its minimum resource version before
/// failing (412 over HTTP).
pub const VERSION_WAIT: Duration = Duration::from_secs(5);

/// See [`Engine::catalogue`].
pub struct Catalogue<'a>(pub(crate) &'a Engine);

fn document(s: &Service) -> ApiResult<CatalogueService> {
    serde_json::from_str(&s.document).map_err(|e| ApiError::internal(format!("stored service: {e}")))
}

impl Catalogue<'_> {
    /// Waits (up to [`VERSION_WAIT`]) until the tenant's catalogue reaches
    /// resource version `wanted`, when one is given.
    async fn reach(&self, tenant: &str, wanted: Option<u64>) -> ApiResult<()> {
        let Some(wanted) = wanted else { return Ok(()) };
        // A short constant wait after now: no overflow.
        #[allow(clippy::arithmetic_side_effects)]
        let deadline = Instant::now() + VERSION_WAIT;
        while self.0.store.catalogue().version(tenant)? < wanted {
            if Instant::now() >= deadline {
                return Err(ApiError::new(
                    StatusCode::PRECONDITION_FAILED,
                    format!("resource version {wanted} not reached within {VERSION_WAIT:?}"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Ok(())
    }

    /// Creates or replaces service `id` (a UUID), once the catalogue has
    /// reached `min_version`; answers the service as stored with the new
    /// resource version.
    pub async fn put(
        &self,
        caller: &Caller,
        tenant: &str,
        id: &str,
        mut body: CatalogueService,
        min_version: Option<u64>,
    ) -> ApiResult<Versioned<CatalogueService>> {
        caller.authorize(Some(tenant), access::WRITE)?;
        self.reach(tenant, min_version).await?;
        body.validate(id)?;
        body.id = Some(id.to_string());
        let doc = serde_json::to_string(&body).map_err(|e| ApiError::internal(e.to_string()))?;
        let service =
            Service { id: id.to_string(), document: doc, kind: body.kind.clone(), searchable: body.searchable };
        let resource_version = ops::catalogue::put(self.0, tenant, &service).await?;
        Ok(Versioned { resource_version, value: body })
    }

    /// Service `id`, read once the catalogue has reached `min_version`.
    pub async fn get(
        &self,
        caller: &Caller,
        tenant: &str,
        id: &str,
        min_version: Option<u64>,
    ) -> ApiResult<Versioned<CatalogueService>> {
        caller.authorize(Some(tenant), access::READ)?;
        self.reach(tenant, min_version).await?;
        check_uuid("serviceId", id)?;
        let store = &self.0.store;
        let s =
            store.catalogue().get(tenant, id)?.ok_or_else(|| ApiError::not_found(format!("service {id} not found")))?;
        Ok(Versioned { value: document(&s)?, resource_version: store.catalogue().version(tenant)? })
    }

    /// A page (of 1 to 100) of the services, but those of the types in
    /// `hidden_types`, only the searchable ones when `only_searchable`; read
    /// once the catalogue has reached `min_version`.
    pub async fn list(
        &self,
        caller: &Caller,
        tenant: &str,
        hidden_types: &[String],
        only_searchable: bool,
        paging: Paging,
        min_version: Option<u64>,
    ) -> ApiResult<Versioned<Vec<CatalogueService>>> {
        caller.authorize(Some(tenant), access::READ)?;
        self.reach(tenant, min_version).await?;
        let paging = checked(paging, "page_size", 1, 100)?;
        let store = &self.0.store;
        let value = store
            .catalogue()
            .list(tenant)?
            .into_iter()
            .filter(|s| !hidden_types.contains(&s.kind) && (!only_searchable || s.searchable))
            .skip(paging.offset())
            .take(paging.size)
            .map(|s| document(&s))
            .collect::<ApiResult<Vec<_>>>()?;
        Ok(Versioned { value, resource_version: store.catalogue().version(tenant)? })
    }
}
