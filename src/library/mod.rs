//! The library API: every operation of the engine as a typed method, for
//! programs that embed Herald. Methods are grouped by area behind handles
//! ([`Engine::clients`], [`Engine::push`], ...); each takes the [`Caller`]
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

pub mod clients;
pub mod push;
pub mod tenants;

use crate::engine::Engine;

impl Engine {
    /// Device clients, their links to users, push tokens, locks.
    pub fn clients(&self) -> clients::Clients<'_> {
        clients::Clients(self)
    }

    /// Sending and delivery reports.
    pub fn push(&self) -> push::PushApi<'_> {
        push::PushApi(self)
    }

    /// Tenants (the operator's).
    pub fn tenants(&self) -> tenants::Tenants<'_> {
        tenants::Tenants(self)
    }
}
