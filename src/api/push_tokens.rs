//! A client's push token: register or replace it (admin or the client itself),
//! and read it back (administrators only: the token is sensitive).

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::models::push_token::{PushTokenView, PutPushToken};
use crate::models::validate;
use herald_storage::push_tokens::PushToken;
use http::StatusCode;

pub async fn put(cx: Cx) -> ApiResult<Response> {
    let (tenant, client_id) = (cx.tenant(), cx.param("astClientId"));
    validate::ulid("astClientId", client_id)?;
    cx.principal()?.may_act_on_client(client_id)?;
    let body: PutPushToken = cx.json()?;
    let token = if body.push_token.is_empty() { None } else { Some(body.resolve()?) };
    let written = crate::ops::clients::set_push_token(&cx.engine, tenant, client_id, &body.app_name, token).await?;
    let Some(record) = written else { return Ok(empty(StatusCode::NO_CONTENT)) };
    let view = to_view(record, cx.engine.store.links().user_ids_of_client(tenant, client_id)?);
    json(StatusCode::OK, &view)
}

pub async fn get(cx: Cx) -> ApiResult<Response> {
    let (tenant, client_id) = (cx.tenant(), cx.param("astClientId"));
    let store = &cx.engine.store;
    let not_found = || ApiError::not_found(format!("no push token for client {client_id}"));
    let record = store.push_tokens().get(tenant, client_id)?.ok_or_else(not_found)?;
    json(StatusCode::OK, &to_view(record, store.links().user_ids_of_client(tenant, client_id)?))
}

fn to_view(r: PushToken, assigned_users: Vec<String>) -> PushTokenView {
    PushTokenView {
        app_name: r.app_name,
        push_token: r.token,
        push_provider: r.provider.as_str().to_string(),
        is_valid: r.is_valid,
        assigned_users,
    }
}
