//! The catalogue of services.

use super::commit;
use crate::engine::Engine;
use crate::error::ApiResult;
use herald_storage::catalogue::Service;

/// Creates or replaces a service, moving the tenant's catalogue resource
/// version on in the same transaction; answers the new resource version.
pub async fn put(engine: &Engine, tenant: &str, service: &Service) -> ApiResult<u64> {
    let version = engine.store.transact(|tx| tx.put_service(tenant, service))?;
    commit(engine).await?;
    Ok(version)
}
