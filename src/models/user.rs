//! Users of a realm (spec 001): the write body, its validation, and the views.

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_storage::identity::{OtpCounter, OtpPolicy};
use herald_storage::users::{Credential, Field, User, UserRow};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// Required action a temporary password adds.
pub const UPDATE_PASSWORD: &str = "UPDATE_PASSWORD";

/// An attribute value: one string or an array of strings (Keycloak sends arrays).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum AttrValue {
    /// A single value, stored as a one-element array.
    One(String),
    /// The values, in order.
    Many(Vec<String>),
}

impl AttrValue {
    /// The values as stored: a single value becomes a one-element array.
    pub(crate) fn into_vec(self) -> Vec<String> {
        match self {
            AttrValue::One(s) => vec![s],
            AttrValue::Many(v) => v,
        }
    }
}

/// The one credential type a user write sets.
pub const PASSWORD: &str = "password";

fn credential_type_schema() -> utoipa::openapi::Object {
    crate::openapi::schema::strings(&[PASSWORD])
}

/// A credential of a user write body; only passwords are set (the last one given counts).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialWrite {
    /// `true`: the user must change the password at its next login (adds the required action
    /// `UPDATE_PASSWORD`).
    #[serde(default)]
    pub temporary: bool,
    /// `password`; any other type is refused (400).
    #[serde(rename = "type")]
    #[schema(schema_with = credential_type_schema)]
    pub kind: String,
    /// The password in clear, 1 to 1024 characters; stored only as an argon2id hash.
    pub value: String,
}

/// The user write body of Create User and Update User.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UserWrite {
    /// Custom attributes, name (1 to 255 characters) to one string or an array of strings (each at
    /// most 255); replaces the user's attributes.
    pub attributes: Option<BTreeMap<String, AttrValue>>,
    /// Roles per client name (names 1 to 255 characters); replaces the user's client roles.
    pub client_roles: Option<BTreeMap<String, Vec<String>>>,
    /// The new password; a changed password revokes the user's tokens.
    pub credentials: Option<Vec<CredentialWrite>>,
    /// E-mail address (at most 255 characters, `name@domain`), unique in the tenant (409); empty
    /// removes it.
    pub email: Option<String>,
    /// Whether the e-mail address is confirmed; absent keeps it.
    pub email_verified: Option<bool>,
    /// `false`: the user may not log in and its tokens stop working; a new user is enabled.
    pub enabled: Option<bool>,
    /// At most 255 characters, no control characters.
    pub first_name: Option<String>,
    /// Group names (each 1 to 255 characters); replaces the user's groups.
    pub groups: Option<Vec<String>>,
    /// At most 255 characters, no control characters.
    pub last_name: Option<String>,
    /// Login name, 1 to 255 characters, stored in lower case and unique in the tenant (409);
    /// required on create.
    pub username: Option<String>,
    /// Realm roles (such as `admin`, `admin-read`), each 1 to 255 characters; replaces the user's;
    /// a role taken away revokes its tokens.
    pub realm_roles: Option<Vec<String>>,
    /// Actions the user must take before it may log in (such as `VERIFY_EMAIL`, `UPDATE_PASSWORD`);
    /// replaces the list.
    pub required_actions: Option<Vec<String>>,
}

/// Update profile User.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProfileWrite {
    /// At most 255 characters; absent keeps it.
    pub first_name: Option<String>,
    /// At most 255 characters; absent keeps it.
    pub last_name: Option<String>,
    /// New e-mail address, unique in the tenant; a changed one is no longer verified, an empty one
    /// is removed.
    pub email: Option<String>,
    /// Attributes merged into the user's: those named are replaced, the others kept.
    pub attributes: Option<BTreeMap<String, AttrValue>>,
}

/// Revoke Roles.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RevokeRoles {
    /// Roles to take away per client name; a client left without roles is removed from the user.
    #[serde(default)]
    pub client_roles: BTreeMap<String, Vec<String>>,
    /// Realm roles to take away; roles the user does not hold are ignored.
    #[serde(default)]
    pub realm_roles: Vec<String>,
}

