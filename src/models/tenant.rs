use super::validate;
use crate::error::{ApiError, ApiResult};
use serde::Deserialize;

/// `POST /v1/tenants`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateTenant {
    pub tenant_id: String,
    pub admin_username: String,
    pub admin_password: String,
}

impl CreateTenant {
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
