//! User administration of a realm (spec 001, API.md "Identity").

use crate::auth::roles;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::user::{
    bare, credential_data, validate_attributes, validate_client_roles, validate_email, validate_names, ProfileWrite,
    RevokeActions, RevokeRoles, UserView, UserWrite,
};
use crate::ops::users;
use herald_storage::users::{Index, Source, User};
use http::StatusCode;
use serde_json::{json, Value};

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

pub fn envelope_of(message: &str, sub_system: u16, data: Option<Value>) -> ApiResult<Response> {
    json(StatusCode::OK, &RealmEnvelope { message: message.to_string(), status: "OK".into(), sub_system, data })
}

pub use crate::ops::users::user_not_found;

/// The user named by the path's `userId` (a username).
pub fn load(cx: &Cx, param: &str) -> ApiResult<User> {
    cx.engine.store.users().get_by_name(cx.tenant(), &cx.param(param).to_lowercase())?.ok_or_else(user_not_found)
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let body: UserWrite = cx.json()?;
    body.validate(true)?;
    let u = users::create(&cx.engine, cx.tenant(), &body).await?;
    envelope("User created successfully", Some(json!({ "id": u.id, "username": u.username })))
}

pub async fn update(cx: Cx) -> ApiResult<Response> {
    let body: UserWrite = cx.json()?;
    body.validate(false)?;
    users::update(&cx.engine, cx.tenant(), cx.param("userId"), &body).await?;
    envelope("User updated successfully", None)
}

pub async fn update_profile(cx: Cx) -> ApiResult<Response> {
    let body: ProfileWrite = cx.json()?;
    validate_email("email", &body.email)?;
    validate_attributes(&body.attributes)?;
    for (f, v) in [("firstName", &body.first_name), ("lastName", &body.last_name)] {
        if let Some(v) = v {
            crate::models::validate::id(f, v, 0, 255)?;
        }
    }
    users::update_profile(&cx.engine, cx.tenant(), cx.param("userId"), &body).await?;
    envelope("User profile updated successfully", None)
}

pub async fn get_by_id(cx: Cx) -> ApiResult<Response> {
    let u = cx.engine.store.users().get(cx.tenant(), cx.param("id"))?.ok_or_else(user_not_found)?;
    json(StatusCode::OK, &bare(&u))
}

pub async fn info(cx: Cx) -> ApiResult<Response> {
    let u = load(&cx, "userId")?;
    envelope("User details fetched successfully", Some(serde_json::to_value(UserView::of(&u)).unwrap_or_default()))
}

/// Search User: `key` over username, first and last name and e-mail, plus the list query set.
pub async fn search(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::ListQuery::from_cx(&cx)?;
    let key = cx.query_param("key").map(|k| k.to_lowercase()).filter(|k| !k.is_empty());
    let source = key.as_deref().map_or(Source::All, Source::Containing);
    q.answer(&cx, source, |_| true)
}

pub async fn by_attribute(cx: Cx) -> ApiResult<Response> {
    let key = cx.query_param("key").filter(|k| !k.is_empty()).ok_or_else(|| ApiError::field("key", "is required"))?;
    let value = cx.query_param("value").ok_or_else(|| ApiError::field("value", "is required"))?;
    crate::models::validate::id("key", &key, 1, 255)?;
    crate::models::validate::id("value", &value, 0, 255)?;
    let users = cx.engine.store.users().by_index(cx.tenant(), Index::Attribute(&key, &value))?;
    let list: Vec<UserView> = users.iter().map(UserView::of).collect();
    envelope("Users fetched successfully", Some(serde_json::to_value(list).unwrap_or_default()))
}

pub async fn by_role(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::ListQuery::from_cx(&cx)?;
    q.answer(&cx, Source::Index(Index::Role(cx.param("role"))), |_| true)
}

pub async fn by_client_role(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::ListQuery::from_cx(&cx)?;
    q.answer(&cx, Source::Index(Index::ClientRole(cx.param("clientid"), cx.param("assignedRole"))), |_| true)
}

pub async fn by_group(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::ListQuery::from_cx(&cx)?;
    q.answer(&cx, Source::Index(Index::Group(cx.param("groupID"))), |_| true)
}

async fn set_enabled(cx: Cx, enabled: bool) -> ApiResult<Response> {
    users::set_enabled(&cx.engine, cx.tenant(), cx.param("userId"), enabled).await?;
    envelope(if enabled { "User enabled successfully" } else { "User disabled successfully" }, None)
}

pub async fn enable(cx: Cx) -> ApiResult<Response> {
    set_enabled(cx, true).await
}

pub async fn disable(cx: Cx) -> ApiResult<Response> {
    set_enabled(cx, false).await
}

pub async fn promote(cx: Cx) -> ApiResult<Response> {
    users::promote(&cx.engine, cx.tenant(), cx.param("userId")).await?;
    envelope("User promoted to admin successfully", None)
}

pub async fn revoke_admin(cx: Cx) -> ApiResult<Response> {
    users::revoke_admin(&cx.engine, cx.tenant(), cx.param("userId")).await?;
    envelope("Admin access revoked successfully", None)
}

pub async fn revoke_roles(cx: Cx) -> ApiResult<Response> {
    let body: RevokeRoles = cx.json()?;
    validate_names("realmRoles", &body.realm_roles)?;
    validate_client_roles("clientRoles", &body.client_roles)?;
    users::revoke_roles(&cx.engine, cx.tenant(), cx.param("userId"), &body).await?;
    envelope("Roles revoked successfully", None)
}

pub async fn revoke_required_actions(cx: Cx) -> ApiResult<Response> {
    let body: RevokeActions = cx.json()?;
    validate_names("requiredActions", &body.required_actions)?;
    users::revoke_required_actions(&cx.engine, cx.tenant(), cx.param("userId"), &body).await?;
    envelope("Required actions revoked successfully", None)
}

pub async fn admins(cx: Cx) -> ApiResult<Response> {
    let store = &cx.engine.store;
    let mut seen = std::collections::BTreeMap::new();
    for r in roles::ADMINS {
        for u in store.users().by_index(cx.tenant(), Index::Role(r))? {
            seen.entry(u.username.clone()).or_insert(u);
        }
    }
    let list: Vec<UserView> = seen.values().map(UserView::of).collect();
    envelope("Admin users fetched successfully", Some(serde_json::to_value(list).unwrap_or_default()))
}

pub async fn credentials(cx: Cx) -> ApiResult<Response> {
    let u = load(&cx, "userId")?;
    let list: Vec<Value> = u
        .credentials
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "type": c.kind,
                "createdDate": c.created_ms,
                "credentialData": credential_data(&c.hash),
            })
        })
        .collect();
    json(StatusCode::OK, &list)
}

/// User Tenant List: a user belongs to the one realm it was created in.
pub async fn tenants(cx: Cx) -> ApiResult<Response> {
    load(&cx, "userId")?;
    envelope("User tenants fetched successfully", Some(Value::String(cx.tenant().to_string())))
}
