//! Realm configuration: the LDAP component, app settings, affiliation migration.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::models::ldap::{app_setting_keys, LdapBody, MASK};
use herald_storage::identity::LdapComponent;
use herald_storage::now_ms;
use http::StatusCode;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

fn ldap_envelope(message: &str, data: Value) -> ApiResult<Response> {
    super::users::envelope_of(message, 9, Some(data))
}

fn not_found() -> ApiError {
    ApiError::bad_request("Component Not found").with_word("BAD_REQUEST")
}

fn view(c: &LdapComponent) -> Value {
    let mut config = c.config.clone();
    if c.bind_credential.is_some() {
        config.insert("bindCredential".into(), vec![MASK.into()]);
    }
    json!({
        "id": c.id,
        "name": c.name,
        "providerId": c.provider_id,
        "providerType": c.provider_type,
        "parentId": c.parent_id,
        "config": config,
    })
}

/// Builds the stored component; the credential is sealed, or kept when masked.
fn build(cx: &Cx, id: &str, body: LdapBody, old: Option<&LdapComponent>) -> ApiResult<LdapComponent> {
    let mut config = body.config;
    let bind_credential = match config.remove("bindCredential").and_then(|v| v.into_iter().next()) {
        Some(v) if v == MASK => old.and_then(|o| o.bind_credential.clone()),
        Some(v) if !v.is_empty() => {
            Some(cx.engine.store.seal(v.as_bytes(), &LdapComponent::secret_context(cx.tenant(), id))?)
        }
        _ => None,
    };
    Ok(LdapComponent {
        id: id.to_string(),
        name: body.name,
        provider_id: body.provider_id.unwrap_or_else(|| "ldap".into()),
        provider_type: body.provider_type,
        parent_id: body.parent_id.unwrap_or_else(|| cx.tenant().to_string()),
        config,
        bind_credential,
    })
}

/// `POST /v3_ldap/components` (ext).
pub async fn create_ldap(cx: Cx) -> ApiResult<Response> {
    let body: LdapBody = cx.json()?;
    body.validate(false)?;
    let id = body.id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let store = cx.engine.store.identity();
    if store.config::<LdapComponent>(cx.tenant(), &["ldap", &id])?.is_some() {
        return Err(ApiError::conflict("Component already exists").with_word("CONFLICT"));
    }
    let c = build(&cx, &id, body, None)?;
    store.put_config(cx.tenant(), &["ldap", &id], &c)?;
    cx.engine.store.durable().await?;
    ldap_envelope("Successfully created LDAP Details", view(&c))
}

pub async fn get_ldap(cx: Cx) -> ApiResult<Response> {
    let id = cx.param("componentId");
    let c: LdapComponent = cx.engine.store.identity().config(cx.tenant(), &["ldap", id])?.ok_or_else(not_found)?;
    ldap_envelope("OK", view(&c))
}

pub async fn update_ldap(cx: Cx) -> ApiResult<Response> {
    let id = cx.param("componentId").to_string();
    let store = cx.engine.store.identity();
    let old: LdapComponent = store.config(cx.tenant(), &["ldap", &id])?.ok_or_else(not_found)?;
    let body: LdapBody = cx.json()?;
    body.validate(old.bind_credential.is_some())?;
    if body.id.as_deref().is_some_and(|b| b != id) {
        return Err(ApiError::field("id", "must match the path"));
    }
    let c = build(&cx, &id, body, Some(&old))?;
    store.put_config(cx.tenant(), &["ldap", &id], &c)?;
    cx.engine.store.durable().await?;
    ldap_envelope("Successfully updated LDAP Details", view(&c))
}

/// `GET /v4_realm/appsettings`: public; every key present (empty when unset).
pub async fn get_app_settings(cx: Cx) -> ApiResult<Response> {
    if cx.engine.store.tenants().get(cx.tenant())?.is_none() {
        return Err(ApiError::not_found("Realm does not exist"));
    }
    let stored: BTreeMap<String, String> =
        cx.engine.store.identity().config(cx.tenant(), &["appsettings"])?.unwrap_or_default();
    let mut out = Map::new();
    for k in app_setting_keys() {
        out.insert(k.clone(), Value::String(stored.get(&k).cloned().unwrap_or_default()));
    }
    json(StatusCode::OK, &Value::Object(out))
}

/// `PUT /v4_realm/appsettings` (ext): sets some keys; a changed version or link
/// stamps `<prefix>_update_by` unless the body sets it.
pub async fn put_app_settings(cx: Cx) -> ApiResult<Response> {
    let body: BTreeMap<String, Value> = cx.json()?;
    let keys = app_setting_keys();
    let store = cx.engine.store.identity();
    let mut stored: BTreeMap<String, String> = store.config(cx.tenant(), &["appsettings"])?.unwrap_or_default();
    let mut touched = Vec::new();
    for (k, v) in &body {
        if !keys.contains(k) {
            return Err(ApiError::field(k, "unknown app setting"));
        }
        let Value::String(s) = v else {
            return Err(ApiError::field(k, "must be a string"));
        };
        crate::models::validate::id(k, s, 0, 2048)?;
        if stored.get(k) != Some(s) {
            touched.push(k.clone());
        }
        stored.insert(k.clone(), s.clone());
    }
    let now = now_ms().to_string();
    for k in touched {
        if let Some(prefix) = k.strip_suffix("_version").or_else(|| k.strip_suffix("_link")) {
            let stamp = format!("{prefix}_update_by");
            if !body.contains_key(&stamp) {
                stored.insert(stamp, now.clone());
            }
        }
    }
    store.put_config(cx.tenant(), &["appsettings"], &stored)?;
    cx.engine.store.durable().await?;
    let mut out = Map::new();
    for k in keys {
        out.insert(k.clone(), Value::String(stored.get(&k).cloned().unwrap_or_default()));
    }
    json(StatusCode::OK, &Value::Object(out))
}

/// `PUT /core/v1/migrate/affiliations`: Herald keeps no address book of
/// affiliations yet, so there is nothing to migrate: 204.
pub async fn migrate_affiliations(_cx: Cx) -> ApiResult<Response> {
    Ok(empty(StatusCode::NO_CONTENT))
}
