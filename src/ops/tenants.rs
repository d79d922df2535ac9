//! Tenants: creation with their admin and signing keys.

use super::commit;
use crate::auth::keys_context;
use crate::auth::{password, roles, TenantKey};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::limits::{LimitsBody, LimitsUsage, LimitsView};
use crate::models::tenant::CreateTenant;
use herald_storage::limits::TenantLimits;
use herald_storage::tenants::Tenant;
use herald_storage::users::{Credential, User};
use herald_storage::{now_ms, Store};

/// Creates a tenant with its token-signing key and first admin user; 409
/// when the id is taken. The key is generated and the password hashed (slow)
/// on a blocking thread, before the transaction.
pub async fn create(engine: &Engine, body: CreateTenant) -> ApiResult<()> {
    let store = engine.store.clone();
    let tenant = body.tenant_id.clone();
    tokio::task::spawn_blocking(move || create_blocking(&store, &body))
        .await
        .map_err(|_| ApiError::internal("tenant creation failed"))??;
    commit(engine).await?;
    // Its series show 0 on the dashboards until it does something.
    herald_actors::telemetry::export_at_zero([tenant.as_str()]);
    Ok(())
}

/// [`create`] without an engine (the offline `herald tenant create`, benches):
/// blocking, and not yet durable ([`Store::durable`]).
pub fn create_blocking(store: &Store, body: &CreateTenant) -> ApiResult<()> {
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
    store.transact(|tx| {
        tx.insert_tenant(&tenant, &admin).map_err(|e| match e {
            herald_storage::Error::Conflict(_) => {
                ApiError::conflict(format!("tenant {} already exists", body.tenant_id))
            }
            other => other.into(),
        })
    })
}

/// Replaces a tenant's quotas (404 for an unknown tenant); every engine
/// applies them within milliseconds (see `herald_storage::limits`).
pub async fn set_limits(engine: &Engine, tenant: &str, body: LimitsBody) -> ApiResult<LimitsView> {
    body.validate()?;
    known(engine, tenant)?;
    let record = body.into_record(now_ms());
    let empty = TenantLimits { updated_ms: record.updated_ms, ..TenantLimits::default() };
    engine.store.limits().set(tenant, (record != empty).then_some(&record))?;
    commit(engine).await?;
    crate::quotas::export_at_zero(tenant, &record);
    limits(engine, tenant)
}

/// A tenant's quotas and what it uses of them (404 for an unknown tenant).
pub fn limits(engine: &Engine, tenant: &str) -> ApiResult<LimitsView> {
    known(engine, tenant)?;
    let store = &engine.store;
    let today = now_ms() / 86_400_000;
    let usage = LimitsUsage {
        broadcasts_today: store.limits().broadcasts_on(tenant, today)?,
        push_tokens: store.push_tokens().count_of_tenant(tenant)?,
    };
    Ok(LimitsView::new(store.limits().get(tenant)?, usage))
}

fn known(engine: &Engine, tenant: &str) -> ApiResult<()> {
    match engine.store.tenants().get(tenant)? {
        Some(_) => Ok(()),
        None => Err(ApiError::not_found(format!("tenant {tenant} not found"))),
    }
}
