//! Tenant creation by the platform operator (HTTP and the offline command).

use crate::auth::keys_context;
use crate::auth::{password, roles, TenantKey};
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::tenant::CreateTenant;
use herald_storage::tenants::Tenant;
use herald_storage::users::{Credential, User};
use herald_storage::{now_ms, Store};
use http::StatusCode;

/// The answer of tenant creation.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantCreated {
    pub tenant_id: String,
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let body: CreateTenant = cx.json()?;
    let store = cx.engine.store.clone();
    let id = body.tenant_id.clone();
    tokio::task::spawn_blocking(move || create_tenant(&store, &body))
        .await
        .map_err(|_| ApiError::internal("tenant creation failed"))??;
    cx.engine.store.durable().await?;
    json(StatusCode::CREATED, &TenantCreated { tenant_id: id })
}

/// Creates the tenant, its token-signing key and its first admin user.
/// Blocking (argon2): call from a blocking context.
pub fn create_tenant(store: &Store, body: &CreateTenant) -> ApiResult<()> {
    body.validate()?;
    let now = now_ms();
    let pkcs8 = TenantKey::generate_pkcs8().map_err(ApiError::internal)?;
    let tenant = Tenant {
        id: body.tenant_id.clone(),
        created_ms: now,
        signing_key: store.seal(&pkcs8, &keys_context(&body.tenant_id))?,
        key_id: ulid::Ulid::generate().to_string(),
    };
    let hash = password::hash(&body.admin_password).map_err(ApiError::internal)?;
    let admin = User {
        id: uuid::Uuid::new_v4().to_string(),
        username: body.admin_username.to_lowercase(),
        enabled: true,
        realm_roles: roles::ADMINS.iter().map(|r| r.to_string()).collect(),
        credentials: vec![Credential {
            id: uuid::Uuid::new_v4().to_string(),
            kind: "password".into(),
            hash,
            created_ms: now,
        }],
        created_ms: now,
        ..User::default()
    };
    store.tenants().create(&tenant, &admin).map_err(|e| match e {
        herald_storage::Error::Conflict(_) => ApiError::conflict(format!("tenant {} already exists", body.tenant_id)),
        other => other.into(),
    })
}
