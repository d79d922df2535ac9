//! Request and response bodies, each with the validation of its own rules.

pub mod address;
pub mod app;
pub mod catalogue;
pub mod client;
pub mod idempotency;
pub mod introspection;
pub mod ldap;
pub mod limits;
pub mod nonce;
pub mod property;
pub mod push;
pub mod push_token;
pub mod schedule;
pub mod signer;
pub mod tenant;
pub mod user;
pub mod validate;
pub mod version;
pub mod webhook;
