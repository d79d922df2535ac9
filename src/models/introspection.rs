//! The answer of token introspection (RFC 7662 §2.2).

use crate::auth::tokens::{AccessClaims, TYP_REFRESH};
use serde::Serialize;

/// Whether a token is active and, when it is, what it says. An inactive
/// token tells nothing more (§2.2: no hint of why).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Introspection {
    /// Whether the token is valid, unexpired and not taken back.
    pub active: bool,
    /// Space-separated scopes the token grants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The client the token was issued to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The user's username; `service-account-<client id>` for a device client's token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// `Bearer` (an access token) or `Refresh`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// When the token expires, Unix seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exp: Option<u64>,
    /// When the token was issued, Unix seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// The subject: the user's UUID, or the device client's id for a client's token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// The audience: `account` for a user's access token, the issuer for a refresh
    /// token, the client's id for a device client's token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
    /// The issuer: the realm's URL (`.../auth/realms/{tenantId}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// The token's unique id (a ULID).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// The login session the token belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sid: Option<String>,
}

impl Introspection {
    /// What an active token with these claims says.
    pub(crate) fn active(c: AccessClaims) -> Introspection {
        let token_type = if c.typ == TYP_REFRESH { "Refresh" } else { "Bearer" };
        Introspection {
            active: true,
            scope: Some(c.scope),
            client_id: Some(c.azp),
            username: Some(c.preferred_username),
            token_type: Some(token_type.to_string()),
            exp: Some(c.exp),
            iat: Some(c.iat),
            sub: Some(c.sub),
            aud: Some(c.aud),
            iss: Some(c.iss),
            jti: Some(c.jti),
            sid: Some(c.session_state),
        }
    }
}
