//! Herald actors: the supervisor tree (`Root` → `Tenant` → `FanOut`), provider
//! connection pools and clients, and the delivery of notifications.
//!
//! The engine sees one handle, [`push::Push`]: sends go to the tenant's actor,
//! which owns the tenant's runtime (provider channels, broadcasts, webhook
//! targets) and stops when the tenant is idle. Everything durable goes
//! through `herald-storage`; nothing here is lost by a restart.
//!
//! # Layout
//!
//! - `push`: the push engine as the rest of Herald sees it: send, report, shut down
//! - `root`, `tenant`, `fanout`: the actors (supervisor, one per tenant, one per broadcast)
//! - `supervision`: the one restart policy of every supervisor
//! - `send`: one send request: recipient → clients → tokens → deliveries
//! - `delivery`: one notification to one app's clients through its provider channel
//! - `channels`: a tenant's provider channels and pools, per app
//! - `providers`: provider-neutral notifications and the APNs, FCM and HMS wire formats
//! - `pool`, `transport`: HTTP/2 connections over TLS to a provider, multiplexed
//! - `credentials`: an app's push credentials, unsealed for its provider
//! - `guard`: the private-address guard of every URL a tenant chooses
//! - `webhooks`: durable outboxes and signed deliveries of events
//! - `filter`: the `filter=` expressions of lists and webhook subscriptions
//! - `settings`: where the providers are and how hard to push them
//! - `telemetry`: per-tenant metric handles and the tenant-label policy

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bulk;
pub mod channels;
pub mod claims;
pub mod credentials;
pub mod cut_points;
pub mod delivery;
pub mod fanout;
pub mod filter;
pub mod finishing;
pub mod guard;
pub mod origins;
pub mod pool;
pub mod providers;
pub mod push;
pub mod root;
pub mod send;
pub mod settings;
pub mod supervision;
pub mod telemetry;
pub mod tenant;
pub mod transport;
pub mod webhooks;

pub use push::Push;
pub use settings::{Endpoints, PushSettings};
pub use webhooks::WebhookSettings;
