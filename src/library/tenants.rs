//! Tenants: the operator creates them.

use crate::auth::{Access, Caller};
use crate::engine::Engine;
use crate::error::ApiResult;
use crate::models::tenant::CreateTenant;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const CREATE: Access = Access::Operator;
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
}
