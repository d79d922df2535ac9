//! Abuse limits: slow and oversized request heads, the connection limit, the
//! per-tenant send rate, the per-user and per-IP token endpoint rates, and no
//! secret ever written to the logs.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn addr(s: &TestServer) -> String {
    s.base.trim_start_matches("http://").to_string()
}

#[tokio::test]
async fn a_slow_request_head_is_cut_off() {
    let s = TestServer::start_with(|c| c.limits.header_read_timeout = Duration::from_millis(300)).await;
    let mut conn = TcpStream::connect(addr(&s)).await.unwrap();
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    // The server closes the connection (possibly after a 408) instead of waiting for ever.
    let read = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the connection was still open after 5 s");
    assert!(started.elapsed() < Duration::from_secs(3), "closed after {:?}", started.elapsed());
    assert!(!String::from_utf8_lossy(&buf).contains("200 OK"), "{}", String::from_utf8_lossy(&buf));
    s.shutdown().await;
}

#[tokio::test]
async fn an_oversized_request_head_gets_431() {
    let s = TestServer::start_with(|c| c.limits.header_limit = 16 * 1024).await;
    let r = s.http.get(s.url("/healthz")).header("x-filler", "a".repeat(8 * 1024)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "a head under the limit is served");
    let r = s.http.get(s.url("/healthz")).header("x-filler", "a".repeat(40 * 1024)).send().await;
    match r {
        Ok(r) => assert_eq!(r.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE),
        Err(e) => panic!("expected a 431 answer, got {e}"),
    }
    s.shutdown().await;
}

#[tokio::test]
async fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let s = TestServer::start_with(|c| c.limits.max_connections = Some(2)).await;
    let idle1 = TcpStream::connect(addr(&s)).await.unwrap();
    let idle2 = TcpStream::connect(addr(&s)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let fresh = || reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let blocked = fresh().get(s.url("/healthz")).timeout(Duration::from_millis(700)).send().await;
    assert!(blocked.is_err(), "a third connection is not served while two are open");
    drop(idle1);
    let r = fresh().get(s.url("/healthz")).timeout(Duration::from_secs(5)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "served once a slot is free");
    drop(idle2);
    s.shutdown().await;
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> u64 {
    headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn the_send_api_is_rate_limited_per_tenant() {
    let s = TestServer::start_with(|c| {
        c.limits.send_rate = 1;
        c.limits.send_burst = 3;
    })
    .await;
    let acme = s.tenant_with_app("acme", "shop").await;
    let other = s.tenant_with_app("other", "shop").await;
    let send = |tenant: &'static str, token: String| {
        let req = s.http.post(s.url(&format!("/v1/tenants/{tenant}/push_notification/send"))).bearer_auth(token);
        async move { req.json(&json!({})).send().await.unwrap() }
    };
    for _ in 0..3 {
        let r = send("acme", acme.clone()).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "within the burst, the body is judged");
    }
    let r = send("acme", acme.clone()).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(retry_after(r.headers()) >= 1, "{:?}", r.headers());
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], 429, "{body}");
    let r = send("other", other.clone()).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "another tenant has its own bucket");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = send("acme", acme).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "the bucket refills");
    s.shutdown().await;
}

