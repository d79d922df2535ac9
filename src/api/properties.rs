//! Properties of a user, or of a user's client.

use crate::error::{ApiError, ApiResult};
use crate::http::{json, Cx, Response};
use crate::list_filter;
use crate::models::property::{PropertyBody, FIELDS};
use crate::models::validate;
use crate::paging::Paging;
use herald_storage::now_ms;
use herald_storage::properties::{Property, PropertyValue};
use http::StatusCode;
use serde_json::{json, Value};

/// The client of the path, checked to exist and be linked to the user.
fn owner(cx: &Cx) -> ApiResult<(String, Option<String>)> {
    let user = cx.param("userId").to_string();
    validate::id("userId", &user, 3, 255)?;
    let client = match cx.param("astClientId") {
        "" => None,
        id => {
            validate::ulid("astClientId", id)?;
            if !cx.engine.store.links().user_ids_of_client(cx.tenant(), id)?.contains(&user) {
                return Err(ApiError::not_found(format!("client {id} is not linked to user {user}")));
            }
            Some(id.to_string())
        }
    };
    Ok((user, client))
}

fn view(cx: &Cx, p: &Property) -> ApiResult<Value> {
    let (value, encryption) = match &p.value {
        PropertyValue::Plain(v) => (v.clone(), "NONE"),
        // Decrypted values go to administrators only.
        PropertyValue::Sealed(s) if cx.principal()?.is_admin() => {
            let ctx = Property::seal_context(cx.tenant(), &p.user_id, p.client_id.as_deref(), &p.name);
            (String::from_utf8_lossy(&cx.engine.store.unseal(s, &ctx)?).into_owned(), "SERVER_SIDE_DB")
        }
        PropertyValue::Sealed(_) => ("***".to_string(), "SERVER_SIDE_DB"),
    };
    Ok(json!({
        "userId": p.user_id, "astClientId": p.client_id, "name": p.name, "type": p.kind, "value": value, "encryption": encryption,
        "readOnly": p.read_only, "notify": p.notify, "inKeystorage": p.in_keystorage, "cpFlags": p.cp_flags, "visibility": p.visibility,
    }))
}

pub async fn list(cx: Cx) -> ApiResult<Response> {
    let (user, client) = owner(&cx)?;
    let paging = Paging::from_query(&cx, "page_size", 5, 100)?;
    let conditions = list_filter::parse(&cx, &FIELDS)?;
    let mut out = Vec::new();
    for p in cx.engine.store.properties().list(cx.tenant(), &user, client.as_deref())? {
        let v = view(&cx, &p)?;
        if list_filter::matches(&conditions, |f| crate::models::client::field_text(&v, f)) {
            out.push(v);
        }
    }
    let page: Vec<Value> = out.into_iter().skip(paging.offset()).take(paging.size).collect();
    json(StatusCode::OK, &page)
}

pub async fn create(cx: Cx) -> ApiResult<Response> {
    let (user, client) = owner(&cx)?;
    let tenant = cx.tenant();
    let body: PropertyBody = cx.json()?;
    body.validate()?;
    let store = &cx.engine.store;
    let value = match body.encryption() {
        "SERVER_SIDE_DB" => PropertyValue::Sealed(
            store.seal(body.value.as_bytes(), &Property::seal_context(tenant, &user, client.as_deref(), &body.name))?,
        ),
        _ => PropertyValue::Plain(body.value.clone()),
    };
    let p = Property {
        user_id: user.clone(),
        client_id: client.clone(),
        name: body.name.clone(),
        kind: body.kind.clone(),
        value,
        read_only: body.read_only.unwrap_or(false),
        notify: body.notify.unwrap_or(false),
        in_keystorage: body.in_keystorage.unwrap_or(false),
        cp_flags: body.cp_flags.unwrap_or(0),
        visibility: body.visibility.clone(),
        created_ms: now_ms(),
    };
    crate::ops::properties::create(&cx.engine, tenant, &p).await?;
    json(StatusCode::CREATED, &view(&cx, &p)?)
}
