//! The realm's OpenID Connect endpoints, at Keycloak's paths and the way
//! client libraries (python-keycloak, Authlib, PyJWT) call them. Discovery
//! lists exactly these.
//!
//! - [`token`]: the token endpoint (password, refresh and client-credentials grants)
//! - [`discovery`]: the discovery document, the JWKS, Keycloak's realm info
//! - [`userinfo`]: the claims of a bearer token's user
//! - [`introspection`]: whether a token is active (RFC 7662)
//! - [`revocation`]: taking a token back (RFC 7009)
//! - [`logout`]: ending a login session
//! - `client_auth`: which OAuth client calls (HTTP Basic or form)
//! - `params`: the parameters of these endpoints

mod client_auth;
pub mod discovery;
pub mod introspection;
pub mod logout;
pub mod params;
pub mod revocation;
pub mod token;
pub mod userinfo;

pub(crate) use token::password_login;
pub use token::TokenRequest;

use crate::auth::tokens::{self, AccessClaims};
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};

/// A token of realm `tenant` of kind `typ` (access or refresh), signature,
/// issuer and expiry checked; whether it is still in force is not.
fn realm_token(engine: &Engine, tenant: &str, token: &str, typ: &str) -> ApiResult<AccessClaims> {
    let (token_tenant, claims) = tokens::verify(&engine.store, &engine.keys, &engine.config.public_url, token, typ)?;
    if token_tenant != tenant {
        return Err(ApiError::unauthorized("the token belongs to another realm"));
    }
    Ok(claims)
}
