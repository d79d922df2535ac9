//! One running server: initdb, start, readiness, databases, psql, stop.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, kill_process_group, Pid, Signal};
use tempfile::TempDir;

use crate::error::{Error, Result};
use crate::locate::{self, RunAs};

/// How long a server has to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopping server has before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Free-port races with other processes are retried this many times.
const PORT_ATTEMPTS: u32 = 3;
/// Lines of the server log quoted in errors.
const LOG_TAIL_LINES: usize = 30;
/// Numbers databases across every cluster of the process, so names never repeat.
static NEXT_DATABASE: AtomicU64 = AtomicU64::new(0);

/// The watchdog: polls the test process every 0.5 s; once it is gone (even by
/// kill -9, which runs no destructor), stops the server as `pg_ctl stop -m
/// immediate` would (SIGQUIT), waits for its lock file to go (bounded: 10 s,
/// then SIGKILL) and removes the directory. `$1` test pid, `$2` postmaster pid,
/// `$3` directory.
const WATCHDOG: &str = r#"
while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
kill -QUIT "$2" 2>/dev/null
n=0
while [ -e "$3/data/postmaster.pid" ] && [ "$n" -lt 100 ]; do sleep 0.1; n=$((n+1)); done
if [ -e "$3/data/postmaster.pid" ]; then kill -KILL "$2" 2>/dev/null; sleep 0.5; fi
rm -rf "$3"
"#;

/// Server settings for [`Cluster::start_with`].
#[derive(Debug, Clone)]
pub struct Options {
    /// `fsync`: on by default, so benchmark figures are those of a durable server.
    /// Off only where durability is not what is measured.
    pub fsync: bool,
    /// `max_connections` (default 200): room for several engines' pools at once.
    pub max_connections: u32,
    /// `shared_buffers` in PostgreSQL's units (`"128MB"`); `None` keeps initdb's choice.
    pub shared_buffers: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options { fsync: true, max_connections: 200, shared_buffers: None }
    }
}

/// One running PostgreSQL server, on 127.0.0.1 at a free port, with its data,
/// socket and log in a temporary directory. Dropping it stops the server and
/// removes the directory; a watchdog process does the same if this process dies
/// without dropping it.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    port: u16,
    path: PathBuf,
    server: Child,
    watchdog: Option<Child>,
    /// Removed on drop, after the server has stopped.
    dir: Option<TempDir>,
}

impl Cluster {
    /// Starts a server with the default [`Options`] (fsync on, 200 connections).
    pub fn start() -> Result<Cluster> {
        Cluster::start_with(Options::default())
    }

    /// Starts a server: initdb in a new temporary directory (owned by `postgres`
    /// and run as that user when this process is root), then `postgres` on a free
    /// port of 127.0.0.1, waiting up to 30 s until it accepts connections.
    pub fn start_with(options: Options) -> Result<Cluster> {
        let bin = locate::bin_dir()?;
        let run_as = locate::run_as()?;
        let dir = tempfile::Builder::new()
            .prefix("herald-pg-")
            .tempdir()
            .map_err(|err| Error::io("creating a temporary directory", err))?;
        let path = dir.path().to_path_buf();
        if let Some(user) = run_as {
            std::os::unix::fs::chown(&path, Some(user.uid), Some(user.gid))
                .map_err(|err| Error::io(format!("giving {} to the postgres user", path.display()), err))?;
        }
        let data = path.join("data");
        let mut initdb = as_user(Command::new(bin.join("initdb")), run_as, &path);
        initdb.arg("-D").arg(&data).args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"]);
        run(&mut initdb)?;

        let log_path = path.join("server.log");
        let mut attempt: u32 = 0;
        let (server, port) = loop {
            attempt = attempt.saturating_add(1);
            let port = free_port()?;
            let log_start = std::fs::metadata(&log_path).map(|meta| meta.len()).unwrap_or(0);
            let mut server = spawn_server(&bin, &path, &log_path, port, &options, run_as)?;
            match wait_ready(&bin, &mut server, port, &log_path) {
                Ok(()) => break (server, port),
                Err(err) => {
                    stop(&mut server);
                    let lost_port_race = matches!(err, Error::Exited { .. }) && {
                        let log = read_from(&log_path, log_start);
                        log.contains("could not bind") || log.contains("already in use")
                    };
                    if !lost_port_race || attempt >= PORT_ATTEMPTS {
                        return Err(err);
                    }
                }
            }
        };
        let mut cluster = Cluster { bin, port, path, server, watchdog: None, dir: Some(dir) };
        cluster.watchdog = Some(cluster.spawn_watchdog()?);
        Ok(cluster)
    }

    /// The TCP port the server listens on (127.0.0.1 only).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The temporary directory: `data/` (the cluster), the Unix socket and `server.log`.
    pub fn dir(&self) -> &Path {
        &self.path
    }

    /// The URL of database `db`: `postgres://postgres@127.0.0.1:PORT/DB` (trust
    /// authentication: no password).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a fresh, empty database named `herald_<pid>_<n>` and returns its
    /// URL, so each test has its own and tests of one process never share one.
    pub fn create_database(&self) -> Result<String> {
        let name = format!("herald_{}_{}", std::process::id(), NEXT_DATABASE.fetch_add(1, Ordering::Relaxed));
        let mut createdb = self.client("createdb");
        createdb.arg(&name);
        run(&mut createdb)?;
        Ok(self.url(&name))
    }

