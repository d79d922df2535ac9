//! User administration of a realm (spec 001, API.md "Identity").

use crate::auth::{password, roles};
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::user::{
    add_unique, attributes_map, bare, credential_data, revokes_tokens, validate_attributes, validate_client_roles,
    validate_email, validate_names, ProfileWrite, RevokeActions, RevokeRoles, UserView, UserWrite, UPDATE_PASSWORD,
};
use herald_storage::now_ms;
use herald_storage::users::{Credential, Index, Source, User};
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

pub fn user_not_found() -> ApiError {
    ApiError::not_found("User does not exist").with_word("USER_NOT_FOUND")
}

fn conflict(e: herald_storage::Error) -> ApiError {
    match e {
        herald_storage::Error::Conflict("email") => {
            ApiError::conflict("User exists with same email").with_word("CONFLICT")
        }
        herald_storage::Error::Conflict(_) => {
            ApiError::conflict("User exists with same username").with_word("CONFLICT")
        }
        herald_storage::Error::NotFound(_) => user_not_found(),
        other => other.into(),
    }
}

/// The user named by the path's `userId` (a username).
pub fn load(cx: &Cx, param: &str) -> ApiResult<User> {
    cx.engine.store.users().get_by_name(cx.tenant(), &cx.param(param).to_lowercase())?.ok_or_else(user_not_found)
}

/// Hashes off the async threads (argon2 is deliberately slow).
async fn hash(plain: String) -> ApiResult<String> {
    tokio::task::spawn_blocking(move || password::hash(&plain))
        .await
        .map_err(|_| ApiError::internal("password hashing failed"))?
        .map_err(ApiError::internal)
}

/// The body's password credential (the last one wins), hashed off the async
/// threads, with whether it is temporary.
async fn new_password(body: &UserWrite) -> ApiResult<Option<(Credential, bool)>> {
    let Some(c) = body.credentials.iter().flatten().last() else { return Ok(None) };
    let credential = Credential {
        id: uuid::Uuid::new_v4().to_string(),
        kind: "password".into(),
        hash: hash(c.value.clone()).await?,
        created_ms: now_ms(),
    };
    Ok(Some((credential, c.temporary)))
}

/// Puts a new password in place of the old one.
fn set_password(u: &mut User, password: Option<&(Credential, bool)>) {
    if let Some((credential, temporary)) = password {
        u.credentials.retain(|x| x.kind != "password");
        u.credentials.push(credential.clone());
        if *temporary {
            add_unique(&mut u.required_actions, UPDATE_PASSWORD);
        }
    }
}

/// Copies the fields present in `body` onto `u`.
fn apply(u: &mut User, body: &UserWrite) {
    if let Some(n) = &body.username {
        u.username = n.to_lowercase();
    }
    if let Some(v) = &body.email {
        u.email = Some(v.clone()).filter(|e| !e.is_empty());
    }
    if let Some(v) = &body.first_name {
        u.first_name = Some(v.clone());
    }
    if let Some(v) = &body.last_name {
        u.last_name = Some(v.clone());
    }
    if let Some(v) = body.enabled {
        u.enabled = v;
    }
    if let Some(v) = body.email_verified {
        u.email_verified = v;
    }
    if let Some(v) = &body.attributes {
        u.attributes = attributes_map(v.clone());
    }
    if let Some(v) = &body.client_roles {
        u.client_roles = v.clone();
    }
    if let Some(v) = &body.groups {
        u.groups = v.clone();
    }
    if let Some(v) = &body.realm_roles {
        u.realm_roles = v.clone();
    }
    if let Some(v) = &body.required_actions {
        u.required_actions = v.clone();
    }
}

