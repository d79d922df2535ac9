//! User administration of a realm (spec 001, API.md "Identity"; see
//! [`crate::library::users`]).

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::user::{ProfileWrite, RevokeActions, RevokeRoles, UserWrite};
use http::StatusCode;
use serde::Serialize;
use serde_json::Value;

/// The success envelope of realm routes.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RealmEnvelope {
    pub message: String,
    /// Always `OK`.
    pub status: String,
    /// 5 users and addresses, 9 LDAP.
    pub sub_system: u16,
    /// The answer, when the operation has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The success envelope of realm routes.
pub fn envelope(message: &str, data: Option<Value>) -> ApiResult<Response> {
    envelope_of(message, 5, data)
}

/// The success envelope of realm routes of `sub_system` (9: LDAP).
pub fn envelope_of(message: &str, sub_system: u16, data: Option<Value>) -> ApiResult<Response> {
    json(StatusCode::OK, &RealmEnvelope { message: message.to_string(), status: "OK".into(), sub_system, data })
}

/// The envelope with a typed answer as its `data`.
pub fn envelope_with<T: Serialize>(message: &str, data: &T) -> ApiResult<Response> {
    let data = serde_json::to_value(data).map_err(|e| ApiError::internal(e.to_string()))?;
    envelope(message, Some(data))
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let body: UserWrite = cx.json()?;
    let created = cx.engine.users().create(&cx.caller, cx.tenant(), body).await?;
    envelope_with("User created successfully", &created)
}

pub async fn update(cx: Cx) -> ApiResult<Response> {
    let body: UserWrite = cx.json()?;
    cx.engine.users().update(&cx.caller, cx.tenant(), cx.param("userId"), body).await?;
    envelope("User updated successfully", None)
}

pub async fn update_profile(cx: Cx) -> ApiResult<Response> {
    let body: ProfileWrite = cx.json()?;
    cx.engine.users().update_profile(&cx.caller, cx.tenant(), cx.param("userId"), body).await?;
    envelope("User profile updated successfully", None)
}

pub async fn get_by_id(cx: Cx) -> ApiResult<Response> {
    let u = cx.engine.users().get_by_id(&cx.caller, cx.tenant(), cx.param("id")).await?;
    json(StatusCode::OK, &u)
}

pub async fn info(cx: Cx) -> ApiResult<Response> {
    let u = cx.engine.users().get(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope_with("User details fetched successfully", &u)
}

/// Search User: `key` over username, first and last name and e-mail, plus the list query set.
pub async fn search(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::query(&cx)?;
    let key = cx.query_param("key");
    let page = cx.engine.users().search(&cx.caller, cx.tenant(), key.as_deref(), &q).await?;
    envelope_with("Users fetched successfully", &page)
}

pub async fn by_attribute(cx: Cx) -> ApiResult<Response> {
    let key = cx.query_param("key").filter(|k| !k.is_empty()).ok_or_else(|| ApiError::field("key", "is required"))?;
    let value = cx.query_param("value").ok_or_else(|| ApiError::field("value", "is required"))?;
    let list = cx.engine.users().by_attribute(&cx.caller, cx.tenant(), &key, &value).await?;
    envelope_with("Users fetched successfully", &list)
}

pub async fn by_role(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::query(&cx)?;
    let page = cx.engine.users().by_role(&cx.caller, cx.tenant(), cx.param("role"), &q).await?;
    envelope_with("Users fetched successfully", &page)
}

pub async fn by_client_role(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::query(&cx)?;
    let (client, role) = (cx.param("clientid"), cx.param("assignedRole"));
    let page = cx.engine.users().by_client_role(&cx.caller, cx.tenant(), client, role, &q).await?;
    envelope_with("Users fetched successfully", &page)
}

pub async fn by_group(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::query(&cx)?;
    let page = cx.engine.users().by_group(&cx.caller, cx.tenant(), cx.param("groupID"), &q).await?;
    envelope_with("Users fetched successfully", &page)
}

pub async fn enable(cx: Cx) -> ApiResult<Response> {
    cx.engine.users().enable(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("User enabled successfully", None)
}

pub async fn disable(cx: Cx) -> ApiResult<Response> {
    cx.engine.users().disable(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("User disabled successfully", None)
}

pub async fn promote(cx: Cx) -> ApiResult<Response> {
    cx.engine.users().promote(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("User promoted to admin successfully", None)
}

pub async fn revoke_admin(cx: Cx) -> ApiResult<Response> {
    cx.engine.users().revoke_admin(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("Admin access revoked successfully", None)
}

pub async fn revoke_roles(cx: Cx) -> ApiResult<Response> {
    let body: RevokeRoles = cx.json()?;
    cx.engine.users().revoke_roles(&cx.caller, cx.tenant(), cx.param("userId"), body).await?;
    envelope("Roles revoked successfully", None)
}

pub async fn revoke_required_actions(cx: Cx) -> ApiResult<Response> {
    let body: RevokeActions = cx.json()?;
    cx.engine.users().revoke_required_actions(&cx.caller, cx.tenant(), cx.param("userId"), body).await?;
    envelope("Required actions revoked successfully", None)
}

pub async fn admins(cx: Cx) -> ApiResult<Response> {
    let list = cx.engine.users().admins(&cx.caller, cx.tenant()).await?;
    envelope_with("Admin users fetched successfully", &list)
}

pub async fn credentials(cx: Cx) -> ApiResult<Response> {
    let list = cx.engine.users().credentials(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    json(StatusCode::OK, &list)
}

/// User Tenant List: a user belongs to the one realm it was created in.
pub async fn tenants(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.engine.users().tenants(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("User tenants fetched successfully", Some(Value::String(tenant)))
}
