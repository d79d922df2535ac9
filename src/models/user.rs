//! Users of a realm (spec 001): the write body, its validation, and the views.

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_storage::users::User;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Required action a temporary password adds.
pub const UPDATE_PASSWORD: &str = "UPDATE_PASSWORD";

/// An attribute value: one string or an array of strings (Keycloak sends arrays).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum AttrValue {
    One(String),
    Many(Vec<String>),
}

impl AttrValue {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            AttrValue::One(s) => vec![s],
            AttrValue::Many(v) => v,
        }
    }
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialWrite {
    #[serde(default)]
    pub temporary: bool,
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
}

/// The user write body of Create User and Update User.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UserWrite {
    pub attributes: Option<BTreeMap<String, AttrValue>>,
    pub client_roles: Option<BTreeMap<String, Vec<String>>>,
    pub credentials: Option<Vec<CredentialWrite>>,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub enabled: Option<bool>,
    pub first_name: Option<String>,
    pub groups: Option<Vec<String>>,
    pub last_name: Option<String>,
    pub username: Option<String>,
    pub realm_roles: Option<Vec<String>>,
    pub required_actions: Option<Vec<String>>,
}

/// Update profile User.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProfileWrite {
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub email: Option<String>,
    pub attributes: Option<BTreeMap<String, AttrValue>>,
}

/// Revoke Roles.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RevokeRoles {
    #[serde(default)]
    pub client_roles: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub realm_roles: Vec<String>,
}

/// Revoke Required Actions.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RevokeActions {
    pub required_actions: Vec<String>,
}

/// A name that becomes part of an index key (role, group, attribute name, client).
fn name(field: &str, v: &str) -> ApiResult<()> {
    validate::id(field, v, 1, 255)
}

fn text(field: &str, v: &Option<String>) -> ApiResult<()> {
    if let Some(v) = v {
        validate::length(field, v, 0, 255)?;
        if v.chars().any(char::is_control) {
            return Err(ApiError::field(field, "must not contain control characters"));
        }
    }
    Ok(())
}

pub fn validate_email(field: &str, v: &Option<String>) -> ApiResult<()> {
    text(field, v)?;
    if let Some(e) = v.as_deref().filter(|e| !e.is_empty()) {
        let ok = e.split_once('@').is_some_and(|(l, d)| !l.is_empty() && !d.is_empty() && !e.contains(' '));
        if !ok {
            return Err(ApiError::field(field, "must be an e-mail address"));
        }
    }
    Ok(())
}

pub fn validate_attributes(attrs: &Option<BTreeMap<String, AttrValue>>) -> ApiResult<()> {
    for (k, v) in attrs.iter().flatten() {
        name("attributes", k)?;
        let values = match v {
            AttrValue::One(s) => std::slice::from_ref(s),
            AttrValue::Many(v) => v.as_slice(),
        };
        for s in values {
            validate::id(&format!("attributes.{k}"), s, 0, 255)?;
        }
    }
    Ok(())
}

pub fn validate_names(field: &str, list: &[String]) -> ApiResult<()> {
    for (i, v) in list.iter().enumerate() {
        name(&format!("{field}[{i}]"), v)?;
    }
    Ok(())
}

pub fn validate_client_roles(field: &str, map: &BTreeMap<String, Vec<String>>) -> ApiResult<()> {
    for (client, roles) in map {
        name(field, client)?;
        validate_names(&format!("{field}.{client}"), roles)?;
    }
    Ok(())
}

impl UserWrite {
    pub fn validate(&self, create: bool) -> ApiResult<()> {
        match &self.username {
            Some(u) => validate::id("username", u, 1, 255)?,
            None if create => return Err(ApiError::field("username", "is required")),
            None => {}
        }
        validate_email("email", &self.email)?;
        text("firstName", &self.first_name)?;
        text("lastName", &self.last_name)?;
        validate_attributes(&self.attributes)?;
        validate_client_roles("clientRoles", self.client_roles.as_ref().unwrap_or(&BTreeMap::new()))?;
        validate_names("groups", self.groups.as_deref().unwrap_or_default())?;
        validate_names("realmRoles", self.realm_roles.as_deref().unwrap_or_default())?;
        validate_names("requiredActions", self.required_actions.as_deref().unwrap_or_default())?;
        for (i, c) in self.credentials.iter().flatten().enumerate() {
            if c.kind != "password" {
                return Err(ApiError::field(&format!("credentials[{i}].type"), "only password is supported"));
            }
            validate::length(&format!("credentials[{i}].value"), &c.value, 1, 1024)?;
        }
        Ok(())
    }
}

pub fn attributes_map(attrs: BTreeMap<String, AttrValue>) -> BTreeMap<String, Vec<String>> {
    attrs.into_iter().map(|(k, v)| (k, v.into_vec())).collect()
}

/// Adds `item` once.
pub fn add_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

/// Whether changing `old` into `new` takes something away from the user
/// (access, a realm or client role, its password, a required action): then
/// every token issued to it before the change must stop working at once.
pub fn revokes_tokens(old: &User, new: &User) -> bool {
    fn lost(before: &[String], after: &[String]) -> bool {
        before.iter().any(|x| !after.contains(x))
    }
    let client_role_lost = old
        .client_roles
        .iter()
        .any(|(client, roles)| lost(roles, new.client_roles.get(client).map(Vec::as_slice).unwrap_or(&[])));
    (old.enabled && !new.enabled)
        || lost(&old.realm_roles, &new.realm_roles)
        || client_role_lost
        || old.password().map(|c| &c.hash) != new.password().map(|c| &c.hash)
        || lost(&old.required_actions, &new.required_actions)
}