/// Revoke Required Actions.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RevokeActions {
    /// Required actions to take from the user; the others stay.
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

/// An optional e-mail: at most 255 characters without control characters, and `name@domain` without
/// spaces when not empty.
pub(crate) fn validate_email(field: &str, v: &Option<String>) -> ApiResult<()> {
    text(field, v)?;
    if let Some(e) = v.as_deref().filter(|e| !e.is_empty()) {
        let ok = e.split_once('@').is_some_and(|(l, d)| !l.is_empty() && !d.is_empty() && !e.contains(' '));
        if !ok {
            return Err(ApiError::field(field, "must be an e-mail address"));
        }
    }
    Ok(())
}

/// Attribute names of 1 to 255 characters, values of at most 255, none with control characters.
pub(crate) fn validate_attributes(attrs: &Option<BTreeMap<String, AttrValue>>) -> ApiResult<()> {
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

/// Each name 1 to 255 characters without control characters; an error names `field[i]`.
pub(crate) fn validate_names(field: &str, list: &[String]) -> ApiResult<()> {
    for (i, v) in list.iter().enumerate() {
        name(&format!("{field}[{i}]"), v)?;
    }
    Ok(())
}

/// Client names and their role names, each 1 to 255 characters without control characters.
pub(crate) fn validate_client_roles(field: &str, map: &BTreeMap<String, Vec<String>>) -> ApiResult<()> {
    for (client, roles) in map {
        name(field, client)?;
        validate_names(&format!("{field}.{client}"), roles)?;
    }
    Ok(())
}

impl UserWrite {
    /// The field rules of the body; `create`: `username` is required.
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
            if c.kind != PASSWORD {
                return Err(ApiError::field(&format!("credentials[{i}].type"), "only password is supported"));
            }
            validate::length(&format!("credentials[{i}].value"), &c.value, 1, 1024)?;
        }
        Ok(())
    }
}

/// Attributes as stored: every value an array.
pub(crate) fn attributes_map(attrs: BTreeMap<String, AttrValue>) -> BTreeMap<String, Vec<String>> {
    attrs.into_iter().map(|(k, v)| (k, v.into_vec())).collect()
}

