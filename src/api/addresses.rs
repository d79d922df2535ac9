//! Postal addresses of a user: add, read, edit; one default address per user
//! (see [`crate::library::users`]).

use super::users::{envelope, AddressesEnvelope};
use crate::error::ApiResult;
use crate::http::{Cx, Response};
use crate::models::address::AddressWrite;

pub(crate) async fn add(cx: Cx) -> ApiResult<Response> {
    let body: AddressWrite = cx.json()?;
    cx.engine.users().add_address(&cx.caller, cx.tenant(), cx.param("userName"), body).await?;
    envelope("Address added successfully")
}

pub(crate) async fn get(cx: Cx) -> ApiResult<Response> {
    let list = cx.engine.users().addresses(&cx.caller, cx.tenant(), cx.param("userName")).await?;
    AddressesEnvelope::answer("Address fetched successfully", list)
}

pub(crate) async fn edit(cx: Cx) -> ApiResult<Response> {
    let body: AddressWrite = cx.json()?;
    cx.engine.users().edit_address(&cx.caller, cx.tenant(), cx.param("userName"), body).await?;
    envelope("Address updated successfully")
}
