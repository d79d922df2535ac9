//! App versions, registration policies, integrity voting, and the app listing
//! with latest versions (see [`crate::library::versions`]).

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::models::version::{AppsLatestQuery, LockBody, PolicyBody, VersionBody, VersionQuery, VoteBody};
use crate::paging::Paging;
use http::StatusCode;

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let body: VersionBody = cx.json()?;
    let v = cx.engine.versions().create(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::CREATED, &v)
}

pub(crate) async fn get(cx: Cx) -> ApiResult<Response> {
    let v = cx.engine.versions().get(&cx.caller, cx.tenant(), cx.param("versionId")).await?;
    json(StatusCode::OK, &v)
}

pub(crate) async fn update(cx: Cx) -> ApiResult<Response> {
    let body: VersionBody = cx.json()?;
    let v = cx.engine.versions().update(&cx.caller, cx.tenant(), cx.param("versionId"), body).await?;
    json(StatusCode::OK, &v)
}

pub(crate) async fn delete(cx: Cx) -> ApiResult<Response> {
    cx.engine.versions().delete(&cx.caller, cx.tenant(), cx.param("versionId")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(crate) async fn lock(cx: Cx) -> ApiResult<Response> {
    let body: LockBody = cx.json()?;
    let v = cx.engine.versions().lock(&cx.caller, cx.tenant(), cx.param("versionId"), body.version_lock).await?;
    json(StatusCode::OK, &v)
}

fn bool_param(cx: &Cx, name: &str) -> ApiResult<Option<bool>> {
    match cx.query_param(name).as_deref() {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(ApiError::field(name, "must be true or false")),
    }
}

/// `GET /versions`: distinct versionStr values of the matching versions.
pub(crate) async fn list(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "pageSize", 1, 100)?;
    let query = VersionQuery {
        app_name: cx.query_param("appName"),
        platform: cx.query_param("platform"),
        version_lock: bool_param(&cx, "versionLock")?,
        is_check_integrity: bool_param(&cx, "isCheckIntegrity")?,
        version_str: cx.query_param("versionStr"),
        descending: match cx.query_param("orderByVersion").as_deref() {
            None | Some("asc") => false,
            Some("desc") => true,
            Some(_) => return Err(ApiError::field("orderByVersion", "must be asc or desc")),
        },
    };
    let versions = cx.engine.versions().list(&cx.caller, cx.tenant(), &query, paging).await?;
    json(StatusCode::OK, &versions)
}

pub(crate) async fn architectures(cx: Cx) -> ApiResult<Response> {
    let archs = cx.engine.versions().architectures(&cx.caller, cx.tenant(), cx.param("versionId")).await?;
    json(StatusCode::OK, &archs)
}

fn arch_param(cx: &Cx) -> ApiResult<String> {
    cx.query_param("architectureName").ok_or_else(|| ApiError::field("architectureName", "is required"))
}

pub(crate) async fn delete_registration(cx: Cx) -> ApiResult<Response> {
    let arch = arch_param(&cx)?;
    cx.engine.versions().delete_registration(&cx.caller, cx.tenant(), cx.param("versionId"), &arch).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// A client casts its vote (an admin casts one for a named client).
pub(crate) async fn vote(cx: Cx) -> ApiResult<Response> {
    let body: VoteBody = cx.json()?;
    let arch = cx.engine.versions().vote(&cx.caller, cx.tenant(), cx.param("versionId"), body).await?;
    json(StatusCode::OK, &arch)
}

pub(crate) async fn votes(cx: Cx) -> ApiResult<Response> {
    let arch = arch_param(&cx)?;
    let check = cx.query_param("integrityCheckId");
    let paging = Paging::from_query(&cx, "pageSize", 1, 100)?;
    let id = cx.param("versionId");
    let votes = cx.engine.versions().votes(&cx.caller, cx.tenant(), id, &arch, check.as_deref(), paging).await?;
    json(StatusCode::OK, &votes)
}

pub(crate) async fn summary(cx: Cx) -> ApiResult<Response> {
    let arch = arch_param(&cx)?;
    let summary = cx.engine.versions().summary(&cx.caller, cx.tenant(), cx.param("versionId"), &arch).await?;
    json(StatusCode::OK, &summary)
}

/// Resets one architecture (`architectureName`) or all.
pub(crate) async fn reset(cx: Cx) -> ApiResult<Response> {
    let arch = cx.query_param("architectureName");
    cx.engine.versions().reset(&cx.caller, cx.tenant(), cx.param("versionId"), arch.as_deref()).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

// ---- registration policies ----

pub(crate) async fn create_policy(cx: Cx) -> ApiResult<Response> {
    let body: PolicyBody = cx.json()?;
    let p = cx.engine.versions().create_policy(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::CREATED, &p)
}

pub(crate) async fn list_policies(cx: Cx) -> ApiResult<Response> {
    let policies = cx.engine.versions().policies(&cx.caller, cx.tenant()).await?;
    json(StatusCode::OK, &policies)
}

pub(crate) async fn get_policy(cx: Cx) -> ApiResult<Response> {
    let p = cx.engine.versions().policy(&cx.caller, cx.tenant(), cx.param("policyId")).await?;
    json(StatusCode::OK, &p)
}

pub(crate) async fn delete_policy(cx: Cx) -> ApiResult<Response> {
    cx.engine.versions().delete_policy(&cx.caller, cx.tenant(), cx.param("policyId")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

// ---- apps with their latest versions ----

/// A repeatable query parameter's values.
fn all_of(cx: &Cx, name: &str) -> Vec<String> {
    cx.query_pairs().into_iter().filter(|(k, _)| k == name).map(|(_, v)| v).collect()
}

pub(crate) async fn apps_latest(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "pageSize", 1, 100)?;
    bool_param(&cx, "isTextSearch")?;
    let query = AppsLatestQuery {
        app_name: cx.query_param("appName"),
        platform: cx.query_param("platform"),
        categories: all_of(&cx, "category"),
        credentials: all_of(&cx, "credential"),
        text_search: cx.query_param("textSearch"),
    };
    let apps = cx.engine.versions().apps_latest(&cx.caller, cx.tenant(), &query, paging).await?;
    json(StatusCode::OK, &apps)
}
