//! App versions, registration policies, integrity voting, and the app listing
//! with latest versions.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::models::app::CATEGORIES;
use crate::models::validate;
use crate::models::version::{
    self as model, like, policy_view, ArchView, LockBody, PolicyBody, VersionBody, VersionView, VoteBody,
};
use crate::ops;
use crate::paging::Paging;
use herald_storage::apps::App;
use herald_storage::now_ms;
use herald_storage::versions::{Policy, Version};
use http::StatusCode;
use serde_json::json;
use std::collections::BTreeMap;

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("version {id} not found"))
}

fn load(cx: &Cx) -> ApiResult<Version> {
    let id = cx.param("versionId");
    cx.engine.store.versions().get(cx.tenant(), id)?.ok_or_else(|| not_found(id))
}

fn view(cx: &Cx, v: &Version) -> ApiResult<Response> {
    let archs = cx.engine.store.versions().archs(cx.tenant(), &v.id)?;
    json(StatusCode::OK, &VersionView::of(cx.tenant(), v, &archs))
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let body: VersionBody = cx.json()?;
    let v = ops::versions::create(&cx.engine, cx.tenant(), &body).await?;
    json(StatusCode::CREATED, &VersionView::of(cx.tenant(), &v, &[]))
}

pub async fn get(cx: Cx) -> ApiResult<Response> {
    let v = load(&cx)?;
    view(&cx, &v)
}

pub async fn update(cx: Cx) -> ApiResult<Response> {
    let body: VersionBody = cx.json()?;
    let v = ops::versions::update(&cx.engine, cx.tenant(), cx.param("versionId"), &body).await?;
    view(&cx, &v)
}

pub async fn delete(cx: Cx) -> ApiResult<Response> {
    ops::versions::delete(&cx.engine, cx.tenant(), cx.param("versionId")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub async fn lock(cx: Cx) -> ApiResult<Response> {
    let body: LockBody = cx.json()?;
    let v = ops::versions::set_lock(&cx.engine, cx.tenant(), cx.param("versionId"), body.version_lock).await?;
    view(&cx, &v)
}

fn bool_param(cx: &Cx, name: &str) -> ApiResult<Option<bool>> {
    match cx.query_param(name).as_deref() {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(ApiError::field(name, "must be true or false")),
    }
}

/// A `%` search parameter: its length is checked without the wildcards.
fn search_param(cx: &Cx, name: &str, min: usize, max: usize) -> ApiResult<Option<String>> {
    match cx.query_param(name) {
        None => Ok(None),
        Some(v) => {
            validate::id(name, v.trim_start_matches('%').trim_end_matches('%'), min, max)?;
            Ok(Some(v))
        }
    }
}

/// `GET /versions`: distinct versionStr values of the matching versions.
pub async fn list(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "pageSize", 1, 100)?;
    let app = search_param(&cx, "appName", 1, 32)?;
    let platform = search_param(&cx, "platform", 3, 10)?;
    let lock = bool_param(&cx, "versionLock")?;
    let integrity = bool_param(&cx, "isCheckIntegrity")?;
    let version_str = cx.query_param("versionStr");
    if let Some(s) = &version_str {
        let core = s.strip_prefix('%').unwrap_or(s);
        let core = core.strip_suffix('%').unwrap_or(core);
        if core.is_empty() || core.len() > 20 || !core.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(ApiError::field("versionStr", "digits and dots, with an optional % at either end"));
        }
    }
    let desc = match cx.query_param("orderByVersion").as_deref() {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(_) => return Err(ApiError::field("orderByVersion", "must be asc or desc")),
    };
    let mut distinct: BTreeMap<u64, String> = BTreeMap::new();
    for v in cx.engine.store.versions().list(cx.tenant())? {
        if app.as_ref().is_some_and(|p| !like(p, &v.app_name))
            || platform.as_ref().is_some_and(|p| !like(p, &v.platform))
            || lock.is_some_and(|l| l != v.version_lock)
            || integrity.is_some_and(|i| i != v.is_check_integrity)
            || version_str.as_ref().is_some_and(|p| !like(p, &v.version_str))
        {
            continue;
        }
        distinct.insert(v.version, v.version_str);
    }
    let ordered: Box<dyn Iterator<Item = String>> =
        if desc { Box::new(distinct.into_values().rev()) } else { Box::new(distinct.into_values()) };
    let versions: Vec<String> = ordered.skip(paging.offset()).take(paging.size).collect();
    json(StatusCode::OK, &json!({ "versions": versions }))
}

pub async fn architectures(cx: Cx) -> ApiResult<Response> {
    let v = load(&cx)?;
    let archs = cx.engine.store.versions().archs(cx.tenant(), &v.id)?;
    let views: Vec<ArchView> = archs.iter().map(|a| ArchView::of(&v.id, a)).collect();
    json(StatusCode::OK, &views)
}

