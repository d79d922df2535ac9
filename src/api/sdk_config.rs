//! The signed SDK config: a compact JWS (ES256) over the request's contents,
//! signed by the ACTIVE signer with its chain in `x5c`.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::signer::SdkConfigRequest;
use http::StatusCode;
use serde_json::json;

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let body: SdkConfigRequest = cx.json()?;
    body.validate()?;
    if cx.engine.store.tenants().get(tenant)?.is_none() {
        return Err(ApiError::not_found(format!("tenant {tenant} not found")));
    }
    let payload = json!({
        "tenant": tenant,
        "tlsBundle": body.tls_bundle,
        "astUrl": body.ast_url,
        "services": body.services,
        "iat": herald_storage::now_ms() / 1000,
    });
    let sdk_config = cx.engine.pki.sign_json(tenant, &payload)?;
    json(StatusCode::OK, &json!({ "sdkConfig": sdk_config }))
}
