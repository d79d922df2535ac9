//! Device clients: registration, self-updates, locks, links to users, push
//! tokens, and deleting what a user holds.

use super::{commit, publish, Event};
use crate::engine::{random_token, Engine};
use crate::error::{ApiError, ApiResult};
use crate::models::client::{RegisterClient, Registered, UpdateClient};
use herald_storage::clients::Client;
use herald_storage::links::Link;
use herald_storage::push_tokens::PushToken;
use herald_storage::{now_ms, Tx};
use serde_json::json;

fn client_not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("client {id} not found"))
}

/// The client as stored in this transaction, or 404.
fn stored(tx: &Tx, tenant: &str, id: &str) -> ApiResult<Client> {
    tx.client(tenant, id)?.ok_or_else(|| client_not_found(id))
}

/// A client's risk analysis as stored: the JSON text it reported.
fn risk_analysis_text(r: Option<&crate::models::client::RiskAnalysis>) -> ApiResult<Option<String>> {
    r.map(serde_json::to_string).transpose().map_err(|e| ApiError::internal(e.to_string()))
}

/// Registers a client of an existing app; its secret is answered once.
pub async fn register(engine: &Engine, tenant: &str, body: RegisterClient) -> ApiResult<Registered> {
    let secret = random_token().map_err(ApiError::internal)?;
    let risk_analysis = risk_analysis_text(body.risk_analysis.as_ref())?;
    let client = Client {
        id: ulid::Ulid::generate().to_string(),
        app_name: body.app_name,
        platform: body.platform,
        app_version: body.app_version,
        sdk_version: body.sdk_version,
        device_name: body.device_name,
        client_device: body.client_device,
        client_os_version: body.client_os_version,
        locales: body.locales,
        secret_hash: ring::digest::digest(&ring::digest::SHA256, secret.as_bytes()).as_ref().to_vec(),
        lock_state: "NONE".into(),
        created_ms: now_ms(),
        risks: body.risks,
        risk_analysis,
        ..Client::default()
    };
    engine.store.transact(|tx| {
        if tx.app(tenant, &client.app_name)?.is_none() {
            return Err(ApiError::field("appName", format!("no app named {} in this tenant", client.app_name)));
        }
        tx.insert_client(tenant, &client)?;
        let data = json!({ "astClientId": client.id, "appName": client.app_name, "platform": client.platform });
        publish(tx, tenant, Event::new("client", "CLIENT_REGISTERED", data)).map_err(ApiError::from)
    })?;
    commit(engine).await?;
    Ok(Registered { ast_client_id: client.id, client_secret: secret })
}

/// A client updates what it reports of itself: only the fields the body
/// carries change, on the record as stored at the write, so a lock made
/// meanwhile stays.
pub async fn update(engine: &Engine, tenant: &str, id: &str, body: UpdateClient) -> ApiResult<Client> {
    let risk_analysis = risk_analysis_text(body.risk_analysis.as_ref())?;
    let client = engine.store.transact(|tx| {
        let mut c = stored(tx, tenant, id)?;
        let b = body.clone();
        c.app_version = b.app_version.or(c.app_version.take());
        c.sdk_version = b.sdk_version.or(c.sdk_version.take());
        c.device_name = b.device_name.or(c.device_name.take());
        c.client_device = b.client_device.or(c.client_device.take());
        c.client_os_version = b.client_os_version.or(c.client_os_version.take());
        c.locales = b.locales.unwrap_or(std::mem::take(&mut c.locales));
        c.risks = b.risks.or(c.risks.take());
        if risk_analysis.is_some() {
            c.risk_analysis = risk_analysis.clone();
        }
        tx.put_client(tenant, &c)?;
        Ok::<_, ApiError>(c)
    })?;
    commit(engine).await?;
    Ok(client)
}

