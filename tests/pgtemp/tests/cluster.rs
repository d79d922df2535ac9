//! Starts real servers: needs Debian's `postgresql` package (or HERALD_PG_BIN).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::arithmetic_side_effects)]

use std::path::Path;
use std::time::{Duration, Instant};

use herald_pgtemp::{shared, Cluster, Options};

fn postmaster_pid(dir: &Path) -> u32 {
    let lock = std::fs::read_to_string(dir.join("data/postmaster.pid")).unwrap();
    lock.lines().next().unwrap().trim().parse().unwrap()
}

/// Whether `pid` is still a process that has not exited (a zombie has).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()), Some("Z" | "X")),
        Err(_) => false,
    }
}

#[test]
fn start_create_query_drop() {
    let started = Instant::now();
    let cluster = Cluster::start().unwrap();
    eprintln!("cluster started in {:?}", started.elapsed());
    let created = Instant::now();
    let first = cluster.create_database().unwrap();
    eprintln!("create_database took {:?}", created.elapsed());
    let second = cluster.create_database().unwrap();
    assert_ne!(first, second);
    let prefix = format!("postgres://postgres@127.0.0.1:{}/herald_{}_", cluster.port(), std::process::id());
    for url in [&first, &second] {
        assert!(url.starts_with(&prefix), "{url}");
        let db = url.rsplit('/').next().unwrap();
        assert_eq!(cluster.url(db), *url);
        assert_eq!(cluster.psql(db, "SELECT 1").unwrap(), "1");
        assert_eq!(cluster.psql(db, "SELECT current_database()").unwrap(), db);
    }
    assert_eq!(cluster.psql("postgres", "SHOW fsync").unwrap(), "on");
    assert_eq!(cluster.psql("postgres", "SHOW max_connections").unwrap(), "200");
    assert_eq!(cluster.psql("postgres", "SHOW listen_addresses").unwrap(), "127.0.0.1");
    let err = cluster.psql("postgres", "SELECT nope").unwrap_err().to_string();
    assert!(err.contains("psql") && err.contains("nope"), "{err}");

    let dir = cluster.dir().to_path_buf();
    let pid = postmaster_pid(&dir);
    assert!(running(pid));
    let stopping = Instant::now();
    drop(cluster);
    eprintln!("drop took {:?}", stopping.elapsed());
    assert!(!running(pid), "postmaster {pid} still running");
    assert!(!dir.exists(), "{} still exists", dir.display());
}

#[test]
fn options_reach_the_server() {
    let cluster =
        Cluster::start_with(Options { fsync: false, max_connections: 20, shared_buffers: Some("16MB".into()) })
            .unwrap();
    assert_eq!(cluster.psql("postgres", "SHOW fsync").unwrap(), "off");
    assert_eq!(cluster.psql("postgres", "SHOW max_connections").unwrap(), "20");
    assert_eq!(cluster.psql("postgres", "SHOW shared_buffers").unwrap(), "16MB");
}

#[test]
fn shared_is_one_cluster_for_every_thread() {
    let started = Instant::now();
    let clusters: Vec<&'static Cluster> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..8).map(|_| scope.spawn(|| shared().unwrap())).collect();
        threads.into_iter().map(|thread| thread.join().unwrap()).collect()
    });
    eprintln!("shared cluster ready for 8 threads in {:?}", started.elapsed());
    assert!(clusters.iter().all(|cluster| std::ptr::eq(*cluster, clusters[0])));
    let url = clusters[0].create_database().unwrap();
    let db = url.rsplit('/').next().unwrap();
    assert_eq!(shared().unwrap().psql(db, "SELECT 1").unwrap(), "1");
    assert!(std::ptr::eq(shared().unwrap(), clusters[0]));
}

/// The watchdog must not act while this process lives.
#[test]
fn watchdog_leaves_a_live_process_alone() {
    let cluster = Cluster::start().unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(cluster.psql("postgres", "SELECT 1").unwrap(), "1");
}

/// Run by [`kill_9_leaves_nothing_behind`] in a child process: holds the shared
/// cluster, says where it is, and waits to be killed.
#[test]
#[ignore = "run by kill_9_leaves_nothing_behind"]
fn hold_shared_until_killed() {
    use std::io::Write;
    if std::env::var_os("HERALD_PGTEMP_HOLD").is_none() {
        return;
    }
    let cluster = shared().unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "HOLDING {} {}", postmaster_pid(cluster.dir()), cluster.dir().display()).unwrap();
    out.flush().unwrap();
    drop(out);
    std::thread::sleep(Duration::from_secs(60));
}

/// kill -9 of a test process runs no destructor: the watchdog stops the shared
/// server and removes its directory.
#[test]
fn kill_9_leaves_nothing_behind() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "hold_shared_until_killed", "--nocapture", "--test-threads=1"])
        .env("HERALD_PGTEMP_HOLD", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map(|line| line.unwrap())
        .find_map(|line| Some(line.split_once("HOLDING ")?.1.to_owned())) // after libtest's "test NAME ... "
        .expect("the child never reported its cluster");
    let mut parts = line.split_whitespace();
    let pid: u32 = parts.next().unwrap().parse().unwrap();
    let dir = Path::new(parts.next().unwrap()).to_path_buf();
    assert!(running(pid) && dir.exists());

    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed = Instant::now();
    while (running(pid) || dir.exists()) && killed.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("after kill -9: server stopped and directory removed in {:?}", killed.elapsed());
    assert!(!running(pid), "postmaster {pid} outlived the killed test process");
    assert!(!dir.exists(), "{} outlived the killed test process", dir.display());
}
