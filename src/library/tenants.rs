//! Tenants: the operator creates them.

use crate::auth::{Access, Caller, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::ApiResult;
use crate::models::limits::{LimitsBody, LimitsView};
use crate::models::tenant::CreateTenant;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const CREATE: Access = Access::Operator;
    pub const SET_LIMITS: Access = Access::Operator;
    pub const READ_LIMITS: Access = Access::Tenant(ADMIN_OR_READ);
}

/// See [`Engine::tenants`].
pub struct Tenants<'a>(pub(crate) &'a Engine);

impl Tenants<'_> {
    /// Creates a tenant with its token-signing key and first admin user (409
    /// when the id is taken). Only the operator may.
    pub async fn create(&self, caller: &Caller, body: CreateTenant) -> ApiResult<()> {
        caller.authorize(None, access::CREATE)?;
        crate::ops::tenants::create(self.0, body).await
    }

    /// Replaces a tenant's quotas (see [`LimitsBody`]); only the operator may.
    pub async fn set_limits(&self, caller: &Caller, tenant: &str, body: LimitsBody) -> ApiResult<LimitsView> {
        caller.authorize(Some(tenant), access::SET_LIMITS)?;
        crate::ops::tenants::set_limits(self.0, tenant, body).await
    }

    /// A tenant's quotas and what it uses of them; its admins and readers may read them.
    pub fn limits(&self, caller: &Caller, tenant: &str) -> ApiResult<LimitsView> {
        caller.authorize(Some(tenant), access::READ_LIMITS)?;
        crate::ops::tenants::limits(self.0, tenant)
    }
}
