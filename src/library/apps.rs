//! Apps with their push configuration (credentials of each provider).

use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::models::app::{AppBody, AppView};
use crate::ops;
use crate::paging::Paging;

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const ADMINISTER: Access = Access::Tenant(ADMIN);
    pub const READ: Access = Access::Tenant(ADMIN_OR_READ);
}

/// See [`Engine::apps`].
pub struct Apps<'a>(pub(crate) &'a Engine);

/// A page request checked against an operation's limits (the HTTP route
/// checks them when it reads the query; a program may pass anything).
pub(crate) fn checked(paging: Paging, size_name: &str, min: usize, max: usize) -> ApiResult<Paging> {
    if paging.page == 0 {
        return Err(ApiError::field("page", "starts at 1"));
    }
    if !(min..=max).contains(&paging.size) {
        return Err(ApiError::field(size_name, format!("must be an integer from {min} to {max}")));
    }
    Ok(paging)
}

impl Apps<'_> {
    /// Creates app `name` with its push credentials, parsed as the send path
    /// reads them (409 when the name is taken).
    pub async fn create(&self, caller: &Caller, tenant: &str, name: &str, body: AppBody) -> ApiResult<AppView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        ops::apps::create(self.0, tenant, name, &body).await
    }

    /// Replaces an app's configuration; a secret sent back masked (`***`)
    /// keeps the stored one.
    pub async fn update(&self, caller: &Caller, tenant: &str, name: &str, body: AppBody) -> ApiResult<AppView> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        ops::apps::update(self.0, tenant, name, &body).await
    }

    /// An app, its secrets masked.
    pub async fn get(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<AppView> {
        caller.authorize(Some(tenant), access::READ)?;
        let app = self
            .0
            .store
            .apps()
            .get(tenant, name)?
            .ok_or_else(|| ApiError::not_found(format!("app {name} not found")))?;
        Ok(AppView::of(tenant, &app, self.0.store.apps().web_push(tenant, name)?.as_ref()))
    }

    /// A page (of 1 to 100) of the apps, by name; only those whose name
    /// contains `name_filter` when it is given.
    pub async fn list(
        &self,
        caller: &Caller,
        tenant: &str,
        name_filter: Option<&str>,
        paging: Paging,
    ) -> ApiResult<Vec<AppView>> {
        caller.authorize(Some(tenant), access::READ)?;
        let paging = checked(paging, "pageSize", 1, 100)?;
        let apps = self.0.store.apps();
        let page = match name_filter {
            // A name filter selects at most a handful of apps: filter, then page.
            Some(f) => {
                let (all, _) = apps.list(tenant, 0, usize::MAX)?;
                all.into_iter().filter(|a| a.name.contains(f)).skip(paging.offset()).take(paging.size).collect()
            }
            None => apps.list(tenant, paging.offset(), paging.size)?.0,
        };
        page.iter().map(|a| Ok(AppView::of(tenant, a, apps.web_push(tenant, &a.name)?.as_ref()))).collect()
    }

    /// Deletes an app with its versions (their registrations and votes).
    pub async fn delete(&self, caller: &Caller, tenant: &str, name: &str) -> ApiResult<()> {
        caller.authorize(Some(tenant), access::ADMINISTER)?;
        ops::apps::delete(self.0, tenant, name).await
    }
}