/// Adds `item` once.
pub(crate) fn add_unique(list: &mut Vec<String>, item: &str) {
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

/// A new password, hashed before the transaction that stores it.
#[derive(Debug, Clone)]
pub struct NewPassword {
    /// The stored credential: an argon2id hash, never the clear password.
    pub credential: Credential,
    /// A temporary password makes the user update it at the next login.
    pub temporary: bool,
}

/// Copies the fields present in `body` onto `u` (Create User, Update User);
/// the password apart ([`set_password`]).
pub fn apply(u: &mut User, body: &UserWrite) {
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

/// Puts a new password in place of the old one.
pub fn set_password(u: &mut User, password: Option<&NewPassword>) {
    if let Some(p) = password {
        u.credentials.retain(|x| x.kind != "password");
        u.credentials.push(p.credential.clone());
        if p.temporary {
            add_unique(&mut u.required_actions, UPDATE_PASSWORD);
        }
    }
}

/// Update Profile: names and e-mail replaced (a new e-mail is not verified),
/// attributes merged into the existing ones.
pub fn apply_profile(u: &mut User, body: &ProfileWrite) {
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
        u.attributes.extend(attributes_map(a));
    }
}

/// Enables or disables the user; a disable sets Keycloak's `notBefore`
/// (seconds) to `now_s` (tokens are refused through the revocation instant).
pub fn set_enabled(u: &mut User, enabled: bool, now_s: u64) {
    u.enabled = enabled;
    if !enabled {
        u.not_before = now_s;
    }
}

/// Gives the user every admin role.
pub fn promote(u: &mut User) {
    for r in crate::auth::roles::ADMINS {
        add_unique(&mut u.realm_roles, r);
    }
}

/// Takes every admin role from the user.
pub fn revoke_admin(u: &mut User) {
    u.realm_roles.retain(|r| !crate::auth::roles::ADMINS.contains(&r.as_str()));
}

/// Takes the listed realm and client roles (a client left without roles goes).
pub fn revoke_roles(u: &mut User, body: &RevokeRoles) {
    u.realm_roles.retain(|r| !body.realm_roles.contains(r));
    for (client, revoked) in &body.client_roles {
        if let Some(held) = u.client_roles.get_mut(client) {
            held.retain(|r| !revoked.contains(r));
        }
    }
    u.client_roles.retain(|_, r| !r.is_empty());
}

/// Revoke Required Actions: takes the listed actions from the user, keeps the others.
pub fn revoke_required_actions(u: &mut User, body: &RevokeActions) {
    u.required_actions.retain(|a| !body.required_actions.contains(a));
}

/// First and last name, as the `name` claim gives them; `None` with neither.
pub fn full_name(u: &User) -> Option<String> {
    let name = [u.first_name.as_deref(), u.last_name.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
    (!name.is_empty()).then_some(name)
}

/// Whether the user may log in: refused when disabled or with required
/// actions pending; the error is the reason the token endpoint gives.
pub fn may_log_in(u: &User) -> Result<(), &'static str> {
    if !u.enabled {
        return Err("Account disabled");
    }
    if !u.required_actions.is_empty() {
        return Err("Account is not fully set up");
    }
    Ok(())
}

/// Whether the user's password is still the one a login was verified
/// against (`verified`: its hash then), so that a password changed between
/// the check and the session opens none.
pub fn password_unchanged(u: &User, verified: Option<&str>) -> bool {
    u.password().map(|c| c.hash.as_str()) == verified
}

/// A resend-OTP counter as it stands at `now`: an expired window counts
/// from zero (a lock outlives its window only while it lasts).
pub fn otp_current(c: OtpCounter, p: &OtpPolicy, now: u64) -> OtpCounter {
    if c.locked_until_ms > now || now.saturating_sub(c.window_start_ms) < p.window_seconds.saturating_mul(1000) {
        c
    } else {
        OtpCounter::default()
    }
}

/// What one OTP resend does.
#[derive(Debug, Clone, PartialEq)]
pub enum OtpResend {
    /// Locked already: refused, nothing changes.
    Locked,
    /// Counted; `locked` when this resend went past the limit (refused too).
    Counted {
        /// The counter to store.
        counter: OtpCounter,
        /// This resend went past the limit: refused too, the user locked until the window ends.
        locked: bool,
    },
}

/// Counts one resend on the counter as it stands at `now`.
pub fn otp_resend(stored: OtpCounter, p: &OtpPolicy, now: u64) -> OtpResend {
    let mut c = otp_current(stored, p, now);
    if c.locked_until_ms > now {
        return OtpResend::Locked;
    }
    if c.count == 0 {
        c.window_start_ms = now;
    }
    c.count = c.count.saturating_add(1);
    let locked = c.count > p.max_resends;
    if locked {
        c.locked_until_ms = c.window_start_ms.saturating_add(p.window_seconds.saturating_mul(1000));
    }
    OtpResend::Counted { counter: c, locked }
}

/// The user record of lists and `data` (spec 001 "User record").
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    /// UUID assigned at creation.
    pub id: String,
    /// Login name, in lower case; the `userId` of the user routes.
    pub username: String,
    /// Empty when not set.
    pub first_name: String,
    /// Empty when not set.
    pub last_name: String,
    /// Empty when not set.
    pub email: String,
    /// `false`: the user may not log in.
    pub enabled: bool,
    /// Whether the e-mail address is confirmed; a changed address is not.
    pub email_verified: bool,
    /// Holds one of the admin realm roles (`admin`, `platform_admin`, `realm-admin`).
    pub admin: bool,
    /// Creation time, ms since the Unix epoch.
    pub created_timestamp: u64,
    /// Custom attributes, name to values.
    pub attributes: BTreeMap<String, Vec<String>>,
    /// Actions pending before the user may log in; empty when none.
    pub required_actions: Vec<String>,
}

