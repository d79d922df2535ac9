//! A client's push token: register or replace it (admin or the client itself),
//! and read it back (administrators only: the token is sensitive).

use crate::error::ApiResult;
use crate::http::{empty, json, Cx, Response};
use crate::models::push_token::PutPushToken;
use http::StatusCode;

pub(crate) async fn put(cx: Cx) -> ApiResult<Response> {
    let body: PutPushToken = cx.json()?;
    let written = cx.engine.clients().set_push_token(&cx.caller, cx.tenant(), cx.param("astClientId"), body).await?;
    match written {
        Some(view) => json(StatusCode::OK, &view),
        None => Ok(empty(StatusCode::NO_CONTENT)),
    }
}

pub(crate) async fn get(cx: Cx) -> ApiResult<Response> {
    let view = cx.engine.clients().push_token(&cx.caller, cx.tenant(), cx.param("astClientId")).await?;
    json(StatusCode::OK, &view)
}
