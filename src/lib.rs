#![recursion_limit = "256"]
//! Herald: a push and delivery engine.
//!
//! One process serves the push, identity and tenant-administration interfaces
//! over HTTP/1.1 and HTTP/2, keeps its state in an embedded database, and
//! delivers notifications to APNs, FCM and Huawei Push Kit.

pub mod api;
pub mod auth;
pub mod cli;
pub mod config;
pub mod config_reference;
#[cfg(feature = "demo")]
pub mod demo;
pub mod embedding;
pub mod engine;
pub mod error;
pub mod http;
pub mod library;
pub mod list_filter;
pub mod metrics;
pub mod models;
pub mod openapi;
pub mod ops;
pub mod paging;
pub mod pki;
pub mod rate_limit;
pub mod router;
pub mod server;

pub use auth::Caller;
pub use embedding::{EngineBuilder, HttpService};
pub use engine::Engine;
/// The one error of the library API and of the HTTP API (which answers it
/// with its status and the route's error body).
pub use error::{ApiError as Error, ErrorKind};

/// The README's Rust examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
