//! Herald actors: the supervisor tree (`Root` → `Tenant` → `FanOut`), provider
//! connection pools and clients, and the delivery of notifications.

pub mod channels;
pub mod credentials;
pub mod delivery;
pub mod fanout;
pub mod filter;
pub mod guard;
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
