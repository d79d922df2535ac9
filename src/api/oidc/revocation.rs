//! Token revocation (RFC 7009): a client takes back a token it was issued,
//! access or refresh. Either ends the token's login session, so the
//! session's other tokens stop working too (§2.1 allows and advises it).

use super::client_auth::OAuthClient;
use super::params::{Params, TokenParams};
use crate::auth::session;
use crate::error::{ApiError, ApiResult};
use crate::http::{empty, Cx, Response};
use crate::ops::realm;
use http::StatusCode;

pub(crate) async fn revoke(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let params = Params::limited(&cx)?;
    let client = OAuthClient::identify(&cx.engine, tenant, &cx.headers, &params)?;
    if client.id().is_none() {
        return Err(ApiError::oauth(StatusCode::UNAUTHORIZED, "invalid_client", "the client must identify itself"));
    }
    let req: TokenParams = params.decode()?;
    // The hint only orders the search (§2.1).
    let refresh_first = req.token_type_hint.as_deref() == Some("refresh_token");
    let Some(claims) = session::realm_token(&cx.engine, tenant, &req.token, refresh_first) else {
        // An invalid, expired or unknown token: nothing to revoke (§2.2).
        return Ok(empty(StatusCode::OK));
    };
    client.may_present(&cx.engine, tenant, &claims.azp)?;
    realm::end_session(&cx.engine, tenant, &claims.session_state).await?;
    Ok(empty(StatusCode::OK))
}
