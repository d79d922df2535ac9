//! Tenant signers: the v2 routes, the deprecated v1 single-signer forms (mapped
//! onto v2 for `current`, answered with a `Deprecation` header) and CRLs
//! (see [`crate::library::signers`]).

use crate::error::ApiResult;
use crate::http::{empty, json, with_body, Cx, Response};
use crate::list_filter;
use crate::models::signer::{CreateSigner, CreateSignerV1, Renew, SignerView};
use crate::paging::Paging;
use http::{HeaderValue, StatusCode};
use serde::de::DeserializeOwned;

/// A body that may be absent: absent means the defaults.
pub fn optional_json<T: DeserializeOwned + Default>(cx: &Cx) -> ApiResult<T> {
    if cx.body.iter().all(u8::is_ascii_whitespace) {
        Ok(T::default())
    } else {
        cx.json()
    }
}

fn spec(cx: &Cx) -> &str {
    cx.param("signerSpec")
}

pub(crate) async fn list(cx: Cx) -> ApiResult<Response> {
    let paging = Paging::from_query(&cx, "page_size", 5, 100)?;
    let conditions = list_filter::parse(&cx, &SignerView::FIELDS)?;
    let views: Vec<SignerView> = cx
        .engine
        .signers()
        .list(&cx.caller, cx.tenant())
        .await?
        .into_iter()
        .filter(|v| list_filter::matches(&conditions, |f| v.field(f)))
        .skip(paging.offset())
        .take(paging.size)
        .collect();
    json(StatusCode::OK, &views)
}

pub(crate) async fn create(cx: Cx) -> ApiResult<Response> {
    let body: CreateSigner = optional_json(&cx)?;
    let view = cx.engine.signers().create(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::ACCEPTED, &view)
}

pub(crate) async fn get(cx: Cx) -> ApiResult<Response> {
    let detail = cx.engine.signers().get(&cx.caller, cx.tenant(), spec(&cx)).await?;
    json(StatusCode::OK, &detail)
}

pub(crate) async fn delete(cx: Cx) -> ApiResult<Response> {
    cx.engine.signers().delete(&cx.caller, cx.tenant(), spec(&cx)).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(crate) async fn chain(cx: Cx) -> ApiResult<Response> {
    let chain = cx.engine.signers().chain(&cx.caller, cx.tenant(), spec(&cx)).await?;
    json(StatusCode::OK, &chain)
}

pub(crate) async fn renew(cx: Cx) -> ApiResult<Response> {
    let body: Renew = optional_json(&cx)?;
    let view = cx.engine.signers().renew(&cx.caller, cx.tenant(), spec(&cx), body).await?;
    json(StatusCode::ACCEPTED, &view)
}

pub(crate) async fn revoke(cx: Cx) -> ApiResult<Response> {
    let view = cx.engine.signers().revoke(&cx.caller, cx.tenant(), spec(&cx)).await?;
    json(StatusCode::OK, &view)
}

/// `GET .../signers/{signerSpec}/crl` (ext): DER; `root` is the root's CRL of revoked signers.
pub(crate) async fn crl(cx: Cx) -> ApiResult<Response> {
    let der = cx.engine.signers().crl(&cx.caller, cx.tenant(), spec(&cx)).await?;
    Ok(with_body(StatusCode::OK, "application/pkix-crl", der.into()))
}

/// Marks a v1 answer deprecated and names its v2 successor.
fn deprecated(mut r: Response, tenant: &str) -> Response {
    r.headers_mut().insert("deprecation", HeaderValue::from_static("true"));
    if let Ok(v) = HeaderValue::from_str(&format!("</v2/tenants/{tenant}/signers/current>; rel=\"successor-version\""))
    {
        r.headers_mut().insert(http::header::LINK, v);
    }
    r
}

pub(crate) async fn v1_get(cx: Cx) -> ApiResult<Response> {
    let detail = cx.engine.signers().get(&cx.caller, cx.tenant(), "current").await?;
    Ok(deprecated(json(StatusCode::OK, &detail)?, cx.tenant()))
}

pub(crate) async fn v1_create(cx: Cx) -> ApiResult<Response> {
    let body: CreateSignerV1 = cx.json()?;
    let view = cx.engine.signers().create_first(&cx.caller, cx.tenant(), body).await?;
    Ok(deprecated(json(StatusCode::ACCEPTED, &view)?, cx.tenant()))
}

pub(crate) async fn v1_reissue(cx: Cx) -> ApiResult<Response> {
    let body: Renew = optional_json(&cx)?;
    let view = cx.engine.signers().renew(&cx.caller, cx.tenant(), "current", body).await?;
    Ok(deprecated(json(StatusCode::ACCEPTED, &view)?, cx.tenant()))
}

pub(crate) async fn v1_delete(cx: Cx) -> ApiResult<Response> {
    cx.engine.signers().delete(&cx.caller, cx.tenant(), "current").await?;
    Ok(deprecated(empty(StatusCode::NO_CONTENT), cx.tenant()))
}
