//! Apps with push configuration: save, update, get, list, delete.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::models::app::{AppBody, AppView};
use crate::ops;
use crate::paging::Paging;
use http::StatusCode;

pub async fn save(cx: Cx) -> ApiResult<Response> {
    let body: AppBody = cx.json()?;
    let view = ops::apps::create(&cx.engine, cx.tenant(), cx.param("appName"), &body).await?;
    json(StatusCode::CREATED, &view)
}

pub async fn update(cx: Cx) -> ApiResult<Response> {
    let body: AppBody = cx.json()?;
    let view = ops::apps::update(&cx.engine, cx.tenant(), cx.param("appName"), &body).await?;
    json(StatusCode::OK, &view)
}

pub async fn get(cx: Cx) -> ApiResult<Response> {
    let (tenant, name) = (cx.tenant(), cx.param("appName"));
    let app = cx
        .engine
        .store
        .apps()
        .get(tenant, name)?
        .ok_or_else(|| ApiError::not_found(format!("app {name} not found")))?;
    json(StatusCode::OK, &AppView::of(tenant, &app))
}

pub async fn list(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "pageSize", 1, 100)?;
    let name_filter = cx.query_param("appName");
    let tenant = cx.tenant();
    let apps = match &name_filter {
        // A name filter selects at most a handful of apps: filter, then page.
        Some(f) => {
            let (all, _) = cx.engine.store.apps().list(tenant, 0, usize::MAX)?;
            all.into_iter().filter(|a| a.name.contains(f.as_str())).skip(paging.offset()).take(paging.size).collect()
        }
        None => cx.engine.store.apps().list(tenant, paging.offset(), paging.size)?.0,
    };
    let views: Vec<AppView> = apps.iter().map(|a| AppView::of(tenant, a)).collect();
    json(StatusCode::OK, &views)
}

/// Deleting an app deletes its versions (with their registrations and votes).
pub async fn delete(cx: Cx) -> ApiResult<Response> {
    ops::apps::delete(&cx.engine, cx.tenant(), cx.param("appName")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
