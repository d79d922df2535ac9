//! Postal addresses of a user: add, read, edit; one default address per user.

use super::users::{envelope, load};
use crate::error::{ApiError, ApiResult};
use crate::http::{Cx, Response};
use crate::models::address::{view, AddressWrite};
use serde_json::Value;

/// Decodes the body; a body without `postalCode` (or not JSON at all) is the
/// spec's "Mandatory data is missing".
fn body(cx: &Cx) -> ApiResult<AddressWrite> {
    let b: AddressWrite = cx.json()?;
    b.validate()?;
    Ok(b)
}

pub async fn add(cx: Cx) -> ApiResult<Response> {
    load(&cx, "userName")?;
    let b = body(&cx)?;
    if b.address_id.is_some() {
        return Err(ApiError::field("addressID", "is assigned by the service"));
    }
    if b.postal_code.as_deref().is_none_or(|p| p.trim().is_empty()) {
        return Err(AddressWrite::missing());
    }
    crate::ops::users::add_address(&cx.engine, cx.tenant(), cx.param("userName"), &b).await?;
    envelope("Address added successfully", None)
}

pub async fn get(cx: Cx) -> ApiResult<Response> {
    let user = load(&cx, "userName")?;
    let list = cx.engine.store.identity().addresses(cx.tenant(), &user.id)?;
    envelope("Address fetched successfully", Some(Value::Array(list.iter().map(view).collect())))
}

pub async fn edit(cx: Cx) -> ApiResult<Response> {
    load(&cx, "userName")?;
    let b = body(&cx)?;
    let id = b.address_id.clone().ok_or_else(AddressWrite::missing)?;
    if b.postal_code.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(AddressWrite::missing());
    }
    crate::ops::users::edit_address(&cx.engine, cx.tenant(), cx.param("userName"), &id, &b).await?;
    envelope("Address updated successfully", None)
}