/// Whether the user holds one of the admin realm roles.
pub(crate) fn is_admin(u: &User) -> bool {
    crate::auth::roles::ADMINS.iter().any(|r| u.realm_roles.iter().any(|x| x == r))
}

impl UserView {
    /// The record of a stored user; names and e-mail not set are empty strings.
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

/// What Create User answers: the new user's id and (lower-case) username.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CreatedUser {
    /// UUID assigned to the user (the `id` of Get User By UUID).
    pub id: String,
    /// Username in lower case: the `userId` of the other user routes.
    pub username: String,
}

/// What the caller may do with a user, in Keycloak's representation (fixed:
/// an administrator manages users, impersonation is not offered).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserAccess {
    /// Always `true`: an administrator may change the user's groups.
    pub manage_group_membership: bool,
    /// Always `true`: an administrator may read the user.
    pub view: bool,
    /// Always `true`: an administrator may assign the user's roles.
    pub map_roles: bool,
    /// Always `false`: impersonation is not offered.
    pub impersonate: bool,
    /// Always `true`: an administrator may change the user.
    pub manage: bool,
}

/// The bare user object of Get User By UUID (Keycloak's user representation).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserRepresentation {
    /// UUID assigned at creation.
    pub id: String,
    /// Creation time, ms since the Unix epoch.
    pub created_timestamp: u64,
    /// Login name, in lower case.
    pub username: String,
    /// `false`: the user may not log in.
    pub enabled: bool,
    /// Whether the e-mail address is confirmed.
    pub email_verified: bool,
    /// Empty when not set.
    pub first_name: String,
    /// Empty when not set.
    pub last_name: String,
    /// Empty when not set.
    pub email: String,
    /// Custom attributes, name to values.
    pub attributes: BTreeMap<String, Vec<String>>,
    /// Always empty.
    pub disableable_credential_types: Vec<String>,
    /// Actions pending before the user may log in.
    pub required_actions: Vec<String>,
    /// Keycloak's `notBefore` (seconds): tokens issued before are refused.
    pub not_before: u64,
    /// What an administrator may do with the user.
    pub access: UserAccess,
}

impl UserRepresentation {
    /// The representation of a stored user.
    pub fn of(u: &User) -> UserRepresentation {
        UserRepresentation {
            id: u.id.clone(),
            created_timestamp: u.created_ms,
            username: u.username.clone(),
            enabled: u.enabled,
            email_verified: u.email_verified,
            first_name: u.first_name.clone().unwrap_or_default(),
            last_name: u.last_name.clone().unwrap_or_default(),
            email: u.email.clone().unwrap_or_default(),
            attributes: u.attributes.clone(),
            disableable_credential_types: Vec::new(),
            required_actions: u.required_actions.clone(),
            not_before: u.not_before,
            access: UserAccess {
                manage_group_membership: true,
                view: true,
                map_roles: true,
                impersonate: false,
                manage: true,
            },
        }
    }
}

/// One credential of a user as Get Credentials shows it: its parameters,
/// never the secret or its hash.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialView {
    /// UUID of the credential; each new password gets a new one.
    pub id: String,
    /// `password`.
    #[serde(rename = "type")]
    pub kind: String,
    /// When the password was set, ms since the Unix epoch.
    pub created_date: u64,
    /// JSON text of the hashing parameters (algorithm, iterations, memory,
    /// parallelism); never the salt or the hash.
    pub credential_data: String,
}

impl CredentialView {
    /// The view of a stored credential (its hash stays out).
    pub fn of(c: &Credential) -> CredentialView {
        CredentialView {
            id: c.id.clone(),
            kind: c.kind.clone(),
            created_date: c.created_ms,
            credential_data: credential_data(&c.hash),
        }
    }
}

/// Default `limit` of a user list (the spec does not give one).
pub const DEFAULT_LIMIT: usize = 100;
/// Largest accepted `limit`.
pub const MAX_LIMIT: usize = 1000;

