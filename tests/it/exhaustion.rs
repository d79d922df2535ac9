//! Exhaustion: connections that say nothing, stall their body or idle are
//! closed; one address holds only its share of connections; the operations
//! port answers its probes whatever the public port is going through.

use crate::common::*;
use reqwest::StatusCode;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// A connection from `from` (any 127.0.0.0/8 address) to `to`.
async fn connect_from(from: Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0))?;
    socket.connect(to).await
}

/// `n` connections spread over loopback addresses, `per_address` from each,
/// each having written `hello` (possibly nothing).
async fn open_many(to: SocketAddr, n: usize, per_address: usize, hello: &'static [u8]) -> Vec<TcpStream> {
    let mut conns = Vec::with_capacity(n);
    for i in 0..n {
        let from = Ipv4Addr::new(127, 0, 1 + (i / per_address / 250) as u8, 1 + (i / per_address % 250) as u8);
        let mut c = connect_from(from, to).await.expect("connect");
        if !hello.is_empty() {
            c.write_all(hello).await.expect("write");
        }
        conns.push(c);
    }
    conns
}

/// Reads until the server closes each connection (EOF or reset); answers
/// how long the last one took, or panics after `within`.
async fn all_closed(conns: Vec<TcpStream>, within: Duration) -> Duration {
    let started = Instant::now();
    let waits = conns.into_iter().map(|mut c| async move {
        let mut sink = Vec::new();
        let _ = c.read_to_end(&mut sink).await;
    });
    tokio::time::timeout(within, futures::future::join_all(waits)).await.expect("the server closed every connection");
    started.elapsed()
}

/// Probes `/healthz` `n` times with a fresh connection each; answers the
/// median time. Each probe must answer 200 within a second.
async fn probe(base: &str, n: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..n {
        let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        let started = Instant::now();
        let r = http.get(format!("{base}/healthz")).timeout(Duration::from_secs(1)).send().await;
        let r = r.unwrap_or_else(|e| panic!("{base}/healthz did not answer within 1 s: {e}"));
        assert_eq!(r.status(), StatusCode::OK);
        times.push(started.elapsed());
    }
    times.sort();
    times[n / 2]
}

fn socket_of(base: &str) -> SocketAddr {
    base.trim_start_matches("http://").parse().unwrap()
}

/// A child `herald serve` with default flags but an operations port, and the
/// file-descriptor limit of this test process raised for its many sockets.
fn herald_with_ops(dir: &std::path::Path) -> Herald {
    herald::server::raise_fd_limit();
    Herald::start(dir, &[("HERALD_OPS_LISTEN", "127.0.0.1:0".into())])
}

/// After the server closed the flood, the public port serves a normal request
/// at once (a fresh connection from the flood's own first address).
async fn main_port_serves(h: &Herald) {
    let started = Instant::now();
    let to = socket_of(&h.base);
    let mut c = connect_from(Ipv4Addr::new(127, 0, 1, 1), to).await.unwrap();
    c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(1), c.read_to_end(&mut answer))
        .await
        .expect("the main port answered within 1 s of the flood's end")
        .unwrap();
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    eprintln!("main port answered {:?} after the flood was closed", started.elapsed());
}

#[tokio::test]
async fn ten_thousand_silent_connections_are_closed_and_never_starve_the_probes() {
    let dir = tempfile::tempdir().unwrap();
    let h = herald_with_ops(dir.path());
    let ops = h.ops.clone().unwrap();
    // 10 000 where the file-descriptor limit allows (it does on CI machines).
    let n = 10_000.min(usize::try_from(herald::server::fd_limit() / 2).unwrap_or(usize::MAX));
    let conns = open_many(socket_of(&h.base), n, 200, b"").await;
    let median = probe(&ops, 9).await;
    eprintln!("ops /healthz median {median:?} with {n} silent connections open");
    assert!(median < Duration::from_millis(100), "ops probe median {median:?}");
    // Closed by the 10 s deadline for a first request head (not before 9 s).
    let took = all_closed(conns, Duration::from_secs(30)).await;
    eprintln!("silent connections closed after {took:?}");
    main_port_serves(&h).await;
    let metrics = reqwest::get(format!("{ops}/metrics")).await.unwrap().text().await.unwrap();
    assert!(metrics.contains(&format!("herald_connections_closed_total{{reason=\"no_request\"}} {n}")), "{metrics}");
}

