//! Realm users: create, change (password hashed before the transaction), token revocation, addresses.
//!
//! Every change of a user runs on the record as stored in its transaction
//! (found by username there), so a concurrent change of other fields is
//! kept; a change that takes something from the user
//! ([`revokes_tokens`]) refuses its earlier tokens in the same transaction.
//! The user directory follows after the commit
//! ([`herald_storage::users::UserWritten`]).

use super::commit;
use crate::auth::password;
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::address::AddressWrite;
use crate::models::user::{self, revokes_tokens, NewPassword, ProfileWrite, RevokeActions, RevokeRoles, UserWrite};
use herald_storage::identity::Address;
use herald_storage::now_ms;
use herald_storage::users::{Credential, User};
use herald_storage::Tx;

/// 404 `USER_NOT_FOUND` "User does not exist", Keycloak's answer for an unknown user.
pub fn user_not_found() -> ApiError {
    ApiError::not_found("User does not exist").with_word("USER_NOT_FOUND")
}

/// A refused user write, as the realm API answers it.
fn refused(e: herald_storage::Error) -> ApiError {
    match e {
        herald_storage::Error::Conflict("email") => {
            ApiError::conflict("User exists with same email").with_word("CONFLICT")
        }
        herald_storage::Error::Conflict(_) => {
            ApiError::conflict("User exists with same username").with_word("CONFLICT")
        }
        herald_storage::Error::NotFound(_) => user_not_found(),
        other => other.into(),
    }
}

/// The user of that username (any case) in this transaction, or 404.
fn stored(tx: &Tx, tenant: &str, username: &str) -> ApiResult<User> {
    tx.user_by_name(tenant, &username.to_lowercase())?.ok_or_else(user_not_found)
}

/// Hashes off the async threads (argon2 is deliberately slow).
async fn hash(plain: String) -> ApiResult<String> {
    tokio::task::spawn_blocking(move || password::hash(&plain))
        .await
        .map_err(|_| ApiError::internal("password hashing failed"))?
        .map_err(ApiError::internal)
}

/// The body's password credential (the last one wins), hashed off the async
/// threads, with whether it is temporary.
async fn new_password(body: &UserWrite) -> ApiResult<Option<NewPassword>> {
    let Some(c) = body.credentials.iter().flatten().last() else { return Ok(None) };
    let credential = Credential {
        id: uuid::Uuid::new_v4().to_string(),
        kind: "password".into(),
        hash: hash(c.value.clone()).await?,
        created_ms: now_ms(),
    };
    Ok(Some(NewPassword { credential, temporary: c.temporary }))
}

/// Creates a user (its password hashed before the transaction); 409 on a
/// taken username or e-mail.
pub async fn create(engine: &Engine, tenant: &str, body: &UserWrite) -> ApiResult<User> {
    let mut u = User { id: uuid::Uuid::new_v4().to_string(), enabled: true, created_ms: now_ms(), ..User::default() };
    user::apply(&mut u, body);
    user::set_password(&mut u, new_password(body).await?.as_ref());
    let written = engine.store.transact(|tx| tx.insert_user(tenant, &u)).map_err(refused)?;
    engine.store.users().refresh_directory(tenant, &written)?;
    commit(engine).await?;
    Ok(u)
}

/// Applies `change` to the user of `username` as stored in one transaction;
/// when the change takes something from the user its tokens are revoked in
/// it. Answers the changed user; 404 when absent, 409 when the change takes
/// another user's username or e-mail.
async fn change(engine: &Engine, tenant: &str, username: &str, change: impl Fn(&mut User)) -> ApiResult<User> {
    let (changed, written) = engine.store.transact(|tx| {
        let old = stored(tx, tenant, username)?;
        let mut new = old.clone();
        change(&mut new);
        new.id = old.id.clone();
        let written = tx.put_user(tenant, &new).map_err(refused)?;
        if revokes_tokens(&old, &new) {
            tx.revoke_tokens(tenant, &new.id)?;
        }
        Ok::<_, ApiError>((new, written))
    })?;
    engine.store.users().refresh_directory(tenant, &written)?;
    commit(engine).await?;
    Ok(changed)
}

