//! The signed SDK config: a compact JWS (ES256) over the request's contents,
//! signed by the ACTIVE signer with its chain in `x5c` (see
//! [`crate::library::signers::Signers::sdk_config`]).

use crate::error::ApiResult;
use crate::http::{json, Cx, Response};
use crate::models::signer::SdkConfigRequest;
use http::StatusCode;

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let body: SdkConfigRequest = cx.json()?;
    let config = cx.engine.signers().sdk_config(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::OK, &config)
}