#[tokio::test]
async fn a_thousand_stalled_bodies_on_the_token_endpoint_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let h = herald_with_ops(dir.path());
    let ops = h.ops.clone().unwrap();
    let head = b"POST /auth/realms/acme/protocol/openid-connect/token HTTP/1.1\r\nHost: x\r\n\
        Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=pass";
    let conns = open_many(socket_of(&h.base), 1_000, 200, head).await;
    let median = probe(&ops, 9).await;
    eprintln!("ops /healthz median {median:?} with 1 000 stalled bodies");
    assert!(median < Duration::from_millis(100), "ops probe median {median:?}");
    // Each stalled body gets a 408 once the minimum rate is missed, and its connection closes.
    let mut answers = Vec::new();
    let reads = conns.into_iter().map(|mut c| async move {
        let mut buf = Vec::new();
        let _ = c.read_to_end(&mut buf).await;
        String::from_utf8_lossy(&buf).into_owned()
    });
    let all = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(reads)).await;
    answers.extend(all.expect("every stalled body was cut off within 30 s"));
    let timed_out = answers.iter().filter(|a| a.starts_with("HTTP/1.1 408")).count();
    assert_eq!(timed_out, 1_000, "every stalled body got 408: {:?}", answers.iter().find(|a| !a.contains("408")));
    main_port_serves(&h).await;
}

#[tokio::test]
async fn a_thousand_idle_h2c_connections_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let h = herald_with_ops(dir.path());
    let ops = h.ops.clone().unwrap();
    // The HTTP/2 preface and an empty SETTINGS frame, then nothing.
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    let conns = open_many(socket_of(&h.base), 1_000, 200, PREFACE).await;
    let median = probe(&ops, 9).await;
    eprintln!("ops /healthz median {median:?} with 1 000 idle h2c connections");
    assert!(median < Duration::from_millis(100), "ops probe median {median:?}");
    let took = all_closed(conns, Duration::from_secs(30)).await;
    eprintln!("idle h2c connections closed after {took:?}");
    main_port_serves(&h).await;
}

#[tokio::test]
async fn one_address_holds_at_most_its_share_of_connections() {
    let s = TestServer::start_with(|c| c.limits.max_connections_per_ip = 3).await;
    let to: SocketAddr = socket_of(&s.base);
    let local = Ipv4Addr::new(127, 0, 0, 1);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from(local, to).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fourth = connect_from(local, to).await.unwrap();
    let mut buf = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(2), fourth.read(&mut buf)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "the fourth connection of one address is closed at once");
    let mut other = connect_from(Ipv4Addr::new(127, 0, 0, 2), to).await.unwrap();
    other.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    other.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "another address is served: {answer}");
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = connect_from(local, to).await.unwrap();
    again.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    again.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "a slot given back is usable: {answer}");
    s.shutdown().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let s = TestServer::start_with(|c| c.limits.idle_timeout = Duration::from_secs(1)).await;
    let mut c = TcpStream::connect(socket_of(&s.base)).await.unwrap();
    c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = c.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let started = Instant::now();
    let rest = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut Vec::new())).await;
    assert!(rest.is_ok(), "the idle keep-alive connection was still open after 10 s");
    eprintln!("idle connection closed after {:?}", started.elapsed());
    s.shutdown().await;
}

