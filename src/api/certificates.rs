//! Client certificates: a device client submits a CSR; admins list, check and
//! revoke; a client checks its own requests and fetches what was issued (see
//! [`crate::library::certificates`]).

use crate::error::ApiResult;
use crate::http::{json, Cx, Response};
use crate::list_filter;
use crate::models::signer::{CertView, CsrBody};
use crate::paging::Paging;
use http::StatusCode;

pub(crate) async fn submit(cx: Cx) -> ApiResult<Response> {
    let body: CsrBody = cx.json()?;
    let view = cx.engine.certificates().submit(&cx.caller, cx.tenant(), body).await?;
    json(StatusCode::ACCEPTED, &view)
}

/// The page the query asks for of `views`, filtered.
fn page(cx: &Cx, views: Vec<CertView>) -> ApiResult<Response> {
    let paging = Paging::from_query(cx, "page_size", 5, 100)?;
    let conditions = list_filter::parse(cx, &CertView::FIELDS)?;
    let views: Vec<CertView> = views
        .into_iter()
        .filter(|v| list_filter::matches(&conditions, |f| v.field(f)))
        .skip(paging.offset())
        .take(paging.size)
        .collect();
    json(StatusCode::OK, &views)
}

pub(crate) async fn list(cx: Cx) -> ApiResult<Response> {
    let views = cx.engine.certificates().list(&cx.caller, cx.tenant()).await?;
    page(&cx, views)
}

pub(crate) async fn by_signer(cx: Cx) -> ApiResult<Response> {
    let views = cx.engine.certificates().of_signer(&cx.caller, cx.tenant(), cx.param("signerId")).await?;
    page(&cx, views)
}

/// Check a request; once issued the answer carries the certificate and its chain to the root.
pub(crate) async fn check(cx: Cx) -> ApiResult<Response> {
    let view = cx.engine.certificates().get(&cx.caller, cx.tenant(), cx.param("certRef")).await?;
    json(StatusCode::OK, &view)
}

pub(crate) async fn revoke(cx: Cx) -> ApiResult<Response> {
    let view = cx.engine.certificates().revoke(&cx.caller, cx.tenant(), cx.param("certRef")).await?;
    json(StatusCode::OK, &view)
}
