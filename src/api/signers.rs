//! Tenant signers: the v2 routes, the deprecated v1 single-signer forms (mapped
//! onto v2 for `current`, answered with a `Deprecation` header) and CRLs.

use crate::error::ApiResult;
use crate::http::{empty, json, with_body, Cx, Response};
use crate::list_filter;
use crate::models::signer::{CreateSigner, CreateSignerV1, Renew, SignerView};
use crate::ops;
use crate::paging::Paging;
use http::{HeaderValue, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::json;

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

pub async fn list(cx: Cx) -> ApiResult<Response> {
    let tenant = cx.tenant();
    let paging = Paging::from_query(&cx, "page_size", 5, 100)?;
    let conditions = list_filter::parse(&cx, &SignerView::FIELDS)?;
    let views: Vec<SignerView> = cx
        .engine
        .store
        .signers()
        .list(tenant)?
        .iter()
        .map(|s| SignerView::of(tenant, s))
        .filter(|v| list_filter::matches(&conditions, |f| v.field(f)))
        .skip(paging.offset())
        .take(paging.size)
        .collect();
    json(StatusCode::OK, &views)
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let body: CreateSigner = optional_json(&cx)?;
    body.validate()?;
    let s = ops::signers::create(&cx.engine, cx.tenant(), body.name, false).await?;
    json(StatusCode::ACCEPTED, &SignerView::of(cx.tenant(), &s))
}

async fn signer_with_certificate(cx: &Cx, spec: &str) -> ApiResult<Response> {
    let s = cx.engine.pki.resolve(cx.tenant(), spec)?;
    json(StatusCode::OK, &json!({ "info": SignerView::of(cx.tenant(), &s), "certificate": s.cert_pem }))
}

pub async fn get(cx: Cx) -> ApiResult<Response> {
    signer_with_certificate(&cx, spec(&cx)).await
}

pub async fn delete(cx: Cx) -> ApiResult<Response> {
    ops::signers::delete(&cx.engine, cx.tenant(), spec(&cx)).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub async fn chain(cx: Cx) -> ApiResult<Response> {
    let s = cx.engine.pki.resolve(cx.tenant(), spec(&cx))?;
    json(StatusCode::OK, &json!({ "chain": cx.engine.pki.chain(&s)? }))
}

pub async fn renew(cx: Cx) -> ApiResult<Response> {
    let body: Renew = optional_json(&cx)?;
    let s = ops::signers::renew(&cx.engine, cx.tenant(), spec(&cx), body.ignore_not_issued).await?;
    json(StatusCode::ACCEPTED, &SignerView::of(cx.tenant(), &s))
}

pub async fn revoke(cx: Cx) -> ApiResult<Response> {
    let s = ops::signers::revoke(&cx.engine, cx.tenant(), spec(&cx)).await?;
    json(StatusCode::OK, &SignerView::of(cx.tenant(), &s))
}

/// `GET .../signers/{signerSpec}/crl` (ext): DER; `root` is the root's CRL of revoked signers.
pub async fn crl(cx: Cx) -> ApiResult<Response> {
    let der = ops::signers::crl(&cx.engine, cx.tenant(), spec(&cx)).await?;
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

pub async fn v1_get(cx: Cx) -> ApiResult<Response> {
    Ok(deprecated(signer_with_certificate(&cx, "current").await?, cx.tenant()))
}

pub async fn v1_create(cx: Cx) -> ApiResult<Response> {
    let body: CreateSignerV1 = cx.json()?;
    let body = CreateSigner { name: Some(body.name) };
    body.validate()?;
    let tenant = cx.tenant();
    let s = ops::signers::create(&cx.engine, tenant, body.name, true).await?;
    Ok(deprecated(json(StatusCode::ACCEPTED, &SignerView::of(tenant, &s))?, tenant))
}

pub async fn v1_reissue(cx: Cx) -> ApiResult<Response> {
    let body: Renew = optional_json(&cx)?;
    let s = ops::signers::renew(&cx.engine, cx.tenant(), "current", body.ignore_not_issued).await?;
    Ok(deprecated(json(StatusCode::ACCEPTED, &SignerView::of(cx.tenant(), &s))?, cx.tenant()))
}

pub async fn v1_delete(cx: Cx) -> ApiResult<Response> {
    ops::signers::delete(&cx.engine, cx.tenant(), "current").await?;
    Ok(deprecated(empty(StatusCode::NO_CONTENT), cx.tenant()))
}
