//! End-to-end load benchmark of Herald (`cargo bench --bench load [-- --quick | --tokens N]`).
//!
//! One run starts the provider simulators and a release `herald serve` as child
//! processes, seeds tenants straight into Herald's storage, and measures side by
//! side, all on 127.0.0.1:
//!
//! 1. **Fan-out**: one topic broadcast to N APNs tokens over TLS with token auth;
//!    notifications/s as the APNs simulator counts them (first to last accepted),
//!    and Herald's peak RSS (`VmHWM`).
//! 2. **Ceiling**: a bare h2 client in this process sending the same N requests
//!    (same payload and headers, same connection count and stream limit as
//!    Herald's pool, same TLS, a JWT signed once) straight to the simulator.
//! 3. **Peer**: `@parse/node-apn` (`benches/peers/node-apn/send.js`) sending the
//!    same N notifications; reported unavailable when node or npm fail.
//! 4. **Send API**: one-client sends at concurrency 1, 16, 64, 256 over HTTP/1.1
//!    keep-alive and HTTP/2 (h2c), against Herald and against a trivial hyper
//!    handler answering 202 with a body of the same size (the front-end ceiling)
//!    and against a forwarding proxy that sends one HTTP/2 request to the APNs
//!    simulator per request before it answers (the ceiling of a one-client send;
//!    a process of its own, this executable with `--proxy-child`, so that its
//!    CPU per request is measured as Herald's is), plus p99 at half of the
//!    proxy's C=64 rate (open loop, rate-limited; the proxy at the same rate
//!    beside it; each Herald round is bracketed by a fixed piece of CPU work
//!    timed in this process and shown as the machine's speed against the
//!    run's fastest, and the CPU time the host took (steal, where reported),
//!    since a host that slows the VM for a while turns an open-loop round
//!    into a growing queue; Herald's own p99 per send is beside the
//!    client's), and
//!    `send-batch` with batches of 500 such sends, 4 at a time:
//!    notifications/s against single sends at C=64 and against the fan-out.
//! 5. **Bulk and interactive together**: a second broadcast of tenant A and a
//!    broadcast of tenant B (each N tokens) started at once, while a user of
//!    tenant A gets one-client sends at 50/s (from a second before the
//!    broadcasts are queued): their p99 latency, both completion times and
//!    `fairness_ratio` = slower / faster.
//! 6. **Storage**: bytes on disk per client after seeding N, and the time from
//!    spawning `herald serve` on that data to its "listening" line. The
//!    seeding closes the store as a stopping Herald does (`Store::close`); the
//!    time that close takes, the log replay a start after a crash would pay,
//!    is shown beside. Before it closes, the seeding waits for sled's cleaner
//!    to compact what the random inserts left fragmented (on sled; up to 3
//!    minutes, shown too), so that no item counts that one-time work.
//! 7. **Retention** (only with `--only ...,7`): Herald with
//!    `--report-retention 15s` takes 200 000 one-client sends (20 000 with
//!    `--quick`), twice; the bytes its records take before, after each round,
//!    and once the sweeper deleted that round's reports.
//! 8. **Nodes** (only with `--store postgres` and `--only ...,8`): a broadcast
//!    to tenant A's N tokens with one `herald serve` on the database, then
//!    another with a second engine on the same database helping (its
//!    partitions claimed by either): both rates, and the share of the
//!    machine's CPU PostgreSQL took during each. On a 2-core machine the
//!    second engine competes with the first for the same cores: the figure
//!    shows the cost of coordinating through the database, not scaling.
//! 9. **Web Push fan-out**: a topic broadcast to N/10 browser subscriptions
//!    (at least 1 000) of the Web Push simulator, through a Herald of its own:
//!    notifications/s as the simulator counts them, beside the APNs fan-out
//!    (each message encrypted and VAPID-signed by Herald, verified and
//!    decrypted by the simulator).
//!
//! **Repeats**: items 1 to 5 run `--repeats` rounds (5; 3 with `--quick`), and
//! within a round Herald alternates with its baselines (fan-out, bare client,
//! node-apn, fan-out, ...; per send-API point Herald, proxy, trivial handler,
//! Herald, ...), so that a slow spell of the machine hits both sides. Each
//! figure is the median of its rounds, shown with its min–max; a ratio is the
//! ratio of the medians, its min–max the rounds' own ratios (run i over run
//! i). A figure whose spread, (max − min) / median, is over 20% is marked `~`
//! and listed under `noisy` in the JSON.
//!
//! It prints one table (figures, ratios, the team's targets with met/MISSED;
//! nothing is asserted), writes the same to `target/bench/load.json` under the
//! workspace root (flat keys with the medians, plus `spreads`, `noisy` and
//! `targets`), and shows progress on stderr. Figures only compare on an
//! otherwise idle machine: the table gives other processes' share of the CPU
//! during each phase (from `/proc/stat`) and warns above 10%.
//!
//! Flags: `--tokens N` (default 200 000; 1 000 000 for the full run), `--quick`
//! (N = 20 000 unless given, 1 s phases, 3 rounds: the whole run in under three
//! minutes; the default run about ten), `--phase-secs S` (length of each send-API run, default 2),
//! `--repeats N` (rounds of every load point, default 5), `--concurrency
//! 64,256` (the send API's concurrencies, for experiments), `--no-node` (skip
//! the node-apn peer), `--only 1,2,6` (run only these items), `--perf` (record
//! `perf` call graphs of Herald during the fan-out, the C=64 send-API runs
//! (HTTP/1.1 and HTTP/2) and the send-batch run into `target/bench/perf-*.data`), `--ceiling-connections N` and
//! `--ceiling-streams N` (shape the bare client otherwise than Herald's pool,
//! for experiments), `--proxy-connections N` (the same for the forwarding
//! proxy: Herald's pool size by default), `--keep` (keep the work directory under `target/bench`),
//! `--store postgres` (Herald's records in a PostgreSQL this benchmark starts
//! from Debian's `postgresql` package, fsync on, instead of sled in its data
//! directory: the same figures, for one table per backend), `--callgrind`
//! (with item 4: after its timed runs, Herald and the forwarding proxy run
//! again under valgrind's callgrind for a fixed number of sends, and the
//! table gives the instructions each spent per send and per send-batch
//! event, and Herald per notification of a broadcast (at most 20 000
//! tokens): figures the machine's speed and other load do not move, to
//! compare two builds' CPU per send where timed runs vary by 10%; needs
//! `valgrind`, about a minute).
//!
//! The simulators run in a child process that is this executable started again
//! with `--sim-child` (so it is always built from the current `tests/sim`), and
//! `herald serve` is the binary Cargo builds for this benchmark. Every child is
//! killed when its guard drops, including while unwinding from a panic, and asks
//! the kernel to kill it should this process die first.

// Benchmarks and examples: a failure is a visible abort, not a served request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]
// `Command::pre_exec` is unsafe by nature (the closure runs between fork and
// exec); the benchmark needs it to have its children die with it. Nothing else
// here is unsafe.
#![allow(unsafe_code)]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use bytes::Bytes;
use herald_actors::pool::PoolLimits;
use herald_actors::providers::{apns, Notification};
use herald_sim::{ProviderStats, Stats};
use herald_storage::clients::Client;
use herald_storage::push_tokens::{PushProvider, PushToken};
use herald_storage::{Store, StoreOptions};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const OPERATOR: &str = "bench-operator-token";
const PASSWORD: &str = "bench-admin-password-1";
/// The tenant of the measured broadcast, the send API and the interactive sends.
const TENANT_A: &str = "bench";
/// The second tenant, whose broadcast competes with tenant A's in phase 5.
const TENANT_B: &str = "bench2";
const APP: &str = "demo";
/// Device tokens are `{:064x}` of a number: tenant A's seeded tokens start here…
const TOKENS_A: u64 = 1 << 32;
/// …tenant B's here…
const TOKENS_B: u64 = 2 << 32;
/// …and the two API-registered clients (send API, interactive user) have these.
const SEND_TOKEN: u64 = 1;
const VIP_TOKEN: u64 = 2;
/// The send-API concurrencies.
const CONCURRENCY: [usize; 4] = [1, 16, 64, 256];
/// One-client sends per request of the batch run (send-batch's most).
const BATCH: usize = 500;
/// One-client sends counted under callgrind (`--callgrind`), after as many to warm up.
const COUNTED_SENDS: u64 = 2000;
/// The most tokens a broadcast under callgrind (`--callgrind`) goes to.
const FANOUT_COUNTED: u64 = 20_000;
/// Rate of the interactive sends during the broadcasts (phase 5).
const INTERACTIVE_PER_S: f64 = 50.0;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--sim-child") {
        sim_child(&args[1..]);
        return;
    }
    if args.first().map(String::as_str) == Some("--proxy-child") {
        proxy_child(&args[1..]);
        return;
    }
    let opts = Options::parse(&args);
    if opts.postgres {
        let cluster = herald_pgtemp::Cluster::start().expect("start PostgreSQL (apt-get install postgresql)");
        let url = cluster.create_database().expect("a database for the benchmark");
        eprintln!("[load] PostgreSQL on port {} for the records", cluster.port());
        let _ = POSTGRES.set((cluster, url));
    }
    herald_sim::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime");
    rt.block_on(run(opts));
}

/// Command-line options.
#[derive(Clone, Debug)]
struct Options {
    tokens: u64,
    quick: bool,
    /// Length of each send-API run.
    phase: Duration,
    /// Rounds of every load point (Herald and its baselines alternating).
    repeats: usize,
    /// The send-API concurrencies ([`CONCURRENCY`] unless `--concurrency`).
    concurrency: Vec<usize>,
    node: bool,
    perf: bool,
    /// The items of the issue to run (1 to 6); all by default.
    only: Vec<u8>,
    /// The bare client's shape, when not Herald's pool's.
    ceiling_connections: Option<usize>,
    ceiling_streams: Option<usize>,
    /// The forwarding proxy's connections to the simulator, when not Herald's pool size.
    proxy_connections: Option<usize>,
    /// Keep the work directory (data, certificates) for inspection.
    keep: bool,
    /// Records in PostgreSQL rather than sled.
    postgres: bool,
    /// Counts the instructions of a send under callgrind (see [`Bench::instructions`]).
    callgrind: bool,
}

/// The PostgreSQL of `--store postgres` and the URL of Herald's database, kept for the whole run.
static POSTGRES: std::sync::OnceLock<(herald_pgtemp::Cluster, String)> = std::sync::OnceLock::new();

/// The `--store` URL Herald runs with; `None` on sled.
fn store_url() -> Option<String> {
    POSTGRES.get().map(|(_, url)| url.clone())
}

/// Bytes Herald's records take: the data directory on sled, the database on PostgreSQL.
fn stored_bytes(data: &Path) -> u64 {
    match POSTGRES.get() {
        Some((cluster, url)) => {
            let db = url.rsplit('/').next().expect("a database name");
            // Less what an empty database takes (its catalogs, about 7 MiB).
            let sql = "SELECT pg_database_size(current_database()) - pg_database_size('template1')";
            cluster.psql(db, sql).expect("database size").trim().parse().expect("a size")
        }
        None => du(data),
    }
}

impl Options {
    fn parse(args: &[String]) -> Options {
        let mut tokens = None;
        let mut quick = false;
        let mut phase = None;
        let mut repeats = None;
        let mut concurrency = CONCURRENCY.to_vec();
        let mut node = true;
        let mut perf = false;
        let mut only: Vec<u8> = (1..=6).chain([9]).collect();
        let mut ceiling_connections = None;
        let mut ceiling_streams = None;
        let mut proxy_connections = None;
        let mut keep = false;
        let mut postgres = false;
        let mut callgrind = false;
        let count = |v: Option<&String>, flag: &str| -> usize {
            v.and_then(|v| v.parse::<usize>().ok())
                .filter(|n| *n > 0)
                .unwrap_or_else(|| panic!("{flag} takes a positive number"))
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--tokens" => {
                    tokens = Some(
                        it.next()
                            .and_then(|v| v.replace('_', "").parse::<u64>().ok())
                            .filter(|n| *n > 0)
                            .expect("--tokens takes a positive number"),
                    )
                }
                "--phase-secs" => {
                    phase = Some(Duration::from_secs_f64(
                        it.next()
                            .and_then(|v| v.parse::<f64>().ok())
                            .filter(|s| *s > 0.0 && *s <= 60.0)
                            .expect("--phase-secs takes seconds (at most 60)"),
                    ))
                }
                "--only" => {
                    only = it
                        .next()
                        .map(|v| v.split(',').filter_map(|i| i.trim().parse::<u8>().ok()).collect())
                        .filter(|v: &Vec<u8>| !v.is_empty() && v.iter().all(|i| (1..=9).contains(i)))
                        .expect("--only takes items 1 to 9, e.g. 1,2,6")
                }
                "--repeats" => repeats = Some(count(it.next(), "--repeats")),
                "--concurrency" => {
                    concurrency = it
                        .next()
                        .map(|v| v.split(',').filter_map(|c| c.trim().parse::<usize>().ok()).collect())
                        .filter(|v: &Vec<usize>| !v.is_empty() && v.iter().all(|c| (1..=4096).contains(c)))
                        .expect("--concurrency takes numbers 1 to 4096, e.g. 64,256")
                }
                "--ceiling-connections" => ceiling_connections = Some(count(it.next(), "--ceiling-connections")),
                "--ceiling-streams" => ceiling_streams = Some(count(it.next(), "--ceiling-streams")),
                "--proxy-connections" => proxy_connections = Some(count(it.next(), "--proxy-connections")),
                "--keep" => keep = true,
                "--store" => match it.next().map(String::as_str) {
                    Some("postgres") => postgres = true,
                    Some("sled") => postgres = false,
                    _ => panic!("--store takes postgres or sled"),
                },
                "--quick" => quick = true,
                "--no-node" => node = false,
                "--perf" => perf = true,
                "--callgrind" => callgrind = true,
                // Cargo passes `--bench` to every benchmark executable.
                "--bench" => {}
                "--help" | "-h" => {
                    eprintln!("{USAGE}");
                    std::process::exit(0);
                }
                other => {
                    eprintln!("[load] unknown argument {other:?}\n{USAGE}");
                    std::process::exit(2);
                }
            }
        }
        Options {
            tokens: tokens.unwrap_or(if quick { 20_000 } else { 200_000 }),
            quick,
            phase: phase.unwrap_or(Duration::from_secs(if quick { 1 } else { 2 })),
            repeats: repeats.unwrap_or(if quick { 3 } else { 5 }),
            concurrency,
            node,
            perf,
            only,
            ceiling_connections,
            ceiling_streams,
            proxy_connections,
            keep,
            postgres,
            callgrind,
        }
    }
}

const USAGE: &str = "cargo bench --bench load -- [--tokens N] [--quick] [--phase-secs S] [--repeats N] [--concurrency 1,16,64,256] [--no-node] \
[--only 1,2,...,9] [--perf] [--ceiling-connections N] [--ceiling-streams N] [--proxy-connections N] [--keep] [--store postgres|sled] [--callgrind]";

/// Progress on stderr.
macro_rules! say {
    ($($t:tt)*) => {{
        eprintln!("[load {:>6.1}s] {}", started().elapsed().as_secs_f64(), format_args!($($t)*));
    }};
}

/// When the benchmark started (for progress lines).
fn started() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

/// A child process, killed (SIGKILL) and reaped when dropped: at the end of its
/// phase, at the end of the run, and while unwinding from a panic.
struct Proc {
    name: &'static str,
    child: Child,
}

impl Proc {
    /// Spawns `cmd`; the child also gets SIGKILL should this process die first.
    fn spawn(name: &'static str, cmd: &mut Command) -> std::io::Result<Proc> {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        Ok(Proc { name, child: cmd.spawn()? })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        say!("{} (pid {}) stopped", self.name, self.child.id());
    }
}

/// Reads a child's stdout on a thread: lines go to the channel until the
/// receiver is dropped, after which the thread keeps draining so the child
/// never blocks on (or dies of) a full or closed pipe.
fn read_lines(stdout: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut forward = true;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if forward && tx.send(line).is_err() {
                forward = false;
            }
        }
    });
    rx
}

/// User + system CPU seconds of a process so far (`/proc/<pid>/stat`).
fn cpu_secs(pid: u32) -> Option<f64> {
    stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?).map(|(_, secs)| secs)
}

/// The command name and user + system CPU seconds of a process's or a
/// thread's `stat` line.
fn stat_cpu(stat: &str) -> Option<(&str, f64)> {
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let fields: Vec<&str> = stat.get(close + 2..)?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some((stat.get(open + 1..close)?, ticks / clock_ticks()))
}

/// CPU seconds of each thread of process `pid` so far, summed by thread
/// name (`/proc/<pid>/task/*/stat`).
fn thread_cpu_secs(pid: u32) -> std::collections::BTreeMap<String, f64> {
    let mut by_name = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return by_name };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        if let Some((name, secs)) = stat_cpu(&stat) {
            *by_name.entry(name.to_string()).or_insert(0.0) += secs;
        }
    }
    by_name
}

/// The CPU milliseconds each thread name of `pid` spent since `before`
/// ([`thread_cpu_secs`]), largest first, the runtime's workers left out.
fn background_cpu_ms(pid: u32, before: &std::collections::BTreeMap<String, f64>) -> String {
    let mut spent: Vec<(String, f64)> = thread_cpu_secs(pid)
        .into_iter()
        .filter(|(name, _)| name != "tokio-rt-worker")
        .map(|(name, secs)| {
            let ms = (secs - before.get(&name).copied().unwrap_or(0.0)) * 1e3;
            (name, ms)
        })
        .filter(|(_, ms)| *ms > 0.0)
        .collect();
    spent.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top: Vec<String> = spent.iter().take(4).map(|(name, ms)| format!("{name} {ms:.0}")).collect();
    if top.is_empty() {
        "none".into()
    } else {
        top.join(", ")
    }
}

/// CPU seconds of this process's waited-for children (the node-apn peer):
/// `cutime` and `cstime` of `/proc/self/stat`, what `getrusage(RUSAGE_CHILDREN)`
/// reports (rustix has no safe `getrusage`), in clock ticks.
fn children_cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (field(13) + field(14)) / clock_ticks()
}

/// Clock ticks a second, the unit of `/proc`'s CPU times (`_SC_CLK_TCK`).
fn clock_ticks() -> f64 {
    (rustix::param::clock_ticks_per_second() as f64).max(1.0)
}

/// The machine's CPU seconds so far by kind, as `/proc/stat`'s `cpu` line
/// counts them: user, nice, system, idle, iowait, irq, softirq, steal, ...
fn machine_cpu_secs() -> Vec<f64> {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else { return Vec::new() };
    let Some(cpu) = stat.lines().next() else { return Vec::new() };
    cpu.split_whitespace().skip(1).filter_map(|v| v.parse::<f64>().ok()).map(|t| t / clock_ticks()).collect()
}

/// Busy CPU seconds of the whole machine so far: `/proc/stat` less idle and iowait.
fn machine_busy_secs() -> f64 {
    let f = machine_cpu_secs();
    let total: f64 = f.iter().take(8).sum();
    total - f.get(3).copied().unwrap_or(0.0) - f.get(4).copied().unwrap_or(0.0)
}

/// CPU seconds the hypervisor took from this machine so far (`/proc/stat`'s
/// steal; stays 0 where the host does not report it).
fn machine_steal_secs() -> f64 {
    machine_cpu_secs().get(7).copied().unwrap_or(0.0)
}

/// The share of the machine's CPU capacity busy (every process) since `start`.
struct MachineBusy {
    t0: Instant,
    busy: f64,
}

impl MachineBusy {
    fn start() -> MachineBusy {
        MachineBusy { t0: Instant::now(), busy: machine_busy_secs() }
    }

    fn share(&self) -> f64 {
        self.share_less(0.0)
    }

    /// [`MachineBusy::share`] less `secs` of CPU spent by some of the processes.
    fn share_less(&self, secs: f64) -> f64 {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let wall = self.t0.elapsed().as_secs_f64().max(1e-3);
        ((machine_busy_secs() - self.busy - secs) / (wall * cpus)).clamp(0.0, 1.0)
    }
}

/// Measures how much of the machine other processes (the lead's builds, say)
/// used during a phase: busy CPU of the machine less ours (this process, its
/// waited-for children, and the given children still running).
struct Foreign {
    machine: MachineBusy,
    ours: f64,
    pids: Vec<u32>,
}

