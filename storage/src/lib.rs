//! Herald's storage: typed stores over an embedded sled database, or a
//! PostgreSQL database that several engines share (`StoreOptions::store_url`).
//!
//! Nothing outside this crate names either backend: the record modules read
//! and write ordered key-value trees (`kv`) that are sled trees or tables.
//! Every record kind has its own tree; keys start with the tenant id
//! and a NUL byte so a tenant's records are one range scan and never mix with
//! another tenant's. Secondary indexes are written in the same transaction as
//! their record. A write is durable once [`Store::durable`] returns: callers
//! acknowledge nothing before that.
//!
//! # Layout
//!
//! - `store`, `databases`: opening the backend and its trees; [`Store`]
//! - `tx`: [`Tx`], one transaction over every record kind (what operations write through)
//! - `codec`, `keys`: how values and keys are encoded
//! - `seal`: secrets sealed at rest (AES-256-GCM)
//! - `flusher`, `space`: grouped flushes, and refusing writes on a full disk
//!   or after a failed write (every sled write error comes back through `space`)
//! - one module per record kind: `tenants`, `users` (and `user_directory`),
//!   `identity` (addresses, sessions, realm configuration), `clients`, `links`,
//!   `push_tokens` (and `token_counts`, how many a broadcast targets), `provider_tokens`, `apps`, `versions`, `properties`,
//!   `nonces`, `catalogue`, `settings`, `signers`, `certificates`, `webhooks`,
//!   `deliveries`, `broadcasts` (a broadcast's partitions), `idempotency`
//!   (the send routes' idempotency keys), `schedules` (scheduled sends)
//! - `leases`: work that must run once among engines sharing a database
//! - `retention`: deleting reports and attempt logs past their retention
//! - `kv`, `pg`: the ordered key-value trees over sled or PostgreSQL
//! - `coherence`: caches dropped when another engine writes what they hold

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod codec;
mod coherence;
mod databases;
mod error;
mod flusher;
mod index_db;
mod keys;
mod kv;
mod pg;
mod seal;
mod send_groups;
mod space;
mod store;
mod token_counts;
mod tx;

pub mod apps;
pub mod broadcasts;
pub mod catalogue;
pub mod certificates;
pub mod clients;
pub mod deliveries;
pub mod idempotency;
pub mod identity;
pub mod leases;
pub mod limits;
pub mod links;
pub mod nonces;
pub mod properties;
pub mod provider_tokens;
pub mod push_tokens;
pub mod request_reads;
pub mod retention;
pub mod schedules;
pub mod settings;
pub mod signers;
pub mod tenants;
pub mod user_directory;
pub mod users;
pub mod versions;
pub mod web_push;
pub mod webhooks;

pub use codec::round_trip_every_record;
pub use error::{Error, Result};
pub use seal::{MasterKey, Secret};
pub use space::WRITE_FAILURE_KINDS;
pub use store::{now_ms, Store, StoreOptions};
#[cfg(feature = "test-support")]
pub use store::{test_newest_snapshot, test_on_postgres, test_options};
pub use tx::Tx;
