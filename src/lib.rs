#![recursion_limit = "256"]
//! Herald: a push and delivery engine.
//!
//! One process serves the push, identity and tenant-administration interfaces
//! over HTTP/1.1 and HTTP/2, keeps its state in an embedded database, and
//! delivers notifications to APNs, FCM and Huawei Push Kit. A program can
//! embed it instead: [`Engine::builder`], then the typed library API
//! ([`Engine::clients`], [`Engine::push`], ...) or the HTTP API as a service.
//!
//! A request goes router → handler (`api`) → library method (`library`,
//! which checks the [`Caller`]) → operation (`ops`: one storage transaction,
//! then events) → storage (the `herald-storage` crate); deliveries run in the
//! actors of the `herald-actors` crate.
//!
//! # Layout
//!
//! - `api`: the HTTP handlers, one file per interface area, and the route table
//! - `auth`: who is calling: realm tokens, the operator token, roles, sessions
//! - `background`: the periodic tasks that take leases, stopped before shutdown frees them
//! - `cli`: the command line (`herald serve`, `herald tenant create`)
//! - `config`, `config_reference`: settings from flags, environment and file; their reference
//! - `demo`: `serve --demo`: simulators in-process and a seeded tenant
//! - `embedding`: building an [`Engine`] in a program and mounting its HTTP API
//! - `engine`: the [`Engine`]: what every handler and operation shares
//! - `error`: the one error type and the one place it becomes a response body
//! - `http`: what a handler sees of a request and how it answers
//! - `library`: every operation as a typed method taking a [`Caller`]
//! - `list_filter`, `paging`: the `filter=` and paging query parameters of lists
//! - `metrics`: the Prometheus recorder and the documented series
//! - `models`: request and response bodies, each with its validation
//! - `openapi`: the served OpenAPI document
//! - `ops`: the operations layer: each write one transaction, then its events
//! - `pki`: the root CA, per-tenant signers and client certificates
//! - `rate_limit`: token buckets of the send API and the token endpoints
//! - `router`: matching, authenticating and dispatching one request
//! - `server`: the listeners, HTTP/1.1 and HTTP/2, TLS, connection limits
//! - `sweeper`: deleting what expired (nonces, ended sessions) and what is past its retention

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod auth;
mod background;
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
pub mod logging;
pub mod metrics;
pub mod models;
pub mod node;
pub mod openapi;
pub mod ops;
pub mod paging;
pub mod pki;
pub mod quotas;
pub mod rate_limit;
pub mod router;
pub mod scheduler;
pub mod server;
pub mod sweeper;

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
