//! Nonces, login events (see [`crate::library::nonces`]), and the login
//! runtime configuration.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::nonce::{CreateNonce, LoginEvent, NonceFormat};
use herald_storage::settings::LoginConfig;
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

pub async fn create(cx: Cx) -> ApiResult<Response> {
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
pub async fn login_event(cx: Cx) -> ApiResult<Response> {
    let body: LoginEvent = cx.json()?;
    let recorded = cx.engine.nonces().login_event(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::OK, &recorded)
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginConfigBody {
    risks: Risks,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Risks {
    enable_inference: bool,
}

fn login_view(c: LoginConfig) -> serde_json::Value {
    json!({ "risks": { "enableInference": c.enable_inference } })
}

pub async fn get_login_config(cx: Cx) -> ApiResult<Response> {
    json(StatusCode::OK, &login_view(cx.engine.store.settings().login(cx.tenant())?))
}

pub async fn put_login_config(cx: Cx) -> ApiResult<Response> {
    let body: LoginConfigBody = cx.json()?;
    let c = LoginConfig { enable_inference: body.risks.enable_inference };
    crate::ops::realm::set_login_config(&cx.engine, cx.tenant(), c).await?;
    json(StatusCode::OK, &login_view(c))
}
