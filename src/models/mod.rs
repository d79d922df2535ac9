//! Request and response bodies, each with the validation of its own rules.

pub mod app;
pub mod client;
pub mod push;
pub mod push_token;
pub mod tenant;
pub mod validate;
pub mod webhook;
