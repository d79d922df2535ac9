//! Who is calling: tenant realms' access tokens, the operator token, roles.

pub mod brute_force;
mod keys;
pub mod password;
pub mod tokens;

pub use keys::{signing_key_context as keys_context, KeyCache, TenantKey};
pub use tokens::{AccessClaims, TokenPair};

use crate::error::{ApiError, ApiResult};

/// Role names of API.md, as they appear in `realm_access.roles`.
pub mod roles {
    pub const ADMIN: &str = "admin";
    pub const PLATFORM_ADMIN: &str = "platform_admin";
    pub const REALM_ADMIN: &str = "realm-admin";
    pub const ADMIN_READ: &str = "admin-read";
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

pub const ADMIN: &[Grant] = &[Grant::Admin];
pub const ADMIN_OR_READ: &[Grant] = &[Grant::Admin, Grant::AdminRead];
pub const ADMIN_OR_CLIENT: &[Grant] = &[Grant::Admin, Grant::Client];
pub const ANY: &[Grant] = &[Grant::Admin, Grant::AdminRead, Grant::Client];

/// The verified caller of a tenant route.
#[derive(Clone, Debug)]
pub struct Principal {
    pub tenant: String,
    pub username: String,
    pub roles: Vec<String>,
    /// Set for device clients.
    pub client_id: Option<String>,
    /// When the token was issued (Unix seconds).
    pub issued_at: u64,
}

impl Principal {
    pub fn has(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }
    pub fn is_admin(&self) -> bool {
        roles::ADMINS.iter().any(|r| self.has(r))
    }
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

/// Compares two secrets in time independent of where they differ.
pub fn secrets_equal(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}