/// Applies `change` to the user named by the path's `userId`, on the record
/// as stored at the write (one transaction, so a concurrent change of other
/// fields is kept); a change that takes something from the user revokes its
/// tokens in the same transaction ([`revokes_tokens`]).
fn change_user(cx: &Cx, change: &dyn Fn(&mut User)) -> ApiResult<User> {
    let id = load(cx, "userId")?.id;
    cx.engine.store.users().change(cx.tenant(), &id, change, &revokes_tokens).map_err(conflict)
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let body: UserWrite = cx.json()?;
    body.validate(true)?;
    let mut u = User { id: uuid::Uuid::new_v4().to_string(), enabled: true, created_ms: now_ms(), ..User::default() };
    apply(&mut u, &body);
    set_password(&mut u, new_password(&body).await?.as_ref());
    cx.engine.store.users().create(cx.tenant(), &u).map_err(conflict)?;
    cx.engine.store.durable().await?;
    envelope("User created successfully", Some(json!({ "id": u.id, "username": u.username })))
}

pub async fn update(cx: Cx) -> ApiResult<Response> {
    let body: UserWrite = cx.json()?;
    body.validate(false)?;
    load(&cx, "userId")?; // a 404 before the (slow) hash
    let password = new_password(&body).await?;
    change_user(&cx, &|u| {
        apply(u, &body);
        set_password(u, password.as_ref());
    })?;
    cx.engine.store.durable().await?;
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
    change_user(&cx, &|u| {
        let b = body.clone();
        if let Some(v) = b.first_name {
            u.first_name = Some(v);
        }
        if let Some(v) = b.last_name {
            u.last_name = Some(v);
        }
        if let Some(v) = b.email {
            if u.email.as_deref() != Some(v.as_str()) {
                u.email_verified = false;
            }
            u.email = Some(v).filter(|e| !e.is_empty());
        }
        if let Some(a) = b.attributes {
            // Profile attributes are merged into the existing ones.
            u.attributes.extend(attributes_map(a));
        }
    })?;
    cx.engine.store.durable().await?;
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
    let now = now_ms() / 1000;
    change_user(&cx, &|u| {
        u.enabled = enabled;
        if !enabled {
            // Keycloak's notBefore; tokens are refused through the revocation instant.
            u.not_before = now;
        }
    })?;
    cx.engine.store.durable().await?;
    envelope(if enabled { "User enabled successfully" } else { "User disabled successfully" }, None)
}

pub async fn enable(cx: Cx) -> ApiResult<Response> {
    set_enabled(cx, true).await
}

pub async fn disable(cx: Cx) -> ApiResult<Response> {
    set_enabled(cx, false).await
}

pub async fn promote(cx: Cx) -> ApiResult<Response> {
    change_user(&cx, &|u| {
        for r in roles::ADMINS {
            add_unique(&mut u.realm_roles, r);
        }
    })?;
    cx.engine.store.durable().await?;
    envelope("User promoted to admin successfully", None)
}

pub async fn revoke_admin(cx: Cx) -> ApiResult<Response> {
    change_user(&cx, &|u| u.realm_roles.retain(|r| !roles::ADMINS.contains(&r.as_str())))?;
    cx.engine.store.durable().await?;
    envelope("Admin access revoked successfully", None)
}

pub async fn revoke_roles(cx: Cx) -> ApiResult<Response> {
    let body: RevokeRoles = cx.json()?;
    validate_names("realmRoles", &body.realm_roles)?;
    validate_client_roles("clientRoles", &body.client_roles)?;
    change_user(&cx, &|u| {
        u.realm_roles.retain(|r| !body.realm_roles.contains(r));
        for (client, revoked) in &body.client_roles {
            if let Some(held) = u.client_roles.get_mut(client) {
                held.retain(|r| !revoked.contains(r));
            }
        }
        u.client_roles.retain(|_, r| !r.is_empty());
    })?;
    cx.engine.store.durable().await?;
    envelope("Roles revoked successfully", None)
}

pub async fn revoke_required_actions(cx: Cx) -> ApiResult<Response> {
    let body: RevokeActions = cx.json()?;
    validate_names("requiredActions", &body.required_actions)?;
    change_user(&cx, &|u| u.required_actions.retain(|a| !body.required_actions.contains(a)))?;
    cx.engine.store.durable().await?;
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