fn arch_param(cx: &Cx) -> ApiResult<String> {
    let a = cx.query_param("architectureName").ok_or_else(|| ApiError::field("architectureName", "is required"))?;
    model::architecture("architectureName", &a)?;
    Ok(a)
}

pub async fn delete_registration(cx: Cx) -> ApiResult<Response> {
    let arch = arch_param(&cx)?;
    ops::versions::delete_registration(&cx.engine, cx.tenant(), cx.param("versionId"), &arch).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// A client casts its vote (an admin casts one for a named client).
pub async fn vote(cx: Cx) -> ApiResult<Response> {
    let body: VoteBody = cx.json()?;
    body.validate()?;
    let principal = cx.principal()?;
    let client_id = if principal.is_admin() {
        body.ast_client_id.clone().ok_or_else(|| ApiError::field("astClientId", "is required for an admin's vote"))?
    } else {
        let own = principal.client_id.clone().ok_or_else(|| ApiError::forbidden("only a client may vote"))?;
        if body.ast_client_id.as_ref().is_some_and(|c| *c != own) {
            return Err(ApiError::forbidden("a client votes only as itself"));
        }
        own
    };
    let arch = &body.architecture_name;
    let id = cx.param("versionId");
    let counted = ops::versions::vote(&cx.engine, cx.tenant(), id, &client_id, arch, &body.integrity_check_id).await?;
    json(StatusCode::OK, &ArchView::of(&counted.version.id, &counted.state))
}

fn header(v: &Version, arch: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("versionId".into(), json!(v.id));
    m.insert("appName".into(), json!(v.app_name));
    m.insert("platform".into(), json!(v.platform));
    m.insert("versionStr".into(), json!(v.version_str));
    m.insert("architecture".into(), json!(arch));
    m
}

pub async fn votes(cx: Cx) -> ApiResult<Response> {
    let arch = arch_param(&cx)?;
    let check = cx.query_param("integrityCheckId");
    if let Some(c) = &check {
        model::integrity_check_id("integrityCheckId", c)?;
    }
    let paging = Paging::from_query(&cx, "pageSize", 1, 100)?;
    let v = load(&cx)?;
    let votes: Vec<_> = cx
        .engine
        .store
        .versions()
        .votes(cx.tenant(), &v.id, &arch)?
        .into_iter()
        .filter(|x| check.as_ref().is_none_or(|c| *c == x.integrity_check_id))
        .skip(paging.offset())
        .take(paging.size)
        .map(|x| json!({ "astClientId": x.client_id, "integrityCheckId": x.integrity_check_id }))
        .collect();
    let mut m = header(&v, &arch);
    m.insert("votes".into(), json!(votes));
    m.insert("metadata".into(), json!({ "page": paging.page, "pageSize": paging.size }));
    json(StatusCode::OK, &m)
}

pub async fn summary(cx: Cx) -> ApiResult<Response> {
    let arch = arch_param(&cx)?;
    let v = load(&cx)?;
    let store = cx.engine.store.versions();
    let policy = match &v.policy_id {
        Some(id) => store.policy(cx.tenant(), id)?.map(|p| policy_view(&p)).unwrap_or(json!(null)),
        None => json!({ "type": "DEFAULT", "name": "default",
                        "parameters": { "registerUserId": v.register_user_id } }),
    };
    let mut tally = store.arch(cx.tenant(), &v.id, &arch)?.map(|s| s.tally).unwrap_or_default();
    tally.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total: u32 = tally.iter().map(|(_, n)| n).sum();
    let votes: Vec<_> = tally
        .iter()
        .map(|(id, n)| json!({ "integrityCheckId": id, "num": n, "percent": (n * 100 + total / 2) / total.max(1) }))
        .collect();
    let mut m = header(&v, &arch);
    m.insert("policy".into(), policy);
    m.insert("votes".into(), json!(votes));
    json(StatusCode::OK, &m)
}

/// Resets one architecture (`architectureName`) or all.
pub async fn reset(cx: Cx) -> ApiResult<Response> {
    let arch = match cx.query_param("architectureName") {
        Some(a) => {
            model::architecture("architectureName", &a)?;
            Some(a)
        }
        None => None,
    };
    ops::versions::reset(&cx.engine, cx.tenant(), cx.param("versionId"), arch.as_deref()).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

// ---- registration policies ----

fn policy_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("registration policy {id} not found"))
}

pub async fn create_policy(cx: Cx) -> ApiResult<Response> {
    let body: PolicyBody = cx.json()?;
    body.validate()?;
    let p = Policy {
        id: ulid::Ulid::generate().to_string(),
        name: body.name,
        kind: body.kind,
        quorum_size: body.parameters.quorum_size,
        max_votes: body.parameters.max_votes,
        uses: 0,
        created_ms: now_ms(),
    };
    ops::versions::create_policy(&cx.engine, cx.tenant(), &p).await?;
    json(StatusCode::CREATED, &policy_view(&p))
}

