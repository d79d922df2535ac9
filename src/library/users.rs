//! Users of a tenant's realm (spec 001): create and change them, their roles
//! and required actions, read them one by one or in paged lists, and their
//! postal addresses.

use crate::auth::{roles, Access, Caller, ADMIN, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::address::{AddressView, AddressWrite};
use crate::models::user::{
    validate_attributes, validate_client_roles, validate_email, validate_names, CreatedUser, CredentialView,
    ProfileWrite, RevokeActions, RevokeRoles, UserListQuery, UserPage, UserPageInfo, UserRepresentation, UserView,
    UserWrite,
};
use crate::models::validate;
use crate::ops;
use herald_storage::users::{Field, Index, Source, User, UserRow};
use std::sync::Arc;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const ADMINISTER: Access = Access::Tenant(ADMIN);
    pub const READ: Access = Access::Tenant(ADMIN_OR_READ);
}

/// See [`Engine::users`].
pub struct Users<'a>(pub(crate) &'a Engine);

/// A username of a path: it names a user, in any case.
fn username(field: &str, name: &str) -> ApiResult<()> {
    validate::id(field, name, 1, 255)
}

/// The user of that username (any case), or 404 `USER_NOT_FOUND`.
pub(crate) fn load(engine: &Engine, tenant: &str, name: &str) -> ApiResult<User> {
    engine.store.users().get_by_name(tenant, &name.to_lowercase())?.ok_or_else(ops::users::user_not_found)
}

