//! Nonces (spec 002 "Nonce") and login events.

use super::validate;
use crate::error::{ApiError, ApiResult};
use herald_storage::nonces::Nonce;
use serde::{Deserialize, Serialize};

/// What a nonce is for (its `action`, answered as `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// A login: spending it sends the `LOGIN_NONCE_COMPLETED` event (the login callback).
    LoginNonce,
    /// A TMS action: spending it records the login without the login callback.
    TmsNonce,
}

impl Action {
    /// The wire name: `LOGIN_NONCE` or `TMS_NONCE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::LoginNonce => "LOGIN_NONCE",
            Action::TmsNonce => "TMS_NONCE",
        }
    }
}

/// A credential stored with a nonce.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NonceCredential {
    /// 1 to 255 characters.
    pub user: String,
    /// 1 to 1024 characters; stored sealed, never read back.
    pub secret: String,
}

/// What a nonce carries.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NoncePayload {
    /// The portal session waiting for the login (at most 255 characters); echoed in the login callback.
    pub portal_session_id: Option<String>,
    /// The only user who may spend the nonce (1 to 255 characters); another gets 403, the nonce stays unused.
    pub expected_user_id: Option<String>,
    /// Seconds until the nonce expires: default 300, at most 3600.
    #[schema(minimum = 1, maximum = 3600)]
    pub timeout: Option<i64>,
    /// A credential to store with the nonce.
    pub credential: Option<NonceCredential>,
}

/// `POST /v1/tenants/{t}/nonces?type=default|short`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateNonce {
    /// What the nonce is for.
    pub action: Action,
    /// What the nonce carries.
    pub payload: NoncePayload,
}

impl CreateNonce {
    /// Validates and answers the lifetime in seconds.
    pub fn validate(&self) -> ApiResult<u64> {
        let p = &self.payload;
        validate::max_length("payload.portalSessionId", &p.portal_session_id, 255)?;
        if let Some(u) = &p.expected_user_id {
            validate::length("payload.expectedUserId", u, 1, 255)?;
        }
        if let Some(c) = &p.credential {
            validate::length("payload.credential.user", &c.user, 1, 255)?;
            validate::length("payload.credential.secret", &c.secret, 1, 1024)?;
        }
        match p.timeout {
            None => Ok(300),
            Some(t) if (1..=3600).contains(&t) => Ok(t as u64),
            Some(_) => Err(ApiError::field("payload.timeout", "must be from 1 to 3600 seconds")),
        }
    }
}

/// `PUT /v1/tenants/{t}/clients/events`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoginEvent {
    /// The nonce the login spends (1 to 128 characters): 404 once it expired, 409 once it was spent.
    pub nonce: String,
    /// The client that logged in (a ULID); a client reports only its own logins.
    pub ast_client_id: String,
    /// The user who logged in (1 to 255 characters); the nonce's expected user when it names one.
    pub user_id: String,
}

impl LoginEvent {
    /// Checks the forms of the three fields; 400 naming the field.
    pub fn validate(&self) -> ApiResult<()> {
        validate::length("nonce", &self.nonce, 1, 128)?;
        validate::ulid("astClientId", &self.ast_client_id)?;
        validate::id("userId", &self.user_id, 1, 255)
    }
}

/// The form of a new nonce (`type` query parameter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NonceFormat {
    /// 32 random bytes, base64url (`default`).
    #[default]
    Long,
    /// Eight decimal digits, for typing by hand (`short`).
    Short,
}

/// A created nonce.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NonceView {
    /// Single use: 43 base64url characters (`type=default`) or 8 digits (`type=short`).
    pub nonce: String,
    /// The action: `LOGIN_NONCE` or `TMS_NONCE`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Milliseconds since the Unix epoch.
    pub expires_at: u64,
}

/// A login event recorded.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginRecorded {
    /// The client the login was recorded on.
    pub ast_client_id: String,
    /// The user who logged in.
    pub user_id: String,
    /// `SUCCESS`.
    pub login_outcome: String,
}

/// Why a nonce cannot be used for a login event.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Unknown or expired (the two are not told apart).
    Unknown,
    /// Issued for another user: the nonce stays unused.
    OtherUser,
    /// Spent already.
    Used,
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> ApiError {
        match r {
            Refused::Unknown => ApiError::not_found("unknown or expired nonce"),
            Refused::OtherUser => ApiError::forbidden("the nonce was issued for another user"),
            Refused::Used => ApiError::conflict("the nonce was already used"),
        }
    }
}

/// Single use: marks the nonce used by `user` at `now`, or says why it
/// cannot be. The user is checked before the use, so a mismatch does not
/// burn the nonce.
pub fn use_once(n: Option<Nonce>, user: &str, now: u64) -> Result<Nonce, Refused> {
    let Some(mut n) = n.filter(|n| n.expires_ms > now) else { return Err(Refused::Unknown) };
    if n.expected_user_id.as_deref().is_some_and(|u| u != user) {
        return Err(Refused::OtherUser);
    }
    if n.used {
        return Err(Refused::Used);
    }
    n.used = true;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nonce(expected: Option<&str>) -> Nonce {
        Nonce {
            value: "n".into(),
            action: "LOGIN_NONCE".into(),
            portal_session_id: None,
            expected_user_id: expected.map(str::to_string),
            credential_user: None,
            credential_secret: None,
            created_ms: 0,
            expires_ms: 100,
            used: false,
        }
    }

    #[test]
    fn a_nonce_is_used_once_by_its_user_before_it_expires() {
        assert_eq!(use_once(None, "alice", 1), Err(Refused::Unknown));
        assert_eq!(use_once(Some(nonce(None)), "alice", 100), Err(Refused::Unknown), "expired");
        assert_eq!(use_once(Some(nonce(Some("bob"))), "alice", 1), Err(Refused::OtherUser));
        let used = use_once(Some(nonce(Some("alice"))), "alice", 1).unwrap();
        assert!(used.used);
        assert_eq!(use_once(Some(used), "alice", 2), Err(Refused::Used));
    }
}
