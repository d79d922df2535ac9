//! The library API: every operation of the engine as a typed method, for
//! programs that embed Herald. Methods are grouped by area behind handles
//! ([`Engine::clients`], [`Engine::push`], ...); each takes the [`Caller`](crate::Caller)
//! acting, the tenant, and the typed input the HTTP route decodes, checks it
//! exactly as the route does (the route's access is the constant the method
//! checks, and the HTTP handler calls the method), and answers a typed
//! output or a [`crate::Error`].
//!
//! ```no_run
//! # async fn run(engine: &herald::Engine) -> Result<(), herald::Error> {
//! use herald::{models::client::RegisterClient, Caller};
//! let admin = Caller::admin("acme");
//! let body: RegisterClient = serde_json::from_value(serde_json::json!({
//!     "appName": "shop", "platform": "ios"
//! })).map_err(|e| herald::Error::bad_request(e.to_string()))?;
//! let client = engine.clients().register(&admin, "acme", body).await?;
//! engine.clients().lock(&admin, "acme", &client.ast_client_id, "lost").await?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod apps;
pub mod catalogue;
pub mod certificates;
pub mod clients;
pub mod nonces;
pub mod properties;
pub mod push;
pub mod realm;
pub mod schedules;
pub mod signers;
pub mod tenants;
pub mod users;
pub mod versions;
pub mod webhooks;

use crate::engine::Engine;

impl Engine {
    /// Apps and their push credentials.
    pub fn apps(&self) -> apps::Apps<'_> {
        apps::Apps(self)
    }

    /// The catalogue of services.
    pub fn catalogue(&self) -> catalogue::Catalogue<'_> {
        catalogue::Catalogue(self)
    }

    /// Client certificates: CSRs of device clients, issued by the ACTIVE signer.
    pub fn certificates(&self) -> certificates::Certificates<'_> {
        certificates::Certificates(self)
    }

    /// Device clients, their links to users, push tokens, locks.
    pub fn clients(&self) -> clients::Clients<'_> {
        clients::Clients(self)
    }

    /// Nonces and the login events that spend them.
    pub fn nonces(&self) -> nonces::Nonces<'_> {
        nonces::Nonces(self)
    }

    /// Properties of users and of their clients.
    pub fn properties(&self) -> properties::Properties<'_> {
        properties::Properties(self)
    }

    /// Sending and delivery reports.
    pub fn push(&self) -> push::PushApi<'_> {
        push::PushApi(self)
    }

    /// Realm configuration: LDAP, app settings, login configuration, OTP
    /// locks; password logins.
    pub fn realm(&self) -> realm::Realm<'_> {
        realm::Realm(self)
    }

    /// Signers (the tenant's CAs), their CRLs, and the signed SDK config.
    pub fn signers(&self) -> signers::Signers<'_> {
        signers::Signers(self)
    }

    /// Tenants (the operator's).
    pub fn tenants(&self) -> tenants::Tenants<'_> {
        tenants::Tenants(self)
    }

    /// Realm users, their roles, lists and addresses.
    pub fn users(&self) -> users::Users<'_> {
        users::Users(self)
    }

    /// App versions, registration policies, integrity voting.
    pub fn versions(&self) -> versions::Versions<'_> {
        versions::Versions(self)
    }

    /// Webhooks and the domain events published to them.
    pub fn webhooks(&self) -> webhooks::Webhooks<'_> {
        webhooks::Webhooks(self)
    }
}
