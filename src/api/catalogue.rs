//! Catalogue services: put (ext), list, get; reads may wait for a resource version.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::models::catalogue::{check_traceparent, check_uuid, CatalogueService};
use crate::ops;
use crate::paging::Paging;
use herald_storage::catalogue::Service;
use http::{HeaderValue, StatusCode};
use std::time::{Duration, Instant};

/// How long a read waits for `MinResourceVersion` before answering 412.
const VERSION_WAIT: Duration = Duration::from_secs(5);

/// Validates `traceparent`, waits for `MinResourceVersion` (header or query).
async fn prepare(cx: &Cx) -> ApiResult<Option<String>> {
    let trace = cx.header("traceparent").map(str::to_string);
    if let Some(t) = &trace {
        check_traceparent(t)?;
    }
    let wanted = cx.header("MinResourceVersion").map(str::to_string).or_else(|| cx.query_param("MinResourceVersion"));
    if let Some(w) = wanted {
        let wanted: u64 =
            w.trim().parse().map_err(|_| ApiError::field("MinResourceVersion", "must be a non-negative integer"))?;
        let deadline = Instant::now() + VERSION_WAIT;
        while cx.engine.store.catalogue().version(cx.tenant())? < wanted {
            if Instant::now() >= deadline {
                return Err(ApiError::new(
                    StatusCode::PRECONDITION_FAILED,
                    format!("resource version {wanted} not reached within {VERSION_WAIT:?}"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    Ok(trace)
}

fn finish(mut r: Response, trace: Option<String>, version: u64) -> Response {
    if let Some(t) = trace.and_then(|t| HeaderValue::from_str(&t).ok()) {
        r.headers_mut().insert("traceparent", t);
    }
    r.headers_mut().insert("resource-version", HeaderValue::from(version));
    r
}

fn document(s: &Service) -> ApiResult<serde_json::Value> {
    serde_json::from_str(&s.document).map_err(|e| ApiError::internal(format!("stored service: {e}")))
}

pub async fn put(cx: Cx) -> ApiResult<Response> {
    let trace = prepare(&cx).await?;
    let (tenant, id) = (cx.tenant(), cx.param("serviceId"));
    let mut body: CatalogueService = cx.json()?;
    body.validate(id)?;
    body.id = Some(id.to_string());
    let doc = serde_json::to_string(&body).map_err(|e| ApiError::internal(e.to_string()))?;
    let service = Service { id: id.to_string(), document: doc, kind: body.kind.clone(), searchable: body.searchable };
    let version = ops::catalogue::put(&cx.engine, tenant, &service).await?;
    Ok(finish(json(StatusCode::OK, &body)?, trace, version))
}

pub async fn get(cx: Cx) -> ApiResult<Response> {
    let trace = prepare(&cx).await?;
    let (tenant, id) = (cx.tenant(), cx.param("serviceId"));
    check_uuid("serviceId", id)?;
    let store = &cx.engine.store;
    let s = store.catalogue().get(tenant, id)?.ok_or_else(|| ApiError::not_found(format!("service {id} not found")))?;
    Ok(finish(json(StatusCode::OK, &document(&s)?)?, trace, store.catalogue().version(tenant)?))
}

pub async fn list(cx: Cx) -> ApiResult<Response> {
    let trace = prepare(&cx).await?;
    let tenant = cx.tenant();
    let paging = Paging::from_query(&cx, "page_size", 1, 100)?;
    let hidden: Vec<String> = cx.query_pairs().into_iter().filter(|(k, _)| k == "hideType").map(|(_, v)| v).collect();
    let only_searchable = match cx.query_param("onlySearchable").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::field("onlySearchable", "must be true or false")),
    };
    let store = &cx.engine.store;
    let page = store
        .catalogue()
        .list(tenant)?
        .into_iter()
        .filter(|s| !hidden.contains(&s.kind) && (!only_searchable || s.searchable))
        .skip(paging.offset())
        .take(paging.size)
        .map(|s| document(&s))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(finish(json(StatusCode::OK, &page)?, trace, store.catalogue().version(tenant)?))
}