    /// Runs `sql` in database `db` through `psql -At` (unaligned, tuples only,
    /// stopping at the first error) and returns its output without the final
    /// newline: one line per row, columns separated by `|`.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String> {
        let mut psql = self.client("psql");
        psql.args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql]);
        let out = run(&mut psql)?;
        Ok(out.strip_suffix('\n').unwrap_or(&out).to_owned())
    }

    /// A client tool connecting over TCP as `postgres`, unaffected by the
    /// caller's PG* variables. Clients need no particular OS user.
    fn client(&self, tool: &str) -> Command {
        let mut command = Command::new(self.bin.join(tool));
        for var in ["PGSERVICE", "PGSERVICEFILE", "PGOPTIONS", "PGSSLMODE", "PGPASSFILE", "PGTARGETSESSIONATTRS"] {
            command.env_remove(var);
        }
        command.env("PGCONNECT_TIMEOUT", "10").args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
        ]);
        command
    }

    /// The watchdog, in its own process group so a Ctrl-C aimed at the tests
    /// leaves it to clean up, with no inherited pipes (a test runner waits for those).
    fn spawn_watchdog(&self) -> Result<Child> {
        Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("herald-pgtemp-watchdog")
            .arg(std::process::id().to_string())
            .arg(self.server.id().to_string())
            .arg(&self.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|err| Error::io("starting the watchdog (`sh -c ...`)", err))
    }
}

impl Drop for Cluster {
    /// Stops the watchdog (it would race the removal), then the server, then removes the directory.
    fn drop(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            // The whole group: `sh` and the `sleep` it may be waiting on.
            let _ = kill_process_group(Pid::from_child(&watchdog), Signal::KILL);
            let _ = watchdog.wait();
        }
        stop(&mut self.server);
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

/// `command` run as `user` (when root) from `dir`: postgres tools refuse root,
/// and the `postgres` user may not be able to enter the caller's directory.
/// `CommandExt::uid` rather than `runuser`, so the child is the process itself
/// (its pid is the postmaster's) and no PAM session is opened.
fn as_user(mut command: Command, user: Option<RunAs>, dir: &Path) -> Command {
    if let Some(user) = user {
        command.uid(user.uid).gid(user.gid);
    }
    command.current_dir(dir);
    command
}

/// Runs `command` to completion; its standard output, or an error with its standard error.
fn run(command: &mut Command) -> Result<String> {
    let line = describe(command);
    let out = command.stdin(Stdio::null()).output().map_err(|err| Error::io(format!("running `{line}`"), err))?;
    if !out.status.success() {
        return Err(Error::Command {
            command: line,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A port free now: bind 127.0.0.1:0, read it, release it. Another process may
/// take it before the server binds; [`Cluster::start_with`] then retries.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|err| Error::io("binding 127.0.0.1:0 to find a free port", err))?;
    let addr = listener.local_addr().map_err(|err| Error::io("reading a bound port", err))?;
    Ok(addr.port())
}

fn spawn_server(
    bin: &Path,
    dir: &Path,
    log_path: &Path,
    port: u16,
    options: &Options,
    run_as: Option<RunAs>,
) -> Result<Child> {
    let log = File::options()
        .create(true)
        .append(true)
        .open(log_path)
        .map_err(|err| Error::io(format!("opening {}", log_path.display()), err))?;
    let log_err = log.try_clone().map_err(|err| Error::io(format!("opening {}", log_path.display()), err))?;
    let mut server = as_user(Command::new(bin.join("postgres")), run_as, dir);
    server
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-p", &port.to_string()])
        .arg("-k")
        .arg(dir)
        .args(["-c", "listen_addresses=127.0.0.1"])
        .args(["-c", &format!("max_connections={}", options.max_connections)])
        .args(["-c", if options.fsync { "fsync=on" } else { "fsync=off" }]);
    if let Some(shared_buffers) = &options.shared_buffers {
        server.args(["-c", &format!("shared_buffers={shared_buffers}")]);
    }
    // Its own process group: a Ctrl-C aimed at the tests does not reach it, the watchdog stops it.
    server.stdin(Stdio::null()).stdout(log).stderr(log_err).process_group(0);
    let line = describe(&server);
    server.spawn().map_err(|err| Error::io(format!("starting `{line}`"), err))
}

/// Polls `pg_isready` until the server accepts connections, it exits, or 30 s pass.
fn wait_ready(bin: &Path, server: &mut Child, port: u16, log_path: &Path) -> Result<()> {
    let started = Instant::now();
    loop {
        if let Some(status) = server.try_wait().map_err(|err| Error::io("checking on the server", err))? {
            return Err(Error::Exited {
                status: status.to_string(),
                log_path: log_path.to_path_buf(),
                log: tail(log_path),
            });
        }
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "-d", "postgres", "-t", "2"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|err| Error::io(format!("running {}", bin.join("pg_isready").display()), err))?;
        if ready.success() {
            return Ok(());
        }
        if started.elapsed() >= READY_TIMEOUT {
            return Err(Error::NotReady { port, waited: READY_TIMEOUT, log: tail(log_path) });
        }
        sleep(Duration::from_millis(20));
    }
}

/// Stops a server as `pg_ctl stop -m immediate` does (SIGQUIT to the postmaster,
/// which ends its backends), signalled directly because this process holds the
/// child and must reap it anyway; SIGKILL if it is still there after 10 s.
fn stop(server: &mut Child) {
    if !matches!(server.try_wait(), Ok(None)) {
        return;
    }
    let _ = kill_process(Pid::from_child(server), Signal::QUIT);
    let started = Instant::now();
    while started.elapsed() < STOP_TIMEOUT {
        if !matches!(server.try_wait(), Ok(None)) {
            return;
        }
        sleep(Duration::from_millis(10));
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// The last lines of the server log, for errors.
fn tail(log_path: &Path) -> String {
    let text = read_from(log_path, 0);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

fn read_from(path: &Path, offset: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut file) = File::open(path) {
        if file.seek(SeekFrom::Start(offset)).is_ok() {
            let _ = file.read_to_end(&mut bytes);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