/// Update User: the fields the body carries, and a new password (hashed
/// before the transaction: a disable made meanwhile stays).
pub async fn update(engine: &Engine, tenant: &str, username: &str, body: &UserWrite) -> ApiResult<User> {
    // A 404 before the (slow) hash.
    if engine.store.users().get_by_name(tenant, &username.to_lowercase())?.is_none() {
        return Err(user_not_found());
    }
    let password = new_password(body).await?;
    change(engine, tenant, username, |u| {
        user::apply(u, body);
        user::set_password(u, password.as_ref());
    })
    .await
}

/// Update Profile of the user of `username` ([`user::apply_profile`]); 404 when absent.
pub async fn update_profile(engine: &Engine, tenant: &str, username: &str, body: &ProfileWrite) -> ApiResult<User> {
    change(engine, tenant, username, |u| user::apply_profile(u, body)).await
}

/// Enables or disables a user; a disable refuses the user's earlier tokens.
pub async fn set_enabled(engine: &Engine, tenant: &str, username: &str, enabled: bool) -> ApiResult<User> {
    let now_s = now_ms() / 1000;
    change(engine, tenant, username, |u| user::set_enabled(u, enabled, now_s)).await
}

/// Gives the user of `username` every admin role.
pub async fn promote(engine: &Engine, tenant: &str, username: &str) -> ApiResult<User> {
    change(engine, tenant, username, user::promote).await
}

/// Takes every admin role from the user of `username`; its earlier tokens are refused.
pub async fn revoke_admin(engine: &Engine, tenant: &str, username: &str) -> ApiResult<User> {
    change(engine, tenant, username, user::revoke_admin).await
}

/// Takes the listed realm and client roles from the user; its earlier tokens are refused.
pub async fn revoke_roles(engine: &Engine, tenant: &str, username: &str, body: &RevokeRoles) -> ApiResult<User> {
    change(engine, tenant, username, |u| user::revoke_roles(u, body)).await
}

/// Removes the listed required actions from the user of `username`.
pub async fn revoke_required_actions(
    engine: &Engine,
    tenant: &str,
    username: &str,
    body: &RevokeActions,
) -> ApiResult<User> {
    change(engine, tenant, username, |u| user::revoke_required_actions(u, body)).await
}

/// Adds a postal address to the user of `username` (the body checked
/// already: a postal code, no id); see [`crate::models::address::add`].
pub async fn add_address(engine: &Engine, tenant: &str, username: &str, body: &AddressWrite) -> ApiResult<Address> {
    let mut a = Address { id: uuid::Uuid::new_v4().to_string(), ..Address::default() };
    body.apply(&mut a);
    let added = engine.store.transact(|tx| {
        let u = stored(tx, tenant, username)?;
        let mut list = tx.addresses(tenant, &u.id)?;
        crate::models::address::add(&mut list, a.clone(), body.default_address);
        tx.put_addresses(tenant, &u.id, &list)?;
        Ok::<_, ApiError>(list.pop().unwrap_or_default())
    })?;
    commit(engine).await?;
    Ok(added)
}

/// Edits address `id` of the user of `username`; 404 when it has none such.
pub async fn edit_address(
    engine: &Engine,
    tenant: &str,
    username: &str,
    id: &str,
    body: &AddressWrite,
) -> ApiResult<()> {
    engine.store.transact(|tx| {
        let u = stored(tx, tenant, username)?;
        let mut list = tx.addresses(tenant, &u.id)?;
        crate::models::address::edit(&mut list, id, body)?;
        tx.put_addresses(tenant, &u.id, &list).map_err(ApiError::from)
    })?;
    commit(engine).await
}
