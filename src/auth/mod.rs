//! Who is calling: tenant realms' access tokens, the operator token, roles.

pub mod brute_force;
mod keys;
pub mod password;
pub(crate) mod session;
pub mod tokens;

pub use keys::{signing_key_context as keys_context, Jwk, KeyCache, TenantKey};
pub use tokens::{AccessClaims, TokenPair};

use crate::error::{ApiError, ApiResult};
use std::sync::Arc;

/// Role names of API.md, as they appear in `realm_access.roles`.
pub mod roles {
    /// Full administration of the tenant (Keycloak's usual admin role).
    pub const ADMIN: &str = "admin";
    /// Full administration of the tenant (the platform's name); the tenant's first admin holds all three.
    pub const PLATFORM_ADMIN: &str = "platform_admin";
    /// Full administration of the tenant (Keycloak's realm-management name).
    pub const REALM_ADMIN: &str = "realm-admin";
    /// Read-only administration: the routes that admit [`super::Grant::AdminRead`].
    pub const ADMIN_READ: &str = "admin-read";
    /// A device client's service account (client-credentials tokens); limited to its own client.
    pub const CLIENT: &str = "client";
    /// Any of these grants full administration of the tenant.
    pub const ADMINS: [&str; 3] = [ADMIN, PLATFORM_ADMIN, REALM_ADMIN];
}

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No token.
    Public,
    /// The platform operator's token.
    Operator,
    /// A token of the path's tenant holding one of these kinds of role.
    Tenant(&'static [Grant]),
}

/// A kind of role a route accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// `admin`, `platform_admin` or `realm-admin`.
    Admin,
    /// `admin-read` (or an admin role).
    AdminRead,
    /// A device client; the handler restricts it to its own client.
    Client,
}

/// Routes that change tenant administration: admins only.
pub const ADMIN: &[Grant] = &[Grant::Admin];
/// Administrative reads: admins and `admin-read`.
pub const ADMIN_OR_READ: &[Grant] = &[Grant::Admin, Grant::AdminRead];
/// Device routes an admin may also call (a client acts only on itself).
pub const ADMIN_OR_CLIENT: &[Grant] = &[Grant::Admin, Grant::Client];
/// Any role of the tenant: admins, readers and device clients.
pub const ANY: &[Grant] = &[Grant::Admin, Grant::AdminRead, Grant::Client];

/// The verified caller of a tenant route.
#[derive(Clone, Debug)]
pub struct Principal {
    /// The tenant whose key signed the token (always the route's tenant).
    pub tenant: String,
    /// `preferred_username` of the token (`service-account-<client>` for a device client).
    pub username: String,
    /// The realm roles of the token (`realm_access.roles`), as issued.
    pub roles: Vec<String>,
    /// Set for device clients.
    pub client_id: Option<String>,
    /// When the token was issued (Unix seconds).
    pub issued_at: u64,
}

impl Principal {
    /// Whether the token holds exactly this realm role (see [`roles`]).
    pub fn has(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }
    /// Whether the token holds any of [`roles::ADMINS`].
    pub fn is_admin(&self) -> bool {
        roles::ADMINS.iter().any(|r| self.has(r))
    }
    /// Whether the token satisfies `grant`; a route admits a caller that satisfies any of its grants.
    pub fn grants(&self, grant: Grant) -> bool {
        match grant {
            Grant::Admin => self.is_admin(),
            Grant::AdminRead => self.is_admin() || self.has(roles::ADMIN_READ),
            Grant::Client => self.client_id.is_some() && self.has(roles::CLIENT),
        }
    }
    /// Admins and readers read any client; a client only itself.
    pub fn may_read_client(&self, client_id: &str) -> ApiResult<()> {
        if self.grants(Grant::AdminRead) || self.client_id.as_deref() == Some(client_id) {
            Ok(())
        } else {
            Err(ApiError::forbidden("a client token reads only its own client"))
        }
    }

    /// Admins act on any client of the tenant; a client only on itself.
    pub fn may_act_on_client(&self, client_id: &str) -> ApiResult<()> {
        if self.is_admin() || self.client_id.as_deref() == Some(client_id) {
            Ok(())
        } else {
            Err(ApiError::forbidden("a client token acts only on its own client"))
        }
    }
}

/// Who performs an operation: what a token says over HTTP, said directly by
/// a program calling the library API. Every operation checks it the same
/// way whichever way it came ([`Caller::authorize`]).
#[derive(Clone, Debug)]
pub enum Caller {
    /// Nobody in particular: public operations only.
    Anonymous,
    /// The platform operator (tenant creation).
    Operator,
    /// An administrator, a reader or a device client of one tenant: shared
    /// with the verified token's cache entry, so a request copies none of it.
    Tenant(Arc<Principal>),
}

impl Caller {
    /// A full administrator of `tenant`.
    pub fn admin(tenant: &str) -> Caller {
        Caller::with_roles(tenant, "embedded-admin", &[roles::ADMIN], None)
    }

    /// A reader (`admin-read`) of `tenant`.
    pub fn reader(tenant: &str) -> Caller {
        Caller::with_roles(tenant, "embedded-reader", &[roles::ADMIN_READ], None)
    }

    /// Device client `client_id` of `tenant`, acting on itself.
    pub fn client(tenant: &str, client_id: &str) -> Caller {
        Caller::with_roles(tenant, client_id, &[roles::CLIENT], Some(client_id))
    }

    fn with_roles(tenant: &str, username: &str, roles: &[&str], client_id: Option<&str>) -> Caller {
        Caller::Tenant(Arc::new(Principal {
            tenant: tenant.to_string(),
            username: username.to_string(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            client_id: client_id.map(str::to_string),
            issued_at: 0,
        }))
    }

    /// Whether this caller may perform an operation of `tenant` (`None` for
    /// operations of no tenant) that `access` admits: the operator for
    /// operator operations, a principal of that very tenant holding one of
    /// the grants for tenant operations. Answers the principal of a tenant
    /// operation.
    pub fn authorize(&self, tenant: Option<&str>, access: Access) -> ApiResult<Option<&Principal>> {
        match (access, self) {
            (Access::Public, Caller::Tenant(p)) => Ok(Some(p)),
            (Access::Public, _) => Ok(None),
            (Access::Operator, Caller::Operator) => Ok(None),
            (Access::Operator, _) => Err(ApiError::unauthorized("the operator's token is required")),
            (Access::Tenant(grants), Caller::Tenant(p)) => {
                if Some(p.tenant.as_str()) != tenant {
                    return Err(ApiError::forbidden("the token belongs to another tenant"));
                }
                if !grants.iter().any(|g| p.grants(*g)) {
                    return Err(ApiError::forbidden("the token lacks the role this route needs"));
                }
                Ok(Some(p))
            }
            (Access::Tenant(_), _) => Err(ApiError::unauthorized("missing bearer token")),
        }
    }
}

/// Compares two secrets in time independent of where they differ.
pub fn secrets_equal(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}
