//! Realm configuration: the LDAP component, app settings, affiliation
//! migration (see [`crate::library::realm`]).

use super::users::LdapEnvelope;
use crate::error::ApiResult;
use crate::http::{empty, json, Cx, Response};
use crate::models::ldap::{app_settings_body, AppSettings, AppSettingsWrite, LdapBody};
use http::StatusCode;

/// `POST /v3_ldap/components` (ext).
pub(crate) async fn create_ldap(cx: Cx) -> ApiResult<Response> {
    let body: LdapBody = cx.json()?;
    let c = cx.engine.realm().create_ldap(&cx.caller, cx.tenant(), body).await?;
    LdapEnvelope::answer("Successfully created LDAP Details", c)
}

pub(crate) async fn get_ldap(cx: Cx) -> ApiResult<Response> {
    let c = cx.engine.realm().ldap(&cx.caller, cx.tenant(), cx.param("componentId")).await?;
    LdapEnvelope::answer("OK", c)
}

pub(crate) async fn update_ldap(cx: Cx) -> ApiResult<Response> {
    let body: LdapBody = cx.json()?;
    let c = cx.engine.realm().update_ldap(&cx.caller, cx.tenant(), cx.param("componentId"), body).await?;
    LdapEnvelope::answer("Successfully updated LDAP Details", c)
}

/// `GET /v4_realm/appsettings`: public; every key present (empty when unset).
pub(crate) async fn get_app_settings(cx: Cx) -> ApiResult<Response> {
    json(StatusCode::OK, &AppSettings(cx.engine.realm().app_settings(&cx.caller, cx.tenant()).await?))
}

/// `PUT /v4_realm/appsettings` (ext): sets some keys; a changed version or link
/// stamps `<prefix>_update_by` unless the body sets it.
pub(crate) async fn put_app_settings(cx: Cx) -> ApiResult<Response> {
    let body: AppSettingsWrite = cx.json()?;
    let body = app_settings_body(&body.0)?;
    json(StatusCode::OK, &AppSettings(cx.engine.realm().set_app_settings(&cx.caller, cx.tenant(), body).await?))
}

/// `PUT /core/v1/migrate/affiliations`: Herald keeps no address book of
/// affiliations yet, so there is nothing to migrate: 204.
pub(crate) async fn migrate_affiliations(cx: Cx) -> ApiResult<Response> {
    cx.engine.realm().migrate_affiliations(&cx.caller, cx.tenant()).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
