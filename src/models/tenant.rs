//! Creating a tenant (`POST /v1/tenants`, operator only) and the rule of tenant ids.

use super::validate;
use crate::error::{ApiError, ApiResult};
use serde::Deserialize;

/// `POST /v1/tenants`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateTenant {
    /// The new tenant's id, also its realm name: 3 to 255 characters of `a-z`, `0-9` and `-`.
    pub tenant_id: String,
    /// Username of the tenant's first administrator, created with it (1 to 255 characters; stored lowercased).
    pub admin_username: String,
    /// That administrator's password, 8 to 1024 characters; stored only as an argon2id hash.
    pub admin_password: String,
}

impl CreateTenant {
    /// Checks the id, username and password rules; 400 naming the first offending field.
    pub fn validate(&self) -> ApiResult<()> {
        validate_tenant_id(&self.tenant_id)?;
        validate::id("adminUsername", &self.admin_username, 1, 255)?;
        validate::length("adminPassword", &self.admin_password, 8, 1024)
    }
}

/// 3 to 255 characters of `[a-z0-9-]`.
pub fn validate_tenant_id(id: &str) -> ApiResult<()> {
    validate::length("tenantId", id, 3, 255)?;
    if !id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return Err(ApiError::field("tenantId", "may hold only a-z, 0-9 and -"));
    }
    Ok(())
}
