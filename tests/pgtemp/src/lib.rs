//! # herald-pgtemp: a throwaway PostgreSQL for Herald's tests and benchmarks
//!
//! The PostgreSQL backend's tests and the load benchmark start their own server
//! rather than rely on one the machine may not have or may share: a fresh
//! machine needs only `apt-get install postgresql` (Debian's server binaries),
//! and a run can neither see nor leave anything behind.
//!
//! [`Cluster::start`] runs `initdb` in a temporary directory and starts
//! `postgres` listening on 127.0.0.1 only, at a free port, with trust
//! authentication for the `postgres` role. Tests run as root and PostgreSQL
//! refuses root, so as root the directory belongs to, and the server runs as,
//! the `postgres` OS user. Each test takes a database of its own with
//! [`Cluster::create_database`]; [`shared`] gives every test of a process the
//! same server, started on first use.
//!
//! Dropping a [`Cluster`] stops the server and removes the directory. A static
//! is never dropped, and kill -9 runs no destructor, so beside each server runs
//! a watchdog (`sh`) that does the same once the process that started it is gone.
//!
//! ```no_run
//! # fn demo() -> Result<(), herald_pgtemp::Error> {
//! let cluster = herald_pgtemp::shared()?;
//! let url = cluster.create_database()?; // postgres://postgres@127.0.0.1:PORT/herald_PID_N
//! let db = url.rsplit('/').next().unwrap_or_default();
//! assert_eq!(cluster.psql(db, "SELECT 1")?, "1");
//! # Ok(()) }
//! ```
//!
//! fsync stays on by default: benchmark figures must be those of a durable
//! server. [`Cluster::start_with`] takes other [`Options`].
//!
//! # Layout
//!
//! - `locate`: finding the binaries (`HERALD_PG_BIN`, `pg_config --bindir`, the
//!   highest `/usr/lib/postgresql/*/bin`) and the `postgres` user
//! - `cluster`: [`Cluster`] (initdb, start, readiness, databases, psql, stop, the
//!   watchdog) and its [`Options`]
//! - `error`: [`Error`], whose messages say what to install or which command failed
//! - here: [`shared`], the process-wide cluster

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cluster;
mod error;
mod locate;

use std::sync::OnceLock;

pub use cluster::{Cluster, Options};
pub use error::{Error, Result};

/// Whether PostgreSQL's server binaries are installed here (what
/// [`Cluster::start`] needs besides the `postgres` user): tests that cannot
/// run without them say so and skip on a machine that lacks them.
pub fn installed() -> bool {
    locate::bin_dir().is_ok()
}

/// The cluster every test of this process shares, started by the first
/// caller; concurrent callers wait for that start. It is never dropped: its
/// watchdog stops it after the process exits. If the start failed, every call
/// returns that failure.
///
/// It runs with `fsync` off: tests kill engines (and at most the server), never
/// the machine, and what the server has written survives those in the page
/// cache; waiting for the disk on every commit only made the suite slower.
pub fn shared() -> Result<&'static Cluster> {
    static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();
    let start = || Cluster::start_with(Options { fsync: false, ..Options::default() });
    match SHARED.get_or_init(|| start().map_err(|err| err.to_string())) {
        Ok(cluster) => Ok(cluster),
        Err(err) => Err(Error::Shared(err.clone())),
    }
}
