//! Properties of a user, or of a user's client (see [`crate::library::properties`]).

use crate::error::ApiResult;
use crate::http::{json, Cx, Response};
use crate::list_filter;
use crate::models::property::{PropertyBody, FIELDS};
use crate::paging::Paging;
use http::StatusCode;

/// The client of the path, when the route has one.
fn client(cx: &Cx) -> Option<&str> {
    Some(cx.param("astClientId")).filter(|id| !id.is_empty())
}

pub(crate) async fn list(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "page_size", 5, 100)?;
    let conditions = list_filter::parse(&cx, &FIELDS)?;
    let (tenant, user) = (cx.tenant(), cx.param("userId"));
    let page = cx.engine.properties().list(&cx.caller, tenant, user, client(&cx), &conditions, paging).await?;
    json(StatusCode::OK, &page)
}

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let body: PropertyBody = cx.json()?;
    let (tenant, user) = (cx.tenant(), cx.param("userId"));
    let view = cx.engine.properties().create(&cx.caller, tenant, user, client(&cx), body).await?;
    json(StatusCode::CREATED, &view)
}