/// The field a user list is ordered by (`orderByKey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UserOrder {
    /// `username` (the default).
    #[default]
    Username,
    /// `firstName`.
    FirstName,
    /// `lastName`.
    LastName,
    /// `email`.
    Email,
}

impl UserOrder {
    pub(crate) fn field(self) -> Field {
        match self {
            UserOrder::Username => Field::Username,
            UserOrder::FirstName => Field::FirstName,
            UserOrder::LastName => Field::LastName,
            UserOrder::Email => Field::Email,
        }
    }
}

/// The list query set of spec 001's user lists: a page (`limit` from
/// `offset`), filters that all must hold, and the order. Text filters match
/// a part of the field, in any case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserListQuery {
    /// From 1 to [`MAX_LIMIT`].
    pub limit: usize,
    /// Matching users skipped before the page.
    pub offset: usize,
    /// Only enabled (`true`) or only disabled (`false`) users.
    pub enabled: Option<bool>,
    /// Only users whose e-mail is verified (`true`) or not (`false`).
    pub email_verified: Option<bool>,
    /// A part of the first name.
    pub first_name: Option<String>,
    /// A part of the last name.
    pub last_name: Option<String>,
    /// A part of the e-mail address.
    pub email: Option<String>,
    /// A part of the username.
    pub username: Option<String>,
    /// Matches any of the four text fields; the four specific filters are
    /// then ignored.
    pub generic: Option<String>,
    /// Descending order.
    pub desc: bool,
    /// The field the users are sorted by (`orderByKey`).
    pub order_by: UserOrder,
    /// Created at or after (ms).
    pub from: Option<u64>,
    /// Created at or before (ms).
    pub to: Option<u64>,
}

impl Default for UserListQuery {
    /// The first [`DEFAULT_LIMIT`] users in username order.
    fn default() -> Self {
        UserListQuery {
            limit: DEFAULT_LIMIT,
            offset: 0,
            enabled: None,
            email_verified: None,
            first_name: None,
            last_name: None,
            email: None,
            username: None,
            generic: None,
            desc: false,
            order_by: UserOrder::Username,
            from: None,
            to: None,
        }
    }
}

impl UserListQuery {
    /// Decodes the query parameters (`limit`, `offset`, `isUserEnabled`,
    /// `isEmailVerified`, `firstName`, `lastName`, `email`, `username`,
    /// `genericSearchVal`, `from`, `to`, `orderByKey`, `orderBy`) that `get`
    /// answers; empty ones count as absent.
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> ApiResult<UserListQuery> {
        let get = |name: &str| get(name).filter(|v| !v.is_empty());
        let int = |name: &str, default: usize, min: usize, max: usize| match get(name) {
            None => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(ApiError::field(name, format!("must be an integer from {min} to {max}"))),
            },
        };
        let boolean = |name: &str| match get(name).as_deref() {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(_) => Err(ApiError::field(name, "must be true or false")),
        };
        let millis = |name: &str| match get(name) {
            None => Ok(None),
            Some(v) => {
                v.parse::<u64>().map(Some).map_err(|_| ApiError::field(name, "must be a timestamp in milliseconds"))
            }
        };
        let order_by = match get("orderByKey").as_deref() {
            None | Some("username") => UserOrder::Username,
            Some("firstName") => UserOrder::FirstName,
            Some("lastName") => UserOrder::LastName,
            Some("email") => UserOrder::Email,
            Some(_) => return Err(ApiError::field("orderByKey", "must be firstName, lastName, email or username")),
        };
        let desc = match get("orderBy").map(|v| v.to_lowercase()).as_deref() {
            None | Some("asc") => false,
            Some("desc") => true,
            Some(_) => return Err(ApiError::field("orderBy", "must be asc or desc")),
        };
        let q = UserListQuery {
            limit: int("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)?,
            offset: int("offset", 0, 0, usize::MAX >> 1)?,
            enabled: boolean("isUserEnabled")?,
            email_verified: boolean("isEmailVerified")?,
            first_name: get("firstName"),
            last_name: get("lastName"),
            email: get("email"),
            username: get("username"),
            generic: get("genericSearchVal"),
            desc,
            order_by,
            from: millis("from")?,
            to: millis("to")?,
        };
        q.validate()?;
        Ok(q.normalized())
    }

