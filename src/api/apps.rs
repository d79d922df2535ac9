//! Apps with push configuration: save, update, get, list, delete.

use crate::error::{ApiError, ApiResult};
use crate::http::{empty, json, Cx, Response};
use crate::models::app::{AppBody, AppView, MASK};
use crate::paging::Paging;
use herald_storage::apps::App;
use herald_storage::{now_ms, Secret, Store};
use http::StatusCode;

pub async fn save(cx: Cx) -> ApiResult<Response> {
    let body: AppBody = cx.json()?;
    let view = create_app(&cx.engine.store, cx.tenant(), cx.param("appName"), &body).await?;
    json(StatusCode::CREATED, &view)
}

/// Validates and durably creates an app (HTTP and the embedding API).
pub async fn create_app(store: &Store, tenant: &str, name: &str, body: &AppBody) -> ApiResult<AppView> {
    body.validate(name)?;
    let app = to_record(store, tenant, name, body, None, now_ms())?;
    store.apps().create(tenant, &app).map_err(|e| match e {
        herald_storage::Error::Conflict(_) => ApiError::conflict(format!("app {name} already exists")),
        other => other.into(),
    })?;
    store.durable().await?;
    Ok(AppView::of(tenant, &app))
}

/// Builds the new record on the stored one and swaps it in only if that is
/// still what is stored: a concurrent delete stands (404), a concurrent update
/// makes this one build again on its result.
pub async fn update(cx: Cx) -> ApiResult<Response> {
    let (tenant, name) = (cx.tenant(), cx.param("appName"));
    let body: AppBody = cx.json()?;
    body.validate(name)?;
    let store = &cx.engine.store;
    let not_found = || ApiError::not_found(format!("app {name} not found"));
    for _ in 0..UPDATE_ATTEMPTS {
        let old = store.apps().get(tenant, name)?.ok_or_else(not_found)?;
        let app = to_record(store, tenant, name, &body, Some(&old), now_ms())?;
        match store.apps().replace(tenant, &old, &app) {
            Ok(()) => {
                store.durable().await?;
                return json(StatusCode::OK, &AppView::of(tenant, &app));
            }
            Err(herald_storage::Error::Conflict(_)) => continue,
            Err(herald_storage::Error::NotFound(_)) => return Err(not_found()),
            Err(other) => return Err(other.into()),
        }
    }
    Err(ApiError::conflict(format!("app {name} kept changing during the update: try again")))
}

/// Times an update builds its record again after a concurrent write.
const UPDATE_ATTEMPTS: usize = 5;

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

pub async fn delete(cx: Cx) -> ApiResult<Response> {
    let (tenant, name) = (cx.tenant(), cx.param("appName"));
    cx.engine.store.apps().delete(tenant, name).map_err(|e| match e {
        herald_storage::Error::NotFound(_) => ApiError::not_found(format!("app {name} not found")),
        other => other.into(),
    })?;
    // Deleting an app deletes its versions (with their registrations and votes).
    cx.engine.store.versions().delete_of_app(tenant, name)?;
    cx.engine.store.durable().await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// The stored record of a validated body; secrets are sealed, and a masked
/// secret on update keeps the stored one.
fn to_record(store: &Store, tenant: &str, name: &str, b: &AppBody, old: Option<&App>, now: u64) -> ApiResult<App> {
    let seal = |field: &str, value: &Option<String>, kept: Option<&Option<Secret>>| -> ApiResult<Option<Secret>> {
        match value.as_deref() {
            None => Ok(None),
            Some(MASK) => kept
                .cloned()
                .flatten()
                .map(Some)
                .ok_or_else(|| ApiError::field(field, "*** stands for a stored value, and none is stored")),
            Some(v) => Ok(Some(store.seal(v.as_bytes(), &App::secret_context(tenant, name, field))?)),
        }
    };
    Ok(App {
        name: name.to_string(),
        categories: b.categories.clone(),
        android_api_key: seal("androidApiKey", &b.android_api_key, old.map(|o| &o.android_api_key))?,
        fcm_service_account: seal(
            "fcmServiceAccountJSON",
            &b.fcm_service_account_json,
            old.map(|o| &o.fcm_service_account),
        )?,
        ios_apns_certificate: seal(
            "iosApnsCertificate",
            &b.ios_apns_certificate,
            old.map(|o| &o.ios_apns_certificate),
        )?,
        ios_apns_private_key: seal("iosApnsPrivateKey", &b.ios_apns_private_key, old.map(|o| &o.ios_apns_private_key))?,
        ios_apns_team_id: b.ios_apns_team_id.clone(),
        ios_apns_key_id: b.ios_apns_key_id.clone(),
        ios_bundle_id: b.ios_bundle_id.clone(),
        ios_is_development: b.ios_is_development,
        hpk_client_id: b.hpk_client_id.clone(),
        hpk_client_secret: seal("hpkClientSecret", &b.hpk_client_secret, old.map(|o| &o.hpk_client_secret))?,
        created_ms: old.map_or(now, |o| o.created_ms),
        modified_ms: now,
    })
}