impl Users<'_> {
    /// Creates a user (409 when its username or e-mail is taken); a password
    /// credential of the body is stored hashed.
    pub async fn create(&self, caller: &Caller, tenant: &str, body: UserWrite) -> ApiResult<CreatedUser> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        body.validate(true)?;
        let u = ops::users::create(self.0, tenant, &body).await?;
        Ok(CreatedUser { id: u.id, username: u.username })
    }

    /// Changes the fields the body carries of user `name` (a new password
    /// included); taking something from the user revokes its tokens.
    pub async fn update(&self, caller: &Caller, tenant: &str, name: &str, body: UserWrite) -> ApiResult<UserView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userId", name)?;
        body.validate(false)?;
        Ok(UserView::of(&ops::users::update(self.0, tenant, name, &body).await?))
    }

    /// Changes names and e-mail (a new e-mail is not verified) and merges
    /// attributes into the user's.
    pub async fn update_profile(
        &self,
        caller: &Caller,
        tenant: &str,
        name: &str,
        body: ProfileWrite,
    ) -> ApiResult<UserView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userId", name)?;
        validate_email("email", &body.email)?;
        validate_attributes(&body.attributes)?;
        for (f, v) in [("firstName", &body.first_name), ("lastName", &body.last_name)] {
            if let Some(v) = v {
                validate::id(f, v, 0, 255)?;
            }
        }
        Ok(UserView::of(&ops::users::update_profile(self.0, tenant, name, &body).await?))
    }

    /// Lets the user log in again.
    pub async fn enable(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<UserView> {
        self.set_enabled(caller, tenant, name, true).await
    }

    /// Stops the user logging in; its earlier tokens are refused at once.
    pub async fn disable(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<UserView> {
        self.set_enabled(caller, tenant, name, false).await
    }

    async fn set_enabled(&self, caller: &Caller, tenant: &str, name: &str, enabled: bool) -> ApiResult<UserView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userId", name)?;
        Ok(UserView::of(&ops::users::set_enabled(self.0, tenant, name, enabled).await?))
    }

    /// Gives the user every admin role.
    pub async fn promote(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<UserView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userId", name)?;
        Ok(UserView::of(&ops::users::promote(self.0, tenant, name).await?))
    }

    /// Takes every admin role from the user (its tokens are revoked).
    pub async fn revoke_admin(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<UserView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userId", name)?;
        Ok(UserView::of(&ops::users::revoke_admin(self.0, tenant, name).await?))
    }

    /// Takes the listed realm and client roles from the user.
    pub async fn revoke_roles(
        &self,
        caller: &Caller,
        tenant: &str,
        name: &str,
        body: RevokeRoles,
    ) -> ApiResult<UserView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userId", name)?;
        validate_names("realmRoles", &body.realm_roles)?;
        validate_client_roles("clientRoles", &body.client_roles)?;
        Ok(UserView::of(&ops::users::revoke_roles(self.0, tenant, name, &body).await?))
    }

    /// Takes the listed required actions from the user.
    pub async fn revoke_required_actions(
        &self,
        caller: &Caller,
        tenant: &str,
        name: &str,
        body: RevokeActions,
    ) -> ApiResult<UserView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userId", name)?;
        validate_names("requiredActions", &body.required_actions)?;
        Ok(UserView::of(&ops::users::revoke_required_actions(self.0, tenant, name, &body).await?))
    }

    /// The user of id `id`, in Keycloak's representation.
    pub async fn get_by_id(&self, caller: &Caller, tenant: &str, id: &str) -> ApiResult<UserRepresentation> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::id("id", id, 1, 255)?;
        let u = self.0.store.users().get(tenant, id)?.ok_or_else(ops::users::user_not_found)?;
        Ok(UserRepresentation::of(&u))
    }

    /// The user of username `name` (any case).
    pub async fn get(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<UserView> {
        caller.authorize(Some(tenant), access::READ)?;
        username("userId", name)?;
        Ok(UserView::of(&load(self.0, tenant, name)?))
    }

    /// The user's credentials (their hashing parameters only).
    pub async fn credentials(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<Vec<CredentialView>> {
        caller.authorize(Some(tenant), access::READ)?;
        username("userId", name)?;
        Ok(load(self.0, tenant, name)?.credentials.iter().map(CredentialView::of).collect())
    }

    /// The tenants the user belongs to: the one realm it was created in.
    pub async fn tenants(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<String> {
        caller.authorize(Some(tenant), access::READ)?;
        username("userId", name)?;
        load(self.0, tenant, name)?;
        Ok(tenant.to_string())
    }

    /// The users holding an admin role, in username order.
    pub async fn admins(&self, caller: &Caller, tenant: &str) -> ApiResult<Vec<UserView>> {
        caller.authorize(Some(tenant), access::READ)?;
        let mut seen = std::collections::BTreeMap::new();
        for r in roles::ADMINS {
            for u in self.0.store.users().by_index(tenant, Index::Role(r))? {
                seen.entry(u.username.clone()).or_insert(u);
            }
        }
        Ok(seen.values().map(UserView::of).collect())
    }

    /// Search User: the users whose username, names or e-mail contain `key`
    /// (any case; every user without one) and that match `query`.
    pub async fn search(
        &self,
        caller: &Caller,
        tenant: &str,
        key: Option<&str>,
        query: &UserListQuery,
    ) -> ApiResult<UserPage> {
        caller.authorize(Some(tenant), access::READ)?;
        let key = key.map(str::to_lowercase).filter(|k| !k.is_empty());
        self.list(tenant, key.as_deref().map_or(Source::All, Source::Containing), query)
    }

    /// The users with attribute `key` holding `value`.
    pub async fn by_attribute(
        &self,
        caller: &Caller,
        tenant: &str,
        key: &str,
        value: &str,
    ) -> ApiResult<Vec<UserView>> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::id("key", key, 1, 255)?;
        validate::id("value", value, 0, 255)?;
        let users = self.0.store.users().by_index(tenant, Index::Attribute(key, value))?;
        Ok(users.iter().map(UserView::of).collect())
    }

    /// The users holding realm role `role` that match `query`.
    pub async fn by_role(
        &self,
        caller: &Caller,
        tenant: &str,
        role: &str,
        query: &UserListQuery,
    ) -> ApiResult<UserPage> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::id("role", role, 1, 255)?;
        self.list(tenant, Source::Index(Index::Role(role)), query)
    }

    /// The users holding role `role` of client `client` that match `query`.
    pub async fn by_client_role(
        &self,
        caller: &Caller,
        tenant: &str,
        client: &str,
        role: &str,
        query: &UserListQuery,
    ) -> ApiResult<UserPage> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::id("clientid", client, 1, 255)?;
        validate::id("assignedRole", role, 1, 255)?;
        self.list(tenant, Source::Index(Index::ClientRole(client, role)), query)
    }

    /// The users of group `group` that match `query`.
    pub async fn by_group(
        &self,
        caller: &Caller,
        tenant: &str,
        group: &str,
        query: &UserListQuery,
    ) -> ApiResult<UserPage> {
        caller.authorize(Some(tenant), access::READ)?;
        validate::id("groupID", group, 1, 255)?;
        self.list(tenant, Source::Index(Index::Group(group)), query)
    }

    /// Adds a postal address to the user (it must have a postal code; the
    /// first, or one marked so, is the default).
    pub async fn add_address(
        &self,
        caller: &Caller,
        tenant: &str,
        name: &str,
        body: AddressWrite,
    ) -> ApiResult<AddressView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userName", name)?;
        load(self.0, tenant, name)?;
        body.validate()?;
        if body.address_id.is_some() {
            return Err(ApiError::field("addressID", "is assigned by the service"));
        }
        if body.postal_code.as_deref().is_none_or(|p| p.trim().is_empty()) {
            return Err(AddressWrite::missing());
        }
        let added = ops::users::add_address(self.0, tenant, name, &body).await?;
        Ok(AddressView::of(&added))
    }

    /// The user's postal addresses.
    pub async fn addresses(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<Vec<AddressView>> {
        caller.authorize(Some(tenant), access::READ)?;
        username("userName", name)?;
        let user = load(self.0, tenant, name)?;
        Ok(self.0.store.identity().addresses(tenant, &user.id)?.iter().map(AddressView::of).collect())
    }

    /// Edits the address the body's `addressID` names (404 when the user has
    /// none such); making it the default unmarks the others.
    pub async fn edit_address(&self, caller: &Caller, tenant: &str, name: &str, body: AddressWrite) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        username("userName", name)?;
        load(self.0, tenant, name)?;
        body.validate()?;
        let id = body.address_id.clone().ok_or_else(AddressWrite::missing)?;
        if body.postal_code.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(AddressWrite::missing());
        }
        ops::users::edit_address(self.0, tenant, name, &id, &body).await
    }

    /// The page of the users of `source` matching `query`: only the page's
    /// records are read.
    fn list(&self, tenant: &str, source: Source<'_>, query: &UserListQuery) -> ApiResult<UserPage> {
        query.validate()?;
        let q = query.clone().normalized();
        let (page, total) = page(self.0, tenant, &q, source)?;
        // `validate` bounds the query: `limit` from 1, `offset` at most `usize::MAX >> 1`.
        #[allow(clippy::arithmetic_side_effects)]
        let current_page = q.offset / q.limit + 1;
        let users = self.0.store.users();
        let mut list = Vec::with_capacity(page.len());
        for row in &page {
            if let Some(u) = users.get(tenant, &row.id)? {
                list.push(UserView::of(&u));
            }
        }
        Ok(UserPage {
            user_list: list,
            page: UserPageInfo {
                current_page,
                page_size: q.limit,
                total_pages: total.div_ceil(q.limit),
                total_records: total,
            },
        })
    }
}