/// Locks a client (`Some(reason)`) or unlocks it (`None`): the transition
/// ([`crate::models::client::set_lock`]) is checked against the stored state,
/// 406 when the client is in that state already. A locked client's token
/// leaves the broadcast index in the same transaction.
pub async fn set_lock(engine: &Engine, tenant: &str, id: &str, reason: Option<&str>) -> ApiResult<()> {
    engine.store.transact(|tx| {
        let mut c = stored(tx, tenant, id)?;
        crate::models::client::set_lock(&mut c, reason)
            .map_err(|refused| ApiError::new(http::StatusCode::NOT_ACCEPTABLE, refused))?;
        tx.put_client(tenant, &c)?;
        let event = match reason {
            Some(r) => Event::new("client", "CLIENT_LOCKED", json!({ "astClientId": id, "lockReason": r })),
            None => Event::new("client", "CLIENT_UNLOCKED", json!({ "astClientId": id })),
        };
        publish(tx, tenant, event).map_err(ApiError::from)
    })?;
    commit(engine).await
}

/// Links a user to an existing client, or changes the link's mLoA
/// ([`crate::models::client::link`]); the link moves the client's link
/// generation on.
pub async fn link(engine: &Engine, tenant: &str, user: &str, client: &str, mloa: &str) -> ApiResult<Link> {
    let now = now_ms();
    let link = engine.store.transact(|tx| {
        stored(tx, tenant, client)?;
        let link = crate::models::client::link(tx.link(tenant, user, client)?, user, client, mloa, now);
        tx.put_link(tenant, &link)?;
        Ok::<_, ApiError>(link)
    })?;
    commit(engine).await?;
    Ok(link)
}

/// Removes one link; 404 when there was none.
pub async fn unlink(engine: &Engine, tenant: &str, user: &str, client: &str) -> ApiResult<()> {
    let existed = engine.store.transact(|tx| tx.remove_link(tenant, user, client))?;
    if !existed {
        return Err(ApiError::not_found(format!("user {user} is not linked to client {client}")));
    }
    commit(engine).await
}

/// The links of a user; 404 when the user has none.
fn links_of(engine: &Engine, tenant: &str, user: &str) -> ApiResult<Vec<Link>> {
    let links = engine.store.links().of_user(tenant, user)?;
    if links.is_empty() {
        return Err(ApiError::not_found(format!("user {user} has no clients")));
    }
    Ok(links)
}

/// Removes the links of `user` to the clients `selected` accepts, in one transaction.
pub async fn unlink_selected(
    engine: &Engine,
    tenant: &str,
    user: &str,
    selected: impl Fn(&str) -> bool,
) -> ApiResult<()> {
    let links = links_of(engine, tenant, user)?;
    engine.store.transact(|tx| {
        for l in links.iter().filter(|l| selected(&l.client_id)) {
            tx.remove_link(tenant, user, &l.client_id)?;
        }
        Ok::<_, ApiError>(())
    })?;
    commit(engine).await
}

/// The selected clients of `user` must log in again: access tokens issued
/// to them before now are refused.
pub async fn disconnect(engine: &Engine, tenant: &str, user: &str, selected: impl Fn(&str) -> bool) -> ApiResult<()> {
    let links = links_of(engine, tenant, user)?;
    let now = now_ms();
    engine.store.transact(|tx| {
        for l in links.iter().filter(|l| selected(&l.client_id)) {
            // A client deleted meanwhile has nothing left to disconnect.
            if let Some(mut c) = tx.client(tenant, &l.client_id)? {
                c.not_before_ms = now;
                tx.put_client(tenant, &c)?;
            }
        }
        Ok::<_, ApiError>(())
    })?;
    commit(engine).await
}

/// Deletes a client no user is linked to; 409 while one is. The look at its
/// links is checked against its link generation in the transaction, so a
/// link made meanwhile keeps it (409).
pub async fn delete(engine: &Engine, tenant: &str, id: &str) -> ApiResult<()> {
    let generation = engine.store.links().generation(tenant, id)?;
    let linked = !engine.store.links().user_ids_of_client(tenant, id)?.is_empty();
    let still_linked = || ApiError::conflict(format!("client {id} is still linked to users: unlink them first"));
    engine.store.transact(|tx| {
        stored(tx, tenant, id)?;
        if linked || tx.link_generation(tenant, id)? != generation {
            return Err(still_linked());
        }
        tx.delete_client(tenant, id)?;
        publish(tx, tenant, Event::new("client", "CLIENT_DELETED", json!({ "astClientId": id })))
            .map_err(ApiError::from)
    })?;
    commit(engine).await
}

