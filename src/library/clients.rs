//! Device clients: registration, self-updates, locks, links to users, push
//! tokens, and deleting what a user holds.

use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_CLIENT, ADMIN_OR_READ, ANY};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::client::{
    ClientDetail, ClientOverview, LinkView, RegisterClient, Registered, SelectClients, UpdateClient,
};
use crate::models::push_token::{PushTokenView, PutPushToken};
use crate::models::validate;
use crate::ops;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const REGISTER: Access = Access::Tenant(ADMIN);
    pub const READ: Access = Access::Tenant(ANY);
    pub const LIST: Access = Access::Tenant(ADMIN_OR_READ);
    pub const SELF_UPDATE: Access = Access::Tenant(ADMIN_OR_CLIENT);
    pub const ADMINISTER: Access = Access::Tenant(ADMIN);
    pub const SET_PUSH_TOKEN: Access = Access::Tenant(ADMIN_OR_CLIENT);
    pub const READ_PUSH_TOKEN: Access = Access::Tenant(ADMIN);
}

/// See [`Engine::clients`].
pub struct Clients<'a>(pub(crate) &'a Engine);

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("client {id} not found"))
}

fn link_view(tenant: &str, l: herald_storage::links::Link) -> LinkView {
    LinkView {
        user_id: l.user_id,
        ast_client_id: l.client_id,
        tenant_id: tenant.to_string(),
        mloa: l.mloa,
        linked_on: l.linked_on,
        mloa_updated_on: l.mloa_updated_on,
    }
}