    /// The page fits (`limit` from 1 to [`MAX_LIMIT`]) and `from` is not after `to`.
    pub fn validate(&self) -> ApiResult<()> {
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return Err(ApiError::field("limit", format!("must be an integer from 1 to {MAX_LIMIT}")));
        }
        if self.offset > usize::MAX >> 1 {
            return Err(ApiError::field("offset", format!("must be an integer from 0 to {}", usize::MAX >> 1)));
        }
        if let (Some(f), Some(t)) = (self.from, self.to) {
            if f > t {
                return Err(ApiError::field("from", "must not be after to"));
            }
        }
        Ok(())
    }

    /// The query with its text filters in lower case (as rows are matched)
    /// and empty ones absent.
    pub fn normalized(mut self) -> UserListQuery {
        for f in [&mut self.first_name, &mut self.last_name, &mut self.email, &mut self.username, &mut self.generic] {
            *f = f.take().filter(|v| !v.is_empty()).map(|v| v.to_lowercase());
        }
        self
    }

    /// Whether a user row passes the filters (text filters in lower case:
    /// [`UserListQuery::normalized`]).
    pub fn matches(&self, u: &UserRow) -> bool {
        if self.enabled.is_some_and(|e| e != u.enabled) || self.email_verified.is_some_and(|v| v != u.email_verified) {
            return false;
        }
        if self.from.is_some_and(|f| u.created_ms < f) || self.to.is_some_and(|t| u.created_ms > t) {
            return false;
        }
        if let Some(g) = &self.generic {
            // A generic search value overrides the four specific filters.
            return u.all_fields().contains(g.as_str());
        }
        self.first_name.as_deref().is_none_or(|f| u.first_name().contains(f))
            && self.last_name.as_deref().is_none_or(|f| u.last_name().contains(f))
            && self.email.as_deref().is_none_or(|f| u.email().contains(f))
            && self.username.as_deref().is_none_or(|f| u.username().contains(f))
    }
}

/// Where a page of a user list stands.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserPageInfo {
    /// From 1.
    pub current_page: usize,
    /// Users per page: the query's `limit`.
    pub page_size: usize,
    /// Pages of `pageSize` the matching users fill.
    pub total_pages: usize,
    /// Users matching the query, on every page.
    pub total_records: usize,
}

/// One page of a user list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserPage {
    /// The users of this page, in the query's order.
    pub user_list: Vec<UserView>,
    /// Where this page stands in the whole list.
    pub page: UserPageInfo,
}

/// What a resend of an OTP came to when it is allowed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OtpResent {
    /// Always false: a locked user's resend is refused.
    pub locked: bool,
    /// How many more resends the window allows; absent when the tenant
    /// does not count resends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining_resends: Option<u32>,
}

/// A user's resend-OTP lock.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OtpLockStatus {
    /// `true`: resends are refused until `lockedUntil`.
    pub locked: bool,
    /// Resends counted in the current window.
    pub resend_count: u32,
    /// When the lock ends (ms); 0 when not locked.
    pub locked_until: u64,
}

/// What unlocking every user's OTP resends did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OtpUnlocked {
    /// Users whose counters went.
    pub unlocked: usize,
}

