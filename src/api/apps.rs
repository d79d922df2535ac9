//! Apps with push configuration: save, update, get, list, delete (see
//! [`crate::library::apps`]).

use crate::error::ApiResult;
use crate::http::{empty, json, Cx, Response};
use crate::models::app::AppBody;
use crate::paging::Paging;
use http::StatusCode;

pub(crate) async fn save(cx: Cx) -> ApiResult<Response> {
    let body: AppBody = cx.json()?;
    let view = cx.engine.apps().create(&cx.caller, cx.tenant(), cx.param("appName"), body).await?;
    json(StatusCode::CREATED, &view)
}

pub(crate) async fn update(cx: Cx) -> ApiResult<Response> {
    let body: AppBody = cx.json()?;
    let view = cx.engine.apps().update(&cx.caller, cx.tenant(), cx.param("appName"), body).await?;
    json(StatusCode::OK, &view)
}

pub(crate) async fn get(cx: Cx) -> ApiResult<Response> {
    let view = cx.engine.apps().get(&cx.caller, cx.tenant(), cx.param("appName")).await?;
    json(StatusCode::OK, &view)
}

pub(crate) async fn list(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "pageSize", 1, 100)?;
    let name_filter = cx.query_param("appName");
    let views = cx.engine.apps().list(&cx.caller, cx.tenant(), name_filter.as_deref(), paging).await?;
    json(StatusCode::OK, &views)
}

/// Deleting an app deletes its versions (with their registrations and votes).
pub(crate) async fn delete(cx: Cx) -> ApiResult<Response> {
    cx.engine.apps().delete(&cx.caller, cx.tenant(), cx.param("appName")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