#[tokio::test]
async fn the_token_endpoint_is_rate_limited_per_user_and_per_address() {
    let s = TestServer::start_with(|c| {
        c.limits.token_rate_per_user = 1;
        c.limits.token_burst_per_user = 3;
    })
    .await;
    s.create_tenant("acme").await;
    let started = Instant::now();
    for _ in 0..3 {
        let (st, b) = s.password_grant("acme", "admin", "wrong-password").await;
        assert_eq!(b["error"], "invalid_grant", "within the burst, the password is judged: {st} {b}");
    }
    // A password grant takes a while (argon2): on a slow machine the bucket
    // refills meanwhile, one grant a second, so count the grants let through.
    let passed = until_limited(started, 1, || async {
        s.http
            .post(s.url("/auth/realms/acme/protocol/openid-connect/token"))
            .form(&[("grant_type", "password"), ("username", "ADMIN"), ("password", "wrong-password")])
            .send()
            .await
            .unwrap()
    })
    .await;
    assert!(passed <= 1 + started.elapsed().as_secs() as usize, "the same user, whatever its case: {passed} passed");
    let (_, b) = s.password_grant("acme", "someone-else", "x").await;
    assert_eq!(b["error"], "invalid_grant", "another user is not limited: {b}");
    s.shutdown().await;

    let s = TestServer::start_with(|c| {
        c.limits.token_rate_per_user = 0;
        c.limits.token_rate_per_ip = 1;
        c.limits.token_burst_per_ip = 4;
    })
    .await;
    s.create_tenant("acme").await;
    let started = Instant::now();
    for i in 0..4 {
        let (_, b) = s.password_grant("acme", &format!("user{i}"), "x").await;
        assert_eq!(b["error"], "invalid_grant", "{b}");
    }
    let users = std::sync::atomic::AtomicUsize::new(10);
    let passed = until_limited(started, 1, || async {
        let user = format!("user{}", users.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        s.http
            .post(s.url("/auth/realms/acme/protocol/openid-connect/token"))
            .form(&[("grant_type", "password"), ("username", user.as_str()), ("password", "x")])
            .send()
            .await
            .unwrap()
    })
    .await;
    assert!(passed <= 1 + started.elapsed().as_secs() as usize, "one address, many users: {passed} passed");
    s.shutdown().await;
}

/// Every endpoint that checks a client secret counts guesses against the
/// client, so a secret cannot be guessed at introspection, revocation or
/// logout instead of the token endpoint.
#[tokio::test]
async fn client_secret_guesses_are_rate_limited_at_every_oidc_endpoint() {
    let s = TestServer::start_with(|c| {
        c.limits.token_rate_per_user = 1;
        c.limits.token_burst_per_user = 2;
    })
    .await;
    let admin = s.tenant_with_app("acme", "app").await;
    for endpoint in ["token/introspect", "revoke", "logout"] {
        let (id, _) = s.register_client("acme", &admin, "app").await;
        let url = s.url(&format!("/auth/realms/acme/protocol/openid-connect/{endpoint}"));
        let mut refused = 0;
        for _ in 0..6 {
            let form = [("token", "t"), ("refresh_token", "t"), ("client_id", id.as_str()), ("client_secret", "guess")];
            let r = s.http.post(&url).form(&form).send().await.unwrap();
            match r.status() {
                StatusCode::TOO_MANY_REQUESTS => refused += 1,
                other => assert_eq!(other, StatusCode::UNAUTHORIZED, "{endpoint}: a wrong secret"),
            }
        }
        assert!(refused >= 3, "{endpoint}: {refused} of 6 guesses refused");
    }
    s.shutdown().await;
}

/// Repeats `attempt` until it is answered 429 with a Retry-After, and answers
/// how many were let through before (each must be a judged 400); `rate` per
/// second since `started` bounds how many may be.
async fn until_limited<F: std::future::Future<Output = reqwest::Response>>(
    started: Instant,
    rate: usize,
    attempt: impl Fn() -> F,
) -> usize {
    let mut passed = 0;
    loop {
        let r = attempt().await;
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            assert!(retry_after(r.headers()) >= 1, "{:?}", r.headers());
            return passed;
        }
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "let through, so judged");
        passed += 1;
        assert!(passed <= 2 + rate * started.elapsed().as_secs() as usize, "{passed} let through: no limit");
    }
}

/// `herald serve` as a child process at debug level, its stdout and stderr in one file.
struct LoggedHerald {
    child: std::process::Child,
    base: String,
    log: std::path::PathBuf,
}

impl LoggedHerald {
    fn start(dir: &std::path::Path) -> LoggedHerald {
        let log = dir.join("herald.log");
        let err = std::fs::File::create(&log).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_herald"))
            .args(["serve", "--listen", "127.0.0.1:0", "--webhook-allow-private", "--data-dir"])
            .arg(dir.join("data"))
            .env("HERALD_OPERATOR_TOKEN", OPERATOR)
            .env("HERALD_LOG", "debug")
            .envs(crate::common::store_for(&dir.join("data")).map(|url| ("HERALD_STORE", url)))
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let stdout_copy = dir.join("stdout.log");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut copy = std::fs::File::create(stdout_copy).unwrap();
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("herald listening on ") {
                    let _ = tx.send(url.trim().to_string());
                }
                let _ = std::io::Write::write_all(&mut copy, format!("{line}\n").as_bytes());
            }
        });
        let base = rx.recv_timeout(Duration::from_secs(60)).expect("herald prints its address");
        LoggedHerald { child, base, log }
    }

    fn stop(mut self) -> String {
        crate::common::signal(&self.child, crate::common::Signal::TERM);
        let _ = self.child.wait();
        let log = self.log.clone();
        drop(self);
        Self::read_logs(&log)
    }

    fn read_logs(log: &std::path::Path) -> String {
        let mut text = String::new();
        std::fs::File::open(log).unwrap().read_to_string(&mut text).unwrap();
        let mut out = String::new();
        if let Ok(mut f) = std::fs::File::open(log.with_file_name("stdout.log")) {
            f.read_to_string(&mut out).unwrap();
        }
        text + &out
    }
}