/// Writes `head` then `pieces` (`gap_ms` apart) while reading the answer, so
/// that an answer sent before the body is done is read before the server's
/// reset of the connection can discard it. Stops writing once the server
/// stops reading.
async fn send_while_reading(
    to: SocketAddr,
    head: String,
    pieces: impl Iterator<Item = Vec<u8>>,
    gap_ms: u64,
) -> String {
    let (mut rd, mut wr) = TcpStream::connect(to).await.unwrap().into_split();
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(20), rd.read_to_end(&mut buf)).await;
        String::from_utf8_lossy(&buf).into_owned()
    });
    wr.write_all(head.as_bytes()).await.unwrap();
    for piece in pieces {
        if reader.is_finished() || wr.write_all(&piece).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(gap_ms)).await;
    }
    reader.await.unwrap()
}

#[tokio::test]
async fn a_trickling_body_gets_408_and_an_endless_one_413() {
    let s = TestServer::start_with(|c| {
        c.limits.body_timeout = Duration::from_secs(2);
        c.limits.min_body_rate = 0;
    })
    .await;
    // One byte every 100 ms: under the whole-body deadline per byte, never done.
    let started = Instant::now();
    let head =
        "POST /auth/realms/acme/protocol/openid-connect/token HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
            .to_string();
    let answer = send_while_reading(socket_of(&s.base), head, (0..100).map(|_| b"x".to_vec()), 100).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("too slowly"), "{answer}");
    eprintln!("trickling body cut after {:?}", started.elapsed());
    // An endless chunked body is refused at the size limit.
    let head = "POST /auth/realms/acme/protocol/openid-connect/token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_string();
    let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "x".repeat(64 * 1024)).into_bytes();
    let answer = send_while_reading(socket_of(&s.base), head, (0..1000).map(|_| chunk.clone()), 0).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    s.shutdown().await;
}

#[tokio::test]
async fn the_operations_port_serves_probes_and_metrics_only() {
    let s = TestServer::start_with(|c| c.ops_listen = Some("127.0.0.1:0".parse().unwrap())).await;
    let ops = format!("http://{}", s.running.as_ref().unwrap().ops_addr.unwrap());
    for path in ["/healthz", "/readyz", "/metrics"] {
        let r = reqwest::get(format!("{ops}{path}")).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
    }
    let r = reqwest::get(format!("{ops}/openapi.json")).await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND, "no API on the operations port");
    let r = crate::common::http_client().post(format!("{ops}/v1/tenants")).bearer_auth(OPERATOR).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = reqwest::get(s.url("/healthz")).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the main port keeps the probes too");
    s.shutdown().await;
}

/// A tmpfs of `mib` MiB mounted for the test, unmounted on drop; `None` (and
/// a message) where this machine does not let the test mount one.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount(mib: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .status();
        match mounted {
            Ok(s) if s.success() => Some(SmallDisk(dir)),
            other => {
                eprintln!("SKIPPED: mounting a tmpfs is not permitted here ({other:?})");
                None
            }
        }
    }

    /// Writes a file until the filesystem is full.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.0.path().join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![7u8; 1 << 20];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// Creates user `name` in tenant `acme` through the API; answers the status.
async fn create_user(http: &reqwest::Client, h: &Herald, admin: &str, name: &str) -> StatusCode {
    let body = serde_json::json!({"username": name, "credentials": [{"type": "password", "value": "pw-123456"}]});
    let r = http.post(format!("{}/auth/realms/acme/users", h.base)).bearer_auth(admin).json(&body);
    r.send().await.unwrap().status()
}

/// Asserts that every user of `names` is there.
async fn assert_users(http: &reqwest::Client, h: &Herald, admin: &str, names: &[String]) {
    for name in names {
        let r = http.get(format!("{}/auth/realms/acme/users/{name}", h.base)).bearer_auth(admin).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{name} is there");
    }
}

