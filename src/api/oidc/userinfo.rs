//! The UserInfo endpoint (OpenID Connect Core §5.3): the claims of the user
//! a bearer token is of (or, for a device client's token, of the client).

use super::params::Params;
use super::realm_token;
use crate::auth::tokens::TYP_ACCESS;
use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use http::{Method, StatusCode};
use serde::Serialize;

/// Standard claims of the token's subject.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UserInfo {
    sub: String,
    preferred_username: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<String>,
    email_verified: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    given_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    family_name: Option<String>,
}

/// 401 with the Bearer challenge of RFC 6750 §3.1.
fn invalid_token(tenant: &str, description: impl Into<String>) -> ApiError {
    ApiError::oauth(StatusCode::UNAUTHORIZED, "invalid_token", description)
        .with_challenge(format!("Bearer realm=\"{tenant}\", error=\"invalid_token\""))
}

pub(crate) async fn userinfo(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    // RFC 6750 §2: the header, or (POST only) the `access_token` form field.
    let from_form = match cx.method {
        Method::POST if crate::router::bearer(&cx.headers).is_none() => {
            Params::of(&cx)?.get("access_token").map(str::to_string)
        }
        _ => None,
    };
    let Some(token) = crate::router::bearer(&cx.headers).map(str::to_string).or(from_form) else {
        return Err(ApiError::oauth(StatusCode::UNAUTHORIZED, "invalid_request", "a bearer token is required")
            .with_challenge(format!("Bearer realm=\"{tenant}\"")));
    };
    let claims = realm_token(&cx.engine, tenant, &token, TYP_ACCESS).map_err(|e| invalid_token(tenant, e.message))?;
    crate::auth::session::check_access(&cx.engine, tenant, &claims)
        .await
        .map_err(|e| invalid_token(tenant, e.message))?;
    let info = match claims.ast_client_id {
        Some(client) => UserInfo {
            sub: client,
            preferred_username: claims.preferred_username,
            email: None,
            email_verified: false,
            name: None,
            given_name: None,
            family_name: None,
        },
        None => {
            let user = cx
                .engine
                .store
                .users()
                .get(tenant, &claims.sub)?
                .ok_or_else(|| invalid_token(tenant, "the user no longer exists"))?;
            UserInfo {
                name: crate::models::user::full_name(&user),
                sub: user.id,
                preferred_username: user.username,
                email: user.email,
                email_verified: user.email_verified,
                given_name: user.first_name,
                family_name: user.last_name,
            }
        }
    };
    json(StatusCode::OK, &info)
}