pub async fn list_policies(cx: Cx) -> ApiResult<Response> {
    let views: Vec<_> = cx.engine.store.versions().policies(cx.tenant())?.iter().map(policy_view).collect();
    json(StatusCode::OK, &views)
}

pub async fn get_policy(cx: Cx) -> ApiResult<Response> {
    let id = cx.param("policyId");
    let p = cx.engine.store.versions().policy(cx.tenant(), id)?.ok_or_else(|| policy_not_found(id))?;
    json(StatusCode::OK, &policy_view(&p))
}

pub async fn delete_policy(cx: Cx) -> ApiResult<Response> {
    ops::versions::delete_policy(&cx.engine, cx.tenant(), cx.param("policyId")).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

// ---- apps with their latest versions ----

pub const CREDENTIALS: [&str; 3] = ["APNS", "FCM", "HMS"];

/// The credential types an app has.
fn credentials(a: &App) -> Vec<&'static str> {
    let mut c = Vec::new();
    if a.ios_apns_private_key.is_some() || a.ios_apns_certificate.is_some() {
        c.push("APNS");
    }
    if a.fcm_service_account.is_some() {
        c.push("FCM");
    }
    if a.hpk_client_id.is_some() {
        c.push("HMS");
    }
    c
}

/// A repeatable parameter of at most 3 items from `allowed`.
fn list_param(cx: &Cx, name: &str, allowed: &[&str]) -> ApiResult<Vec<String>> {
    let values: Vec<String> = cx.query_pairs().into_iter().filter(|(k, _)| k == name).map(|(_, v)| v).collect();
    if values.len() > 3 {
        return Err(ApiError::field(name, "at most 3 items"));
    }
    for (i, v) in values.iter().enumerate() {
        if !allowed.contains(&v.as_str()) {
            return Err(ApiError::field(&format!("{name}[{i}]"), format!("must be one of {}", allowed.join(", "))));
        }
    }
    Ok(values)
}

pub async fn apps_latest(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let paging = Paging::from_query(&cx, "pageSize", 1, 100)?;
    let app_filter = search_param(&cx, "appName", 1, 32)?.map(|s| s.trim_matches('%').to_string());
    let platform_filter = search_param(&cx, "platform", 3, 100)?.map(|s| s.trim_matches('%').to_string());
    let categories = list_param(&cx, "category", &CATEGORIES)?;
    let creds = list_param(&cx, "credential", &CREDENTIALS)?;
    bool_param(&cx, "isTextSearch")?;
    let text = cx.query_param("textSearch").map(|t| t.to_lowercase());
    if let Some(t) = &text {
        validate::length("textSearch", t, 1, 255)?;
    }
    let store = &cx.engine.store;
    let (apps, _) = store.apps().list(tenant, 0, usize::MAX)?;
    let mut out = Vec::new();
    for app in apps {
        let app_creds = credentials(&app);
        // Latest version per platform, numerically.
        let mut latest: BTreeMap<String, Version> = BTreeMap::new();
        for v in store.versions().of_app(tenant, &app.name)? {
            if latest.get(&v.platform).is_none_or(|l| v.version > l.version) {
                latest.insert(v.platform.clone(), v);
            }
        }
        if let Some(p) = &platform_filter {
            latest.retain(|name, _| name.contains(p.as_str()));
            if latest.is_empty() {
                continue;
            }
        }
        if app_filter.as_ref().is_some_and(|f| !app.name.contains(f.as_str()))
            || (!categories.is_empty() && !app.categories.iter().any(|c| categories.contains(c)))
            || (!creds.is_empty() && !app_creds.iter().any(|c| creds.iter().any(|f| f == c)))
        {
            continue;
        }
        if let Some(t) = &text {
            let hit = |s: &str| s.to_lowercase().contains(t.as_str());
            let matched = (app_filter.is_none() && hit(&app.name))
                || (platform_filter.is_none() && latest.keys().any(|p| hit(p)))
                || latest.values().any(|v| hit(&v.version_str))
                || (categories.is_empty() && app.categories.iter().any(|c| hit(c)))
                || (creds.is_empty() && app_creds.iter().any(|c| hit(c)));
            if !matched {
                continue;
            }
        }
        let platforms: Vec<_> = latest
            .values()
            .map(|v| json!({ "name": v.platform, "latestVersion": v.version_str, "latestVersionId": v.id }))
            .collect();
        out.push(json!({
            "appName": app.name,
            "pushNotificationConfig": { "categories": app.categories, "credentials": app_creds },
            "platforms": platforms,
        }));
    }
    let total = out.len();
    let data: Vec<_> = out.into_iter().skip(paging.offset()).take(paging.size).collect();
    json(StatusCode::OK, &json!({ "data": data, "totalCount": total }))
}
