//! Realm configuration: the LDAP component, app settings, affiliation migration.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::models::ldap::{app_setting_keys, app_settings_body, LdapBody, MASK};
use crate::ops::realm::{self, component_not_found};
use herald_storage::identity::LdapComponent;
use http::StatusCode;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

fn ldap_envelope(message: &str, data: Value) -> ApiResult<Response> {
    super::users::envelope_of(message, 9, Some(data))
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

/// `POST /v3_ldap/components` (ext).
pub async fn create_ldap(cx: Cx) -> ApiResult<Response> {
    let body: LdapBody = cx.json()?;
    body.validate(false)?;
    let id = body.id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let c = realm::create_ldap(&cx.engine, cx.tenant(), &id, body).await?;
    ldap_envelope("Successfully created LDAP Details", view(&c))
}

pub async fn get_ldap(cx: Cx) -> ApiResult<Response> {
    let id = cx.param("componentId");
    let c: LdapComponent =
        cx.engine.store.identity().config(cx.tenant(), &["ldap", id])?.ok_or_else(component_not_found)?;
    ldap_envelope("OK", view(&c))
}

pub async fn update_ldap(cx: Cx) -> ApiResult<Response> {
    let id = cx.param("componentId").to_string();
    let old: LdapComponent =
        cx.engine.store.identity().config(cx.tenant(), &["ldap", &id])?.ok_or_else(component_not_found)?;
    let body: LdapBody = cx.json()?;
    // Checked here for an early answer, and again against the component as
    // stored when it is written.
    body.validate(old.bind_credential.is_some())?;
    if body.id.as_deref().is_some_and(|b| b != id) {
        return Err(ApiError::field("id", "must match the path"));
    }
    let c = realm::update_ldap(&cx.engine, cx.tenant(), &id, body).await?;
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
    let body = app_settings_body(&body)?;
    let stored = realm::put_app_settings(&cx.engine, cx.tenant(), &body).await?;
    let mut out = Map::new();
    for k in app_setting_keys() {
        out.insert(k.clone(), Value::String(stored.get(&k).cloned().unwrap_or_default()));
    }
    json(StatusCode::OK, &Value::Object(out))
}

/// `PUT /core/v1/migrate/affiliations`: Herald keeps no address book of
/// affiliations yet, so there is nothing to migrate: 204.
pub async fn migrate_affiliations(_cx: Cx) -> ApiResult<Response> {
    Ok(empty(StatusCode::NO_CONTENT))
}
