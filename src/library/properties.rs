//! Properties of a user, or of one of a user's clients.

use super::apps::checked;
use crate::auth::{Access, Caller, ADMIN, ADMIN_OR_READ};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use crate::list_filter;
use crate::models::property::{PropertyBody, PropertyView, FIELDS};
use crate::models::validate;
use crate::paging::Paging;
use herald_actors::filter::Condition;
use herald_storage::now_ms;
use herald_storage::properties::{Property, PropertyValue};

/// Access of each operation, shared with its HTTP route.
pub(crate) mod access {
    use super::*;
    pub const READ: Access = Access::Tenant(ADMIN_OR_READ);
    pub const WRITE: Access = Access::Tenant(ADMIN);
}

/// See [`Engine::properties`].
pub struct Properties<'a>(pub(crate) &'a Engine);

impl Properties<'_> {
    /// Checks the owner: the user, and the client when one is named, which
    /// must be linked to the user.
    fn owner(&self, tenant: &str, user: &str, client: Option<&str>) -> ApiResult<()> {
        validate::id("userId", user, 3, 255)?;
        if let Some(id) = client {
            validate::ulid("astClientId", id)?;
            if !self.0.store.links().exists(tenant, user, id)? {
                return Err(ApiError::not_found(format!("client {id} is not linked to user {user}")));
            }
        }
        Ok(())
    }

    /// The read form; `reveal` shows an encrypted value (to administrators).
    fn view(&self, tenant: &str, p: &Property, reveal: bool) -> ApiResult<PropertyView> {
        let (value, encryption) = match &p.value {
            PropertyValue::Plain(v) => (v.clone(), "NONE"),
            PropertyValue::Sealed(s) if reveal => {
                let ctx = Property::seal_context(tenant, &p.user_id, p.client_id.as_deref(), &p.name);
                (String::from_utf8_lossy(&self.0.store.unseal(s, &ctx)?).into_owned(), "SERVER_SIDE_DB")
            }
            PropertyValue::Sealed(_) => ("***".to_string(), "SERVER_SIDE_DB"),
        };
        Ok(PropertyView {
            user_id: p.user_id.clone(),
            ast_client_id: p.client_id.clone(),
            name: p.name.clone(),
            kind: p.kind.clone(),
            value,
            encryption: encryption.to_string(),
            read_only: p.read_only,
            notify: p.notify,
            in_keystorage: p.in_keystorage,
            cp_flags: p.cp_flags,
            visibility: p.visibility.clone(),
        })
    }

    /// A page (of 5 to 100) of the properties of `user` (of its client
    /// `client` when one is named) satisfying every condition of `filter`
    /// (fields: [`FIELDS`]). Encrypted values are shown to administrators only.
    pub async fn list(
        &self,
        caller: &Caller,
        tenant: &str,
        user: &str,
        client: Option<&str>,
        filter: &[Condition],
        paging: Paging,
    ) -> ApiResult<Vec<PropertyView>> {
        let principal = caller.authorize(Some(tenant), access::READ)?;
        self.owner(tenant, user, client)?;
        let paging = checked(paging, "page_size", 5, 100)?;
        if let Some(c) = filter.iter().find(|c| !FIELDS.contains(&c.attr.as_str())) {
            return Err(ApiError::bad_request(format!("UnknownProperty: {}", c.attr)));
        }
        let reveal = principal.is_some_and(|p| p.is_admin());
        let mut out = Vec::new();
        for p in self.0.store.properties().list(tenant, user, client)? {
            let v = self.view(tenant, &p, reveal)?;
            if list_filter::matches(filter, |f| v.field(f)) {
                out.push(v);
            }
        }
        Ok(out.into_iter().skip(paging.offset()).take(paging.size).collect())
    }

    /// Creates a property of `user` (of its client `client` when one is
    /// named, which must be linked to the user); 409 when the name is taken.
    pub async fn create(
        &self,
        caller: &Caller,
        tenant: &str,
        user: &str,
        client: Option<&str>,
        body: PropertyBody,
    ) -> ApiResult<PropertyView> {
        caller.authorize(Some(tenant), access::WRITE)?;
        self.owner(tenant, user, client)?;
        body.validate()?;
        let store = &self.0.store;
        let value = match body.encryption() {
            "SERVER_SIDE_DB" => PropertyValue::Sealed(
                store.seal(body.value.as_bytes(), &Property::seal_context(tenant, user, client, &body.name))?,
            ),
            _ => PropertyValue::Plain(body.value.clone()),
        };
        let p = Property {
            user_id: user.to_string(),
            client_id: client.map(str::to_string),
            name: body.name,
            kind: body.kind,
            value,
            read_only: body.read_only.unwrap_or(false),
            notify: body.notify.unwrap_or(false),
            in_keystorage: body.in_keystorage.unwrap_or(false),
            cp_flags: body.cp_flags.unwrap_or(0),
            visibility: body.visibility,
            created_ms: now_ms(),
        };
        crate::ops::properties::create(self.0, tenant, &p).await?;
        self.view(tenant, &p, true)
    }
}