/// Polls `url` until it answers `status`; panics after `secs`.
async fn until_status(http: &reqwest::Client, url: &str, status: StatusCode, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if http.get(url).send().await.is_ok_and(|r| r.status() == status) {
            return;
        }
        assert!(Instant::now() < deadline, "{url} did not answer {status} within {secs} s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_full_disk_refuses_writes_with_507_keeps_reads_and_recovers_without_restart() {
    if herald_storage::test_on_postgres() {
        return; // The data directory's disk: records live in the database's on PostgreSQL.
    }
    let Some(disk) = SmallDisk::mount(192) else { return };
    let data = disk.0.path().join("data");
    let h = Herald::start(&data, &[]);
    let http = crate::common::http_client();
    let admin = h.create_tenant(&http, "acme").await;
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        assert_eq!(create_user(&http, &h, &admin, &format!("before{i}")).await, StatusCode::OK);
        acknowledged.push(format!("before{i}"));
    }

    let filler = disk.fill();
    until_status(&http, &format!("{}/readyz", h.base), StatusCode::SERVICE_UNAVAILABLE, 5).await;
    let r = http
        .post(format!("{}/auth/realms/acme/users", h.base))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"username": "during"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::INSUFFICIENT_STORAGE);
    assert!(r.text().await.unwrap().contains("disk is full"));
    let r = http.post(format!("{}/v1/tenants/acme/apps/shop", h.base)).bearer_auth(&admin).json(&fcm_app_body());
    assert_eq!(r.send().await.unwrap().status(), StatusCode::INSUFFICIENT_STORAGE, "every write route");
    // Reads, the user list and logins of existing users keep working.
    let r = http.get(format!("{}/auth/realms/acme/users", h.base)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the user list while full");
    let r = http
        .post(format!("{}/auth/realms/acme/protocol/openid-connect/token", h.base))
        .form(&[("grant_type", "password"), ("username", "before3"), ("password", "pw-123456")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "a login while full");
    let t: serde_json::Value = r.json().await.unwrap();
    let token = t["access_token"].as_str().unwrap();
    assert_eq!(t["refresh_token"], "", "no session can be stored, so no refresh token");
    let r = http.get(format!("{}/v1/tenants/acme/apps", h.base)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = http.get(format!("{}/auth/realms/acme/users/before3", h.base)).bearer_auth(token).send().await;
    assert_ne!(r.unwrap().status(), StatusCode::INTERNAL_SERVER_ERROR);

    // Space freed: writes succeed again, no restart.
    std::fs::remove_file(filler).unwrap();
    until_status(&http, &format!("{}/readyz", h.base), StatusCode::OK, 5).await;
    for i in 0..20 {
        let st = create_user(&http, &h, &admin, &format!("after{i}")).await;
        assert_eq!(st, StatusCode::OK, "writes after space was freed");
        acknowledged.push(format!("after{i}"));
    }

    // Nothing acknowledged was lost, before or after a kill -9.
    let h = {
        h.kill9();
        Herald::start(&data, &[])
    };
    let admin = h.login(&http, "acme").await;
    assert_users(&http, &h, &admin, &acknowledged).await;
    drop(h);
}

#[tokio::test]
async fn a_database_that_met_a_full_disk_is_reopened_once_space_is_freed() {
    if herald_storage::test_on_postgres() {
        return; // The data directory's disk: records live in the database's on PostgreSQL.
    }
    let Some(disk) = SmallDisk::mount(96) else { return };
    let data = disk.0.path().join("data");
    // No reserve: the database itself meets the full disk.
    let h = Herald::start(&data, &[("HERALD_DISK_RESERVE_MIB", "0".into())]);
    let http = crate::common::http_client();
    let admin = h.create_tenant(&http, "acme").await;
    assert_eq!(create_user(&http, &h, &admin, "first").await, StatusCode::OK);
    let filler = disk.fill();
    // Writes fail (507 from the disk, then 503 while the database waits to be reopened), never 500.
    let mut refused = Vec::new();
    for i in 0..10 {
        let st = create_user(&http, &h, &admin, &format!("during{i}")).await;
        assert_ne!(st, StatusCode::INTERNAL_SERVER_ERROR);
        if st != StatusCode::OK {
            refused.push(st);
        }
    }
    assert!(!refused.is_empty(), "a full disk refused some write");
    assert!(
        refused.iter().all(|s| [StatusCode::INSUFFICIENT_STORAGE, StatusCode::SERVICE_UNAVAILABLE].contains(s)),
        "{refused:?}"
    );
    until_status(&http, &format!("{}/readyz", h.base), StatusCode::SERVICE_UNAVAILABLE, 5).await;
    std::fs::remove_file(filler).unwrap();
    until_status(&http, &format!("{}/readyz", h.base), StatusCode::OK, 10).await;
    assert_eq!(create_user(&http, &h, &admin, "after").await, StatusCode::OK, "writes work again without a restart");
    assert_users(&http, &h, &admin, &["first".into(), "after".into()]).await;
    drop(h);
}

#[tokio::test]
async fn an_engine_started_on_a_full_disk_serves_reads_and_is_not_ready() {
    if herald_storage::test_on_postgres() {
        return; // The data directory's disk: records live in the database's on PostgreSQL.
    }
    let Some(disk) = SmallDisk::mount(160) else { return };
    let data = disk.0.path().join("data");
    let h = Herald::start(&data, &[]);
    let http = crate::common::http_client();
    h.create_tenant(&http, "acme").await;
    h.kill9();
    let filler = disk.fill();
    let h = Herald::start(&data, &[]);
    let r = http.get(format!("{}/readyz", h.base)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "not ready on a full disk");
    let admin = h.login(&http, "acme").await;
    let r = http.get(format!("{}/auth/realms/acme/users", h.base)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "reads are served");
    let r = http.post(format!("{}/v1/tenants/acme/apps/shop", h.base)).bearer_auth(&admin).json(&fcm_app_body());
    assert_eq!(r.send().await.unwrap().status(), StatusCode::INSUFFICIENT_STORAGE);
    std::fs::remove_file(filler).unwrap();
    until_status(&http, &format!("{}/readyz", h.base), StatusCode::OK, 5).await;
    let r = http.post(format!("{}/v1/tenants/acme/apps/shop", h.base)).bearer_auth(&admin).json(&fcm_app_body());
    assert_eq!(r.send().await.unwrap().status(), StatusCode::CREATED, "writes once space is freed");
    drop(h);
}

#[tokio::test]
async fn a_broadcast_pauses_on_a_full_disk_and_completes_once_space_is_freed() {
    if herald_storage::test_on_postgres() {
        return; // The data directory's disk: records live in the database's on PostgreSQL.
    }
    use herald_sim::{Faults, ProviderFaults};
    let Some(disk) = SmallDisk::mount(192) else { return };
    let dir = tempfile::tempdir().unwrap();
    let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.path().join("certs"))).await.unwrap();
    let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();
    let env = sim_env(&sims, dir.path());
    let data = disk.0.path().join("data");
    let http = crate::common::http_client();
    const TOKENS: u64 = 3000;
    acme_with_apns_clients(&data, &env, &creds, TOKENS, 7_000_000).await;
    // Slow answers, so the broadcast is still running when the disk fills.
    sims.set_faults(Faults {
        apns: ProviderFaults { latency_ms: Some(50), max_concurrent_streams: Some(100), ..Default::default() },
        ..Default::default()
    });
    let h = Herald::start(&data, &env);
    let admin = h.login(&http, "acme").await;
    let body = serde_json::json!({"category": "chat", "recipient": {"tenantId": "acme", "topic": "news"}, "payload": {"message": {"body": "all"}}});
    let r = http.post(format!("{}/v1/tenants/acme/push_notification/send", h.base)).bearer_auth(&admin).json(&body);
    let answer: serde_json::Value = r.send().await.unwrap().json().await.unwrap();
    let id = answer[0]["notificationId"].as_str().unwrap().to_string();
    let report = || {
        let req = http.get(format!("{}/v1/tenants/acme/push_notification/{id}", h.base)).bearer_auth(&admin);
        async move { req.send().await.unwrap().json::<serde_json::Value>().await.unwrap() }
    };
    while sims.stats().apns.accepted < 200 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let filler = disk.fill();
    until_status(&http, &format!("{}/readyz", h.base), StatusCode::SERVICE_UNAVAILABLE, 5).await;
    // Paused: what was in flight finishes, then nothing more is sent.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let paused_at = sims.stats().apns.accepted;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(sims.stats().apns.accepted, paused_at, "nothing is sent while the disk is full");
    assert!(paused_at < TOKENS, "the broadcast was caught mid-way ({paused_at})");
    assert_eq!(report().await["state"], "RUNNING");
    std::fs::remove_file(filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let r = report().await;
        if r["state"] == "COMPLETED" {
            break r;
        }
        assert!(Instant::now() < deadline, "the broadcast did not complete after space was freed: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!("paused at {paused_at} of {TOKENS}; report {done}");
    assert_eq!(done["counts"]["sent"], TOKENS, "{done}");
    assert!(sims.stats().apns.accepted >= TOKENS);
    drop(h);
}

/// Writes a file in `dir` until its filesystem has not one byte left (1 MiB
/// writes, then 64 KiB, 4 KiB and single bytes, each until ENOSPC); answers its path.
fn fill_to_last_byte(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![7u8; 1 << 20];
    for size in [1 << 20, 64 << 10, 4 << 10, 1] {
        while f.write_all(&chunk[..size]).is_ok() {}
    }
    path
}

/// Creates user `name` (no credentials: no password hashing) in tenant
/// `acme`; answers the status, after checking it is one a full disk may give.
async fn create_bare_user(http: &reqwest::Client, h: &Herald, admin: &str, name: &str) -> StatusCode {
    let r = http.post(format!("{}/auth/realms/acme/users", h.base)).bearer_auth(admin);
    let st = r.json(&serde_json::json!({ "username": name })).send().await.unwrap().status();
    assert!(
        [StatusCode::OK, StatusCode::INSUFFICIENT_STORAGE, StatusCode::SERVICE_UNAVAILABLE].contains(&st),
        "creating {name} answered {st}"
    );
    st
}

/// What the writers of [`a_write_that_meets_a_full_disk_starts_recovery_itself`] saw.
#[derive(Default)]
struct Seen {
    /// Users whose creation answered 200.
    acknowledged: Vec<String>,
    /// Writes refused (507 or 503).
    refused: usize,
    /// Writes refused while the engine said it was ready: `/readyz`
    /// answered 200 right after this refusal and the one before it.
    unready_unreported: Vec<String>,
}

/// One write of a writer, and after a refusal the readiness probe. The
/// first write to meet a failure inside the database may follow a 200 of
/// `/readyz` (nothing knew before it), but it marks the store failed: the
/// probe right after it answers 503, or 200 once the database is reopened,
/// and then the next write goes through. Two refusals in a row each
/// followed by a 200 are recorded: writes fail and the engine does not say so.
async fn write_and_check(
    http: &reqwest::Client,
    h: &Herald,
    admin: &str,
    name: &str,
    ready_after_refusals: &mut u32,
    seen: &std::sync::Mutex<Seen>,
) -> StatusCode {
    let st = create_bare_user(http, h, admin, name).await;
    if st == StatusCode::OK {
        *ready_after_refusals = 0;
        seen.lock().unwrap().acknowledged.push(name.to_string());
        return st;
    }
    let ready = http.get(format!("{}/readyz", h.base)).send().await.unwrap().status();
    *ready_after_refusals = if ready == StatusCode::OK { *ready_after_refusals + 1 } else { 0 };
    let mut seen = seen.lock().unwrap();
    seen.refused += 1;
    if *ready_after_refusals >= 2 {
        seen.unready_unreported.push(format!("{name}: {st}, /readyz 200 after it and the refusal before"));
    }
    st
}

/// Issue 74, item 3: another process fills the disk to the last byte and
/// frees it again within the disk watcher's sampling period, so the watcher
/// may never see it full; a write that meets the full disk inside sled must
/// mark the store failed itself (`/readyz` 503) and the database must be
/// reopened as soon as there is room. Twenty rounds, writes running
/// throughout: each round's writes succeed again within 2 s of the space
/// being freed, without a restart, and every acknowledged write survives
/// (read back, then again after a kill -9).
#[tokio::test]
async fn a_write_that_meets_a_full_disk_starts_recovery_itself() {
    if herald_storage::test_on_postgres() {
        return; // The data directory's disk: records live in the database's on PostgreSQL.
    }
    let Some(disk) = SmallDisk::mount(48) else { return };
    let data = disk.0.path().join("data");
    let env = [("HERALD_DISK_RESERVE_MIB", "4".to_string())];
    let h = std::sync::Arc::new(Herald::start(&data, &env));
    let http = crate::common::http_client();
    let admin = std::sync::Arc::new(h.create_tenant(&http, "acme").await);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Seen::default()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let started = Instant::now();

    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (h, http, admin, seen, stop) = (h.clone(), http.clone(), admin.clone(), seen.clone(), stop.clone());
            tokio::spawn(async move {
                let mut ready_after_refusals = 0;
                for n in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let name = format!("w{w}-{n}");
                    write_and_check(&http, &h, &admin, &name, &mut ready_after_refusals, &seen).await;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        })
        .collect();

    const ROUNDS: usize = 20;
    const RECOVERY: Duration = Duration::from_secs(2);
    let mut recoveries = Vec::new();
    let mut failed_before = 0.0;
    for round in 0..ROUNDS {
        // Writes go through before the disk fills.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let refused_before = seen.lock().unwrap().refused;
        // Filled to the last byte and freed again, from outside the engine,
        // within less than the watcher's 200 ms when the machine allows.
        let hold = Duration::from_millis(40 + 20 * (round as u64 % 4));
        let fill = disk.0.path().to_path_buf();
        let (filled_in, full_for) = tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            let filler = fill_to_last_byte(&fill);
            let filled_in = t.elapsed();
            std::thread::sleep(hold);
            std::fs::remove_file(filler).unwrap();
            (filled_in, t.elapsed())
        })
        .await
        .unwrap();
        let freed = Instant::now();
        // Writes succeed again within the recovery window (refusals checked
        // against /readyz as the writers' are).
        let mut ready_after_refusals = 0;
        let mut n = 0;
        let recovered = loop {
            let name = format!("probe{round}-{n}");
            n += 1;
            if write_and_check(&http, &h, &admin, &name, &mut ready_after_refusals, &seen).await == StatusCode::OK {
                break freed.elapsed();
            }
            assert!(
                freed.elapsed() < RECOVERY * 5,
                "round {round}: writes still refused {:?} after the space was freed",
                freed.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let refused = seen.lock().unwrap().refused - refused_before;
        let failed_inside = write_failures(&http, &h).await;
        eprintln!(
            "round {round}: filled in {filled_in:?}, full for {full_for:?}, {refused} writes refused, {} failed inside the database, writes back {recovered:?} after the space was freed",
            failed_inside - failed_before
        );
        failed_before = failed_inside;
        recoveries.push(recovered);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    recoveries.sort();
    eprintln!(
        "{ROUNDS} rounds in {:?}: {} writes acknowledged, {} refused, {failed_before} failed inside the database; recovery median {:?}, max {:?}",
        started.elapsed(),
        seen.acknowledged.len(),
        seen.refused,
        recoveries[ROUNDS / 2],
        recoveries[ROUNDS - 1]
    );
    assert!(
        seen.unready_unreported.is_empty(),
        "writes refused while /readyz answered 200: {:?}",
        seen.unready_unreported
    );
    assert!(failed_before > 0.0, "no write met the full disk inside the database: the rounds tested only the reserve");
    let slow: Vec<_> = recoveries.iter().filter(|r| **r > RECOVERY).collect();
    assert!(slow.is_empty(), "writes came back later than {RECOVERY:?} after the space was freed: {slow:?}");

    // Nothing acknowledged was lost: read back now, and after a kill -9.
    let h = std::sync::Arc::into_inner(h).unwrap();
    assert_users_concurrently(&http, &h, &admin, &seen.acknowledged).await;
    h.kill9();
    let h = Herald::start(&data, &env);
    let admin = h.login(&http, "acme").await;
    assert_users_concurrently(&http, &h, &admin, &seen.acknowledged).await;
    eprintln!(
        "every acknowledged write read back, before and after a kill -9; the whole test took {:?}",
        started.elapsed()
    );
}

/// `herald_storage_write_failures_total`, all kinds: writes that failed
/// inside the database (rather than being refused below the reserve).
async fn write_failures(http: &reqwest::Client, h: &Herald) -> f64 {
    let text = http.get(format!("{}/metrics", h.base)).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|l| l.starts_with("herald_storage_write_failures_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// [`assert_users`], 16 reads at a time.
async fn assert_users_concurrently(http: &reqwest::Client, h: &Herald, admin: &str, names: &[String]) {
    use futures::StreamExt;
    futures::stream::iter(names)
        .for_each_concurrent(16, |name| async move {
            let r = http.get(format!("{}/auth/realms/acme/users/{name}", h.base)).bearer_auth(admin);
            assert_eq!(r.send().await.unwrap().status(), StatusCode::OK, "{name} was acknowledged, and is lost");
        })
        .await;
}

/// `herald serve` on `data` with `--disk-reserve-mib reserve_mib`, expected to
/// exit at start-up: answers its stderr (killed and failed after 30 s).
fn serve_until_exit(data: &std::path::Path, reserve_mib: u64) -> String {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(["serve", "--listen", "127.0.0.1:0", "--disk-reserve-mib", &reserve_mib.to_string(), "--data-dir"])
        .arg(data)
        .env("HERALD_OPERATOR_TOKEN", OPERATOR)
        .env("HERALD_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("herald serve with a {reserve_mib} MiB reserve on {} did not exit", data.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "{stderr}");
    stderr
}

/// A reserve the data directory's filesystem cannot hold (with the ballast and
/// some room for the database) stops `serve` at start-up, saying so, rather than
/// every write being refused as "no space left" on a nearly empty disk: on a
/// 40 MiB tmpfs with the default 64 MiB reserve (where mounting is permitted),
/// and on the temporary directory's filesystem with a reserve of 100 TiB.
#[tokio::test]
async fn a_reserve_larger_than_the_filesystem_is_refused_at_start_up_saying_so() {
    if herald_storage::test_on_postgres() {
        return; // The data directory's disk: records live in the database's on PostgreSQL.
    }
    let dir = tempfile::tempdir().unwrap();
    let stderr = serve_until_exit(&dir.path().join("data"), 100 << 20);
    assert!(stderr.contains("--disk-reserve-mib 104857600 does not fit"), "{stderr}");
    assert!(stderr.contains("lower the reserve"), "{stderr}");
    assert!(!stderr.contains("no space left"), "{stderr}");

    let Some(disk) = SmallDisk::mount(40) else { return };
    let stderr = serve_until_exit(&disk.0.path().join("data"), 64);
    assert!(
        stderr.contains("--disk-reserve-mib 64 does not fit: the data directory's filesystem holds only 40 MiB"),
        "{stderr}"
    );
    assert!(stderr.contains("lower the reserve to at most 16 MiB"), "{stderr}");
    assert!(!stderr.contains("no space left"), "{stderr}");
}
