//! Nonces, login events (see [`crate::library::nonces`]), and the login
//! runtime configuration.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::nonce::{CreateNonce, LoginEvent, NonceFormat};
use http::StatusCode;

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let format = match cx.query_param("type").as_deref() {
        None | Some("default") => NonceFormat::Long,
        Some("short") => NonceFormat::Short,
        Some(_) => return Err(ApiError::field("type", "must be default or short")),
    };
    let body: CreateNonce = cx.json()?;
    let nonce = cx.engine.nonces().create(&cx.caller, cx.tenant(), format, body).await?;
    json(StatusCode::CREATED, &nonce)
}

/// A client reports a login with a nonce: single use, the expected user only.
pub(crate) async fn login_event(cx: Cx) -> ApiResult<Response> {
    let body: LoginEvent = cx.json()?;
    let recorded = cx.engine.nonces().login_event(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::OK, &recorded)
}

pub use crate::models::ldap::LoginConfigBody;

/// `GET /config/login` (see [`crate::library::realm`]).
pub(crate) async fn get_login_config(cx: Cx) -> ApiResult<Response> {
    json(StatusCode::OK, &cx.engine.realm().login_config(&cx.caller, cx.tenant()).await?)
}

pub(crate) async fn put_login_config(cx: Cx) -> ApiResult<Response> {
    let body: LoginConfigBody = cx.json()?;
    json(StatusCode::OK, &cx.engine.realm().set_login_config(&cx.caller, cx.tenant(), body).await?)
}
