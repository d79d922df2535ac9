//! Nonces, login events, and the login runtime configuration.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::nonce::{CreateNonce, LoginEvent};
use base64::Engine as _;
use herald_storage::nonces::Nonce;
use herald_storage::settings::LoginConfig;
use http::StatusCode;
use ring::rand::{SecureRandom, SystemRandom};
use serde::Deserialize;
use serde_json::json;

fn random_nonce(short: bool) -> ApiResult<String> {
    let rng = SystemRandom::new();
    if short {
        let mut b = [0u8; 8];
        rng.fill(&mut b).map_err(|_| ApiError::internal("no randomness"))?;
        Ok(format!("{:08}", u64::from_le_bytes(b) % 100_000_000))
    } else {
        let mut b = [0u8; 32];
        rng.fill(&mut b).map_err(|_| ApiError::internal("no randomness"))?;
        Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b))
    }
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let short = match cx.query_param("type").as_deref() {
        None | Some("default") => false,
        Some("short") => true,
        Some(_) => return Err(ApiError::field("type", "must be default or short")),
    };
    let body: CreateNonce = cx.json()?;
    let ttl = body.validate()?;
    let store = &cx.engine.store;
    let now = cx.engine.config.clock.now_ms();
    let credential_secret = match &body.payload.credential {
        Some(c) => Some(store.seal(c.secret.as_bytes(), &format!("nonce/{tenant}/credential"))?),
        None => None,
    };
    // A short nonce has 10^8 values: a collision makes another.
    let make = || {
        Ok(Nonce {
            value: random_nonce(short)?,
            action: body.action.as_str().to_string(),
            portal_session_id: body.payload.portal_session_id.clone(),
            expected_user_id: body.payload.expected_user_id.clone(),
            credential_user: body.payload.credential.as_ref().map(|c| c.user.clone()),
            credential_secret: credential_secret.clone(),
            created_ms: now,
            expires_ms: now + ttl * 1000,
            used: false,
        })
    };
    let nonce = crate::ops::nonces::create(&cx.engine, tenant, make).await?;
    json(StatusCode::CREATED, &json!({ "nonce": nonce.value, "type": nonce.action, "expiresAt": nonce.expires_ms }))
}

/// A client reports a login with a nonce: single use, the expected user only.
pub async fn login_event(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: LoginEvent = cx.json()?;
    body.validate()?;
    cx.principal()?.may_act_on_client(&body.ast_client_id)?;
    crate::ops::nonces::login_event(&cx.engine, tenant, &body.ast_client_id, &body.user_id, &body.nonce).await?;
    json(
        StatusCode::OK,
        &json!({ "astClientId": body.ast_client_id, "userId": body.user_id, "loginOutcome": "SUCCESS" }),
    )
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