/// A failing test must not leave the server running.
impl Drop for LoggedHerald {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn no_secret_reaches_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    let h = LoggedHerald::start(dir.path());
    let http = crate::common::http_client();
    let base = h.base.clone();
    let call = |method: Method, path: &str, token: &str, body: Value| {
        let req = http.request(method, format!("{base}{path}")).bearer_auth(token).json(&body);
        async move {
            let r = req.send().await.unwrap();
            let st = r.status();
            (st, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let token = |form: Vec<(&'static str, String)>| {
        let req = http.post(format!("{base}/auth/realms/acme/protocol/openid-connect/token")).form(&form);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let admin_password = "Pa55-word-in-the-clear-7391";
    let (st, b) = call(
        Method::POST,
        "/v1/tenants",
        OPERATOR,
        json!({"tenantId": "acme", "adminUsername": "admin", "adminPassword": admin_password}),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let pair = token(vec![
        ("grant_type", "password".into()),
        ("username", "admin".into()),
        ("password", admin_password.into()),
    ])
    .await;
    let access = pair["access_token"].as_str().unwrap().to_string();
    let refresh = pair["refresh_token"].as_str().unwrap().to_string();
    let refreshed = token(vec![("grant_type", "refresh_token".into()), ("refresh_token", refresh.clone())]).await;
    assert!(refreshed["access_token"].is_string(), "{refreshed}");
    // A failed login with a password that is almost the real one.
    let failed = token(vec![
        ("grant_type", "password".into()),
        ("username", "admin".into()),
        ("password", "Wrong-but-secret-4412".into()),
    ])
    .await;
    assert!(failed["error"].is_string());
    let app = fcm_app_body();
    let sa = app["fcmServiceAccountJSON"].as_str().unwrap().to_string();
    let (st, b) = call(Method::POST, "/v1/tenants/acme/apps/shop", &access, app).await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let (st, b) =
        call(Method::POST, "/v1/tenants/acme/clients", &access, json!({"appName": "shop", "platform": "android"}))
            .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let client_id = b["astClientId"].as_str().unwrap().to_string();
    let client_secret = b["clientSecret"].as_str().unwrap().to_string();
    let client_pair = token(vec![
        ("grant_type", "client_credentials".into()),
        ("client_id", client_id.clone()),
        ("client_secret", client_secret.clone()),
    ])
    .await;
    let client_access = client_pair["access_token"].as_str().unwrap().to_string();
    let (st, b) = call(
        Method::PUT,
        &format!("/v1/tenants/acme/clients/{client_id}/pushtoken"),
        &client_access,
        json!({"appName": "shop", "pushToken": "FCM:push-token-secret-5521"}),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{b}");
    let (st, hook) = call(
        Method::POST,
        "/v1/tenants/acme/webhooks",
        &access,
        json!({"filter": "type=domain", "callbackUrl": "http://127.0.0.1:9/hook"}),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{hook}");
    let webhook_secret = hook["secret"].as_str().unwrap().to_string();
    let (st, b) = call(
        Method::POST,
        "/v1/tenants/acme/nonces",
        &access,
        json!({"action": "LOGIN_NONCE", "payload": {"credential": {"user": "alice", "secret": "nonce-credential-secret-8812"}}}),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    let nonce = b["nonce"].as_str().unwrap().to_string();
    let (st, _) = call(
        Method::PUT,
        "/v1/tenants/acme/clients/events",
        &client_access,
        json!({"astClientId": client_id, "userId": "alice", "nonce": nonce}),
    )
    .await;
    assert!(st.as_u16() < 500, "{st}");
    let (st, b) = call(
        Method::POST,
        "/v1/tenants/acme/events",
        &access,
        json!({"type": "domain", "event": "LOG_SCAN", "data": {}}),
    )
    .await;
    assert!(st.is_success(), "{st} {b}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let logs = h.stop();
    assert!(logs.contains("/v1/tenants/acme/clients/events"), "the workload was logged: {} bytes", logs.len());

    let secrets = [
        ("operator token", OPERATOR.to_string()),
        ("admin password", admin_password.to_string()),
        ("failed password", "Wrong-but-secret-4412".to_string()),
        ("access token", access.clone()),
        ("access token signature", access.rsplit('.').next().unwrap().to_string()),
        ("refresh token", refresh.clone()),
        ("refreshed access token", refreshed["access_token"].as_str().unwrap().to_string()),
        ("client secret", client_secret),
        ("client access token", client_access),
        ("service account (base64)", sa.clone()),
        ("service account private key", "MIIB".to_string() + "\\n-----END"),
        ("webhook secret", webhook_secret),
        ("nonce credential secret", "nonce-credential-secret-8812".to_string()),
        ("nonce", nonce),
    ];
    let mut found = Vec::new();
    for (name, secret) in &secrets {
        if logs.contains(secret.as_str()) {
            found.push(*name);
        }
    }
    println!(
        "log scan: {} bytes of debug logs, {} secrets looked for, {} found",
        logs.len(),
        secrets.len(),
        found.len()
    );
    assert!(found.is_empty(), "secrets in the logs: {found:?}");
}
