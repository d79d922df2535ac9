//! Scheduled sends (ext): create, list, read, cancel.

use crate::error::ApiResult;
use crate::http::{json, Cx, Response};
use crate::models::schedule::{parse_state, ScheduleBody};
use crate::paging::Paging;
use http::StatusCode;

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let body: ScheduleBody = cx.json()?;
    let view = cx.engine.schedules().create(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::CREATED, &view)
}

pub(crate) async fn list(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "page_size", 1, 100)?;
    let state = cx.query_param("state").map(|s| parse_state("state", &s)).transpose()?;
    let views = cx.engine.schedules().list(&cx.caller, cx.tenant(), state, paging).await?;
    json(StatusCode::OK, &views)
}

pub(crate) async fn get(cx: Cx) -> ApiResult<Response> {
    let view = cx.engine.schedules().get(&cx.caller, cx.tenant(), cx.param("scheduleId")).await?;
    json(StatusCode::OK, &view)
}

pub(crate) async fn cancel(cx: Cx) -> ApiResult<Response> {
    let view = cx.engine.schedules().cancel(&cx.caller, cx.tenant(), cx.param("scheduleId")).await?;
    json(StatusCode::OK, &view)
}