impl Foreign {
    fn start(pids: &[u32]) -> Foreign {
        let pids = pids.to_vec();
        Foreign { machine: MachineBusy::start(), ours: Self::ours(&pids), pids }
    }

    fn ours(pids: &[u32]) -> f64 {
        cpu_secs(std::process::id()).unwrap_or(0.0)
            + children_cpu_secs()
            + pids.iter().map(|p| cpu_secs(*p).unwrap_or(0.0)).sum::<f64>()
    }

    /// Other processes' share of the machine's CPU capacity since `start`.
    fn share(&self) -> f64 {
        self.machine.share_less(Self::ours(&self.pids) - self.ours)
    }
}

/// Iterations of [`speed_probe`]'s work: a millisecond or two here.
const PROBE_WORK: u64 = 1_000_000;

/// How fast the machine runs a fixed piece of CPU work now (work per
/// second, the median of five timings). A host that takes the cores away
/// for a while shows as everything taking longer, whether or not it reports
/// the steal: a round whose probes are well below the run's fastest ran
/// on a slowed machine, whatever Herald did. Probes at full speed do not
/// rule out a shorter slow spell within the round (see [`Results::speeds`]).
fn speed_probe() -> f64 {
    let mut secs: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let mut x = 0x9e37_79b9_7f4a_7c15_u64;
            for i in 0..PROBE_WORK {
                x = std::hint::black_box(x.rotate_left(5) ^ i).wrapping_mul(0x0100_0000_01b3);
            }
            std::hint::black_box(x);
            t.elapsed().as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    1.0 / secs[2].max(1e-9)
}

/// A `kB` field of `/proc/<pid>/status`, in MiB.
fn status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Peak resident set size in MiB (`VmHWM`).
fn peak_rss_mib(pid: u32) -> Option<f64> {
    status_mib(pid, "VmHWM:")
}

/// Resident set size now, in MiB (`VmRSS`).
fn rss_mib(pid: u32) -> Option<f64> {
    status_mib(pid, "VmRSS:")
}

/// Bytes a data directory occupies on disk, as `du` counts them (allocated
/// blocks), less the disk ballast: space Herald holds in reserve, not data.
fn du(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            }
            if e.file_name() != "reserve.ballast" {
                total += m.blocks() * 512;
            }
        }
    }
    total
}

// ---------------------------------------------------------------------------
// The simulators (child process)
// ---------------------------------------------------------------------------

/// `--sim-child --cert-dir DIR`: runs the simulators on free ports of 127.0.0.1,
/// prints `apns URL`, `control URL` and `ready`, and runs until killed.
fn sim_child(args: &[String]) {
    let cert_dir = match args {
        [flag, dir] if flag == "--cert-dir" => PathBuf::from(dir),
        _ => panic!("usage: load --sim-child --cert-dir DIR"),
    };
    herald_sim::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    rt.block_on(async move {
        let sims =
            herald_sim::Simulators::start(herald_sim::SimConfig::local(cert_dir)).await.expect("simulators start");
        let mut out = std::io::stdout().lock();
        writeln!(out, "apns {}", sims.apns_url()).expect("stdout");
        writeln!(out, "fcm {}", sims.fcm_url()).expect("stdout");
        writeln!(out, "hms {}", sims.hms_url()).expect("stdout");
        writeln!(out, "hms_token {}", sims.hms_token_url()).expect("stdout");
        writeln!(out, "webpush {}", sims.webpush_url()).expect("stdout");
        writeln!(out, "control {}", sims.control_url().expect("control API")).expect("stdout");
        writeln!(out, "ready").expect("stdout");
        out.flush().expect("stdout");
        drop(out);
        std::future::pending::<()>().await;
    });
}

/// The simulators' child process and how to reach them.
struct Sims {
    proc: Proc,
    cert_dir: PathBuf,
    urls: std::collections::HashMap<String, String>,
    http: reqwest::Client,
}

impl Sims {
    fn start(cert_dir: &Path) -> Sims {
        let exe = std::env::current_exe().expect("current exe");
        let mut proc = Proc::spawn(
            "simulators",
            Command::new(exe)
                .arg("--sim-child")
                .arg("--cert-dir")
                .arg(cert_dir)
                .env("RUST_LOG", "error")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        )
        .expect("start the simulators");
        let lines = read_lines(proc.child.stdout.take().expect("piped stdout"));
        let mut urls = std::collections::HashMap::new();
        loop {
            let line = lines.recv_timeout(Duration::from_secs(30)).expect("the simulators start within 30 s");
            if line == "ready" {
                break;
            }
            if let Some((k, v)) = line.split_once(' ') {
                urls.insert(k.to_string(), v.to_string());
            }
        }
        Sims { proc, cert_dir: cert_dir.to_path_buf(), urls, http: reqwest::Client::new() }
    }

    fn url(&self, name: &str) -> &str {
        self.urls.get(name).map(String::as_str).expect("simulator URL")
    }

    /// `127.0.0.1:port` of the APNs simulator.
    fn apns_addr(&self) -> SocketAddr {
        self.url("apns").trim_start_matches("https://").parse().expect("APNs simulator address")
    }

    fn ca_file(&self) -> PathBuf {
        self.cert_dir.join("ca.pem")
    }

    /// A new credential set registered with the simulators (its own APNs key,
    /// so tokens signed by different senders never count as too-frequent
    /// updates of one key).
    fn credentials(&self, dir: &Path) -> herald_sim::Credentials {
        let urls = herald_sim::SimUrls {
            cert_dir: self.cert_dir.clone(),
            apns_url: self.url("apns").to_string(),
            fcm_url: self.url("fcm").to_string(),
            hms_url: self.url("hms").to_string(),
            webpush_url: self.url("webpush").to_string(),
        };
        herald_sim::generate_credentials(dir, &urls).expect("simulator credentials")
    }

    async fn stats(&self) -> Stats {
        self.http
            .get(format!("{}/stats", self.url("control")))
            .send()
            .await
            .expect("simulator stats")
            .json()
            .await
            .expect("simulator stats JSON")
    }

    /// Zeroes the counters before a phase.
    async fn reset(&self) {
        let r = self.http.post(format!("{}/reset", self.url("control"))).send().await.expect("simulator reset");
        assert!(r.status().is_success(), "simulator reset: {}", r.status());
    }

    fn cpu(&self) -> f64 {
        cpu_secs(self.proc.pid()).unwrap_or(0.0)
    }
}

/// CPU seconds PostgreSQL's processes took so far: the live ones' own, and
/// the postmaster's reaped children's (backends that ended).
fn postgres_cpu() -> f64 {
    let mut total = 0.0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        if &stat[open + 1..close] != "postgres" {
            continue;
        }
        let fields: Vec<f64> = stat[close + 2..].split_whitespace().map(|f| f.parse().unwrap_or(0.0)).collect();
        // utime, stime; for the postmaster (whose parent is not a postgres) also cutime, cstime.
        let own = fields.get(11).copied().unwrap_or(0.0) + fields.get(12).copied().unwrap_or(0.0);
        let parent = fields.get(1).copied().unwrap_or(0.0) as u32;
        let parent_comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
        let reaped = if parent_comm.trim() != "postgres" {
            fields.get(13).copied().unwrap_or(0.0) + fields.get(14).copied().unwrap_or(0.0)
        } else {
            0.0
        };
        total += (own + reaped) / clock_ticks();
    }
    total
}

/// Notifications/s between the first and the last accepted one.
fn sim_rate(s: &ProviderStats) -> Option<f64> {
    let (first, last) = (s.first_accepted_ms?, s.last_accepted_ms?);
    (last > first && s.accepted > 1).then(|| (s.accepted - 1) as f64 * 1000.0 / (last - first) as f64)
}

// ---------------------------------------------------------------------------
// Herald (child process) and its HTTP API
// ---------------------------------------------------------------------------

/// A running `herald serve`.
struct Herald {
    proc: Proc,
    base: String,
    addr: SocketAddr,
    /// Spawn to "listening" line.
    startup: Duration,
}

impl Herald {
    fn start(data: &Path, sims: &Sims) -> Herald {
        Self::start_with(data, sims, &[])
    }

    /// [`Herald::start`] with more environment.
    fn start_with(data: &Path, sims: &Sims, env: &[(&str, &str)]) -> Herald {
        Self::spawn(data, sims, env, &[])
    }

    /// [`Herald::start`] as an argument of `wrapper` (a program and its
    /// arguments, such as [`Callgrind::wrapper`]).
    fn start_under(data: &Path, sims: &Sims, wrapper: &[String]) -> Herald {
        Self::spawn(data, sims, &[], wrapper)
    }

    fn spawn(data: &Path, sims: &Sims, env: &[(&str, &str)], wrapper: &[String]) -> Herald {
        let spawned = Instant::now();
        // `HERALD_LOAD_BIN`: another build of herald, to compare two builds.
        let bin = std::env::var_os("HERALD_LOAD_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_herald").into());
        let mut proc = Proc::spawn(
            "herald",
            wrapped(wrapper, bin)
                .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
                .arg(data)
                .envs(store_url().map(|url| ("HERALD_STORE", url)))
                .env("HERALD_OPERATOR_TOKEN", OPERATOR)
                // `BENCH_HERALD_LOG=debug cargo bench ...` to see what Herald does.
                .env("HERALD_LOG", std::env::var("BENCH_HERALD_LOG").unwrap_or_else(|_| "warn".into()))
                // One token for the whole run (the default 300 s is shorter than a run).
                .env("HERALD_ACCESS_TOKEN_TTL", "7200")
                // The benchmark measures the engine, not the abuse limits.
                .env("HERALD_SEND_RATE", "0")
                // Every load-generator connection comes from 127.0.0.1 (C=256 and more).
                .env("HERALD_MAX_CONNECTIONS_PER_IP", "0")
                .env("HERALD_APNS_URL", sims.url("apns"))
                .env("HERALD_APNS_SANDBOX_URL", sims.url("apns"))
                .env("HERALD_FCM_URL", sims.url("fcm"))
                .env("HERALD_HMS_URL", sims.url("hms"))
                .env("HERALD_HMS_TOKEN_URL", sims.url("hms_token"))
                .env("HERALD_EXTRA_CA_FILE", sims.ca_file())
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        )
        .expect("start herald serve");
        let lines = read_lines(proc.child.stdout.take().expect("piped stdout"));
        let base = loop {
            let line = lines.recv_timeout(Duration::from_secs(120)).expect("herald prints its address within 120 s");
            if let Some(url) = line.strip_prefix("herald listening on ") {
                break url.trim().to_string();
            }
        };
        let startup = spawned.elapsed();
        let addr = base.trim_start_matches("http://").trim_end_matches('/').parse().expect("herald address");
        say!("herald (pid {}) listening on {base} after {startup:.2?}", proc.pid());
        Herald { proc, base, addr, startup }
    }

    fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Stops Herald as an operator does (SIGTERM) and answers how long it
    /// took to exit; killed after 120 s. (Dropping a `Herald` kills it.)
    fn stop(mut self) -> Duration {
        let t0 = Instant::now();
        let pid = rustix::process::Pid::from_child(&self.proc.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        while t0.elapsed() < Duration::from_secs(120) {
            if let Ok(Some(_)) = self.proc.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let took = t0.elapsed();
        say!("herald (pid {}) stopped with SIGTERM in {took:.2?}", self.pid());
        took
    }

    fn cpu(&self) -> f64 {
        cpu_secs(self.pid()).unwrap_or(0.0)
    }
}

/// Calls Herald's API with reqwest: status and JSON body (Null when empty).
async fn api(
    http: &reqwest::Client,
    h: &Herald,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http.request(method, format!("{}{path}", h.base));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("herald answers");
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.expect("herald's answer body");
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    (status, value)
}

/// Asserts a 2xx with the body in the message.
fn ok(what: &str, (status, body): (u16, Value)) -> Value {
    assert!((200..300).contains(&status), "{what}: {status} {body}");
    body
}

async fn admin_token(http: &reqwest::Client, h: &Herald, tenant: &str) -> String {
    let r = http
        .post(format!("{}/auth/realms/{tenant}/protocol/openid-connect/token", h.base))
        .form(&[("grant_type", "password"), ("username", "admin"), ("password", PASSWORD), ("client_id", "herald-cli")])
        .send()
        .await
        .expect("token request");
    let v: Value = r.json().await.expect("token JSON");
    v["access_token"].as_str().expect("access_token").to_string()
}

/// APNs device token `n`: 32 bytes that look random, as real tokens do, and
/// distinct for distinct `n` (its bytes 8 to 15 are a bijection of it). A
/// counter's hex, mostly zeros, compressed to a fraction of a real token's
/// size on disk and in sled's cache, so it flattered the bytes per client
/// and the peak RSS. The first digit stays below 8: the simulators answer
/// tokens starting with `dead` as unregistered.
fn token_hex(n: u64) -> String {
    let [a, b, c, d] = [1, 2, 3, 4].map(|seed| herald_sim::splitmix(seed, n));
    let a = a >> 1;
    format!("{a:016x}{b:016x}{c:016x}{d:016x}")
}

/// Registers a client of `tenant`'s app, linked to `user`, with APNs token `n`.
async fn register_client(http: &reqwest::Client, h: &Herald, tenant: &str, admin: &str, user: &str, n: u64) -> String {
    use reqwest::Method;
    let c = ok(
        "register client",
        api(
            http,
            h,
            Method::POST,
            &format!("/v1/tenants/{tenant}/clients"),
            Some(admin),
            Some(json!({"appName": APP, "platform": "ios"})),
        )
        .await,
    );
    let id = c["astClientId"].as_str().expect("astClientId").to_string();
    ok(
        "link client",
        api(
            http,
            h,
            Method::PUT,
            &format!("/v1/tenants/{tenant}/users/{user}/clients/{id}"),
            Some(admin),
            Some(json!({})),
        )
        .await,
    );
    ok(
        "push token",
        api(
            http,
            h,
            Method::PUT,
            &format!("/v1/tenants/{tenant}/clients/{id}/pushtoken"),
            Some(admin),
            Some(json!({"appName": APP, "pushToken": format!("APNS:{}", token_hex(n))})),
        )
        .await,
    );
    id
}

fn broadcast_body(tenant: &str) -> Value {
    json!({"category": "chat", "recipient": {"tenantId": tenant, "topic": "all"}, "payload": {"message": {"title": "x", "body": "y"}}})
}

fn one_client_body(tenant: &str, user: &str, client: &str) -> Value {
    json!({"category": "chat", "recipient": {"tenantId": tenant, "userId": user, "astClientId": client}, "payload": {"message": {"title": "x", "body": "y"}}})
}

/// Starts a topic broadcast; answers its notification id.
async fn start_broadcast(http: &reqwest::Client, h: &Herald, tenant: &str, admin: &str) -> String {
    let answer = ok(
        "broadcast",
        api(
            http,
            h,
            reqwest::Method::POST,
            &format!("/v1/tenants/{tenant}/push_notification/send"),
            Some(admin),
            Some(broadcast_body(tenant)),
        )
        .await,
    );
    answer[0]["notificationId"].as_str().expect("notificationId").to_string()
}

async fn report(http: &reqwest::Client, h: &Herald, tenant: &str, admin: &str, id: &str) -> Value {
    ok(
        "report",
        api(
            http,
            h,
            reqwest::Method::GET,
            &format!("/v1/tenants/{tenant}/push_notification/{id}?page_size=1"),
            Some(admin),
            None,
        )
        .await,
    )
}

/// Reads a broadcast's report every `every` until it says COMPLETED, at most
/// `polls` times; answers the last report read.
async fn until_completed(
    http: &reqwest::Client,
    h: &Herald,
    (tenant, admin, id): (&str, &str, &str),
    every: Duration,
    polls: u64,
) -> Value {
    let mut r = Value::Null;
    for _ in 0..polls.max(1) {
        tokio::time::sleep(every).await;
        r = report(http, h, tenant, admin, id).await;
        if r["state"] == "COMPLETED" {
            break;
        }
    }
    r
}

/// Sums a gauge's samples over its label sets in Prometheus text.
fn gauge_sum(metrics: &str, name: &str) -> Option<f64> {
    let mut found = false;
    let mut sum = 0.0;
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(name) else { continue };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        if let Some(v) = rest.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) {
            found = true;
            sum += v;
        }
    }
    found.then_some(sum)
}

/// A Prometheus histogram read from `/metrics`: cumulative counts per bucket.
#[derive(Clone, Debug, Default)]
struct Hist {
    /// `(le, cumulative count)`, in bucket order, `+Inf` last.
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

impl Hist {
    /// The histogram `name` summed over its label sets that contain `label`
    /// (e.g. `lane="bulk"`, or "" for all).
    fn read(metrics: &str, name: &str, label: &str) -> Hist {
        let mut h = Hist::default();
        let bucket = format!("{name}_bucket{{");
        for line in metrics.lines().filter(|l| l.starts_with(name) && l.contains(label)) {
            let value = || line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            if let Some(rest) = line.strip_prefix(&bucket) {
                let le = rest.split("le=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("+Inf");
                let le = le.parse::<f64>().unwrap_or(f64::INFINITY);
                match h.buckets.iter_mut().find(|(l, _)| *l == le) {
                    Some(b) => b.1 += value(),
                    None => h.buckets.push((le, value())),
                }
            } else if line.starts_with(&format!("{name}_sum")) {
                h.sum += value();
            } else if line.starts_with(&format!("{name}_count")) {
                h.count += value();
            }
        }
        h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        h
    }

    /// What was recorded between `before` and `self`.
    fn since(&self, before: &Hist) -> Hist {
        let earlier = |le: f64| before.buckets.iter().find(|(l, _)| *l == le).map_or(0.0, |b| b.1);
        Hist {
            buckets: self.buckets.iter().map(|&(le, c)| (le, c - earlier(le))).collect(),
            sum: self.sum - before.sum,
            count: self.count - before.count,
        }
    }

    /// The mean, in ms (none when empty).
    fn mean_ms(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum * 1000.0 / self.count)
    }

    /// Both histograms' counts together (the rounds of one phase).
    fn plus(&self, other: &Hist) -> Hist {
        let mut h = self.clone();
        for &(le, c) in &other.buckets {
            match h.buckets.iter_mut().find(|(l, _)| *l == le) {
                Some(b) => b.1 += c,
                None => h.buckets.push((le, c)),
            }
        }
        h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        h.sum += other.sum;
        h.count += other.count;
        h
    }

    /// The upper bound of the bucket holding the `q` quantile.
    fn quantile_bound(&self, q: f64) -> Option<f64> {
        let want = self.count * q;
        self.buckets.iter().find(|(_, c)| *c >= want && self.count > 0.0).map(|b| b.0)
    }