impl Clients<'_> {
    /// Registers a client of an existing app; its secret is answered this once.
    pub async fn register(&self, caller: &Caller, tenant: &str, body: RegisterClient) -> ApiResult<Registered> {
        caller.authorize(Some(tenant), access::REGISTER)?;
        body.validate()?;
        ops::clients::register(self.0, tenant, body).await
    }

    /// A client's detail: administrators and readers read any, a client itself.
    pub async fn get(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<ClientDetail> {
        if let Some(p) = caller.authorize(Some(tenant), access::READ)? {
            validate::ulid("astClientId", id)?;
            p.may_read_client(id)?;
        }
        let store = &self.0.store;
        let client = store.clients().get(tenant, id)?.ok_or_else(|| not_found(id))?;
        let linked = store.links().of_client(tenant, id)?.iter().map(|l| l.mloa_updated_on.max(l.linked_on)).max();
        Ok(ClientDetail::of(&client, linked))
    }

    /// A client updates what it reports of itself (an administrator may too).
    pub async fn update(&self, caller: &Caller, tenant: &str, id: &str, body: UpdateClient) -> ApiResult<ClientDetail> {
        if let Some(p) = caller.authorize(Some(tenant), access::SELF_UPDATE)? {
            validate::ulid("astClientId", id)?;
            p.may_act_on_client(id)?;
        }
        body.validate()?;
        let c = ops::clients::update(self.0, tenant, id, body).await?;
        Ok(ClientDetail::of(&c, None))
    }

    /// Deletes a client no user is linked to (409 while one is).
    pub async fn delete(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("astClientId", id)?;
        ops::clients::delete(self.0, tenant, id).await
    }

    /// Locks a client: it cannot log in, gets no push, its tokens stop working.
    pub async fn lock(&self, caller: &Caller, tenant: &str, id: &str, reason: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("astClientId", id)?;
        validate::length("lockReason", reason, 1, 255)?;
        ops::clients::set_lock(self.0, tenant, id, Some(reason)).await
    }

    /// Unlocks a locked client (406 when it is not locked).
    pub async fn unlock(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::ulid("astClientId", id)?;
        ops::clients::set_lock(self.0, tenant, id, None).await
    }

    /// Links user `user` to client `id` with a level of assurance (`none` when not given).
    pub async fn link(
        &self,
        caller: &Caller,
        tenant: &str,
        user: &str,
        id: &str,
        mloa: Option<&str>,
    ) -> ApiResult<LinkView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::id("userId", user, 3, 255)?;
        validate::ulid("astClientId", id)?;
        let mloa = mloa.unwrap_or("none");
        validate::length("mLoA", mloa, 1, 64)?;
        let link = ops::clients::link(self.0, tenant, user, id, mloa).await?;
        Ok(link_view(tenant, link))
    }

    /// The links of a user to clients.
    pub async fn links_of_user(&self, caller: &Caller, tenant: &str, user: &str) -> ApiResult<Vec<LinkView>> {
        caller.authorize(Some(tenant), access::LIST)?;
        validate::id("userId", user, 3, 255)?;
        let links = self.0.store.links().of_user(tenant, user)?;
        Ok(links.into_iter().map(|l| link_view(tenant, l)).collect())
    }

    /// The clients of a user as the overview shows them (404 when none).
    pub async fn overview(&self, caller: &Caller, tenant: &str, user: &str) -> ApiResult<Vec<ClientOverview>> {
        caller.authorize(Some(tenant), access::LIST)?;
        validate::id("userId", user, 3, 255)?;
        let store = &self.0.store;
        let links = store.links().of_user(tenant, user)?;
        if links.is_empty() {
            return Err(ApiError::not_found(format!("user {user} has no clients")));
        }
        let mut out = Vec::with_capacity(links.len());
        for l in links {
            if let Some(c) = store.clients().get(tenant, &l.client_id)? {
                out.push(ClientOverview::of(&c));
            }
        }
        Ok(out)
    }

    /// The users linked to a client, with their mLoA.
    pub async fn links_of_client(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<Vec<LinkView>> {
        caller.authorize(Some(tenant), access::LIST)?;
        validate::ulid("astClientId", id)?;
        let store = &self.0.store;
        store.clients().get(tenant, id)?.ok_or_else(|| not_found(id))?;
        Ok(store.links().of_client(tenant, id)?.into_iter().map(|l| link_view(tenant, l)).collect())
    }

    /// Removes one link (404 when there is none).
    pub async fn unlink(&self, caller: &Caller, tenant: &str, user: &str, id: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::id("userId", user, 3, 255)?;
        validate::ulid("astClientId", id)?;
        ops::clients::unlink(self.0, tenant, user, id).await
    }

    /// Removes the links of `user` to the clients `selection` names (all by default).
    pub async fn unlink_selected(
        &self,
        caller: &Caller,
        tenant: &str,
        user: &str,
        selection: &SelectClients,
    ) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::id("userId", user, 3, 255)?;
        let selected = selection.selects("unlinkType")?;
        ops::clients::unlink_selected(self.0, tenant, user, selected).await
    }

    /// The selected clients of `user` must log in again.
    pub async fn disconnect(
        &self,
        caller: &Caller,
        tenant: &str,
        user: &str,
        selection: &SelectClients,
    ) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::id("userId", user, 3, 255)?;
        let selected = selection.selects("disconnectType")?;
        ops::clients::disconnect(self.0, tenant, user, selected).await
    }

    /// Deletes what a user holds: properties, links, the clients no other
    /// user is linked to; the realm user of that name must log in again.
    pub async fn delete_user_data(&self, caller: &Caller, tenant: &str, user: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        validate::id("userId", user, 3, 255)?;
        ops::clients::delete_user_data(self.0, tenant, user).await
    }

    /// Sets a client's push token, or removes it (an empty `pushToken`):
    /// `None` then. A client may set its own.
    pub async fn set_push_token(
        &self,
        caller: &Caller,
        tenant: &str,
        id: &str,
        body: PutPushToken,
    ) -> ApiResult<Option<PushTokenView>> {
        if let Some(p) = caller.authorize(Some(tenant), access::SET_PUSH_TOKEN)? {
            validate::ulid("astClientId", id)?;
            p.may_act_on_client(id)?;
        }
        let policy = self.0.config.push.endpoint_policy();
        let token = if body.push_token.is_empty() { None } else { Some(body.resolve(&policy)?) };
        let written = ops::clients::set_push_token(self.0, tenant, id, &body.app_name, token).await?;
        written.map(|r| self.token_view(tenant, id, r)).transpose()
    }

    /// A client's push token (administrators only: it is sensitive).
    pub async fn push_token(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<PushTokenView> {
        caller.authorize(Some(tenant), access::READ_PUSH_TOKEN)?;
        validate::ulid("astClientId", id)?;
        let record = self
            .0
            .store
            .push_tokens()
            .get(tenant, id)?
            .ok_or_else(|| ApiError::not_found(format!("no push token for client {id}")))?;
        self.token_view(tenant, id, record)
    }

    fn token_view(
        &self,
        tenant: &str,
        id: &str,
        r: herald_storage::push_tokens::PushToken,
    ) -> ApiResult<PushTokenView> {
        Ok(PushTokenView {
            app_name: r.app_name,
            push_token: r.token,
            push_provider: r.provider.as_str().to_string(),
            is_valid: r.is_valid,
            assigned_users: self.0.store.links().user_ids_of_client(tenant, id)?,
        })
    }
}