/// The user record of lists and `data` (spec 001 "User record").
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: String,
    pub username: String,
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub enabled: bool,
    pub email_verified: bool,
    pub admin: bool,
    pub created_timestamp: u64,
    pub attributes: BTreeMap<String, Vec<String>>,
    pub required_actions: Vec<String>,
}

pub fn is_admin(u: &User) -> bool {
    crate::auth::roles::ADMINS.iter().any(|r| u.realm_roles.iter().any(|x| x == r))
}

impl UserView {
    pub fn of(u: &User) -> UserView {
        UserView {
            id: u.id.clone(),
            username: u.username.clone(),
            first_name: u.first_name.clone().unwrap_or_default(),
            last_name: u.last_name.clone().unwrap_or_default(),
            email: u.email.clone().unwrap_or_default(),
            enabled: u.enabled,
            email_verified: u.email_verified,
            admin: is_admin(u),
            created_timestamp: u.created_ms,
            attributes: u.attributes.clone(),
            required_actions: u.required_actions.clone(),
        }
    }
}

/// The bare object of Get User By UUID.
pub fn bare(u: &User) -> Value {
    json!({
        "id": u.id,
        "createdTimestamp": u.created_ms,
        "username": u.username,
        "enabled": u.enabled,
        "emailVerified": u.email_verified,
        "firstName": u.first_name.clone().unwrap_or_default(),
        "lastName": u.last_name.clone().unwrap_or_default(),
        "email": u.email.clone().unwrap_or_default(),
        "attributes": u.attributes,
        "disableableCredentialTypes": [],
        "requiredActions": u.required_actions,
        "notBefore": u.not_before,
        "access": {
            "manageGroupMembership": true,
            "view": true,
            "mapRoles": true,
            "impersonate": false,
            "manage": true,
        },
    })
}

/// `credentialData` of an argon2 PHC string: the parameters, never salt or hash.
pub fn credential_data(phc: &str) -> String {
    // $argon2id$v=19$m=19456,t=2,p=1$salt$hash
    let parts: Vec<&str> = phc.split('$').collect();
    let variant = parts.get(1).copied().unwrap_or("");
    let version = parts.get(2).and_then(|v| v.strip_prefix("v=")).unwrap_or("");
    let mut params = BTreeMap::new();
    for p in parts.get(3).copied().unwrap_or("").split(',') {
        if let Some((k, v)) = p.split_once('=') {
            params.insert(k, v);
        }
    }
    let iterations: u64 = params.get("t").and_then(|t| t.parse().ok()).unwrap_or(0);
    json!({
        "algorithm": "argon2",
        "hashIterations": iterations,
        "additionalParameters": {
            "type": [variant.strip_prefix("argon2").unwrap_or(variant)],
            "version": [if version == "19" { "1.3" } else { version }],
            "memory": [params.get("m").copied().unwrap_or("")],
            "parallelism": [params.get("p").copied().unwrap_or("")],
        }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taking_something_from_a_user_revokes_its_tokens() {
        use herald_storage::users::Credential;
        let pw = |hash: &str| Credential { id: "c".into(), kind: "password".into(), hash: hash.into(), created_ms: 0 };
        let old = User {
            enabled: true,
            realm_roles: vec!["admin".into(), "x".into()],
            client_roles: [("app".to_string(), vec!["r".to_string()])].into(),
            required_actions: vec!["UPDATE_PASSWORD".into()],
            credentials: vec![pw("h1")],
            ..User::default()
        };
        let changed = |f: &dyn Fn(&mut User)| {
            let mut new = old.clone();
            f(&mut new);
            revokes_tokens(&old, &new)
        };
        assert!(!changed(&|_| {}), "no change");
        assert!(!changed(&|u| u.first_name = Some("Ann".into())), "a name is nothing taken");
        assert!(!changed(&|u| u.realm_roles.push("more".into())), "a role given is nothing taken");
        assert!(changed(&|u| u.enabled = false), "disabled");
        assert!(changed(&|u| u.realm_roles.retain(|r| r != "admin")), "demoted");
        assert!(changed(&|u| u.client_roles.clear()), "client role revoked");
        assert!(changed(&|u| u.credentials = vec![pw("h2")]), "password changed");
        assert!(changed(&|u| u.required_actions.clear()), "required action revoked");
    }

    #[test]
    fn credential_data_hides_the_hash() {
        let d = credential_data("$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g");
        assert!(d.contains("\"hashIterations\":2"), "{d}");
        assert!(d.contains("19456"));
        assert!(!d.contains("aGFzaGhhc2g") && !d.contains("c2FsdHNhbHQ"));
    }

    #[test]
    fn write_body_rules() {
        let w: UserWrite = serde_json::from_str(r#"{"username":"a","email":"nope"}"#).unwrap();
        assert_eq!(w.validate(true).unwrap_err().message.split(':').next(), Some("email"));
        let w: UserWrite = serde_json::from_str(r#"{"email":"a@b.c"}"#).unwrap();
        assert!(w.validate(true).is_err());
        assert!(w.validate(false).is_ok());
        assert!(serde_json::from_str::<UserWrite>(r#"{"bogus":1}"#).is_err());
    }
}
