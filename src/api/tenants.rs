//! Tenant creation by the platform operator (HTTP and the offline command).

use crate::error::ApiResult;
use crate::http::{json, Cx, Response};
use crate::models::limits::LimitsBody;
use crate::models::tenant::CreateTenant;
use crate::ops;
use herald_storage::Store;
use http::StatusCode;

/// The answer of tenant creation.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantCreated {
    /// The new tenant's id, as given in the request; its realm and admin routes use it.
    pub tenant_id: String,
}

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let body: CreateTenant = cx.json()?;
    let id = body.tenant_id.clone();
    cx.engine.tenants().create(&cx.caller, body).await?;
    json(StatusCode::CREATED, &TenantCreated { tenant_id: id })
}

/// `PUT /v1/tenants/{tenantId}/limits` (ext, operator).
pub(crate) async fn set_limits(cx: Cx) -> ApiResult<Response> {
    let body: LimitsBody = cx.json()?;
    let view = cx.engine.tenants().set_limits(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::OK, &view)
}

/// `GET /v1/tenants/{tenantId}/limits` (ext).
pub(crate) async fn limits(cx: Cx) -> ApiResult<Response> {
    json(StatusCode::OK, &cx.engine.tenants().limits(&cx.caller, cx.tenant())?)
}

/// Creates the tenant, its token-signing key and its first admin user
/// ([`ops::tenants::create_blocking`], for the offline command, benches and
/// fuzzing). Blocking (argon2): call from a blocking context.
pub fn create_tenant(store: &Store, body: &CreateTenant) -> ApiResult<()> {
    ops::tenants::create_blocking(store, body)
}