/// Sets a client's push token (the app must be the client's), or removes it
/// when `token` is `None`. The client must exist when the token is written.
pub async fn set_push_token(
    engine: &Engine,
    tenant: &str,
    client_id: &str,
    app_name: &str,
    token: Option<(herald_storage::push_tokens::PushProvider, String)>,
) -> ApiResult<Option<PushToken>> {
    let now = now_ms();
    if token.is_some() {
        engine.quotas.push_token(tenant, client_id)?;
    }
    let written = engine.store.transact(|tx| {
        let client = stored(tx, tenant, client_id)?;
        if app_name != client.app_name {
            return Err(ApiError::field("appName", format!("the client belongs to app {}", client.app_name)));
        }
        let Some((provider, token)) = token.clone() else {
            tx.remove_push_token(tenant, client_id)?;
            return Ok(None);
        };
        let record = PushToken { app_name: client.app_name, provider, token, is_valid: true, updated_ms: now };
        tx.put_push_token(tenant, client_id, &record)?;
        Ok(Some(record))
    })?;
    commit(engine).await?;
    Ok(written)
}

/// Deletes what a user holds: their properties and links, and each client no
/// other user is linked to (with its token); the realm user of that name or
/// id must log in again. Nothing of other users.
///
/// The user's links and properties go in one transaction; each client left
/// without links then goes in its own, checked against its link generation
/// so that a link made to it meanwhile keeps it (and a link never points to
/// a deleted client).
pub async fn delete_user_data(engine: &Engine, tenant: &str, user: &str) -> ApiResult<()> {
    let store = &engine.store;
    let realm_user = match store.users().get_by_name(tenant, &user.to_lowercase())? {
        Some(u) => Some(u),
        None => store.users().get(tenant, user)?,
    };
    // A property created between the look and the transaction moves the
    // generation on: the look is made again.
    let mut attempts: u32 = 0;
    let links = loop {
        let generation = store.properties().generation(tenant, user)?;
        let properties = store.properties().of_user(tenant, user)?;
        let links = store.links().of_user(tenant, user)?;
        let done = store.transact(|tx| {
            if tx.property_generation(tenant, user)? != generation {
                return Ok(false);
            }
            remove_all(tx, tenant, user, &properties, &links, realm_user.as_ref())?;
            Ok::<_, ApiError>(true)
        })?;
        attempts = attempts.saturating_add(1);
        if done {
            break links;
        }
        if attempts == 5 {
            return Err(ApiError::conflict(format!("properties of user {user} kept changing: try again")));
        }
    };
    for l in &links {
        delete_if_orphan(engine, tenant, &l.client_id)?;
    }
    commit(engine).await
}

/// The user's part of [`delete_user_data`], in its transaction.
fn remove_all(
    tx: &Tx,
    tenant: &str,
    user: &str,
    properties: &[herald_storage::properties::Property],
    links: &[Link],
    realm_user: Option<&herald_storage::users::User>,
) -> herald_storage::Result<()> {
    for p in properties {
        tx.remove_property(tenant, p)?;
    }
    for l in links {
        tx.remove_link(tenant, user, &l.client_id)?;
    }
    if let Some(u) = realm_user {
        tx.revoke_tokens(tenant, &u.id)?;
    }
    Ok(())
}

/// Deletes a client no user is linked to any more, with its
/// `CLIENT_DELETED`; a link made to it meanwhile keeps it (its generation
/// moved on between the look and the delete, so the look is made again).
/// Answers whether it was deleted.
fn delete_if_orphan(engine: &Engine, tenant: &str, client: &str) -> ApiResult<bool> {
    let links = engine.store.links();
    for _ in 0..5 {
        let generation = links.generation(tenant, client)?;
        if !links.user_ids_of_client(tenant, client)?.is_empty() {
            return Ok(false);
        }
        let deleted = engine.store.transact(|tx| {
            if tx.link_generation(tenant, client)? != generation {
                return Ok(None);
            }
            if !tx.delete_client(tenant, client)? {
                return Ok(Some(false));
            }
            let data = json!({ "astClientId": client, "reason": "user data deleted" });
            publish(tx, tenant, Event::new("client", "CLIENT_DELETED", data))?;
            Ok::<_, herald_storage::Error>(Some(true))
        })?;
        if let Some(deleted) = deleted {
            return Ok(deleted);
        }
    }
    // Linked again and again meanwhile: it has users, so it stays.
    Ok(false)
}