/// The page of the users of `source` matching the query, and the number of
/// matches. Where the rows come in the asked order (username order
/// ascending, or a whole tenant in a kept order) they are only counted and
/// the page's kept; otherwise the matches are sorted.
fn page(engine: &Engine, tenant: &str, q: &UserListQuery, source: Source<'_>) -> ApiResult<(Vec<Arc<UserRow>>, usize)> {
    let users = engine.store.users();
    let order_key = q.order_by.field();
    let keep = |r: &UserRow| q.matches(r);
    let (mut total, mut page) = (0usize, Vec::new());
    let mut count = |r: &Arc<UserRow>| {
        if keep(r) {
            if total >= q.offset && page.len() < q.limit {
                page.push(r.clone());
            }
            total = total.saturating_add(1);
        }
    };
    if matches!(source, Source::All) {
        users.visit_all_by(tenant, order_key, q.desc, &mut count)?;
        return Ok((page, total));
    }
    if order_key == Field::Username && !q.desc {
        users.visit(tenant, source, &mut count)?;
        return Ok((page, total));
    }
    let rows = users.select(tenant, source, keep)?;
    let total = rows.len();
    let end = q.offset.saturating_add(q.limit).min(total);
    if q.offset >= end {
        return Ok((Vec::new(), total));
    }
    if order_key == Field::Username {
        // Descending: the page counted from the end.
        return Ok((rows.iter().rev().skip(q.offset).take(q.limit).cloned().collect(), total));
    }
    // Only the first `end` places of the order matter: partition around
    // place `end` (linear), then sort those. Ties stay in username order
    // (the rows' order), reversed with the rest when descending.
    let order = |a: &u32, b: &u32| {
        let o = rows[*a as usize].field(order_key).cmp(rows[*b as usize].field(order_key)).then(a.cmp(b));
        if q.desc {
            o.reverse()
        } else {
            o
        }
    };
    let mut places: Vec<u32> = (0..total as u32).collect();
    if end < total {
        places.select_nth_unstable_by(end, order);
        places.truncate(end);
    }
    places.sort_unstable_by(order);
    Ok((places[q.offset..].iter().map(|i| rows[*i as usize].clone()).collect(), total))
}
