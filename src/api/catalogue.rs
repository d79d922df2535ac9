//! Catalogue services: put (ext), list, get; reads may wait for a resource
//! version (see [`crate::library::catalogue`]).

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::catalogue::{check_traceparent, CatalogueService, Versioned};
use crate::paging::Paging;
use http::{HeaderValue, StatusCode};
use serde::Serialize;

/// Validates `traceparent`; reads `MinResourceVersion` (header or query).
fn prepare(cx: &Cx) -> ApiResult<(Option<String>, Option<u64>)> {
    let trace = cx.header("traceparent").map(str::to_string);
    if let Some(t) = &trace {
        check_traceparent(t)?;
    }
    let wanted = cx.header("MinResourceVersion").map(str::to_string).or_else(|| cx.query_param("MinResourceVersion"));
    let wanted = wanted
        .map(|w| w.trim().parse().map_err(|_| ApiError::field("MinResourceVersion", "must be a non-negative integer")))
        .transpose()?;
    Ok((trace, wanted))
}

fn finish<T: Serialize>(answer: Versioned<T>, trace: Option<String>) -> ApiResult<Response> {
    let mut r = json(StatusCode::OK, &answer.value)?;
    if let Some(t) = trace.and_then(|t| HeaderValue::from_str(&t).ok()) {
        r.headers_mut().insert("traceparent", t);
    }
    r.headers_mut().insert("resource-version", HeaderValue::from(answer.resource_version));
    Ok(r)
}

pub(crate) async fn put(cx: Cx) -> ApiResult<Response> {
    let (trace, wanted) = prepare(&cx)?;
    let body: CatalogueService = cx.json()?;
    let stored = cx.engine.catalogue().put(&cx.caller, cx.tenant(), cx.param("serviceId"), body, wanted).await?;
    finish(stored, trace)
}

pub(crate) async fn get(cx: Cx) -> ApiResult<Response> {
    let (trace, wanted) = prepare(&cx)?;
    let service = cx.engine.catalogue().get(&cx.caller, cx.tenant(), cx.param("serviceId"), wanted).await?;
    finish(service, trace)
}

pub(crate) async fn list(cx: Cx) -> ApiResult<Response> {
    let (trace, wanted) = prepare(&cx)?;
    let paging = Paging::from_query(&cx, "page_size", 1, 100)?;
    let hidden: Vec<String> = cx.query_pairs().into_iter().filter(|(k, _)| k == "hideType").map(|(_, v)| v).collect();
    let only_searchable = match cx.query_param("onlySearchable").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::field("onlySearchable", "must be true or false")),
    };
    let page = cx.engine.catalogue().list(&cx.caller, cx.tenant(), &hidden, only_searchable, paging, wanted).await?;
    finish(page, trace)
}
