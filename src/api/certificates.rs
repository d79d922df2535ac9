//! Client certificates: a device client submits a CSR; admins list, check and
//! revoke; a client checks its own requests and fetches what was issued.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::list_filter;
use crate::models::signer::{CertView, CsrBody};
use crate::ops;
use crate::paging::Paging;
use herald_storage::certificates::CertRecord;
use herald_storage::signers::ISSUED;
use http::StatusCode;

pub async fn submit(cx: Cx) -> ApiResult<Response> {
    let body: CsrBody = cx.json()?;
    body.validate()?;
    let client =
        cx.principal()?.client_id.clone().ok_or_else(|| ApiError::forbidden("only a device client submits a CSR"))?;
    let c = ops::signers::request_certificate(&cx.engine, cx.tenant(), &client, &body.csr).await?;
    json(StatusCode::ACCEPTED, &CertView::of(&c))
}

fn page(cx: &Cx, records: Vec<CertRecord>) -> ApiResult<Response> {
    let paging = Paging::from_query(cx, "page_size", 5, 100)?;
    let conditions = list_filter::parse(cx, &CertView::FIELDS)?;
    let views: Vec<CertView> = records
        .iter()
        .map(CertView::of)
        .filter(|v| list_filter::matches(&conditions, |f| v.field(f)))
        .skip(paging.offset())
        .take(paging.size)
        .collect();
    json(StatusCode::OK, &views)
}

pub async fn list(cx: Cx) -> ApiResult<Response> {
    let records = cx.engine.store.certificates().list(cx.tenant())?;
    page(&cx, records)
}

pub async fn by_signer(cx: Cx) -> ApiResult<Response> {
    let signer = cx.param("signerId");
    crate::models::validate::ulid("signerId", signer)?;
    let records = cx.engine.store.certificates().of_signer(cx.tenant(), signer)?;
    page(&cx, records)
}

fn not_found(cert_ref: &str) -> ApiError {
    ApiError::not_found(format!("certificate request {cert_ref} not found"))
}

/// Check a request; once issued the answer carries the certificate and its chain to the root.
pub async fn check(cx: Cx) -> ApiResult<Response> {
    let (tenant, cert_ref) = (cx.tenant(), cx.param("certRef"));
    crate::models::validate::ulid("certRef", cert_ref)?;
    let c = cx.engine.store.certificates().get(tenant, cert_ref)?.ok_or_else(|| not_found(cert_ref))?;
    let p = cx.principal()?;
    if !p.grants(crate::auth::Grant::AdminRead) && p.client_id.as_deref() != Some(c.client.as_str()) {
        return Err(not_found(cert_ref));
    }
    let mut view = CertView::of(&c);
    if let (ISSUED, Some(pem)) = (c.status.as_str(), &c.cert_pem) {
        let mut chain = vec![pem.clone()];
        if let Some(s) = cx.engine.store.signers().get(tenant, &c.signer)? {
            chain.extend(cx.engine.pki.chain(&s).unwrap_or_default());
        }
        view.certificate = Some(pem.clone());
        view.chain = Some(chain);
    }
    json(StatusCode::OK, &view)
}

pub async fn revoke(cx: Cx) -> ApiResult<Response> {
    let cert_ref = cx.param("certRef");
    crate::models::validate::ulid("certRef", cert_ref)?;
    let c = ops::signers::revoke_certificate(&cx.engine, cx.tenant(), cert_ref).await?;
    json(StatusCode::OK, &CertView::of(&c))
}
