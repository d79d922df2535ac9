//! Postal addresses of a user: add, read, edit; one default address per user.

use super::users::{envelope, load};
use crate::error::{ApiError, ApiResult};
use crate::http::{Cx, Response};
use crate::models::address::{view, AddressWrite};
use herald_storage::identity::Address;
use serde_json::Value;

/// Decodes the body; a body without `postalCode` (or not JSON at all) is the
/// spec's "Mandatory data is missing".
fn body(cx: &Cx) -> ApiResult<AddressWrite> {
    let b: AddressWrite = cx.json()?;
    b.validate()?;
    Ok(b)
}

pub async fn add(cx: Cx) -> ApiResult<Response> {
    let user = load(&cx, "userName")?;
    let b = body(&cx)?;
    if b.address_id.is_some() {
        return Err(ApiError::field("addressID", "is assigned by the service"));
    }
    if b.postal_code.as_deref().is_none_or(|p| p.trim().is_empty()) {
        return Err(AddressWrite::missing());
    }
    let store = cx.engine.store.identity();
    let mut list = store.addresses(cx.tenant(), &user.id)?;
    let mut a = Address { id: uuid::Uuid::new_v4().to_string(), ..Address::default() };
    b.apply(&mut a);
    // The first address is the default until another one is made the default.
    a.default_address = b.default_address.unwrap_or(false) || list.is_empty();
    if a.default_address {
        list.iter_mut().for_each(|x| x.default_address = false);
    }
    list.push(a);
    store.put_addresses(cx.tenant(), &user.id, &list)?;
    cx.engine.store.durable().await?;
    envelope("Address added successfully", None)
}

pub async fn get(cx: Cx) -> ApiResult<Response> {
    let user = load(&cx, "userName")?;
    let list = cx.engine.store.identity().addresses(cx.tenant(), &user.id)?;
    envelope("Address fetched successfully", Some(Value::Array(list.iter().map(view).collect())))
}

pub async fn edit(cx: Cx) -> ApiResult<Response> {
    let user = load(&cx, "userName")?;
    let b = body(&cx)?;
    let id = b.address_id.clone().ok_or_else(AddressWrite::missing)?;
    if b.postal_code.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(AddressWrite::missing());
    }
    let store = cx.engine.store.identity();
    let mut list = store.addresses(cx.tenant(), &user.id)?;
    let idx = list
        .iter()
        .position(|a| a.id == id)
        .ok_or_else(|| ApiError::not_found("Address does not exist").with_word("ADDRESS_NOT_FOUND"))?;
    b.apply(&mut list[idx]);
    match b.default_address {
        Some(true) => list.iter_mut().enumerate().for_each(|(i, a)| a.default_address = i == idx),
        Some(false) => list[idx].default_address = false,
        None => {}
    }
    store.put_addresses(cx.tenant(), &user.id, &list)?;
    cx.engine.store.durable().await?;
    envelope("Address updated successfully", None)
}
