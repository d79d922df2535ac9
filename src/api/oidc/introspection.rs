//! Token introspection (RFC 7662): whether a token of the realm is active,
//! for a resource server or gateway that holds a device client's
//! credentials or an admin token.

use super::client_auth::OAuthClient;
use super::params::{Params, TokenParams};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use http::StatusCode;

pub use crate::library::realm::Introspection;

pub(crate) async fn introspect(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let params = Params::limited(&cx)?;
    let caller = match crate::router::bearer(&cx.headers) {
        Some(_) => {
            let access = crate::library::realm::access::INTROSPECT;
            crate::router::authenticate(&cx.engine, access, &cx.headers, Some(tenant)).await?
        }
        None => match OAuthClient::identify(&cx.engine, tenant, &cx.headers, &params)? {
            OAuthClient::Confidential(c) => Caller::client(tenant, &c.id),
            _ => {
                return Err(ApiError::oauth(
                    StatusCode::UNAUTHORIZED,
                    "invalid_client",
                    "introspection needs a client's credentials or an admin token",
                ))
            }
        },
    };
    let req: TokenParams = params.decode()?;
    let answer = cx.engine.realm().introspect(&caller, tenant, &req.token).await?;
    json(StatusCode::OK, &answer)
}