    /// "n flushes, mean, p99 ≤ bound" in ms.
    fn describe(&self) -> String {
        if self.count <= 0.0 {
            return "no flushes".into();
        }
        format!(
            "{:.0} flushes, mean {:.1} ms, p99 ≤ {} ms, max ≤ {} ms",
            self.count,
            self.sum * 1000.0 / self.count,
            self.quantile_bound(0.99).map_or("?".into(), |b| format!("{}", b * 1000.0)),
            self.quantile_bound(1.0).map_or("?".into(), |b| format!("{}", b * 1000.0)),
        )
    }
}

/// Herald's storage flush latencies so far (`herald_storage_flush_seconds`).
async fn flush_hist(http: &reqwest::Client, h: &Herald) -> Hist {
    metric_hist(http, h, "herald_storage_flush_seconds", "").await
}

/// Herald's provider round trips of one lane so far
/// (`herald_provider_request_duration_seconds`: from a stream slot to the
/// provider's whole answer).
async fn provider_hist(http: &reqwest::Client, h: &Herald, lane: &str) -> Hist {
    metric_hist(http, h, "herald_provider_request_duration_seconds", &format!("lane=\"{lane}\"")).await
}

/// Waits (at most 3 minutes) until Herald's `herald_stored_reports` gauge is at or below `at_most`.
async fn wait_for_reports(http: &reqwest::Client, h: &Herald, at_most: f64) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let text = match http.get(format!("{}/metrics", h.base)).send().await {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let stored = text
            .lines()
            .find_map(|l| l.strip_prefix("herald_stored_reports "))
            .and_then(|v| v.trim().parse::<f64>().ok());
        if stored.is_some_and(|s| s <= at_most) || Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Herald's own time for one-client sends so far (`herald_send_duration_seconds`).
async fn send_hist(http: &reqwest::Client, h: &Herald) -> Hist {
    metric_hist(http, h, "herald_send_duration_seconds", "recipient=\"client\"").await
}

async fn metric_hist(http: &reqwest::Client, h: &Herald, name: &str, label: &str) -> Hist {
    match http.get(format!("{}/metrics", h.base)).send().await {
        Ok(r) => Hist::read(&r.text().await.unwrap_or_default(), name, label),
        Err(_) => Hist::default(),
    }
}

// ---------------------------------------------------------------------------
// Seeding
// ---------------------------------------------------------------------------

/// Threads seeding at once: sled waits for the disk after writing each log
/// buffer (`sync_file_range`), and several writers overlap those waits.
const SEED_THREADS: u64 = 4;

/// Seeds `n` iOS clients of `tenant`'s app with valid APNs tokens
/// `offset..offset+n`, straight into the storage of a stopped Herald (as
/// `tests/it/broadcast.rs` does: a client and its push token per client), from
/// [`SEED_THREADS`] threads, flushed once at the end, then closed as a
/// stopping Herald closes it (on sled with the snapshot of the page table
/// that spares the next start a replay of the log). Answers the time the
/// writes took, the time sled's cleaner then took to compact what they left
/// fragmented (see [`settle`]), and the time the close took: the replay a
/// crash would have left to the next start.
fn seed(data: &Path, tenant: &str, n: u64, offset: u64) -> Seeded {
    let t0 = Instant::now();
    let store =
        Store::open(&StoreOptions { store_url: store_url(), ..StoreOptions::new(data) }).expect("open the store");
    let now = herald_storage::now_ms();
    let done = AtomicU64::new(0);
    // PostgreSQL takes many transactions at once (each waits for its commit's fsync).
    let threads = if POSTGRES.get().is_some() { 16 } else { SEED_THREADS };
    std::thread::scope(|scope| {
        for part in 0..threads {
            let (store, done) = (&store, &done);
            scope.spawn(move || {
                for i in (part..n).step_by(threads as usize) {
                    let id = ulid::Ulid::generate().to_string();
                    let client = Client {
                        id: id.clone(),
                        app_name: APP.into(),
                        platform: "ios".into(),
                        lock_state: "NONE".into(),
                        // What the API stores: a SHA-256 of the client secret.
                        secret_hash: vec![0xa5; 32],
                        created_ms: now,
                        ..Client::default()
                    };
                    store.clients().create(tenant, &client).expect("seed a client");
                    let token = PushToken {
                        app_name: APP.into(),
                        provider: PushProvider::Apns,
                        token: token_hex(offset + i),
                        is_valid: true,
                        updated_ms: now,
                    };
                    store.push_tokens().set(tenant, &id, &token).expect("seed a push token");
                    let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if d % 50_000 == 0 {
                        say!("  seeded {d} of {n} clients of {tenant}");
                    }
                }
            });
        }
    });
    store.flush_now().expect("flush the seeded store");
    let written = t0.elapsed();
    let settled = if store_url().is_some() { Duration::ZERO } else { settle() };
    let t1 = Instant::now();
    store.close().expect("close the seeded store");
    Seeded { written, settled, closed: t1.elapsed() }
}

/// What [`seed`] took.
struct Seeded {
    written: Duration,
    settled: Duration,
    closed: Duration,
}

/// Waits, up to 3 minutes, until this process writes under 64 KiB in a
/// second. Random inserts leave sled's segments part dead, and its cleaner
/// compacts them in the background after they stop (it rewrites at most a
/// segment, 512 KiB, each half second). A Herald measured on a store still
/// compacting would count that one-time work per notification.
fn settle() -> Duration {
    let (t0, mut last) = (Instant::now(), written_bytes());
    while t0.elapsed() < Duration::from_secs(180) {
        std::thread::sleep(Duration::from_secs(1));
        let now = written_bytes();
        if now.saturating_sub(last) < 64 << 10 {
            break;
        }
        last = now;
    }
    t0.elapsed()
}

/// Bytes this process has passed to `write` so far (`/proc/self/io`); 0 where unknown.
fn written_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("wchar:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Phase 1, 5: watching a broadcast
// ---------------------------------------------------------------------------

/// What a watched broadcast did.
#[derive(Debug, Default, Clone)]
struct Broadcast {
    /// The simulator's counters at the end.
    stats: ProviderStats,
    /// POST to COMPLETED, as Herald reports it (createdAt → completedAt).
    herald_ms: Option<u64>,
    report: Value,
    completed: bool,
    /// Mean and max of Herald's `herald_pool_streams_in_flight`, sampled every second while busy.
    streams_mean: Option<f64>,
    streams_max: Option<f64>,
}

/// Polls the simulator and Herald's reports until every broadcast in `ids`
/// completes or `deadline` passes, printing progress each second.
async fn watch(
    http: &reqwest::Client,
    h: &Herald,
    sims: &Sims,
    ids: &[(&str, &str, String)],
    expected: u64,
    deadline: Duration,
) -> Vec<Broadcast> {
    let t0 = Instant::now();
    let mut last_print = Instant::now();
    let mut last_accepted = 0;
    // Herald's `herald_pool_streams_in_flight`, sampled every second.
    let mut samples: Vec<f64> = Vec::new();
    let mut out: Vec<Broadcast> = ids.iter().map(|_| Broadcast::default()).collect();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let mut all_done = true;
        for (i, (tenant, admin, id)) in ids.iter().enumerate() {
            if out[i].completed {
                continue;
            }
            let r = report(http, h, tenant, admin, id).await;
            if r["state"] == "COMPLETED" {
                out[i].completed = true;
                let (c, d) = (r["createdAt"].as_u64(), r["completedAt"].as_u64());
                out[i].herald_ms = c.zip(d).map(|(c, d)| d.saturating_sub(c));
                say!("broadcast {id} of {tenant} completed in {} ms: {}", out[i].herald_ms.unwrap_or(0), r["counts"]);
            } else {
                all_done = false;
            }
            out[i].report = r;
        }
        if last_print.elapsed() >= Duration::from_secs(1) || all_done {
            // Once a second: rendering Herald's metrics takes milliseconds of
            // its CPU, which four scrapes a second added to the fan-out's.
            if let Ok(r) = http.get(format!("{}/metrics", h.base)).send().await {
                if let Ok(text) = r.text().await {
                    if let Some(streams) = gauge_sum(&text, "herald_pool_streams_in_flight") {
                        samples.push(streams);
                    }
                }
            }
            let s = sims.stats().await.apns;
            let dt = last_print.elapsed().as_secs_f64();
            say!(
                "  {} of {expected} accepted at the APNs simulator ({:.0}/s), streams in flight {}",
                s.accepted,
                (s.accepted.saturating_sub(last_accepted)) as f64 / dt,
                samples.last().map_or("?".into(), |st| format!("{st:.0}"))
            );
            last_accepted = s.accepted;
            last_print = Instant::now();
        }
        if all_done {
            break;
        }
        if t0.elapsed() > deadline {
            say!("broadcast not complete after {deadline:?}: reporting what was done");
            break;
        }
    }
    let stats = sims.stats().await.apns;
    // Samples taken once everything completed say nothing about the run.
    let busy: Vec<f64> = samples.into_iter().filter(|s| *s > 0.0).collect();
    for b in &mut out {
        b.stats = stats.clone();
        if !busy.is_empty() {
            b.streams_mean = Some(busy.iter().sum::<f64>() / busy.len() as f64);
            b.streams_max = busy.iter().copied().reduce(f64::max);
        }
    }
    out
}

/// A command running `program`, or `wrapper` (a program and its
/// arguments) running it when `wrapper` is not empty.
fn wrapped(wrapper: &[String], program: impl AsRef<std::ffi::OsStr>) -> Command {
    match wrapper.split_first() {
        Some((first, args)) => {
            let mut c = Command::new(first);
            c.args(args).arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// Processes run under valgrind's callgrind (`--callgrind`), which counts
/// the instructions they execute; each dump (`callgrind_control -d`)
/// writes the counts since the previous one and starts them again.
struct Callgrind {
    dir: PathBuf,
}

impl Callgrind {
    /// `None` (and says why) when valgrind is not installed.
    fn new(dir: &Path) -> Option<Callgrind> {
        let found = Command::new("valgrind").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !found.is_ok_and(|s| s.success()) {
            say!("callgrind unavailable: valgrind is not installed (apt-get install valgrind)");
            return None;
        }
        std::fs::create_dir_all(dir).expect("callgrind directory");
        Some(Callgrind { dir: dir.to_path_buf() })
    }

    /// Runs a program named `name` under callgrind (see [`Herald::start_under`]).
    fn wrapper(&self, name: &str) -> Vec<String> {
        vec![
            "valgrind".into(),
            "--tool=callgrind".into(),
            format!("--callgrind-out-file={}/{name}.%p", self.dir.display()),
            // Each dump readable alone (`callgrind_annotate`), not only with the first.
            "--compress-strings=no".into(),
        ]
    }

    /// Dumps the counts of process `pid` (run by `wrapper(name)`) as its
    /// `part`-th dump, and answers the instructions it executed since the
    /// previous dump (since it started, for the first).
    fn dump(&self, name: &str, pid: u32, part: u32) -> Option<u64> {
        let asked = Command::new("callgrind_control")
            .args(["-d", &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !asked.is_ok_and(|s| s.success()) {
            say!("callgrind_control could not dump process {pid}");
            return None;
        }
        let file = self.dir.join(format!("{name}.{pid}.{part}"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let totals = std::fs::read_to_string(&file).ok().and_then(|text| {
                text.lines().find_map(|l| l.strip_prefix("totals:")).and_then(|v| v.trim().parse::<u64>().ok())
            });
            if totals.is_some() {
                return totals;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        say!("no callgrind dump at {}", file.display());
        None
    }
}

/// `perf record` of a process while a phase runs (with `--perf`; it slows
/// Herald down, so the figures of such a run are not comparable).
struct Perf(Option<Proc>);

impl Perf {
    fn start(enabled: bool, pid: u32, out: &Path) -> Perf {
        if !enabled {
            return Perf(None);
        }
        let p = Proc::spawn(
            "perf",
            Command::new("perf")
                // DWARF call graphs: release builds keep no frame pointers.
                .args(["record", "-F", "499", "--call-graph", "dwarf,16384", "-p", &pid.to_string(), "-o"])
                .arg(out)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        match p {
            Ok(p) => {
                say!("perf recording herald into {}", out.display());
                Perf(Some(p))
            }
            Err(e) => {
                say!("perf unavailable: {e}");
                Perf(None)
            }
        }
    }

    /// Stops the recording with SIGINT so perf writes its file.
    fn stop(mut self) {
        if let Some(mut p) = self.0.take() {
            let _ =
                rustix::process::kill_process(rustix::process::Pid::from_child(&p.child), rustix::process::Signal::INT);
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = p.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Phase 2: the ceiling, a bare h2 client
// ---------------------------------------------------------------------------

/// An APNs provider token (ES256 JWT), signed once with ring.
fn sign_apns_jwt(p8_pem: &str, key_id: &str, team_id: &str) -> String {
    use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    let der = rustls_pemfile::pkcs8_private_keys(&mut p8_pem.as_bytes())
        .next()
        .expect("a PKCS#8 key in the .p8")
        .expect("a readable .p8");
    let rng = ring::rand::SystemRandom::new();
    let key =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.secret_pkcs8_der(), &rng).expect("a P-256 key");
    let iat = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock after 1970").as_secs();
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": key_id}).to_string());
    let claims = URL_SAFE_NO_PAD.encode(json!({"iss": team_id, "iat": iat}).to_string());
    let input = format!("{header}.{claims}");
    let sig = key.sign(&rng, input.as_bytes()).expect("ECDSA signature");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

/// TLS to the simulators: their CA only, ALPN h2 (as Herald's pool).
fn sim_tls(ca_pem: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut &ca_pem[..]) {
        roots.add(cert.expect("CA PEM")).expect("CA certificate");
    }
    let mut config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}

/// The APNs payload Herald sends for the benchmark's notification: the same
/// formatting code, so body and headers are byte for byte Herald's.
fn herald_apns_payload(bundle_id: &str) -> apns::ApnsPayload {
    let n = Notification {
        id: ulid::Ulid::generate().to_string(),
        category: "chat".into(),
        title: Some("x".into()),
        body: Some("y".into()),
        ..Notification::default()
    };
    apns::prepare(&n, bundle_id).expect("APNs payload")
}

/// What the bare client did.
#[derive(Debug, Default)]
struct CeilingRun {
    ok: u64,
    failed: u64,
    first_error: Option<String>,
    peer_max_streams: usize,
}

/// One HTTP/2 connection over TLS to the simulator at `addr`, with the same
/// windows as Herald's transport, ready (its SETTINGS read).
async fn connect_h2(addr: SocketAddr, tls: Arc<rustls::ClientConfig>) -> h2::client::SendRequest<Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect to the simulator");
    tcp.set_nodelay(true).expect("nodelay");
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let tls = tokio_rustls::TlsConnector::from(tls).connect(name, tcp).await.expect("TLS handshake");
    let (send, conn) = h2::client::Builder::new()
        .initial_window_size(1 << 20)
        .initial_connection_window_size(16 << 20)
        .handshake::<_, Bytes>(tls)
        .await
        .expect("HTTP/2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let send = send.ready().await.expect("connection ready");
    // Give the peer's SETTINGS a moment to arrive, to read its stream limit.
    tokio::time::sleep(Duration::from_millis(20)).await;
    send
}

/// Sends one APNs request per token of `tokens` over Herald's pool size of
/// HTTP/2 connections (`limits.max_connections`) with up to Herald's stream
/// limit (`limits.max_streams`) in flight on each: one task per stream slot,
/// each taking the next token from a shared counter.
async fn ceiling(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    payload: &apns::ApnsPayload,
    jwt: &str,
    tokens: std::ops::Range<u64>,
    limits: &PoolLimits,
) -> CeilingRun {
    let (offset, n) = (tokens.start, tokens.end - tokens.start);
    let (conns, streams) = (limits.max_connections, limits.max_streams);
    let next = Arc::new(AtomicU64::new(0));
    let okc = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let first_error = Arc::new(std::sync::Mutex::new(None::<String>));
    let authority: http::uri::Authority = addr.to_string().parse().expect("authority");
    let mut headers = http::HeaderMap::new();
    for (k, v) in payload.headers() {
        headers.append(k.clone(), v.clone());
    }
    let mut auth = http::HeaderValue::from_str(&format!("bearer {jwt}")).expect("JWT header");
    auth.set_sensitive(true);
    headers.insert(http::header::AUTHORIZATION, auth);
    headers.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(payload.body().len()));
    let body = payload.body().clone();
    let mut tasks = Vec::new();
    let mut peer_max = 0;
    for _ in 0..conns {
        let send = connect_h2(addr, tls.clone()).await;
        peer_max = peer_max.max(send.current_max_send_streams());
        for _ in 0..streams {
            let (send, next, okc, failed, first_error) =
                (send.clone(), next.clone(), okc.clone(), failed.clone(), first_error.clone());
            let (headers, body, authority) = (headers.clone(), body.clone(), authority.clone());
            tasks.push(tokio::spawn(async move {
                let mut path = String::with_capacity(80);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    path.clear();
                    path.push_str("/3/device/");
                    path.push_str(&token_hex(offset + i));
                    let uri = http::Uri::builder()
                        .scheme("https")
                        .authority(authority.clone())
                        .path_and_query(path.as_str())
                        .build()
                        .expect("URI");
                    let req = ApnsRequest { uri, headers: headers.clone(), body: body.clone() };
                    let result = req.send(send.clone()).await;
                    match result {
                        Ok(s) if s == http::StatusCode::OK => {
                            okc.fetch_add(1, Ordering::Relaxed);
                        }
                        other => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            let mut e = first_error.lock().expect("lock");
                            if e.is_none() {
                                *e = Some(format!("{other:?}"));
                            }
                        }
                    }
                }
            }));
        }
    }
    for t in tasks {
        t.await.expect("ceiling task");
    }
    let first_error = first_error.lock().expect("lock").clone();
    CeilingRun {
        ok: okc.load(Ordering::Relaxed),
        failed: failed.load(Ordering::Relaxed),
        first_error,
        peer_max_streams: peer_max,
    }
}

/// Prints the simulator's progress each second until dropped.
struct Progress(tokio::task::JoinHandle<()>);

impl Progress {
    fn start(label: &'static str, control: String, total: u64) -> Progress {
        Progress(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut last = 0;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let Ok(r) = http.get(format!("{control}/stats")).send().await else { continue };
                let Ok(s) = r.json::<Stats>().await else { continue };
                say!("  {label}: {} of {total} accepted ({}/s)", s.apns.accepted, s.apns.accepted.saturating_sub(last));
                last = s.apns.accepted;
            }
        }))
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.abort();
    }
}

// ---------------------------------------------------------------------------
// Phase 3: the node-apn peer
// ---------------------------------------------------------------------------

/// What the peer did, or why it could not run.
#[derive(Debug, Default)]
struct NodeRun {
    rate: Option<f64>,
    accepted: u64,
    cpu_s: f64,
    version: Option<String>,
    unavailable: Option<String>,
}

/// Waits for a child within `limit`, killing it after; true when it exited 0.
fn wait_bounded(p: &mut Proc, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        match p.child.try_wait() {
            Ok(Some(s)) if s.success() => return Ok(()),
            Ok(Some(s)) => return Err(format!("{} exited with {s}", p.name)),
            Ok(None) if Instant::now() > deadline => {
                let _ = p.child.kill();
                let _ = p.child.wait();
                return Err(format!("{} still running after {limit:?}: killed", p.name));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// `npm ci` when `node_modules` is missing; the installed node-apn version.
fn node_apn_install(dir: &Path) -> Result<String, String> {
    let node = Command::new("node").arg("--version").output().map_err(|e| format!("node: {e}"))?;
    if !node.status.success() {
        return Err("node --version failed".into());
    }
    let installed = dir.join("node_modules/@parse/node-apn/package.json");
    if !installed.exists() {
        say!("node-apn: npm ci in {}", dir.display());
        let mut p = Proc::spawn(
            "npm ci",
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit()),
        )
        .map_err(|e| format!("npm: {e}"))?;
        wait_bounded(&mut p, Duration::from_secs(300))?;
    }
    let pkg: Value = serde_json::from_slice(&std::fs::read(&installed).map_err(|e| format!("node-apn: {e}"))?)
        .map_err(|e| format!("node-apn package.json: {e}"))?;
    Ok(format!(
        "node {} + @parse/node-apn {}",
        String::from_utf8_lossy(&node.stdout).trim(),
        pkg["version"].as_str().unwrap_or("?")
    ))
}

/// The node-apn peer's inputs.
struct NodePeer<'a> {
    /// `benches/peers/node-apn`.
    dir: PathBuf,
    work: &'a Path,
    sims: &'a Sims,
    /// Its own APNs key.
    creds: &'a herald_sim::Credentials,
    payload: &'a apns::ApnsPayload,
    /// Herald's pool shape: connections, and streams per connection.
    limits: &'a PoolLimits,
}

impl NodePeer<'_> {
    /// Installs the peer when needed, then sends `n` notifications within `limit`.
    async fn run(&self, n: u64, limit: Duration) -> NodeRun {
        let NodePeer { dir, work, sims, creds, payload, limits } = self;
        let dir2 = dir.to_path_buf();
        let version = match tokio::task::spawn_blocking(move || node_apn_install(&dir2)).await.expect("install task") {
            Ok(v) => v,
            Err(e) => {
                say!("node-apn peer unavailable: {e}");
                return NodeRun { unavailable: Some(e), ..NodeRun::default() };
            }
        };
        let payload_file = work.join("node-apn-payload.json");
        std::fs::write(&payload_file, payload.body()).expect("write the payload file");
        let header = |name: &str| {
            payload
                .headers()
                .iter()
                .find(|(k, _)| k.as_str() == name)
                .and_then(|(_, v)| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        sims.reset().await;
        let cpu0 = children_cpu_secs();
        let progress = Progress::start("node-apn", sims.url("control").to_string(), n);
        let spawned = Proc::spawn(
            "node-apn",
            Command::new("node")
                .arg(dir.join("send.js"))
                .arg("--address")
                .arg(sims.apns_addr().to_string())
                .arg("--ca")
                .arg(sims.ca_file())
                .arg("--key")
                .arg(&creds.apns_key_path)
                .args(["--key-id", &creds.apns_key_id, "--team-id", &creds.apns_team_id])
                .args(["--topic", &header("apns-topic")])
                .args(["--push-type", &header("apns-push-type")])
                .args(["--priority", &header("apns-priority")])
                .arg("--payload")
                .arg(&payload_file)
                .args(["--tokens", &n.to_string(), "--token-offset", &TOKENS_A.to_string()])
                .args(["--connections", &limits.max_connections.to_string()])
                .args(["--in-flight", &(limits.max_connections * limits.max_streams).to_string()])
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        );
        let mut p = match spawned {
            Ok(p) => p,
            Err(e) => {
                return NodeRun {
                    unavailable: Some(format!("node: {e}")),
                    version: Some(version),
                    ..NodeRun::default()
                }
            }
        };
        let lines = read_lines(p.child.stdout.take().expect("piped stdout"));
        let (result, summary) = tokio::task::spawn_blocking(move || {
            let r = wait_bounded(&mut p, limit);
            drop(p);
            // The child is gone: its stdout ends, and so does the channel.
            (r, lines.iter().collect::<Vec<String>>())
        })
        .await
        .expect("wait task");
        drop(progress);
        let stats = sims.stats().await.apns;
        let mut run = NodeRun {
            rate: sim_rate(&stats),
            accepted: stats.accepted,
            cpu_s: children_cpu_secs() - cpu0,
            version: Some(version),
            unavailable: None,
        };
        match result {
            Ok(()) => say!("node-apn: {}", summary.join(" ")),
            Err(e) if stats.accepted > 0 => say!("node-apn: {e}; rate from the {} accepted", stats.accepted),
            Err(e) => {
                say!("node-apn peer unavailable: {e}");
                run.rate = None;
                run.unavailable = Some(e);
            }
        }
        run
    }
}

// ---------------------------------------------------------------------------
// Phase 4: the send API load generator and the trivial handler
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proto {
    H1,
    H2,
}

impl Proto {
    fn name(self) -> &'static str {
        match self {
            Proto::H1 => "h1",
            Proto::H2 => "h2",
        }
    }
}

/// One client connection of the load generator.
enum Conn {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Conn {
    async fn open(addr: SocketAddr, proto: Proto) -> Conn {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        tcp.set_nodelay(true).expect("nodelay");
        let io = TokioIo::new(tcp);
        match proto {
            Proto::H1 => {
                let (s, c) = hyper::client::conn::http1::handshake(io).await.expect("HTTP/1.1 handshake");
                tokio::spawn(async move {
                    let _ = c.await;
                });
                Conn::H1(s)
            }
            Proto::H2 => {
                let (s, c) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
                    .timer(TokioTimer::new())
                    .handshake(io)
                    .await
                    .expect("HTTP/2 handshake");
                tokio::spawn(async move {
                    let _ = c.await;
                });
                Conn::H2(s)
            }
        }
    }

    fn share(&self) -> Option<Conn> {
        match self {
            Conn::H1(_) => None,
            Conn::H2(s) => Some(Conn::H2(s.clone())),
        }
    }

    async fn send(&mut self, req: http::Request<Full<Bytes>>) -> Result<(u16, usize), String> {
        let resp = match self {
            Conn::H1(s) => {
                s.ready().await.map_err(|e| e.to_string())?;
                s.send_request(req).await
            }
            Conn::H2(s) => {
                s.ready().await.map_err(|e| e.to_string())?;
                s.send_request(req).await
            }
        }
        .map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.map_err(|e| e.to_string())?;
        Ok((status, body.to_bytes().len()))
    }
}

/// The request the load generator repeats.
#[derive(Clone)]
struct Target {
    addr: SocketAddr,
    path: String,
    bearer: Option<String>,
    body: Bytes,
}

impl Target {
    fn request(&self, proto: Proto) -> http::Request<Full<Bytes>> {
        let mut b = http::Request::builder().method(http::Method::POST);
        b = match proto {
            Proto::H1 => b.uri(self.path.as_str()).header(http::header::HOST, self.addr.to_string()),
            Proto::H2 => b.uri(format!("http://{}{}", self.addr, self.path)),
        };
        b = b.header(http::header::CONTENT_TYPE, "application/json");
        if let Some(t) = &self.bearer {
            b = b.header(http::header::AUTHORIZATION, format!("Bearer {t}"));
        }
        b.body(Full::new(self.body.clone())).expect("request")
    }
}

/// How to load a target.
#[derive(Clone)]
struct Load {
    proto: Proto,
    concurrency: usize,
    duration: Duration,
    /// Open loop at this many requests/s (latency from the scheduled time);
    /// closed loop (as fast as answers come) when `None`.
    rate: Option<f64>,
    /// Ends the run early when set.
    stop: Option<Arc<AtomicBool>>,
    expect_status: u16,
    /// Of a closed loop: ends it after this many requests in all.
    limit: Option<u64>,
}

/// What a load run measured.
#[derive(Debug, Default, Clone)]
struct LoadResult {
    ok: u64,
    errors: u64,
    elapsed: Duration,
    /// Sorted latencies of the successful requests, in microseconds.
    latencies_us: Vec<u32>,
    first_error: Option<String>,
    body_len: usize,
}

impl LoadResult {
    fn rps(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The `q` quantile of latency, in ms.
    fn pct_ms(&self, q: f64) -> Option<f64> {
        if self.latencies_us.is_empty() {
            return None;
        }
        let i = ((self.latencies_us.len() as f64 * q).ceil() as usize).clamp(1, self.latencies_us.len()) - 1;
        Some(self.latencies_us[i] as f64 / 1000.0)
    }
}

/// Runs `load` against `target`: one connection per worker over HTTP/1.1
/// keep-alive, one shared connection over HTTP/2. Connections are opened
/// before the clock starts.
async fn run_load(target: &Target, load: &Load) -> LoadResult {
    let mut conns = Vec::with_capacity(load.concurrency);
    let first = Conn::open(target.addr, load.proto).await;
    for _ in 1..load.concurrency {
        conns.push(match first.share() {
            Some(c) => c,
            None => Conn::open(target.addr, load.proto).await,
        });
    }
    conns.push(first);
    let start = Instant::now();
    let end = start + load.duration;
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for mut conn in conns {
        let (target, load, next) = (target.clone(), load.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut r = LoadResult::default();
            let mut lat = Vec::new();
            loop {
                let now = Instant::now();
                if now >= end || load.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                    break;
                }
                if load.rate.is_none() && load.limit.is_some_and(|l| next.fetch_add(1, Ordering::Relaxed) >= l) {
                    break;
                }
                let scheduled = match load.rate {
                    Some(rate) => {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let at = start + Duration::from_secs_f64(i as f64 / rate);
                        if at >= end {
                            break;
                        }
                        tokio::time::sleep_until(at.into()).await;
                        at
                    }
                    None => now,
                };
                match conn.send(target.request(load.proto)).await {
                    Ok((status, len)) if status == load.expect_status => {
                        r.ok += 1;
                        r.body_len = len;
                        lat.push(scheduled.elapsed().as_micros().min(u32::MAX as u128) as u32);
                    }
                    Ok((status, _)) => {
                        r.errors += 1;
                        r.first_error.get_or_insert_with(|| format!("status {status}"));
                    }
                    Err(e) => {
                        r.errors += 1;
                        r.first_error.get_or_insert(e);
                        // A broken connection: reopen (HTTP/1.1) rather than spin.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        conn = Conn::open(target.addr, load.proto).await;
                    }
                }
            }
            r.latencies_us = lat;
            r
        }));
    }
    let mut total = LoadResult::default();
    for t in tasks {
        let r = t.await.expect("load worker");
        total.ok += r.ok;
        total.errors += r.errors;
        total.latencies_us.extend(r.latencies_us);
        total.body_len = total.body_len.max(r.body_len);
        if total.first_error.is_none() {
            total.first_error = r.first_error;
        }
    }
    total.elapsed = start.elapsed();
    total.latencies_us.sort_unstable();
    total
}

/// A hyper server on 127.0.0.1 with the same protocol settings as Herald's,
/// on a runtime of its own: every request's body is read, then answered
/// `answer` with the status `handle` gives. The send API's baselines; each
/// runs on its own two-thread runtime, as Herald runs in its own process.
struct Loopback {
    addr: SocketAddr,
    rt: Option<tokio::runtime::Runtime>,
}

impl Loopback {
    fn start<F, Fut>(name: &str, answer: Bytes, handle: F) -> Loopback
    where
        F: Fn() -> Fut + Clone + Send + Sync + 'static,
        Fut: std::future::Future<Output = u16> + Send,
    {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(name)
            .enable_all()
            .build()
            .expect("baseline server runtime");
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("address");
        rt.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new()).header_read_timeout(Duration::from_secs(10)).keep_alive(true);
            builder.http2().timer(TokioTimer::new()).max_concurrent_streams(1024);
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (builder, answer, handle) = (builder.clone(), answer.clone(), handle.clone());
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let (answer, handle) = (answer.clone(), handle.clone());
                        async move {
                            let _ = req.into_body().collect().await;
                            http::Response::builder()
                                .status(handle().await)
                                .header(http::header::CONTENT_TYPE, "application/json")
                                .body(Full::new(answer))
                        }
                    });
                    let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                });
            }
        });
        Loopback { addr, rt: Some(rt) }
    }

    /// The trivial handler: 202 at once (the front end's ceiling).
    fn trivial(answer: Bytes) -> Loopback {
        Loopback::start("trivial", answer, || async { 202 })
    }

    /// The forwarding proxy: per request, `request` sent to the APNs
    /// simulator at `sim` over `conns` HTTP/2 connections (opened on the
    /// first request), then 202 (502 if the simulator did not answer 200):
    /// the ceiling of a one-client send, which must reach the provider
    /// before it answers.
    fn proxy(
        sim: SocketAddr,
        tls: Arc<rustls::ClientConfig>,
        request: ApnsRequest,
        conns: usize,
        answer: Bytes,
    ) -> Loopback {
        let senders = Arc::new(tokio::sync::OnceCell::new());
        let (request, next) = (Arc::new(request), Arc::new(AtomicU64::new(0)));
        Loopback::start("proxy", answer, move || {
            let (senders, request, next, tls) = (senders.clone(), request.clone(), next.clone(), tls.clone());
            async move {
                let senders: &Vec<_> = senders
                    .get_or_init(|| async {
                        let mut all = Vec::new();
                        for _ in 0..conns.max(1) {
                            all.push(connect_h2(sim, tls.clone()).await);
                        }
                        all
                    })
                    .await;
                let i = next.fetch_add(1, Ordering::Relaxed) as usize % senders.len();
                match request.send(senders[i].clone()).await {
                    Ok(s) if s == http::StatusCode::OK => 202,
                    _ => 502,
                }
            }
        })
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// `--proxy-child FILE`: serves only the forwarding proxy that FILE (written
/// by [`Bench::proxy`]) describes, prints `listening ADDR`, and runs until
/// killed: a process of its own, so its CPU is measured apart from the load
/// generator's.
fn proxy_child(args: &[String]) {
    let [file] = args else { panic!("usage: load --proxy-child FILE") };
    let spec: Value = serde_json::from_slice(&std::fs::read(file).expect("the proxy's file")).expect("proxy JSON");
    let text = |k: &str| spec[k].as_str().unwrap_or_else(|| panic!("proxy file: {k}")).to_string();
    let bytes = |k: &str| Bytes::from(URL_SAFE_NO_PAD.decode(text(k)).expect("base64"));
    let mut headers = http::HeaderMap::new();
    for pair in spec["headers"].as_array().expect("proxy file: headers") {
        let (Some(k), Some(v)) = (pair[0].as_str(), pair[1].as_str()) else { panic!("proxy file: a header pair") };
        headers.append(
            http::HeaderName::from_bytes(k.as_bytes()).expect("header name"),
            http::HeaderValue::from_str(v).expect("header value"),
        );
    }
    herald_sim::install_crypto_provider();
    let tls = sim_tls(&std::fs::read(text("ca")).expect("CA file"));
    let request = ApnsRequest { uri: text("uri").parse().expect("URI"), headers, body: bytes("body") };
    let sim = text("sim").parse().expect("simulator address");
    let conns = spec["connections"].as_u64().expect("proxy file: connections") as usize;
    let proxy = Loopback::proxy(sim, tls, request, conns, bytes("answer"));
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening {}", proxy.addr).expect("stdout");
    out.flush().expect("stdout");
    drop(out);
    loop {
        std::thread::park();
    }
}

/// The forwarding proxy's process ([`proxy_child`]).
struct ProxyChild {
    proc: Proc,
    addr: SocketAddr,
}

impl ProxyChild {
    fn cpu(&self) -> f64 {
        cpu_secs(self.proc.pid()).unwrap_or(0.0)
    }
}

/// One APNs request as the ceiling and the proxy send it: the device's
/// URI, the headers (JWT included) and the body.
struct ApnsRequest {
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Bytes,
}

impl ApnsRequest {
    /// Sends it on `send` and reads the answer: its status.
    async fn send(&self, send: h2::client::SendRequest<Bytes>) -> Result<http::StatusCode, h2::Error> {
        let mut req =
            http::Request::builder().method(http::Method::POST).uri(self.uri.clone()).body(()).expect("request");
        *req.headers_mut() = self.headers.clone();
        let mut s = send.ready().await?;
        let (resp, mut stream) = s.send_request(req, false)?;
        stream.send_data(self.body.clone(), true)?;
        let resp = resp.await?;
        let status = resp.status();
        let mut b = resp.into_body();
        while let Some(chunk) = b.data().await {
            let chunk = chunk?;
            let _ = b.flow_control().release_capacity(chunk.len());
        }
        Ok(status)
    }
}

/// One send-API measurement (a protocol, a concurrency, a target).
#[derive(Debug, Clone)]
struct ApiPoint {
    server: &'static str,
    proto: Proto,
    c: usize,
    r: LoadResult,
    /// CPU seconds the server spent during the run (Herald's and the proxy's processes).
    server_cpu: Option<f64>,
    /// CPU seconds the simulators spent meanwhile (for the servers above).
    sim_cpu: Option<f64>,
}

impl ApiPoint {
    /// Server CPU per answered request, in microseconds.
    fn cpu_us_per_request(&self) -> Option<f64> {
        self.server_cpu.filter(|_| self.r.ok > 0).map(|c| c * 1e6 / self.r.ok as f64)
    }

    /// The simulators' CPU per answered request, in microseconds.
    fn sim_cpu_us_per_request(&self) -> Option<f64> {
        self.sim_cpu.filter(|_| self.r.ok > 0).map(|c| c * 1e6 / self.r.ok as f64)
    }

    /// Its figures' JSON key prefix: `herald_h1_c64`.
    fn key(&self) -> String {
        format!("{}_{}_c{}", self.server, self.proto.name(), self.c)
    }
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

/// Spread ((max − min) / median) above which a repeated figure is marked noisy.
const NOISY: f64 = 0.2;

/// One figure's values, one per round, in run order: Herald's runs and its
/// baselines' alternate, so run i of one pairs with run i of another.
#[derive(Clone, Debug, Default)]
struct Runs(Vec<f64>);

impl Runs {
    fn median(&self) -> Option<f64> {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(v[n / 2]),
            _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    }

    fn min(&self) -> Option<f64> {
        self.0.iter().copied().reduce(f64::min)
    }

    fn max(&self) -> Option<f64> {
        self.0.iter().copied().reduce(f64::max)
    }

    /// (max − min) / median; none with fewer than two runs or a zero median.
    fn spread(&self) -> Option<f64> {
        let (m, lo, hi) = (self.median()?, self.min()?, self.max()?);
        (self.0.len() > 1 && m != 0.0).then(|| (hi - lo) / m.abs())
    }

    fn noisy(&self) -> bool {
        self.spread().is_some_and(|s| s > NOISY)
    }

    /// Run i of `self` over run i of `base`: a ratio's values round by round.
    fn over(&self, base: &Runs) -> Runs {
        Runs(self.0.iter().zip(&base.0).filter(|(_, b)| **b != 0.0).map(|(a, b)| a / b).collect())
    }
}

/// A figure as reported: the median of its runs (of a ratio: the ratio of
/// the medians) and the runs behind it (of a ratio: the rounds' ratios).
#[derive(Clone, Debug, Default)]
struct Fig {
    value: Option<f64>,
    runs: Runs,
}

/// Other names of measured figures (JSON key, figure): the headline keys.
const ALIASES: &[(&str, &str)] = &[
    ("send_api_rps_c64", "herald_h1_c64_rps"),
    ("trivial_rps_c64", "trivial_h1_c64_rps"),
    ("proxy_rps_c64_h1", "proxy_h1_c64_rps"),
    ("proxy_rps_c64_h2", "proxy_h2_c64_rps"),
    ("send_api_cpu_us_per_notification", "herald_h1_c64_cpu_us_per_request"),
    ("proxy_cpu_us_per_notification", "proxy_h1_c64_cpu_us_per_request"),
];

/// Ratios of two figures (JSON key, numerator, denominator).
const RATIOS: &[(&str, &str, &str)] = &[
    ("fanout_vs_ceiling", "fanout_per_s", "ceiling_per_s"),
    ("fanout_vs_node_apn", "fanout_per_s", "node_apn_per_s"),
    ("fanout_cpu_vs_bare", "fanout_cpu_us_per_notification", "ceiling_cpu_us_per_notification"),
    ("node_apn_cpu_vs_fanout", "node_apn_cpu_us_per_notification", "fanout_cpu_us_per_notification"),
    ("send_api_vs_trivial", "herald_h1_c64_rps", "trivial_h1_c64_rps"),
    ("send_api_vs_proxy", "herald_h1_c64_rps", "proxy_h1_c64_rps"),
    ("send_api_vs_proxy_h1", "herald_h1_c64_rps", "proxy_h1_c64_rps"),
    ("send_api_vs_proxy_h2", "herald_h2_c64_rps", "proxy_h2_c64_rps"),
    ("send_api_cpu_vs_proxy", "herald_h1_c64_cpu_us_per_request", "proxy_h1_c64_cpu_us_per_request"),
    ("c256_vs_c64", "herald_h1_c256_rps", "herald_h1_c64_rps"),
    ("c256_vs_c64_h2", "herald_h2_c256_rps", "herald_h2_c64_rps"),
    ("batch_vs_single", "batch_per_s", "herald_h1_c64_rps"),
    ("batch_vs_fanout", "batch_per_s", "fanout_per_s"),
    ("send_api_instructions_vs_proxy", "herald_instructions_per_send", "proxy_instructions_per_send"),
    ("batch_event_instructions_vs_send", "herald_instructions_per_batch_event", "herald_instructions_per_send"),
];

/// A target of the team (issue 23's table and the earlier ones): the JSON
/// key it reads, how it compares, and whether it holds only at 1M tokens.
struct Goal {
    key: &'static str,
    op: &'static str,
    goal: f64,
    at_1m: bool,
}

const GOALS: &[Goal] = &[
    Goal { key: "fanout_vs_ceiling", op: "≥", goal: 0.95, at_1m: false },
    Goal { key: "fanout_cpu_vs_bare", op: "≤", goal: 1.15, at_1m: false },
    Goal { key: "send_api_vs_proxy_h1", op: "≥", goal: 0.7, at_1m: false },
    Goal { key: "send_api_vs_proxy_h2", op: "≥", goal: 0.7, at_1m: false },
    Goal { key: "send_api_p99_ms_half_load", op: "<", goal: 5.0, at_1m: false },
    Goal { key: "c256_vs_c64", op: "≥", goal: 0.9, at_1m: false },
    Goal { key: "batch_vs_single", op: "≥", goal: 3.0, at_1m: false },
    Goal { key: "batch_vs_fanout", op: "≥", goal: 0.6, at_1m: false },
    Goal { key: "interactive_p99_ms_during_broadcast", op: "<", goal: 50.0, at_1m: false },
    Goal { key: "fairness_ratio", op: "<", goal: 1.5, at_1m: false },
    Goal { key: "bytes_per_client", op: "≤", goal: 400.0, at_1m: false },
    Goal { key: "peak_rss_mib", op: "<", goal: 256.0, at_1m: true },
    Goal { key: "herald_startup_ms", op: "<", goal: 2000.0, at_1m: true },
];

impl Goal {
    fn met(&self, v: f64) -> bool {
        meets(v, self.op, self.goal)
    }
}

/// Whether `v` meets `op goal` (`≥`, `≤` or `<`).
fn meets(v: f64, op: &str, goal: f64) -> bool {
    match op {
        "≥" => v >= goal,
        "≤" => v <= goal,
        _ => v < goal,
    }
}

/// Everything measured, for the table and the JSON.
#[derive(Default)]
struct Results {
    tokens: u64,
    /// Rounds of each load point.
    repeats: usize,
    /// Figures measured once per round, by JSON key (see [`Results::fig`]).
    figures: std::collections::BTreeMap<String, Runs>,
    /// Item 7: bytes the records take at each step (what, bytes).
    retention: Vec<(String, u64)>,
    /// Item 8: per engine count (1, 2), the broadcast's rate and PostgreSQL's CPU share.
    nodes: Vec<(usize, Option<f64>, f64)>,
    ceiling_connections: u64,
    ceiling_streams: usize,
    /// The last node-apn run (its version, or why it could not run).
    node: NodeRun,
    /// Every send-API run (for their errors).
    api: Vec<ApiPoint>,
    /// The rate of the half-load runs and what it is half of.
    half_load_rate: Option<(f64, &'static str)>,
    /// [`speed_probe`]s: every one taken (the run's fastest is the machine
    /// at full speed), and per half-load round of Herald the slower of those
    /// before and after it.
    speeds: Vec<f64>,
    half_load_speeds: Vec<f64>,
    /// Herald's storage flushes during the half-load runs and during phase 5.
    half_load_flushes: Option<Hist>,
    phase5_flushes: Option<Hist>,
    /// Herald's resident set before the first broadcast and its peak after the last, MiB.
    rss_before: Option<f64>,
    peak_rss: Option<f64>,
    bytes_per_client: Option<f64>,
    /// The data directory per client once the first broadcast recorded its outcomes.
    bytes_per_client_after_broadcast: Option<f64>,
    seed_per_s: Option<f64>,
    /// Closing the store after seeding N clients: the log replay that a
    /// stop spares the next start, and that a start after a crash pays.
    seed_close: Option<Duration>,
    /// sled's cleaner compacting the seeded store before it closes (see `settle`).
    seed_settle: Option<Duration>,
    /// SIGTERM to exit of the Herald of items 1 to 4, after their broadcasts.
    stop: Option<Duration>,
    startup: Option<Duration>,
    startup_2n: Option<Duration>,
    /// Whether phase 5's broadcasts all completed; `None` when it did not run.
    phase5_complete: Option<bool>,
    /// Item 9.
    webpush: WebPushRun,
    /// Other processes' share of the machine's CPU per phase, the most of its rounds (see [`Foreign`]).
    foreign: Vec<(&'static str, f64)>,
    /// Herald's provider round trips during the fan-outs and during phase 5.
    fanout_provider: Option<Hist>,
    phase5_provider: Option<Hist>,
    /// The interactive lane's provider round trips during phase 5.
    phase5_interactive_provider: Option<Hist>,
    /// Herald's own time for the interactive sends of phase 5.
    phase5_send: Option<Hist>,
}

impl Results {
    /// Records one round's value of a figure (nothing when not measured).
    fn add(&mut self, key: &str, v: Option<f64>) {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            self.figures.entry(key.to_string()).or_default().0.push(v);
        }
    }

    /// A figure by its JSON key: measured, an alias of one, or a ratio of two.
    fn fig(&self, key: &str) -> Fig {
        if let Some(&(_, a, b)) = RATIOS.iter().find(|r| r.0 == key) {
            let (a, b) = (self.fig(a), self.fig(b));
            return Fig { value: ratio(a.value, b.value), runs: a.runs.over(&b.runs) };
        }
        let key = ALIASES.iter().find(|a| a.0 == key).map_or(key, |a| a.1);
        let runs = self.figures.get(key).cloned().unwrap_or_default();
        Fig { value: runs.median(), runs }
    }

    /// A figure's median.
    fn median(&self, key: &str) -> Option<f64> {
        self.fig(key).value
    }

    /// Notes other processes' share during one round of a phase: the most of its rounds.
    fn note_foreign(&mut self, phase: &'static str, share: f64) {
        match self.foreign.iter_mut().find(|(p, _)| *p == phase) {
            Some(f) => f.1 = f.1.max(share),
            None => self.foreign.push((phase, share)),
        }
    }

    /// Takes a [`speed_probe`] and keeps it.
    fn probe_speed(&mut self) -> f64 {
        let v = speed_probe();
        self.speeds.push(v);
        v
    }

    /// `speed` as a share of the fastest probe so far.
    fn speed_share(&self, speed: f64) -> f64 {
        let best = self.speeds.iter().copied().fold(speed, f64::max);
        if best > 0.0 {
            speed / best
        } else {
            0.0
        }
    }

    /// The half-load rounds' machine speeds, as shares of the run's fastest probe.
    fn half_load_speed_shares(&self) -> Vec<f64> {
        self.half_load_speeds.iter().map(|v| self.speed_share(*v)).collect()
    }

    /// Records one send-API run.
    fn add_api(&mut self, p: ApiPoint) {
        let key = p.key();
        self.add(&format!("{key}_rps"), Some(p.r.rps()));
        self.add(&format!("{key}_p50_ms"), p.r.pct_ms(0.5));
        self.add(&format!("{key}_p99_ms"), p.r.pct_ms(0.99));
        self.add(&format!("{key}_cpu_us_per_request"), p.cpu_us_per_request());
        self.add(&format!("{key}_sim_cpu_us_per_request"), p.sim_cpu_us_per_request());
        // The latencies are in the figures now; the rest stays for errors.
        self.api.push(ApiPoint { r: LoadResult { latencies_us: Vec::new(), ..p.r }, ..p });
    }

    /// Failed requests over all runs of a send-API point.
    fn api_errors(&self, key: &str) -> Option<u64> {
        let runs: Vec<&ApiPoint> = self.api.iter().filter(|p| p.key() == key).collect();
        (!runs.is_empty()).then(|| runs.iter().map(|p| p.r.errors).sum())
    }

    /// Folds one round's histogram into a phase's.
    fn merge(into: &mut Option<Hist>, h: Hist) {
        *into = Some(match into.take() {
            Some(acc) => acc.plus(&h),
            None => h,
        });
    }
}

/// What every phase shares.
struct Bench {
    opts: Options,
    root: PathBuf,
    out_dir: PathBuf,
    work: PathBuf,
    data: PathBuf,
    sims: Sims,
    http: reqwest::Client,
    limits: PoolLimits,
    creds_a: herald_sim::Credentials,
    creds_b: herald_sim::Credentials,
    creds_ceiling: herald_sim::Credentials,
    /// The forwarding proxy's: a key of its own, so that the bare client's
    /// tokens (signed each round) never make the simulator refuse the
    /// proxy's as too frequent an update (`TooManyProviderTokenUpdates`).
    creds_proxy: herald_sim::Credentials,
    /// The proxy's JWT, signed once: a second proxy (`--callgrind`) signing
    /// its own would be refused as too frequent an update too.
    proxy_jwt: std::sync::OnceLock<String>,
    creds_node: herald_sim::Credentials,
    /// Herald's APNs request for the benchmark's notification.
    payload: apns::ApnsPayload,
    res: Results,
}

async fn run(opts: Options) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out_dir = root.join("target/bench");
    std::fs::create_dir_all(&out_dir).expect("target/bench");
    let tmp = tempfile::Builder::new().prefix("load-").tempdir_in(&out_dir).expect("work dir");
    let work = tmp.path().to_path_buf();
    let n = opts.tokens;
    say!(
        "Herald load benchmark: {n} tokens, phases of {:?}, {} rounds{}, items {:?}; work dir {}",
        opts.phase,
        opts.repeats,
        if opts.quick { " (quick)" } else { "" },
        opts.only,
        work.display()
    );
    // Simulators and credentials: one APNs key per sender, so that no sender's
    // JWT counts as a too-frequent update of another's key.
    let sims = Sims::start(&work.join("certs"));
    say!("simulators (pid {}) on {}", sims.proc.pid(), sims.url("apns"));
    let creds_a = sims.credentials(&work.join("creds-a"));
    let mut b = Bench {
        payload: herald_apns_payload(&creds_a.bundle_id),
        creds_b: sims.credentials(&work.join("creds-b")),
        creds_ceiling: sims.credentials(&work.join("creds-ceiling")),
        creds_proxy: sims.credentials(&work.join("creds-proxy")),
        proxy_jwt: std::sync::OnceLock::new(),
        creds_node: sims.credentials(&work.join("creds-node")),
        creds_a,
        data: work.join("data"),
        http: reqwest::Client::new(),
        limits: PoolLimits::default(),
        res: Results { tokens: n, repeats: opts.repeats, ..Results::default() },
        opts,
        root,
        out_dir,
        work,
        sims,
    };

    let only = b.opts.only.clone();
    let wants = |items: &[u8]| items.iter().any(|i| only.contains(i));
    if wants(&[1, 4, 5, 6, 7, 8]) {
        // Items 1, 4 and 6 share one Herald on tenant A's seeded data.
        let (send_client, vip_client) = b.setup().await;
        b.seed_tenant_a().await;
        let herald = Herald::start(&b.data, &b.sims);
        b.res.startup = Some(herald.startup);
        let admin_a = admin_token(&b.http, &herald, TENANT_A).await;
        // Items 1 to 3 alternate: Herald's fan-out, the bare client, node-apn, Herald's...
        for round in 1..=b.opts.repeats {
            if wants(&[1]) {
                b.fanout(&herald, &admin_a, round).await;
            }
            if wants(&[2]) {
                b.ceiling(round).await;
            }
            if wants(&[3]) {
                b.node_apn(round).await;
            }
        }
        if wants(&[4]) {
            b.send_api(&herald, &admin_a, &send_client).await;
        }
        // Its store closes with a snapshot, so the next start (phase 5) reads that.
        b.res.stop = Some(herald.stop());
        if wants(&[4]) && b.opts.callgrind {
            b.instructions(&send_client).await;
        }
        if wants(&[7]) {
            b.retention(&send_client).await;
        }
        if wants(&[8]) && POSTGRES.get().is_some() {
            b.nodes().await;
        }
        if wants(&[5]) {
            b.mixed(&vip_client).await;
        }
    } else {
        for round in 1..=b.opts.repeats {
            if wants(&[2]) {
                b.ceiling(round).await;
            }
            if wants(&[3]) {
                b.node_apn(round).await;
            }
        }
    }
    if wants(&[9]) {
        b.webpush_fanout().await;
    }
    if !wants(&[3]) || !b.opts.node {
        b.res.node.unavailable = Some("not run".into());
    }
    drop(b.sims);

    let json = results_json(&b.res);
    println!("{}", table(&b.res, &b.opts));
    let path = b.out_dir.join("load.json");
    std::fs::write(&path, serde_json::to_string_pretty(&json).expect("JSON")).expect("write load.json");
    say!("wrote {}", path.display());
    if b.opts.keep {
        say!("kept the work dir {}", tmp.keep().display());
    }
}

impl Bench {
    /// Tenants A and B with an app each (their own credential sets), and two
    /// clients of tenant A registered through the API: one for the send API
    /// (user `sender`), one for the interactive sends of item 5 (user `vip`).
    async fn setup(&mut self) -> (String, String) {
        let http = &self.http;
        let h = Herald::start(&self.data, &self.sims);
        for t in [TENANT_A, TENANT_B] {
            let body = json!({"tenantId": t, "adminUsername": "admin", "adminPassword": PASSWORD});
            ok("create tenant", api(http, &h, reqwest::Method::POST, "/v1/tenants", Some(OPERATOR), Some(body)).await);
        }
        let admin_a = admin_token(http, &h, TENANT_A).await;
        let admin_b = admin_token(http, &h, TENANT_B).await;
        for (t, admin, creds) in [(TENANT_A, &admin_a, &self.creds_a), (TENANT_B, &admin_b, &self.creds_b)] {
            let path = format!("/v1/tenants/{t}/apps/{APP}");
            ok(
                "save app",
                api(http, &h, reqwest::Method::POST, &path, Some(admin), Some(creds.app_json.clone())).await,
            );
        }
        let send_client = register_client(http, &h, TENANT_A, &admin_a, "sender", SEND_TOKEN).await;
        let vip_client = register_client(http, &h, TENANT_A, &admin_a, "vip", VIP_TOKEN).await;
        (send_client, vip_client)
    }

    /// Item 6, storage: N clients of tenant A into the stopped Herald's data
    /// directory, then its size per client.
    async fn seed_tenant_a(&mut self) {
        let n = self.opts.tokens;
        say!("seeding {n} clients of {TENANT_A}");
        let d = self.data.clone();
        let Seeded { written: took, settled, closed: close } =
            tokio::task::spawn_blocking(move || seed(&d, TENANT_A, n, TOKENS_A)).await.expect("seed task");
        self.res.seed_per_s = Some(n as f64 / took.as_secs_f64());
        self.res.seed_settle = Some(settled);
        self.res.seed_close = Some(close);
        let bytes = stored_bytes(&self.data);
        self.res.bytes_per_client = Some(bytes as f64 / (n + 2) as f64);
        say!(
            "seeded in {took:.2?} ({:.0} clients/s), compacted in {settled:.2?}, closed in {close:.2?}; data dir {:.1} MiB = {:.0} bytes/client",
            n as f64 / took.as_secs_f64(),
            bytes as f64 / 1048576.0,
            self.res.bytes_per_client.unwrap_or(0.0)
        );
    }

    /// Item 7: retention. Herald with a 15 s report retention takes two
    /// rounds of one-client sends; the bytes its records take before, after
    /// each round and once the sweeper deleted that round's reports.
    async fn retention(&mut self, send_client: &str) {
        let n = if self.opts.quick { 20_000 } else { 200_000 };
        let herald = Herald::start_with(&self.data, &self.sims, &[("HERALD_REPORT_RETENTION", "15s")]);
        let admin = admin_token(&self.http, &herald, TENANT_A).await;
        let target = Target {
            addr: herald.addr,
            path: format!("/v1/tenants/{TENANT_A}/push_notification/send"),
            bearer: Some(admin),
            body: Bytes::from(one_client_body(TENANT_A, "sender", send_client).to_string()),
        };
        say!("phase 7: retention, {n} sends per round, reports kept 15 s");
        // Earlier items' reports go first: the figures start from none.
        wait_for_reports(&self.http, &herald, 0.0).await;
        let mut sizes = vec![("before".to_string(), stored_bytes(&self.data))];
        for round in 1..=2 {
            // As fast as Herald answers (C=64), in 2 s runs until n are sent (bounded: 10 minutes).
            let load = Load {
                proto: Proto::H1,
                concurrency: 64,
                duration: Duration::from_secs(2),
                rate: None,
                stop: None,
                expect_status: 202,
                limit: None,
            };
            let t0 = Instant::now();
            let (mut sent, mut errors) = (0, 0);
            while sent < n && t0.elapsed() < Duration::from_secs(600) {
                let r = run_load(&target, &load).await;
                (sent, errors) = (sent + r.ok, errors + r.errors);
            }
            say!("  round {round}: {sent} sends in {:.1?}, {errors} errors", t0.elapsed());
            sizes.push((format!("after {sent} sends (round {round})"), stored_bytes(&self.data)));
            let t1 = Instant::now();
            wait_for_reports(&self.http, &herald, 0.01 * n as f64).await;
            say!("  round {round}: reports swept {:.1?} after the last send", t1.elapsed());
            sizes.push((format!("after retention (round {round})"), stored_bytes(&self.data)));
        }
        // sled frees a segment once nothing live is left in it, in the background.
        tokio::time::sleep(Duration::from_secs(if self.opts.quick { 5 } else { 60 })).await;
        sizes.push(("a minute later".to_string(), stored_bytes(&self.data)));
        for (what, bytes) in &sizes {
            say!("  {what}: {:.1} MiB", *bytes as f64 / 1048576.0);
        }
        self.res.retention = sizes;
    }

    /// Item 8: tenant A's broadcast with one engine, then with two on the
    /// same database; the rates and PostgreSQL's share of the CPU.
    async fn nodes(&mut self) {
        let n = self.opts.tokens;
        let key = self.data.join("master.key").display().to_string();
        let first = Herald::start_with(&self.data, &self.sims, &[("HERALD_NODE_ID", "bench-1")]);
        let admin = admin_token(&self.http, &first, TENANT_A).await;
        let mut second = None;
        for engines in [1usize, 2] {
            if engines == 2 {
                let env = [("HERALD_NODE_ID", "bench-2"), ("HERALD_MASTER_KEY_FILE", key.as_str())];
                second = Some(Herald::start_with(&self.work.join("data-2"), &self.sims, &env));
            }
            say!("phase 8: broadcast to {n} tokens with {engines} engine(s) on one PostgreSQL");
            self.sims.reset().await;
            let (pg0, t0) = (postgres_cpu(), Instant::now());
            let id = start_broadcast(&self.http, &first, TENANT_A, &admin).await;
            let deadline = Duration::from_secs(60 + n / 1000);
            let b = watch(&self.http, &first, &self.sims, &[(TENANT_A, &admin, id)], n + 2, deadline).await.remove(0);
            let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as f64;
            let share = (postgres_cpu() - pg0) / t0.elapsed().as_secs_f64() / cores;
            let rate = sim_rate(&b.stats);
            say!("  {engines} engine(s): {:.0}/s, PostgreSQL {:.0}% of the CPU", rate.unwrap_or(0.0), share * 100.0);
            self.res.nodes.push((engines, rate, share));
        }
        drop(second);
    }

    /// Item 1: one topic broadcast to tenant A's N tokens (one round of `repeats`).
    async fn fanout(&mut self, herald: &Herald, admin: &str, round: usize) {
        let (n, res, sims) = (self.opts.tokens, &mut self.res, &self.sims);
        say!("phase 1 (round {round} of {}): broadcast to {n} APNs tokens through Herald", self.opts.repeats);
        sims.reset().await;
        if round == 1 {
            res.rss_before = rss_mib(herald.pid());
        }
        let (h_cpu0, s_cpu0) = (herald.cpu(), sims.cpu());
        let foreign = Foreign::start(&[herald.pid(), sims.proc.pid()]);
        let provider_before = provider_hist(&self.http, herald, "bulk").await;
        let perf = Perf::start(self.opts.perf && round == 1, herald.pid(), &self.out_dir.join("perf-fanout.data"));
        let posted = Instant::now();
        let id = start_broadcast(&self.http, herald, TENANT_A, admin).await;
        res.add("fanout_answer_ms", Some(posted.elapsed().as_secs_f64() * 1e3));
        let deadline = Duration::from_secs(60 + n / 1000);
        let b = watch(&self.http, herald, sims, &[(TENANT_A, admin, id)], n + 2, deadline).await.remove(0);
        perf.stop();
        res.note_foreign("fan-out", foreign.share());
        Results::merge(
            &mut res.fanout_provider,
            provider_hist(&self.http, herald, "bulk").await.since(&provider_before),
        );
        let (herald_cpu, sim_cpu) = (herald.cpu() - h_cpu0, sims.cpu() - s_cpu0);
        let per = |cpu: f64| (b.stats.accepted > 0).then(|| cpu * 1e6 / b.stats.accepted as f64);
        let rate = sim_rate(&b.stats);
        res.add("fanout_per_s", rate);
        res.add("fanout_herald_cpu_s", Some(herald_cpu));
        res.add("fanout_sim_cpu_s", Some(sim_cpu));
        res.add("fanout_cpu_us_per_notification", per(herald_cpu));
        res.add("fanout_sim_cpu_us_per_notification", per(sim_cpu));
        res.add("fanout_herald_completion_ms", b.herald_ms.map(|v| v as f64));
        res.add("fanout_sim_connections", Some(b.stats.connections as f64));
        res.add("fanout_streams_in_flight_mean", b.streams_mean);
        res.add("fanout_streams_in_flight_max", b.streams_max);
        res.peak_rss = peak_rss_mib(herald.pid());
        if round == 1 {
            res.bytes_per_client_after_broadcast = Some(stored_bytes(&self.data) as f64 / (n + 2) as f64);
        }
        if !b.completed || b.report["counts"]["sent"].as_u64() != Some(n + 2) {
            say!("fan-out incomplete or with failures: {}", b.report["counts"]);
        }
        say!(
            "fan-out: {:.0}/s, {} connections, herald CPU {herald_cpu:.1} s, simulator CPU {sim_cpu:.1} s, RSS {:.1} MiB before, peak {:.1} MiB",
            rate.unwrap_or(0.0),
            b.stats.connections,
            res.rss_before.unwrap_or(0.0),
            res.peak_rss.unwrap_or(0.0)
        );
    }

    /// Item 2: the bare h2 client, shaped like Herald's pool unless
    /// `--ceiling-connections`/`--ceiling-streams` say otherwise.
    async fn ceiling(&mut self, round: usize) {
        let (n, res, sims) = (self.opts.tokens, &mut self.res, &self.sims);
        let shape = PoolLimits {
            max_connections: self.opts.ceiling_connections.unwrap_or(self.limits.max_connections),
            max_streams: self.opts.ceiling_streams.unwrap_or(self.limits.max_streams),
            ..self.limits.clone()
        };
        say!(
            "phase 2 (round {round} of {}): bare h2 client, {n} requests over {} connections x {} streams",
            self.opts.repeats,
            shape.max_connections,
            shape.max_streams
        );
        let c = &self.creds_ceiling;
        let jwt = sign_apns_jwt(&c.apns_key_pem, &c.apns_key_id, &c.apns_team_id);
        let tls = sim_tls(&std::fs::read(sims.ca_file()).expect("CA file"));
        sims.reset().await;
        let (c_cpu0, s_cpu0) = (cpu_secs(std::process::id()).unwrap_or(0.0), sims.cpu());
        // An idle Herald may still be running: its CPU counts as ours.
        let foreign = Foreign::start(&[sims.proc.pid()]);
        let progress = Progress::start("ceiling", sims.url("control").to_string(), n);
        let tokens = TOKENS_A..TOKENS_A + n;
        let run = ceiling(sims.apns_addr(), tls, &self.payload, &jwt, tokens, &shape);
        let c = tokio::time::timeout(Duration::from_secs(60 + n / 2000), run).await;
        drop(progress);
        res.note_foreign("ceiling", foreign.share());
        let client_cpu = cpu_secs(std::process::id()).unwrap_or(0.0) - c_cpu0;
        let sim_cpu = sims.cpu() - s_cpu0;
        let s = sims.stats().await.apns;
        let per = |cpu: f64| (s.accepted > 0).then(|| cpu * 1e6 / s.accepted as f64);
        let rate = sim_rate(&s);
        res.add("ceiling_per_s", rate);
        res.add("ceiling_client_cpu_s", Some(client_cpu));
        res.add("ceiling_sim_cpu_s", Some(sim_cpu));
        res.add("ceiling_cpu_us_per_notification", per(client_cpu));
        res.add("ceiling_sim_cpu_us_per_notification", per(sim_cpu));
        res.ceiling_connections = s.connections;
        // h2 reports no limit until the peer's SETTINGS arrive; the pool's cap applies either way.
        match c {
            Ok(c) => {
                res.ceiling_streams = c.peer_max_streams.min(shape.max_streams);
                say!(
                    "ceiling: {:.0}/s ({} ok, {} failed{}), client CPU {client_cpu:.1} s, simulator CPU {sim_cpu:.1} s",
                    rate.unwrap_or(0.0),
                    c.ok,
                    c.failed,
                    c.first_error.map(|e| format!(", first: {e}")).unwrap_or_default(),
                )
            }
            Err(_) => say!("ceiling: timed out; rate from the {} accepted", s.accepted),
        }
    }

    /// Item 3: the node-apn peer (reported unavailable when node or npm
    /// fail, and then not tried again in later rounds).
    async fn node_apn(&mut self, round: usize) {
        if !self.opts.node || (round > 1 && self.res.node.unavailable.is_some()) {
            return;
        }
        let n = self.opts.tokens;
        say!("phase 3 (round {round} of {}): @parse/node-apn, {n} notifications", self.opts.repeats);
        let s_cpu0 = self.sims.cpu();
        let foreign = Foreign::start(&[self.sims.proc.pid()]);
        let limit = Duration::from_secs(if self.opts.quick { 60 } else { 120 + n / 2000 });
        let peer = NodePeer {
            dir: self.root.join("benches/peers/node-apn"),
            work: &self.work,
            sims: &self.sims,
            creds: &self.creds_node,
            payload: &self.payload,
            limits: &self.limits,
        };
        let run = peer.run(n, limit).await;
        self.res.note_foreign("node-apn", foreign.share());
        let sim_cpu = self.sims.cpu() - s_cpu0;
        if let Some(r) = run.rate {
            let per = |cpu: f64| (run.accepted > 0).then(|| cpu * 1e6 / run.accepted as f64);
            self.res.add("node_apn_per_s", Some(r));
            self.res.add("node_apn_cpu_s", Some(run.cpu_s));
            self.res.add("node_apn_cpu_us_per_notification", per(run.cpu_s));
            self.res.add("node_apn_sim_cpu_us_per_notification", per(sim_cpu));
            say!(
                "node-apn: {r:.0}/s ({} accepted), node CPU {:.1} s, simulator CPU {sim_cpu:.1} s",
                run.accepted,
                run.cpu_s,
            );
        }
        self.res.node = run;
    }

    /// The forwarding proxy of item 4, over Herald's pool size of
    /// connections to the APNs simulator, answering `answer`, in a process
    /// of its own: this executable with `--proxy-child`.
    fn proxy(&self, answer: Bytes) -> ProxyChild {
        self.proxy_under(answer, &[])
    }

    /// [`Bench::proxy`] as an argument of `wrapper` (see [`Herald::start_under`]).
    fn proxy_under(&self, answer: Bytes, wrapper: &[String]) -> ProxyChild {
        let c = &self.creds_proxy;
        let jwt = self.proxy_jwt.get_or_init(|| sign_apns_jwt(&c.apns_key_pem, &c.apns_key_id, &c.apns_team_id));
        let sim = self.sims.apns_addr();
        let mut headers = http::HeaderMap::new();
        for (k, v) in self.payload.headers() {
            headers.append(k.clone(), v.clone());
        }
        headers
            .insert(http::header::AUTHORIZATION, http::HeaderValue::from_str(&format!("bearer {jwt}")).expect("JWT"));
        headers.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(self.payload.body().len()));
        let uri = http::Uri::builder()
            .scheme("https")
            .authority(sim.to_string())
            .path_and_query(format!("/3/device/{}", token_hex(SEND_TOKEN)))
            .build()
            .expect("URI");
        let headers: Vec<(&str, &str)> =
            headers.iter().map(|(k, v)| (k.as_str(), v.to_str().expect("an ASCII header"))).collect();
        let spec = json!({
            "sim": sim.to_string(),
            "ca": self.sims.ca_file(),
            "connections": self.opts.proxy_connections.unwrap_or(self.limits.max_connections),
            "uri": uri.to_string(),
            "headers": headers,
            "body": URL_SAFE_NO_PAD.encode(self.payload.body()),
            "answer": URL_SAFE_NO_PAD.encode(&answer),
        });
        let file = self.work.join("proxy.json");
        std::fs::write(&file, spec.to_string()).expect("write the proxy's file");
        let mut proc = Proc::spawn(
            "proxy",
            wrapped(wrapper, std::env::current_exe().expect("current exe"))
                .arg("--proxy-child")
                .arg(&file)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        )
        .expect("start the forwarding proxy");
        let lines = read_lines(proc.child.stdout.take().expect("piped stdout"));
        // Under valgrind, reading this executable's debug information takes a while.
        let line = lines.recv_timeout(Duration::from_secs(120)).expect("the proxy starts within 120 s");
        let addr = line.strip_prefix("listening ").expect("the proxy's address").parse().expect("proxy address");
        say!("forwarding proxy (pid {}) on {addr}", proc.pid());
        ProxyChild { proc, addr }
    }

    /// Item 4's loads on `herald`: a one-client send to `send_client` (sent
    /// once here, it must succeed), and a send-batch of [`BATCH`] of them;
    /// with Herald's answer to the send, which the baselines give back.
    async fn send_targets(&self, herald: &Herald, admin: &str, send_client: &str) -> (Target, Target, Bytes) {
        let path = format!("/v1/tenants/{TENANT_A}/push_notification/send");
        let send_body = one_client_body(TENANT_A, "sender", send_client);
        let (st, answer) =
            api(&self.http, herald, reqwest::Method::POST, &path, Some(admin), Some(send_body.clone())).await;
        assert_eq!(st, 202, "one-client send: {answer}");
        assert_eq!(answer[0]["isSuccessful"], true, "one-client send: {answer}");
        let single = Target {
            addr: herald.addr,
            path,
            bearer: Some(admin.to_string()),
            body: Bytes::from(send_body.to_string()),
        };
        let batch = Target {
            path: format!("/v1/tenants/{TENANT_A}/push_notification/send-batch"),
            body: Bytes::from(json!({ "events": vec![send_body; BATCH] }).to_string()),
            ..single.clone()
        };
        (single, batch, Bytes::from(serde_json::to_vec(&answer).expect("answer JSON")))
    }

    /// Item 4: one-client sends at each concurrency over HTTP/1.1 and HTTP/2,
    /// against Herald, the forwarding proxy and the trivial handler in turn,
    /// `repeats` rounds per point (send-batch joins the rounds of HTTP/1.1
    /// C=64); then p99 at half the proxy's C=64 rate, Herald and the proxy
    /// in turn.
    async fn send_api(&mut self, herald: &Herald, admin: &str, send_client: &str) {
        let (phase, repeats, perf_on) = (self.opts.phase, self.opts.repeats, self.opts.perf);
        say!("phase 4: send API, one client, {phase:?} per run, {repeats} rounds per point");
        let (herald_target, batch_target, answer) = self.send_targets(herald, admin, send_client).await;
        // The trivial handler answers with Herald's own answer: the same size.
        let trivial = Loopback::trivial(answer.clone());
        let trivial_target = Target { addr: trivial.addr, ..herald_target.clone() };
        let proxy = self.proxy(answer);
        let proxy_target = Target { addr: proxy.addr, ..herald_target.clone() };
        // The machine's speed before any load: a reference for the half-load rounds' probes.
        self.res.probe_speed();
        let foreign = Foreign::start(&[herald.pid(), self.sims.proc.pid(), proxy.proc.pid()]);
        for proto in [Proto::H1, Proto::H2] {
            for conc in self.opts.concurrency.clone() {
                for round in 1..=repeats {
                    let servers = [("herald", &herald_target), ("proxy", &proxy_target), ("trivial", &trivial_target)];
                    for (server, target) in servers {
                        let perf = Perf::start(
                            perf_on && round == 1 && server == "herald" && conc == 64,
                            herald.pid(),
                            &self.out_dir.join(match proto {
                                Proto::H1 => "perf-send-api.data",
                                Proto::H2 => "perf-send-api-h2.data",
                            }),
                        );
                        let load = Load {
                            proto,
                            concurrency: conc,
                            duration: phase,
                            rate: None,
                            stop: None,
                            expect_status: 202,
                            limit: None,
                        };
                        let server_cpu = || match server {
                            "herald" => Some(herald.cpu()),
                            "proxy" => Some(proxy.cpu()),
                            _ => None,
                        };
                        // Herald's own time per send and its provider round trips: where the time goes.
                        let hists = match server {
                            "herald" => Some((
                                send_hist(&self.http, herald).await,
                                provider_hist(&self.http, herald, "interactive").await,
                            )),
                            _ => None,
                        };
                        let own = || cpu_secs(std::process::id()).unwrap_or(0.0);
                        let (cpu0, sim0, own0) = (server_cpu(), self.sims.cpu(), own());
                        let r = run_load(target, &load).await;
                        // The load generator's CPU (with the trivial handler's, which runs in this process).
                        let own_cpu = own() - own0;
                        self.res.add(
                            &format!("{server}_{}_c{conc}_client_cpu_us_per_request", proto.name()),
                            (r.ok > 0).then(|| own_cpu * 1e6 / r.ok as f64),
                        );
                        let cpu = server_cpu().zip(cpu0).map(|(c, c0)| c - c0);
                        let sim_cpu = cpu.map(|_| self.sims.cpu() - sim0);
                        perf.stop();
                        if let Some((sends, provider)) = hists {
                            let key = format!("herald_{}_c{conc}", proto.name());
                            let sends = send_hist(&self.http, herald).await.since(&sends);
                            let provider = provider_hist(&self.http, herald, "interactive").await.since(&provider);
                            self.res.add(&format!("{key}_herald_ms"), sends.mean_ms());
                            self.res.add(&format!("{key}_provider_ms"), provider.mean_ms());
                        }
                        let p = ApiPoint { server, proto, c: conc, r, server_cpu: cpu, sim_cpu };
                        say!(
                            "  {server:7} {} C={conc:<3} ({round}/{repeats}): {:>7.0} req/s, p50 {:.2} ms, p99 {:.2} ms, {} errors{}{}",
                            proto.name(),
                            p.r.rps(),
                            p.r.pct_ms(0.5).unwrap_or(f64::NAN),
                            p.r.pct_ms(0.99).unwrap_or(f64::NAN),
                            p.r.errors,
                            p.cpu_us_per_request().map(|c| format!(", {server} CPU {c:.0} µs/request")).unwrap_or_default(),
                            p.r.first_error.as_deref().map(|e| format!(" (first: {e})")).unwrap_or_default()
                        );
                        self.res.add_api(p);
                    }
                    if proto == Proto::H1 && conc == 64 {
                        let load = Load {
                            proto: Proto::H1,
                            concurrency: 4,
                            duration: phase,
                            rate: None,
                            stop: None,
                            expect_status: 202,
                            limit: None,
                        };
                        let perf = Perf::start(
                            perf_on && round == 1,
                            herald.pid(),
                            &self.out_dir.join("perf-send-batch.data"),
                        );
                        let (cpu0, sim0) = (herald.cpu(), self.sims.cpu());
                        let r = run_load(&batch_target, &load).await;
                        let (cpu, sim_cpu) = (herald.cpu() - cpu0, self.sims.cpu() - sim0);
                        perf.stop();
                        let sent = r.ok as f64 * BATCH as f64;
                        let rate = (r.ok > 0).then(|| r.rps() * BATCH as f64);
                        self.res.add("batch_per_s", rate);
                        let per = |secs: f64| (sent > 0.0).then(|| secs * 1e6 / sent);
                        self.res.add("batch_cpu_us_per_notification", per(cpu));
                        self.res.add("batch_sim_cpu_us_per_notification", per(sim_cpu));
                        say!(
                            "  herald  h1 batches of {BATCH}, C=4 ({round}/{repeats}): {:.0} notifications/s, p50 {:.1} ms, {} errors, herald CPU {:.1} µs/notification",
                            rate.unwrap_or(0.0),
                            r.pct_ms(0.5).unwrap_or(f64::NAN),
                            r.errors,
                            per(cpu).unwrap_or(f64::NAN)
                        );
                    }
                }
            }
        }
        self.res.note_foreign("send API", foreign.share());
        drop(trivial);
        // Half the proxy's rate (Herald's when the proxy did not answer).
        let half = match (self.res.median("proxy_h1_c64_rps"), self.res.median("herald_h1_c64_rps")) {
            (Some(r), _) if r >= 2.0 => Some((r / 2.0, "proxy")),
            (_, Some(r)) if r >= 2.0 => Some((r / 2.0, "herald")),
            _ => None,
        };
        let Some((rate, of)) = half else { return };
        self.res.half_load_rate = half;
        let load = Load {
            proto: Proto::H1,
            concurrency: 64,
            duration: phase * 2,
            rate: Some(rate),
            stop: None,
            expect_status: 202,
            limit: None,
        };
        for round in 1..=repeats {
            let (before, sends) = (flush_hist(&self.http, herald).await, send_hist(&self.http, herald).await);
            let speed_before = self.res.probe_speed();
            let (busy, steal, threads) = (MachineBusy::start(), machine_steal_secs(), thread_cpu_secs(herald.pid()));
            let r = run_load(&herald_target, &load).await;
            let steal = machine_steal_secs() - steal;
            let background = background_cpu_ms(herald.pid(), &threads);
            self.res.add("half_load_machine_busy", Some(busy.share()));
            let speed_after = self.res.probe_speed();
            let flushes = flush_hist(&self.http, herald).await.since(&before);
            // Herald's own time per send: a p99 the client sees far above it
            // was spent outside the send (queued, scheduled, in the kernel).
            let sends = send_hist(&self.http, herald).await.since(&sends);
            let speed = speed_before.min(speed_after);
            self.res.half_load_speeds.push(speed);
            say!(
                "  herald  h1 C=64 at {rate:.0}/s (half the {of}'s rate, {round}/{repeats}): p50 {:.2} ms, p99 {:.2} ms, {} errors; Herald's own time per send mean {:.2} ms, p99 ≤ {} ms; storage: {}; machine speed {:.0}% of its fastest, {:.0} ms stolen by the host; CPU ms of Herald's threads besides the workers: {background}",
                r.pct_ms(0.5).unwrap_or(f64::NAN),
                r.pct_ms(0.99).unwrap_or(f64::NAN),
                r.errors,
                sends.mean_ms().unwrap_or(f64::NAN),
                sends.quantile_bound(0.99).map_or("?".into(), |b| format!("{}", b * 1000.0)),
                flushes.describe(),
                self.res.speed_share(speed) * 100.0,
                steal * 1000.0
            );
            self.res.add("send_api_p50_ms_half_load", r.pct_ms(0.5));
            self.res.add("send_api_p99_ms_half_load", r.pct_ms(0.99));
            Results::merge(&mut self.res.half_load_flushes, flushes);
            let busy = MachineBusy::start();
            let r = run_load(&proxy_target, &load).await;
            self.res.add("proxy_half_load_machine_busy", Some(busy.share()));
            say!(
                "  proxy   h1 C=64 at {rate:.0}/s ({round}/{repeats}): p50 {:.2} ms, p99 {:.2} ms, {} errors",
                r.pct_ms(0.5).unwrap_or(f64::NAN),
                r.pct_ms(0.99).unwrap_or(f64::NAN),
                r.errors,
            );
            self.res.add("proxy_p50_ms_half_load", r.pct_ms(0.5));
            self.res.add("proxy_p99_ms_half_load", r.pct_ms(0.99));
        }
        drop(proxy);
    }

    /// `--callgrind` (with item 4, Herald stopped): Herald on the same data,
    /// then the forwarding proxy, each under callgrind for [`COUNTED_SENDS`]
    /// one-client sends over HTTP/1.1 (after as many to warm up), and
    /// Herald for 4 send-batches of [`BATCH`] and a broadcast to every
    /// client of tenant A (at most [`FANOUT_COUNTED`]): the instructions per
    /// send, per batch event and per broadcast notification, the whole
    /// process's (its background threads included), user space only.
    async fn instructions(&mut self, send_client: &str) {
        let Some(cg) = Callgrind::new(&self.work.join("callgrind")) else { return };
        say!("callgrind: instructions per send, Herald then the forwarding proxy");
        let herald = Herald::start_under(&self.data, &self.sims, &cg.wrapper("herald"));
        let admin = admin_token(&self.http, &herald, TENANT_A).await;
        let (single, batch, answer) = self.send_targets(&herald, &admin, send_client).await;
        // A fixed count, bounded in time too (callgrind slows a process some 50 times).
        let counted = |target: Target, n: u64, concurrency: usize| async move {
            let load = Load {
                proto: Proto::H1,
                concurrency,
                duration: Duration::from_secs(300),
                rate: None,
                stop: None,
                expect_status: 202,
                limit: Some(n),
            };
            let r = run_load(&target, &load).await;
            if r.errors > 0 {
                say!("  {} errors under callgrind (first: {})", r.errors, r.first_error.as_deref().unwrap_or("?"));
            }
            r.ok
        };
        let per = |instructions: Option<u64>, n: u64| instructions.filter(|_| n > 0).map(|i| i as f64 / n as f64);
        counted(single.clone(), COUNTED_SENDS, 16).await;
        counted(batch.clone(), 1, 1).await;
        cg.dump("herald", herald.pid(), 1);
        let sent = counted(single.clone(), COUNTED_SENDS, 16).await;
        let per_send = per(cg.dump("herald", herald.pid(), 2), sent);
        let batches = counted(batch, 4, 1).await;
        let per_event = per(cg.dump("herald", herald.pid(), 3), batches * BATCH as u64);
        // A broadcast to every client of tenant A, at most FANOUT_COUNTED of
        // them (callgrind delivers a few thousand a second).
        let n = self.opts.tokens;
        let per_notification = if n > FANOUT_COUNTED {
            say!("  no broadcast under callgrind: {n} tokens, more than {FANOUT_COUNTED}");
            None
        } else {
            // Its report read each second, no more: `watch` would scrape
            // /metrics four times a second, a cost of its own. At most a
            // minute plus a second per 100 tokens (n is at most FANOUT_COUNTED).
            let id = start_broadcast(&self.http, &herald, TENANT_A, &admin).await;
            let r = until_completed(&self.http, &herald, (TENANT_A, &admin, &id), Duration::from_secs(1), 60 + n / 100)
                .await;
            let sent = if r["state"] == "COMPLETED" { r["counts"]["sent"].as_u64().unwrap_or(0) } else { 0 };
            per(cg.dump("herald", herald.pid(), 4), sent)
        };
        herald.stop();
        let proxy = self.proxy_under(answer, &cg.wrapper("proxy"));
        let proxy_target = Target { addr: proxy.addr, ..single };
        counted(proxy_target.clone(), COUNTED_SENDS, 16).await;
        cg.dump("proxy", proxy.proc.pid(), 1);
        let sent = counted(proxy_target, COUNTED_SENDS, 16).await;
        let proxy_per_send = per(cg.dump("proxy", proxy.proc.pid(), 2), sent);
        drop(proxy);
        let k = |v: Option<f64>| v.map_or("?".into(), |v| format!("{:.0}k", v / 1000.0));
        say!(
            "  instructions per send: herald {}, proxy {}; per batch event: herald {}; per broadcast notification: herald {}",
            k(per_send),
            k(proxy_per_send),
            k(per_event),
            k(per_notification)
        );
        self.res.add("herald_instructions_per_send", per_send);
        self.res.add("proxy_instructions_per_send", proxy_per_send);
        self.res.add("herald_instructions_per_batch_event", per_event);
        self.res.add("herald_instructions_per_fanout_notification", per_notification);
    }

    /// Item 5: tenant B seeded with N clients too; both tenants' broadcasts
    /// started at once, and one-client sends to tenant A's user `vip` at 50/s
    /// from a second before until they end; `repeats` rounds.
    async fn mixed(&mut self, vip_client: &str) {
        let n = self.opts.tokens;
        say!("phase 5: seeding {n} clients of {TENANT_B}");
        let d = self.data.clone();
        tokio::task::spawn_blocking(move || seed(&d, TENANT_B, n, TOKENS_B)).await.expect("seed task");
        let (http, sims) = (&self.http, &self.sims);
        let herald = Herald::start(&self.data, sims);
        self.res.startup_2n = Some(herald.startup);
        let admin_a = admin_token(http, &herald, TENANT_A).await;
        let admin_b = admin_token(http, &herald, TENANT_B).await;
        let vip_target = Target {
            addr: herald.addr,
            path: format!("/v1/tenants/{TENANT_A}/push_notification/send"),
            bearer: Some(admin_a.clone()),
            body: Bytes::from(one_client_body(TENANT_A, "vip", vip_client).to_string()),
        };
        let deadline = Duration::from_secs(60 + 2 * n / 1000);
        self.res.phase5_complete = Some(true);
        for round in 1..=self.opts.repeats {
            sims.reset().await;
            let stop = Arc::new(AtomicBool::new(false));
            say!(
                "phase 5 (round {round} of {}): broadcasts of {TENANT_A} and {TENANT_B} ({n} tokens each) with one-client sends at {INTERACTIVE_PER_S}/s",
                self.opts.repeats
            );
            let flushes_before = flush_hist(http, &herald).await;
            let foreign = Foreign::start(&[herald.pid(), sims.proc.pid()]);
            let provider_before = provider_hist(http, &herald, "bulk").await;
            let interactive_before = provider_hist(http, &herald, "interactive").await;
            let sends_before = send_hist(http, &herald).await;
            // The interactive sends start a second before the broadcasts are
            // queued, so that their latency covers the queuing too (each
            // broadcast counts its app's N tokens as it is queued).
            let load = Load {
                proto: Proto::H1,
                concurrency: 8,
                duration: deadline + Duration::from_secs(5),
                rate: Some(INTERACTIVE_PER_S),
                stop: Some(stop.clone()),
                expect_status: 202,
                limit: None,
            };
            let target = vip_target.clone();
            let interactive = tokio::spawn(async move { run_load(&target, &load).await });
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (id_a, id_b) = tokio::join!(
                start_broadcast(http, &herald, TENANT_A, &admin_a),
                start_broadcast(http, &herald, TENANT_B, &admin_b)
            );
            let ids = [(TENANT_A, admin_a.as_str(), id_a), (TENANT_B, admin_b.as_str(), id_b)];
            let both = watch(http, &herald, sims, &ids, 2 * n + 2, deadline).await;
            stop.store(true, Ordering::Relaxed);
            let inter = interactive.await.expect("interactive sends");
            let flushes = flush_hist(http, &herald).await.since(&flushes_before);
            let res = &mut self.res;
            res.note_foreign("phase 5", foreign.share());
            Results::merge(
                &mut res.phase5_provider,
                provider_hist(http, &herald, "bulk").await.since(&provider_before),
            );
            Results::merge(
                &mut res.phase5_interactive_provider,
                provider_hist(http, &herald, "interactive").await.since(&interactive_before),
            );
            Results::merge(&mut res.phase5_send, send_hist(http, &herald).await.since(&sends_before));
            res.add("phase5_streams_in_flight_mean", both[0].streams_mean);
            res.add("phase5_per_s", sim_rate(&both[0].stats));
            say!(
                "interactive sends during the broadcasts: {} ok, {} errors, p50 {:.2} ms, p99 {:.2} ms; storage: {}",
                inter.ok,
                inter.errors,
                inter.pct_ms(0.5).unwrap_or(f64::NAN),
                inter.pct_ms(0.99).unwrap_or(f64::NAN),
                flushes.describe()
            );
            res.add("interactive_p99_ms_during_broadcast", inter.pct_ms(0.99));
            res.add("interactive_sends_during_broadcast", Some(inter.ok as f64));
            res.add("interactive_errors_during_broadcast", Some(inter.errors as f64));
            Results::merge(&mut res.phase5_flushes, flushes);
            if !both.iter().all(|b| b.completed) {
                res.phase5_complete = Some(false);
            }
            if let (Some(a), Some(b)) = (both[0].herald_ms, both[1].herald_ms) {
                let (lo, hi) = (a.min(b), a.max(b));
                res.add("fairness_tenant_a_ms", Some(a as f64));
                res.add("fairness_tenant_b_ms", Some(b as f64));
                res.add("fairness_ratio", (lo > 0).then(|| hi as f64 / lo as f64));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// Figures whose JSON value is their total over the rounds, not the median.
const TOTALS: &[&str] = &["interactive_errors_during_broadcast"];

/// Figures whose JSON value is the most of the rounds: connections are
/// opened in the first round and reused by the next.
const MOST: &[&str] = &["fanout_sim_connections"];

/// Figures in the JSON even when not measured (null then).
const HEADLINE: &[&str] = &[
    "fanout_per_s",
    "ceiling_per_s",
    "node_apn_per_s",
    "fanout_cpu_us_per_notification",
    "ceiling_cpu_us_per_notification",
    "node_apn_cpu_us_per_notification",
    "batch_per_s",
    "send_api_p99_ms_half_load",
    "proxy_p99_ms_half_load",
    "interactive_p99_ms_during_broadcast",
    "fairness_ratio",
];

/// Every figure's JSON key: the headline ones, those measured, their aliases, the ratios.
fn figure_keys(res: &Results) -> Vec<String> {
    let mut keys: Vec<String> = HEADLINE.iter().map(|k| k.to_string()).collect();
    keys.extend(res.figures.keys().cloned());
    keys.extend(ALIASES.iter().map(|a| a.0).chain(RATIOS.iter().map(|r| r.0)).map(str::to_string));
    let mut seen = std::collections::HashSet::new();
    keys.retain(|k| seen.insert(k.clone()));
    keys
}

/// The flat JSON of `target/bench/load.json` (null for what was not
/// measured): each figure's median over the rounds under its key, and beside
/// them `repeats`, `spreads` (per figure: min, max, spread and the runs),
/// `noisy` (the figures whose spread is over 20%) and `targets`.
fn results_json(res: &Results) -> Value {
    let mut m = Map::new();
    m.insert("store".into(), json!(if POSTGRES.get().is_some() { "postgres" } else { "sled" }));
    m.insert("repeats".into(), json!(res.repeats));
    // Whole numbers (counts, bytes) as integers; null for what was not measured.
    let mut put = |k: &str, v: Option<f64>| {
        let v = match v.filter(|v| v.is_finite()) {
            Some(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => json!(v as i64),
            Some(v) => json!(v),
            None => Value::Null,
        };
        m.insert(k.to_string(), v);
    };
    put("tokens", Some(res.tokens as f64));
    for (i, (_, bytes)) in res.retention.iter().enumerate() {
        put(&format!("retention_bytes_step{i}"), Some(*bytes as f64));
    }
    for (engines, rate, share) in &res.nodes {
        put(&format!("fanout_{engines}_nodes_per_s"), *rate);
        put(&format!("postgres_cpu_share_{engines}_nodes"), Some(*share));
    }
    if let [(_, one, _), (_, two, _)] = res.nodes.as_slice() {
        put("fanout_2_nodes_vs_1", ratio(*two, *one));
    }
    let keys = figure_keys(res);
    for key in &keys {
        let fig = res.fig(key);
        let value = if TOTALS.contains(&key.as_str()) && !fig.runs.0.is_empty() {
            Some(fig.runs.0.iter().sum())
        } else if MOST.contains(&key.as_str()) {
            fig.runs.max()
        } else {
            fig.value
        };
        put(key, value);
    }
    for p in &res.api {
        put(&format!("{}_errors", p.key()), res.api_errors(&p.key()).map(|e| e as f64));
    }
    put("peak_rss_mib", res.peak_rss);
    put("bytes_per_client", res.bytes_per_client);
    put("send_api_rps_half_load", res.half_load_rate.map(|(r, _)| r));
    put("herald_startup_ms", res.startup.map(|d| d.as_secs_f64() * 1000.0));
    put("herald_startup_ms_2n", res.startup_2n.map(|d| d.as_secs_f64() * 1000.0));
    put("seed_clients_per_s", res.seed_per_s);
    put("seed_close_ms", res.seed_close.map(|d| d.as_secs_f64() * 1000.0));
    put("seed_settle_ms", res.seed_settle.map(|d| d.as_secs_f64() * 1000.0));
    put("herald_stop_ms", res.stop.map(|d| d.as_secs_f64() * 1000.0));
    put("rss_before_broadcast_mib", res.rss_before);
    for (key, h) in [
        ("fanout_provider_round_trip", &res.fanout_provider),
        ("phase5_provider_round_trip", &res.phase5_provider),
        ("phase5_interactive_provider_round_trip", &res.phase5_interactive_provider),
        ("phase5_interactive_herald", &res.phase5_send),
    ] {
        let h = h.as_ref().filter(|h| h.count > 0.0);
        put(&format!("{key}_mean_ms"), h.map(|h| h.sum * 1000.0 / h.count));
        put(&format!("{key}_p99_bound_ms"), h.and_then(|h| h.quantile_bound(0.99)).map(|b| b * 1000.0));
    }
    for (phase, share) in &res.foreign {
        put(&format!("other_cpu_share_{}", phase.replace([' ', '-'], "_").to_lowercase()), Some(*share));
    }
    put("bytes_per_client_after_broadcast", res.bytes_per_client_after_broadcast);
    for (key, h) in [("half_load", &res.half_load_flushes), ("phase5", &res.phase5_flushes)] {
        let h = h.as_ref().filter(|h| h.count > 0.0);
        put(&format!("{key}_flushes"), h.map(|h| h.count));
        put(&format!("{key}_flush_mean_ms"), h.map(|h| h.sum * 1000.0 / h.count));
        put(&format!("{key}_flush_p99_bound_ms"), h.and_then(|h| h.quantile_bound(0.99)).map(|b| b * 1000.0));
    }
    if let Some((_, of)) = res.half_load_rate {
        m.insert("half_load_of".into(), json!(of));
    }
    let speeds = res.half_load_speed_shares();
    if !speeds.is_empty() {
        m.insert("machine_speed_half_load".into(), json!(speeds));
    }
    let (mut spreads, mut noisy) = (Map::new(), Vec::new());
    for key in &keys {
        let runs = res.fig(key).runs;
        let Some(spread) = runs.spread() else { continue };
        spreads.insert(key.clone(), json!({"min": runs.min(), "max": runs.max(), "spread": spread, "runs": runs.0}));
        if runs.noisy() {
            noisy.push(key.clone());
        }
    }
    let mut targets = Vec::new();
    for g in GOALS {
        let value = m.get(g.key).and_then(Value::as_f64);
        let applies = !g.at_1m || res.tokens >= 1_000_000;
        targets.push(json!({
            "key": g.key,
            "target": format!("{} {}", g.op, g.goal),
            "value": value,
            "met": value.filter(|_| applies).map(|v| g.met(v)),
            "noisy": noisy.contains(&g.key.to_string()),
            "applies": if applies { "this run" } else { "at 1M tokens only" },
        }));
    }
    m.insert("spreads".into(), Value::Object(spreads));
    m.insert("noisy".into(), json!(noisy));
    m.insert("targets".into(), json!(targets));
    webpush_json(res, &mut |k: &str, v: Option<f64>| {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    });
    Value::Object(m)
}

fn fmt_opt(v: Option<f64>, decimals: usize, unit: &str) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.decimals$}{unit}"),
        _ => "n/a".into(),
    }
}

/// A figure as "median (min–max)", with ` ~` when its spread is over 20%.
fn fmt_fig(f: &Fig, decimals: usize, unit: &str) -> String {
    let Some(v) = f.value.filter(|v| v.is_finite()) else { return "n/a".into() };
    let mut out = format!("{v:.decimals$}{unit}");
    if let (true, Some(lo), Some(hi)) = (f.runs.0.len() > 1, f.runs.min(), f.runs.max()) {
        out.push_str(&format!(" ({lo:.decimals$}–{hi:.decimals$})"));
    }
    if f.runs.noisy() {
        out.push_str(" ~");
    }
    out
}

/// A target as text, with whether the figure meets it.
fn target(v: Option<f64>, op: &str, goal: f64) -> String {
    let met = v.map(|v| meets(v, op, goal));
    let verdict = match met {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "-",
    };
    format!("{op} {goal}  {verdict}")
}

/// A table row for Herald's provider round trips during a broadcast, with the
/// queueing delay that Little's law predicts from the streams kept in flight
/// (mean in flight / notifications per second).
fn provider_row(h: Option<&Hist>, in_flight: Option<f64>, rate: Option<f64>) -> (String, String, String) {
    let little = ratio(in_flight, rate).map_or("?".into(), |s| format!("{:.0} ms", s * 1000.0));
    match h.filter(|h| h.count > 0.0) {
        Some(h) => (
            format!("  provider round trip, Herald's histogram (in flight / rate = {little})"),
            format!(
                "mean {:.0} ms, p99 ≤ {} ms",
                h.sum * 1000.0 / h.count,
                h.quantile_bound(0.99).map_or("?".into(), |b| format!("{}", b * 1000.0))
            ),
            String::new(),
        ),
        None => ("  provider round trip, Herald's histogram".into(), "n/a".into(), String::new()),
    }
}

/// A table row with a histogram's mean and p99 bucket.
fn hist_row(what: &str, h: Option<&Hist>) -> (String, String, String) {
    let value = h.filter(|h| h.count > 0.0).map_or("n/a".into(), |h| {
        format!(
            "mean {:.1} ms, p99 ≤ {} ms",
            h.sum * 1000.0 / h.count,
            h.quantile_bound(0.99).map_or("?".into(), |b| format!("{}", b * 1000.0))
        )
    });
    (what.into(), value, String::new())
}

/// A table row for Herald's storage flushes during a run.
fn flush_row(h: Option<&Hist>) -> (String, String, String) {
    match h.filter(|h| h.count > 0.0) {
        Some(h) => (
            format!(
                "  Herald's storage flushes meanwhile: {:.0}, mean {:.1} ms, max ≤ {} ms",
                h.count,
                h.sum * 1000.0 / h.count,
                h.quantile_bound(1.0).map_or("?".into(), |b| format!("{}", b * 1000.0))
            ),
            h.quantile_bound(0.99).map_or("?".into(), |b| format!("p99 ≤ {} ms", b * 1000.0)),
            String::new(),
        ),
        None => ("  Herald's storage flushes meanwhile".into(), "n/a".into(), String::new()),
    }
}

/// A target's cell for the figure `key` (its median in `json`).
fn goal_cell(json: &Value, tokens: u64, key: &str) -> String {
    let Some(g) = GOALS.iter().find(|g| g.key == key) else { return String::new() };
    if g.at_1m && tokens < 1_000_000 {
        return format!("{} {}  at 1M tokens", g.op, g.goal);
    }
    target(json[key].as_f64(), g.op, g.goal)
}

fn table(res: &Results, opts: &Options) -> String {
    let json = results_json(res);
    let fig = |key: &str, decimals: usize, unit: &str| fmt_fig(&res.fig(key), decimals, unit);
    let goal = |key: &str| goal_cell(&json, res.tokens, key);
    let row = |what: String, key: &str, decimals: usize, unit: &str| (what, fig(key, decimals, unit), goal(key));
    let pair = |a: &str, b: &str| format!("{} / {}", fig(a, 1, " µs"), fig(b, 1, " µs"));
    let node = match (res.median("node_apn_per_s"), &res.node.unavailable) {
        (Some(_), _) => fig("node_apn_per_s", 0, "/s"),
        (None, Some(why)) => format!("unavailable ({why})"),
        _ => "n/a".into(),
    };
    // How busy that rate keeps Herald: near 1, p99 measures the queue a slow spell builds.
    let busy = |r: f64| {
        res.median("herald_h1_c64_rps")
            .filter(|h| *h > 0.0)
            .map(|h| format!(" = {:.2}x Herald's own C=64 rate", r / h))
            .unwrap_or_default()
    };
    let half = res.half_load_rate.map_or("n/a".into(), |(r, of)| format!("{r:.0} req/s, half the {of}'s{}", busy(r)));
    let mut rows: Vec<(String, String, String)> = vec![
        row(
            format!(
                "fan-out, Herald on {} (APNs sim counts, {} tokens)",
                if POSTGRES.get().is_some() { "PostgreSQL" } else { "sled" },
                res.tokens
            ),
            "fanout_per_s",
            0,
            "/s",
        ),
        row("  the topic send's answer (POST → 202)".into(), "fanout_answer_ms", 1, " ms"),
        row("  end to end (POST → COMPLETED, Herald's report)".into(), "fanout_herald_completion_ms", 0, " ms"),
        (
            "  connections opened (the most of a round) / streams in flight (mean, max)".into(),
            format!(
                "{} / {}, {}",
                fmt_opt(res.fig("fanout_sim_connections").runs.max(), 0, ""),
                fmt_opt(res.median("fanout_streams_in_flight_mean"), 0, ""),
                fmt_opt(res.median("fanout_streams_in_flight_max"), 0, "")
            ),
            String::new(),
        ),
        provider_row(
            res.fanout_provider.as_ref(),
            res.median("fanout_streams_in_flight_mean"),
            res.median("fanout_per_s"),
        ),
        (
            "  CPU per notification: herald / simulator".into(),
            pair("fanout_cpu_us_per_notification", "fanout_sim_cpu_us_per_notification"),
            String::new(),
        ),
        row(
            if res.median("ceiling_per_s").is_some() {
                format!("ceiling, bare h2 client ({} conns x {} streams)", res.ceiling_connections, res.ceiling_streams)
            } else {
                "ceiling, bare h2 client".into()
            },
            "ceiling_per_s",
            0,
            "/s",
        ),
        (
            "  CPU per notification: client / simulator".into(),
            pair("ceiling_cpu_us_per_notification", "ceiling_sim_cpu_us_per_notification"),
            String::new(),
        ),
        (format!("node-apn peer ({})", res.node.version.as_deref().unwrap_or("@parse/node-apn")), node, String::new()),
        (
            "  CPU per notification: node / simulator".into(),
            pair("node_apn_cpu_us_per_notification", "node_apn_sim_cpu_us_per_notification"),
            String::new(),
        ),
        row("fan-out / bare client".into(), "fanout_vs_ceiling", 2, "x"),
        row("CPU per notification, fan-out / bare client".into(), "fanout_cpu_vs_bare", 2, "x"),
        (
            format!(
                "  instructions per broadcast notification (callgrind, --callgrind, at most {FANOUT_COUNTED} tokens)"
            ),
            fmt_opt(res.median("herald_instructions_per_fanout_notification").map(|i| i / 1000.0), 1, "k"),
            String::new(),
        ),
        row("fan-out / node-apn (rate)".into(), "fanout_vs_node_apn", 2, "x"),
        row("CPU per notification, node-apn / fan-out".into(), "node_apn_cpu_vs_fanout", 2, "x"),
        ("Herald RSS before the broadcast".into(), fmt_opt(res.rss_before, 1, " MiB"), String::new()),
        (
            format!("Herald peak RSS (VmHWM, after {} broadcasts)", res.fig("fanout_per_s").runs.0.len()),
            fmt_opt(res.peak_rss, 1, " MiB"),
            goal("peak_rss_mib"),
        ),
        row("send API, HTTP/1.1 C=64".into(), "herald_h1_c64_rps", 0, " req/s"),
        (
            "  CPU per notification: herald / simulator".into(),
            pair("herald_h1_c64_cpu_us_per_request", "herald_h1_c64_sim_cpu_us_per_request"),
            String::new(),
        ),
        row(
            "forwarding proxy (own process, one h2 request to APNs per send), HTTP/1.1 C=64".into(),
            "proxy_h1_c64_rps",
            0,
            " req/s",
        ),
        (
            "  CPU per notification: proxy / simulator".into(),
            pair("proxy_h1_c64_cpu_us_per_request", "proxy_h1_c64_sim_cpu_us_per_request"),
            String::new(),
        ),
        row("trivial handler, HTTP/1.1 C=64".into(), "trivial_h1_c64_rps", 0, " req/s"),
        row("send API / forwarding proxy (C=64, HTTP/1.1)".into(), "send_api_vs_proxy_h1", 2, "x"),
        row("send API / forwarding proxy (C=64, HTTP/2)".into(), "send_api_vs_proxy_h2", 2, "x"),
        row("CPU per notification, send API / proxy (C=64, HTTP/1.1)".into(), "send_api_cpu_vs_proxy", 2, "x"),
        row("send API / trivial (C=64, HTTP/1.1)".into(), "send_api_vs_trivial", 2, "x"),
        (
            "  instructions per send (callgrind, --callgrind): herald / proxy".into(),
            format!(
                "{} / {}",
                fmt_opt(res.median("herald_instructions_per_send").map(|i| i / 1000.0), 0, "k"),
                fmt_opt(res.median("proxy_instructions_per_send").map(|i| i / 1000.0), 0, "k"),
            ),
            String::new(),
        ),
        row("  … send API / proxy, instructions per send".into(), "send_api_instructions_vs_proxy", 2, "x"),
        row("send API C=256 / C=64 (HTTP/1.1)".into(), "c256_vs_c64", 2, "x"),
        row("send API C=256 / C=64 (HTTP/2)".into(), "c256_vs_c64_h2", 2, "x"),
        (
            "  Herald's time per send / provider round trip (histogram means), HTTP/1.1 C=64; C=256".into(),
            format!(
                "{} / {}; {} / {}",
                fmt_opt(res.median("herald_h1_c64_herald_ms"), 2, " ms"),
                fmt_opt(res.median("herald_h1_c64_provider_ms"), 2, " ms"),
                fmt_opt(res.median("herald_h1_c256_herald_ms"), 2, " ms"),
                fmt_opt(res.median("herald_h1_c256_provider_ms"), 2, " ms"),
            ),
            String::new(),
        ),
        row(format!("send-batch, batches of {BATCH} at C=4: notifications/s"), "batch_per_s", 0, "/s"),
        row(
            "  instructions per batch event / per one-client send (--callgrind)".into(),
            "batch_event_instructions_vs_send",
            2,
            "x",
        ),
        (
            "  CPU per notification: herald / simulator".into(),
            format!(
                "{} / {}",
                fmt_opt(res.median("batch_cpu_us_per_notification"), 1, " µs"),
                fmt_opt(res.median("batch_sim_cpu_us_per_notification"), 1, " µs"),
            ),
            String::new(),
        ),
        row("  send-batch / single sends (C=64, HTTP/1.1)".into(), "batch_vs_single", 2, "x"),
        row("  send-batch / fan-out".into(), "batch_vs_fanout", 2, "x"),
        row(format!("send API p99 at half load ({half}, C=64)"), "send_api_p99_ms_half_load", 2, " ms"),
        row("  forwarding proxy p99 at the same rate".into(), "proxy_p99_ms_half_load", 2, " ms"),
        (
            // Near 100%, any slow spell of the host leaves a queue behind.
            "  machine CPU busy (every process) in Herald's rounds / the proxy's".into(),
            format!(
                "{} / {}",
                fmt_opt(res.median("half_load_machine_busy").map(|v| v * 100.0), 0, "%"),
                fmt_opt(res.median("proxy_half_load_machine_busy").map(|v| v * 100.0), 0, "%"),
            ),
            String::new(),
        ),
        (
            "  machine speed in Herald's rounds (probe, of the run's fastest)".into(),
            match res.half_load_speed_shares() {
                s if s.is_empty() => "n/a".into(),
                s => s.iter().map(|v| format!("{:.0}%", v * 100.0)).collect::<Vec<_>>().join(", "),
            },
            String::new(),
        ),
        flush_row(res.half_load_flushes.as_ref()),
        row(
            format!(
                "interactive p99 during 2 broadcasts ({} sends at {INTERACTIVE_PER_S}/s)",
                fmt_opt(res.median("interactive_sends_during_broadcast"), 0, "")
            ),
            "interactive_p99_ms_during_broadcast",
            2,
            " ms",
        ),
        flush_row(res.phase5_flushes.as_ref()),
        provider_row(
            res.phase5_provider.as_ref(),
            res.median("phase5_streams_in_flight_mean"),
            res.median("phase5_per_s"),
        ),
        hist_row("  … interactive lane's provider round trip", res.phase5_interactive_provider.as_ref()),
        hist_row("  … Herald's time per interactive send (send API histogram)", res.phase5_send.as_ref()),
        row(
            format!(
                "fairness, slower/faster of 2 tenants' broadcasts ({} ms, {} ms)",
                fmt_opt(res.median("fairness_tenant_a_ms"), 0, ""),
                fmt_opt(res.median("fairness_tenant_b_ms"), 0, "")
            ),
            "fairness_ratio",
            2,
            "",
        ),
        (
            "bytes on disk per client (du / clients)".into(),
            fmt_opt(res.bytes_per_client, 0, " B"),
            goal("bytes_per_client"),
        ),
        (
            "  … after the broadcast (its outcomes recorded)".into(),
            fmt_opt(res.bytes_per_client_after_broadcast, 0, " B"),
            String::new(),
        ),
        (
            "herald serve start-up on N clients (spawn → listening)".into(),
            fmt_opt(res.startup.map(|d| d.as_secs_f64() * 1000.0), 0, " ms"),
            goal("herald_startup_ms"),
        ),
        (
            "  … on 2N clients".into(),
            fmt_opt(res.startup_2n.map(|d| d.as_secs_f64() * 1000.0), 0, " ms"),
            String::new(),
        ),
        (
            "herald stop (SIGTERM → exit) after items 1 to 4, its store's close included".into(),
            fmt_opt(res.stop.map(|d| d.as_secs_f64() * 1000.0), 0, " ms"),
            String::new(),
        ),
        ("seeding (storage API, one flush at the end)".into(), fmt_opt(res.seed_per_s, 0, " clients/s"), String::new()),
        (
            "  … then sled compacting it in the background, before the close (measured items start after)".into(),
            fmt_opt(res.seed_settle.map(|d| d.as_secs_f64() * 1000.0), 0, " ms"),
            String::new(),
        ),
        (
            "  … closing the seeded store (its snapshot; what a start after a crash replays instead)".into(),
            fmt_opt(res.seed_close.map(|d| d.as_secs_f64() * 1000.0), 0, " ms"),
            String::new(),
        ),
    ];
    if res.phase5_complete == Some(false) {
        rows.push(("  (phase 5 broadcasts did not all complete in time)".into(), String::new(), String::new()));
    }
    if res.webpush.tokens > 0 {
        rows.extend(webpush_rows(res));
    }
    for (engines, rate, share) in &res.nodes {
        rows.push((
            format!("fan-out with {engines} engine(s) on one PostgreSQL (its CPU share)"),
            format!("{} ({:.0}%)", fmt_opt(*rate, 0, "/s"), share * 100.0),
            String::new(),
        ));
    }
    for (what, bytes) in &res.retention {
        rows.push((
            format!("records on disk, retention run: {what}"),
            format!("{:.1} MiB", *bytes as f64 / 1048576.0),
            String::new(),
        ));
    }
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    out.push_str(&format!(
        "\nHerald load benchmark: {} tokens{}, {cpus} CPUs, everything on 127.0.0.1\n",
        res.tokens,
        if opts.quick { ", --quick" } else { "" }
    ));
    out.push_str(&format!(
        "Each figure: the median of {} rounds{} and their (min–max); Herald's runs alternate with its baselines'.\n\
         A ratio is that of the medians; its min–max are the rounds' own ratios. ~ marks a spread\n\
         (max − min) / median over {:.0}%: too noisy to compare.\n\n",
        res.repeats,
        if opts.quick { " (--quick; 5 by default)" } else { "" },
        NOISY * 100.0
    ));
    if !res.foreign.is_empty() {
        let shares: Vec<String> = res.foreign.iter().map(|(p, s)| format!("{p} {:.0}%", s * 100.0)).collect();
        out.push_str(&format!(
            "Other processes' share of the machine's CPU (most of a phase's rounds): {}\n",
            shares.join(", ")
        ));
        if res.foreign.iter().any(|(_, s)| *s > 0.1) {
            out.push_str(
                "WARNING: other processes used over 10% of the CPU during some phases; their figures are low.\n",
            );
        }
        out.push('\n');
    }
    out.push_str(&format!("{:w0$}  {:>w1$}  target\n", "figure", "value"));
    out.push_str(&format!("{}\n", "-".repeat(w0 + w1 + 20)));
    for (a, b, c) in &rows {
        let pad0 = w0 - a.chars().count();
        let pad1 = w1 - b.chars().count();
        out.push_str(&format!("{a}{}  {}{b}  {c}\n", " ".repeat(pad0), " ".repeat(pad1)));
    }
    let missed: Vec<&str> = json["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["met"] == false)
        .filter_map(|t| t["key"].as_str())
        .collect();
    let met = json["targets"].as_array().into_iter().flatten().filter(|t| t["met"] == true).count();
    out.push_str(&format!(
        "\ntargets: {met} met, {} missed{}, {} not measured or not applicable\n",
        missed.len(),
        if missed.is_empty() { String::new() } else { format!(" ({})", missed.join(", ")) },
        GOALS.len() - met - missed.len()
    ));
    out.push_str(&api_grid(res, opts));
    out
}

/// The send-API runs: per protocol and concurrency, each server's req/s
/// (median, min–max) and median p50/p99, and Herald over the proxy.
fn api_grid(res: &Results, opts: &Options) -> String {
    let servers = ["herald", "proxy", "trivial"];
    let mut lines = vec![vec![
        String::new(),
        "herald".into(),
        "forwarding proxy".into(),
        "trivial handler".into(),
        "herald/proxy".into(),
    ]];
    for proto in [Proto::H1, Proto::H2] {
        for &c in &opts.concurrency {
            let mut line = vec![format!("{} C={c}", proto.name())];
            for server in servers {
                let key = format!("{server}_{}_c{c}", proto.name());
                let rps = res.fig(&format!("{key}_rps"));
                line.push(if rps.value.is_some() {
                    format!(
                        "{}  {}/{}{}",
                        fmt_fig(&rps, 0, ""),
                        fmt_opt(res.median(&format!("{key}_p50_ms")), 2, ""),
                        fmt_opt(res.median(&format!("{key}_p99_ms")), 2, ""),
                        if res.api_errors(&key).unwrap_or(0) > 0 { " !" } else { "" }
                    )
                } else {
                    "n/a".into()
                });
            }
            let (h, p) = (format!("herald_{}_c{c}_rps", proto.name()), format!("proxy_{}_c{c}_rps", proto.name()));
            line.push(fmt_fig(
                &Fig { value: ratio(res.median(&h), res.median(&p)), runs: res.fig(&h).runs.over(&res.fig(&p).runs) },
                2,
                "x",
            ));
            lines.push(line);
        }
    }
    let widths: Vec<usize> =
        (0..lines[0].len()).map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = format!(
        "\nsend API (one-client send, 202) vs the forwarding proxy and the trivial handler, {:?} per run, \
         {} rounds: req/s median (min–max)  p50/p99 ms medians\n",
        opts.phase, res.repeats
    );
    for line in lines {
        for (i, cell) in line.iter().enumerate() {
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if i == 0 {
                out.push_str(&format!("{cell}{pad}"));
            } else {
                out.push_str(&format!("   {pad}{cell}"));
            }
        }
        out.push('\n');
    }
    out.push_str("(! = some requests failed; see the progress lines; ~ = spread over 20%)\n");
    out
}

// ---------------------------------------------------------------------------
// Item 9: Web Push fan-out
// ---------------------------------------------------------------------------

/// The tenant of the Web Push fan-out, on a Herald and data directory of its own.
const TENANT_WEB: &str = "benchweb";

/// What the Web Push fan-out measured (item 9).
#[derive(Debug, Default)]
struct WebPushRun {
    /// Subscriptions the broadcast went to.
    tokens: u64,
    /// Notifications/s as the Web Push simulator counts them (first to last accepted).
    rate: Option<f64>,
    accepted: u64,
    herald_ms: Option<u64>,
    connections: u64,
    herald_cpu: f64,
    sim_cpu: f64,
}

impl Bench {
    /// Item 9: a topic broadcast to N/10 browser subscriptions of the Web Push
    /// simulator (at least 1 000), through a Herald of its own: each message
    /// encrypted (RFC 8291) and VAPID-signed by Herald, verified and decrypted
    /// by the simulator, so both sides' crypto is in the figure.
    async fn webpush_fanout(&mut self) {
        let n = (self.opts.tokens / 10).max(1_000);
        let data = self.work.join("data-webpush");
        say!("item 9: broadcast to {n} Web Push subscriptions through Herald");
        let allow = [("HERALD_ALLOW_PRIVATE_PROVIDER_ENDPOINTS", "true")];
        let h = Herald::start_with(&data, &self.sims, &allow);
        let body = json!({"tenantId": TENANT_WEB, "adminUsername": "admin", "adminPassword": PASSWORD});
        ok(
            "create tenant",
            api(&self.http, &h, reqwest::Method::POST, "/v1/tenants", Some(OPERATOR), Some(body)).await,
        );
        let admin = admin_token(&self.http, &h, TENANT_WEB).await;
        let app = json!({"categories": ["chat", "payment", "tms"], "webPushSubject": "mailto:bench@herald.test"});
        let path = format!("/v1/tenants/{TENANT_WEB}/apps/{APP}");
        ok("create app", api(&self.http, &h, reqwest::Method::POST, &path, Some(&admin), Some(app)).await);
        drop(h);
        let subscriptions: Vec<String> = (0..n)
            .map(|i| {
                let sub =
                    herald_sim::webpush_subscription(&self.sims.cert_dir, self.sims.url("webpush"), &format!("b{i}"))
                        .expect("a simulator subscription");
                herald_actors::providers::subscription::Subscription::parse(&sub.to_string())
                    .expect("a valid subscription")
                    .canonical()
            })
            .collect();
        seed_webpush(&data, &subscriptions);
        let h = Herald::start_with(&data, &self.sims, &allow);
        let admin = admin_token(&self.http, &h, TENANT_WEB).await;
        self.sims.reset().await;
        let (h_cpu0, s_cpu0) = (h.cpu(), self.sims.cpu());
        let foreign = Foreign::start(&[h.pid(), self.sims.proc.pid()]);
        let id = start_broadcast(&self.http, &h, TENANT_WEB, &admin).await;
        // At most a minute plus a second per 200 subscriptions.
        let report =
            until_completed(&self.http, &h, (TENANT_WEB, &admin, &id), Duration::from_millis(250), (60 + n / 200) * 4)
                .await;
        let stats = self.sims.stats().await.webpush;
        self.res.foreign.push(("web push fan-out", foreign.share()));
        let (c, d) = (report["createdAt"].as_u64(), report["completedAt"].as_u64());
        let run = WebPushRun {
            tokens: n,
            rate: sim_rate(&stats),
            accepted: stats.accepted,
            herald_ms: c.zip(d).map(|(c, d)| d.saturating_sub(c)),
            connections: stats.connections,
            herald_cpu: h.cpu() - h_cpu0,
            sim_cpu: self.sims.cpu() - s_cpu0,
        };
        if report["counts"]["sent"].as_u64() != Some(n) {
            say!("web push fan-out incomplete or with failures: {}", report["counts"]);
        }
        say!(
            "web push fan-out: {:.0}/s, {} connections, herald CPU {:.1} s, simulator CPU {:.1} s",
            run.rate.unwrap_or(0.0),
            run.connections,
            run.herald_cpu,
            run.sim_cpu
        );
        self.res.webpush = run;
    }
}

/// Seeds one client of app [`APP`] of [`TENANT_WEB`] per subscription, each
/// its `WEB` push token, straight into a stopped Herald's storage.
fn seed_webpush(data: &Path, subscriptions: &[String]) {
    let store =
        Store::open(&StoreOptions { store_url: store_url(), ..StoreOptions::new(data) }).expect("open the store");
    let now = herald_storage::now_ms();
    for sub in subscriptions {
        let id = ulid::Ulid::generate().to_string();
        let client = Client {
            id: id.clone(),
            app_name: APP.into(),
            platform: "web".into(),
            lock_state: "NONE".into(),
            secret_hash: vec![0xa5; 32],
            created_ms: now,
            ..Client::default()
        };
        store.clients().create(TENANT_WEB, &client).expect("seed a client");
        let token = PushToken {
            app_name: APP.into(),
            provider: PushProvider::Web,
            token: sub.clone(),
            is_valid: true,
            updated_ms: now,
        };
        store.push_tokens().set(TENANT_WEB, &id, &token).expect("seed a push token");
    }
    store.flush_now().expect("flush the seeded store");
    store.close().expect("close the seeded store");
}

/// The table's rows of item 9, beside the APNs fan-out's.
fn webpush_rows(res: &Results) -> Vec<(String, String, String)> {
    let w = &res.webpush;
    let per =
        |cpu: f64| if w.accepted > 0 { format!("{:.1} µs", cpu * 1e6 / w.accepted as f64) } else { "n/a".into() };
    vec![
        (
            format!("fan-out, Web Push (simulator counts, {} subscriptions)", w.tokens),
            fmt_opt(w.rate, 0, "/s"),
            String::new(),
        ),
        (
            "  end to end (POST → COMPLETED, Herald's report)".into(),
            fmt_opt(w.herald_ms.map(|v| v as f64), 0, " ms"),
            String::new(),
        ),
        (
            "  CPU per notification: herald / simulator".into(),
            format!("{} / {}", per(w.herald_cpu), per(w.sim_cpu)),
            String::new(),
        ),
        (
            "Web Push fan-out / APNs fan-out".into(),
            fmt_opt(ratio(w.rate, res.median("fanout_per_s")), 2, "x"),
            String::new(),
        ),
    ]
}

/// The JSON keys of item 9.
fn webpush_json(res: &Results, put: &mut dyn FnMut(&str, Option<f64>)) {
    let w = &res.webpush;
    put("webpush_tokens", (w.tokens > 0).then_some(w.tokens as f64));
    put("webpush_fanout_per_s", w.rate);
    put("webpush_fanout_vs_apns", ratio(w.rate, res.median("fanout_per_s")));
    put("webpush_fanout_herald_completion_ms", w.herald_ms.map(|v| v as f64));
    put("webpush_fanout_sim_connections", (w.tokens > 0).then_some(w.connections as f64));
    put("webpush_fanout_herald_cpu_s", (w.tokens > 0).then_some(w.herald_cpu));
    put("webpush_fanout_sim_cpu_s", (w.tokens > 0).then_some(w.sim_cpu));
}
