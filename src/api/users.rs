//! User administration of a realm (spec 001, API.md "Identity"; see
//! [`crate::library::users`]).

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::address::AddressView;
use crate::models::ldap::LdapView;
use crate::models::user::{
    CreatedUser, OtpLockStatus, OtpResent, OtpUnlocked, ProfileWrite, RevokeActions, RevokeRoles, UserPage, UserView,
    UserWrite,
};
use http::StatusCode;

/// The success envelope of realm routes that answer no `data`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RealmEnvelope {
    /// Human-readable outcome, e.g. `User updated successfully`; not meant for parsing.
    pub message: String,
    /// Always `OK`.
    pub status: String,
    /// 5 users and addresses, 9 LDAP.
    pub sub_system: u16,
}

/// The success envelope of a realm route without `data`.
pub(crate) fn envelope(message: &str) -> ApiResult<Response> {
    json(StatusCode::OK, &RealmEnvelope { message: message.to_string(), status: "OK".into(), sub_system: 5 })
}

/// Declares the success envelope of realm routes whose `data` is `$data`
/// (`optional`: left out when the answer has none), in subsystem `$sub`, with
/// `answer` to send it: one type per answer, so each route documents its `data`.
macro_rules! realm_envelope {
    ($(#[$doc:meta])* $name:ident, $data:ty, $sub:expr) => {
        $(#[$doc])*
        #[derive(Debug, serde::Serialize, utoipa::ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// Human-readable outcome, e.g. `Users fetched successfully`; not meant for parsing.
            pub message: String,
            /// Always `OK`.
            pub status: String,
            /// 5 users and addresses, 9 LDAP.
            pub sub_system: u16,
            /// The answer.
            pub data: $data,
        }

        impl $name {
            /// Sends `data` in the envelope.
            pub fn answer(message: &str, data: $data) -> ApiResult<Response> {
                json(StatusCode::OK, &$name { message: message.to_string(), status: "OK".into(), sub_system: $sub, data })
            }
        }
    };
    ($(#[$doc:meta])* $name:ident, optional $data:ty, $sub:expr) => {
        $(#[$doc])*
        #[derive(Debug, serde::Serialize, utoipa::ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// Human-readable outcome, e.g. `Users fetched successfully`; not meant for parsing.
            pub message: String,
            /// Always `OK`.
            pub status: String,
            /// 5 users and addresses, 9 LDAP.
            pub sub_system: u16,
            /// The answer, when there is one.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub data: Option<$data>,
        }

        impl $name {
            /// Sends `data` (when there is one) in the envelope.
            pub fn answer(message: &str, data: Option<$data>) -> ApiResult<Response> {
                json(StatusCode::OK, &$name { message: message.to_string(), status: "OK".into(), sub_system: $sub, data })
            }
        }
    };
}

realm_envelope!(
    /// Create User: the new user.
    CreatedUserEnvelope, CreatedUser, 5
);
realm_envelope!(
    /// A user's record.
    UserEnvelope, UserView, 5
);
realm_envelope!(
    /// A page of a user list.
    UserPageEnvelope, UserPage, 5
);
realm_envelope!(
    /// Users (not paged).
    UsersEnvelope, Vec<UserView>, 5
);
realm_envelope!(
    /// User Tenant List: the one realm the user belongs to.
    UserTenantEnvelope, String, 5
);
realm_envelope!(
    /// A user's postal addresses.
    AddressesEnvelope, Vec<AddressView>, 5
);
realm_envelope!(
    /// A counted OTP resend.
    OtpResentEnvelope, OtpResent, 5
);
realm_envelope!(
    /// A user's OTP resend lock (none when the protection is disabled).
    OtpLockEnvelope, optional OtpLockStatus, 5
);
realm_envelope!(
    /// What unlocking every user did (none when the protection is disabled).
    OtpUnlockedEnvelope, optional OtpUnlocked, 5
);
realm_envelope!(
    /// An LDAP component.
    LdapEnvelope, LdapView, 9
);

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let body: UserWrite = cx.json()?;
    let created = cx.engine.users().create(&cx.caller, cx.tenant(), body).await?;
    CreatedUserEnvelope::answer("User created successfully", created)
}

pub(crate) async fn update(cx: Cx) -> ApiResult<Response> {
    let body: UserWrite = cx.json()?;
    cx.engine.users().update(&cx.caller, cx.tenant(), cx.param("userId"), body).await?;
    envelope("User updated successfully")
}

pub(crate) async fn update_profile(cx: Cx) -> ApiResult<Response> {
    let body: ProfileWrite = cx.json()?;
    cx.engine.users().update_profile(&cx.caller, cx.tenant(), cx.param("userId"), body).await?;
    envelope("User profile updated successfully")
}

pub(crate) async fn get_by_id(cx: Cx) -> ApiResult<Response> {
    let u = cx.engine.users().get_by_id(&cx.caller, cx.tenant(), cx.param("id")).await?;
    json(StatusCode::OK, &u)
}

pub(crate) async fn info(cx: Cx) -> ApiResult<Response> {
    let u = cx.engine.users().get(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    UserEnvelope::answer("User details fetched successfully", u)
}

/// Search User: `key` over username, first and last name and e-mail, plus the list query set.
pub(crate) async fn search(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::query(&cx)?;
    let key = cx.query_param("key");
    let page = cx.engine.users().search(&cx.caller, cx.tenant(), key.as_deref(), &q).await?;
    UserPageEnvelope::answer("Users fetched successfully", page)
}

pub(crate) async fn by_attribute(cx: Cx) -> ApiResult<Response> {
    let key = cx.query_param("key").filter(|k| !k.is_empty()).ok_or_else(|| ApiError::field("key", "is required"))?;
    let value = cx.query_param("value").ok_or_else(|| ApiError::field("value", "is required"))?;
    let list = cx.engine.users().by_attribute(&cx.caller, cx.tenant(), &key, &value).await?;
    UsersEnvelope::answer("Users fetched successfully", list)
}

pub(crate) async fn by_role(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::query(&cx)?;
    let page = cx.engine.users().by_role(&cx.caller, cx.tenant(), cx.param("role"), &q).await?;
    UserPageEnvelope::answer("Users fetched successfully", page)
}

pub(crate) async fn by_client_role(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::query(&cx)?;
    let (client, role) = (cx.param("clientid"), cx.param("assignedRole"));
    let page = cx.engine.users().by_client_role(&cx.caller, cx.tenant(), client, role, &q).await?;
    UserPageEnvelope::answer("Users fetched successfully", page)
}

pub(crate) async fn by_group(cx: Cx) -> ApiResult<Response> {
    let q = super::user_lists::query(&cx)?;
    let page = cx.engine.users().by_group(&cx.caller, cx.tenant(), cx.param("groupID"), &q).await?;
    UserPageEnvelope::answer("Users fetched successfully", page)
}

pub(crate) async fn enable(cx: Cx) -> ApiResult<Response> {
    cx.engine.users().enable(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("User enabled successfully")
}

pub(crate) async fn disable(cx: Cx) -> ApiResult<Response> {
    cx.engine.users().disable(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("User disabled successfully")
}

pub(crate) async fn promote(cx: Cx) -> ApiResult<Response> {
    cx.engine.users().promote(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("User promoted to admin successfully")
}

pub(crate) async fn revoke_admin(cx: Cx) -> ApiResult<Response> {
    cx.engine.users().revoke_admin(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    envelope("Admin access revoked successfully")
}

pub(crate) async fn revoke_roles(cx: Cx) -> ApiResult<Response> {
    let body: RevokeRoles = cx.json()?;
    cx.engine.users().revoke_roles(&cx.caller, cx.tenant(), cx.param("userId"), body).await?;
    envelope("Roles revoked successfully")
}

pub(crate) async fn revoke_required_actions(cx: Cx) -> ApiResult<Response> {
    let body: RevokeActions = cx.json()?;
    cx.engine.users().revoke_required_actions(&cx.caller, cx.tenant(), cx.param("userId"), body).await?;
    envelope("Required actions revoked successfully")
}

pub(crate) async fn admins(cx: Cx) -> ApiResult<Response> {
    let list = cx.engine.users().admins(&cx.caller, cx.tenant()).await?;
    UsersEnvelope::answer("Admin users fetched successfully", list)
}

pub(crate) async fn credentials(cx: Cx) -> ApiResult<Response> {
    let list = cx.engine.users().credentials(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    json(StatusCode::OK, &list)
}

/// User Tenant List: a user belongs to the one realm it was created in.
pub(crate) async fn tenants(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.engine.users().tenants(&cx.caller, cx.tenant(), cx.param("userId")).await?;
    UserTenantEnvelope::answer("User tenants fetched successfully", tenant)
}
