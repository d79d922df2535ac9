//! Herald's integration tests: one test binary, a module per area.
//!
//! One binary links the engine once instead of once per file (see the README's
//! Layout section for what that saves). Its tests run as threads of one
//! process, so a test must not assume a process of its own: servers listen on
//! ephemeral ports, data lives in temp dirs, configuration is passed to the
//! server (or to a child `herald serve`), never through this process's
//! environment. What is process-wide in Herald (the Prometheus recorder and its
//! tenant-label registry) is shared by every in-process server: a test that
//! counts exact totals runs in a child process of this binary instead
//! ([`common::alone_in_a_process`]).
//!
//! `cargo test --test it metrics::` runs one module; the names are `module::test`.

// Tests assert by unwrapping and panicking, and compute with small numbers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

mod common;

mod abuse;
mod auth;
mod broadcast;
mod broadcast_control;
mod broadcast_mix;
mod catalogue;
mod clients;
mod crash;
mod demo;
mod durability;
#[cfg(feature = "demo")]
mod embedding;
mod exhaustion;
mod fault_soak;
mod idempotency;
mod identity;
mod isolation;
#[cfg(feature = "demo")]
mod library;
mod logging;
mod metrics;
mod multinode;
mod nonces;
mod oidc;
mod openapi;
mod outbox;
mod properties;
mod push;
mod push_faults;
mod quickstart;
mod quotas;
mod resends;
mod retention;
mod schedules;
mod signers;
mod transport;
mod validation;
mod versions;
mod webhooks;
mod webpush;
