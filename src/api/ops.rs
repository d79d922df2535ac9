//! Operational routes: liveness, readiness, metrics.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, with_body, Cx, Response};
use http::StatusCode;

/// The answer of the probes.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Status {
    /// `ok` (liveness) or `ready` (readiness).
    pub status: &'static str,
}

pub(crate) async fn healthz(_cx: Cx) -> ApiResult<Response> {
    json(StatusCode::OK, &Status { status: "ok" })
}

/// Ready when storage answers a read and takes writes (not while the disk is
/// below its reserve).
pub(crate) async fn readyz(cx: Cx) -> ApiResult<Response> {
    cx.engine.store.tenants().get("readyz-probe")?;
    if let Err(e) = cx.engine.store.writable() {
        return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {e}")));
    }
    json(StatusCode::OK, &Status { status: "ready" })
}

/// Rendered on the broadcast threads, at their lower priority: the text is
/// hundreds of kilobytes (every route's request histogram), milliseconds of
/// CPU that on a runtime worker would hold up the sends queued behind it at
/// every scrape.
pub(crate) async fn metrics(cx: Cx) -> ApiResult<Response> {
    let engine = cx.engine.clone();
    let text = cx
        .engine
        .push
        .deliverer()
        .bulk()
        .spawn_blocking(move || {
            crate::logging::export_dropped_lines();
            if let Ok(size) = engine.store.size_on_disk() {
                metrics::gauge!("herald_storage_size_bytes").set(size as f64);
            }
            engine.metrics.render()
        })
        .await
        .map_err(|e| ApiError::internal(format!("rendering the metrics stopped: {e}")))?;
    Ok(with_body(StatusCode::OK, "text/plain; version=0.0.4", text.into()))
}
