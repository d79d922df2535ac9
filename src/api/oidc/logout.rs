//! Logout (Keycloak's endpoint, OpenID Connect RP-Initiated Logout): ends
//! the login session a refresh token or an ID token names. Nothing is
//! redirected: Herald registers no redirect URIs to check one against.

use super::client_auth::OAuthClient;
use super::params::{invalid_request, Params};
use super::realm_token;
use crate::auth::tokens::{self, TYP_REFRESH};
use crate::error::{ApiError, ApiResult};
use crate::http::{empty, Cx, Response};
use crate::ops::realm::{self, invalid_grant};
use http::StatusCode;

/// What names the session to end (one of the two), and the client.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
pub struct LogoutRequest {
    /// A refresh token of the session; checked before `id_token_hint` when both are given.
    pub refresh_token: Option<String>,
    /// An ID token of the session, possibly expired.
    pub id_token_hint: Option<String>,
    /// The client (`client_secret_post`, or HTTP Basic); if named, it must be the client the token was issued to.
    pub client_id: Option<String>,
    /// The client's secret (`client_secret_post`); required to end a device client's session.
    pub client_secret: Option<String>,
}

pub(crate) async fn logout(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let params = Params::limited(&cx)?;
    let client = OAuthClient::identify(&cx.engine, tenant, &cx.headers, &params)?;
    let req: LogoutRequest = params.decode()?;
    let session = if let Some(token) = req.refresh_token.as_deref() {
        let claims =
            realm_token(&cx.engine, tenant, token, TYP_REFRESH).map_err(|_| invalid_grant("Invalid refresh token"))?;
        client.may_present(&cx.engine, tenant, &claims.azp)?;
        claims.session_state
    } else if let Some(hint) = req.id_token_hint.as_deref() {
        let e = &cx.engine;
        let claims = tokens::verify_id_hint(&e.store, &e.keys, &e.config.public_url, tenant, hint)?;
        if client.id().is_some_and(|id| id != claims.azp) {
            return Err(ApiError::oauth(
                StatusCode::BAD_REQUEST,
                "unauthorized_client",
                "the token was issued to another client",
            ));
        }
        claims.sid
    } else {
        return Err(invalid_request("refresh_token or id_token_hint is required"));
    };
    realm::end_session(&cx.engine, tenant, &session).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