/// `credentialData` of an argon2 PHC string: the parameters, never salt or hash.
pub(crate) fn credential_data(phc: &str) -> String {
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
    fn changes_keep_what_they_do_not_name() {
        let mut u = User {
            username: "bob".into(),
            enabled: true,
            email: Some("b@x.io".into()),
            email_verified: true,
            realm_roles: vec!["admin".into(), "member".into(), "realm-admin".into()],
            client_roles: [("shop".to_string(), vec!["buyer".to_string()])].into(),
            required_actions: vec!["VERIFY_EMAIL".into()],
            ..User::default()
        };
        let w: UserWrite = serde_json::from_str(r#"{"username":"Bobby","email":"","firstName":"B"}"#).unwrap();
        apply(&mut u, &w);
        assert_eq!((u.username.as_str(), u.email.as_deref(), u.first_name.as_deref()), ("bobby", None, Some("B")));
        assert!(u.enabled && u.email_verified, "fields absent from the body stay");

        let pw = |temporary| NewPassword {
            credential: Credential { id: "c".into(), kind: "password".into(), hash: "h".into(), created_ms: 0 },
            temporary,
        };
        set_password(&mut u, Some(&pw(true)));
        set_password(&mut u, Some(&pw(true)));
        assert_eq!(u.credentials.len(), 1, "one password");
        assert_eq!(u.required_actions, ["VERIFY_EMAIL", UPDATE_PASSWORD]);
        set_password(&mut u, None);
        assert_eq!(u.credentials.len(), 1);

        let p: ProfileWrite = serde_json::from_str(r#"{"email":"new@x.io","attributes":{"a":"1"}}"#).unwrap();
        u.email_verified = true;
        u.attributes.insert("b".into(), vec!["2".into()]);
        apply_profile(&mut u, &p);
        assert!(!u.email_verified, "a new e-mail is not verified");
        assert_eq!(u.attributes.len(), 2, "attributes merged");

        set_enabled(&mut u, false, 42);
        assert_eq!((u.enabled, u.not_before), (false, 42));
        set_enabled(&mut u, true, 50);
        assert_eq!((u.enabled, u.not_before), (true, 42));

        revoke_admin(&mut u);
        assert_eq!(u.realm_roles, ["member"]);
        promote(&mut u);
        promote(&mut u);
        assert_eq!(u.realm_roles.len(), 1 + crate::auth::roles::ADMINS.len());
        let r: RevokeRoles =
            serde_json::from_str(r#"{"realmRoles":["member"],"clientRoles":{"shop":["buyer"]}}"#).unwrap();
        revoke_roles(&mut u, &r);
        assert!(!u.realm_roles.contains(&"member".to_string()) && u.client_roles.is_empty());
        revoke_required_actions(&mut u, &RevokeActions { required_actions: vec!["VERIFY_EMAIL".into()] });
        assert_eq!(u.required_actions, [UPDATE_PASSWORD]);
    }

    #[test]
    fn login_needs_an_enabled_set_up_user_and_the_verified_password() {
        let pw = |hash: &str| Credential { id: "c".into(), kind: "password".into(), hash: hash.into(), created_ms: 0 };
        let mut u = User { enabled: true, credentials: vec![pw("h1")], ..User::default() };
        assert_eq!(may_log_in(&u), Ok(()));
        assert!(password_unchanged(&u, Some("h1")));
        assert!(!password_unchanged(&u, Some("h0")), "changed since the check");
        u.required_actions.push(UPDATE_PASSWORD.into());
        assert_eq!(may_log_in(&u), Err("Account is not fully set up"));
        u.enabled = false;
        assert_eq!(may_log_in(&u), Err("Account disabled"));
    }

    #[test]
    fn otp_resends_lock_past_the_limit_until_the_window_ends() {
        let p = OtpPolicy { enabled: true, max_resends: 2, window_seconds: 10 };
        let mut c = OtpCounter::default();
        for (now, expect_locked) in [(1_000, false), (2_000, false), (3_000, true)] {
            match otp_resend(c.clone(), &p, now) {
                OtpResend::Counted { counter, locked } => {
                    assert_eq!(locked, expect_locked, "at {now}");
                    c = counter;
                }
                OtpResend::Locked => panic!("at {now}"),
            }
        }
        assert_eq!((c.window_start_ms, c.count, c.locked_until_ms), (1_000, 3, 11_000));
        assert_eq!(otp_resend(c.clone(), &p, 10_999), OtpResend::Locked);
        // The window is over: counting starts again.
        assert_eq!(otp_current(c.clone(), &p, 11_000), OtpCounter::default());
        assert!(matches!(otp_resend(c, &p, 11_000), OtpResend::Counted { locked: false, .. }));
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
