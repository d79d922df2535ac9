//! A Herald server in this process on an ephemeral port, and helpers to drive
//! it through its HTTP API as a client would.

pub mod receiver;

use herald::config::Config;
use herald::server::Running;
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub const OPERATOR: &str = "operator-secret-token";
pub const PASSWORD: &str = "admin-password-1";

/// The HTTP client of the tests: a request Herald never answers fails its
/// test after two minutes, naming it, instead of hanging the suite.
pub fn http_client() -> Client {
    Client::builder().timeout(std::time::Duration::from_secs(120)).build().expect("an HTTP client")
}

pub struct TestServer {
    pub running: Option<Running>,
    pub base: String,
    pub http: Client,
    pub dir: tempfile::TempDir,
}

/// The database of the data directory `data` when the suite runs on
/// PostgreSQL (`HERALD_TEST_STORE=postgres`): a fresh one the first time, the
/// same one whenever the directory is opened again (restarts, crash
/// recovery). `None` on sled, the default.
pub fn store_for(data: &Path) -> Option<String> {
    herald_storage::test_options(data).store_url
}

/// [`Config::for_data_dir`] on the suite's backend (see [`store_for`]).
pub fn config_for(data: &Path) -> Config {
    let mut config = Config::for_data_dir(data);
    config.store = store_for(data);
    config
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = config_for(&dir.path().join("data"));
        config.listen = "127.0.0.1:0".parse().unwrap();
        config.public_url = "http://127.0.0.1:0".into();
        config.operator_token = Some(OPERATOR.into());
        tweak(&mut config);
        let running = herald::server::spawn(config).await.expect("server starts");
        let base = format!("http://{}", running.addr);
        TestServer { running: Some(running), base, http: http_client(), dir }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a request with an optional bearer token and JSON body; returns status and JSON (Null when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method, self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let bytes = resp.bytes().await.expect("body read");
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, value)
    }

    pub async fn create_tenant(&self, tenant: &str) {
        let (s, b) = self
            .call(
                Method::POST,
                "/v1/tenants",
                Some(OPERATOR),
                Some(json!({"tenantId": tenant, "adminUsername": "admin", "adminPassword": PASSWORD})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
    }

    /// A password-grant token response.
    pub async fn password_grant(&self, tenant: &str, user: &str, password: &str) -> (StatusCode, Value) {
        let resp = self
            .http
            .post(self.url(&format!("/auth/realms/{tenant}/protocol/openid-connect/token")))
            .form(&[
                ("grant_type", "password"),
                ("username", user),
                ("password", password),
                ("client_id", "herald-cli"),
            ])
            .send()
            .await
            .expect("token request");
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub async fn admin_token(&self, tenant: &str) -> String {
        let (s, b) = self.password_grant(tenant, "admin", PASSWORD).await;
        assert_eq!(s, StatusCode::OK, "{b}");
        b["access_token"].as_str().expect("access_token").to_string()
    }

    /// A tenant with an admin token and an FCM-only app named `app`.
    pub async fn tenant_with_app(&self, tenant: &str, app: &str) -> String {
        self.create_tenant(tenant).await;
        let token = self.admin_token(tenant).await;
        let (s, b) = self
            .call(Method::POST, &format!("/v1/tenants/{tenant}/apps/{app}"), Some(&token), Some(fcm_app_body()))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        token
    }

    /// Registers a client of `app`; returns (astClientId, clientSecret).
    /// The access token of client `id` of `tenant` (the client-credentials grant).
    pub async fn client_token(&self, tenant: &str, id: &str, secret: &str) -> String {
        let resp = self
            .http
            .post(self.url(&format!("/auth/realms/{tenant}/protocol/openid-connect/token")))
            .form(&[("grant_type", "client_credentials"), ("client_id", id), ("client_secret", secret)])
            .send()
            .await
            .expect("token request");
        assert_eq!(resp.status(), StatusCode::OK, "client token of {id}");
        resp.json::<Value>().await.expect("token json")["access_token"].as_str().expect("access_token").to_string()
    }

    pub async fn register_client(&self, tenant: &str, token: &str, app: &str) -> (String, String) {
        let (s, b) = self
            .call(
                Method::POST,
                &format!("/v1/tenants/{tenant}/clients"),
                Some(token),
                Some(json!({"appName": app, "platform": "android"})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        (b["astClientId"].as_str().unwrap().to_string(), b["clientSecret"].as_str().unwrap().to_string())
    }

    pub async fn shutdown(mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await;
        }
    }
}

/// Runs the calling test alone, in a child process of this test binary, for
/// a test that needs the process to itself: Herald's Prometheus recorder and
/// its tenant-label registry are process-wide, so exact totals in an
/// in-process server's `/metrics` would include what the other tests' servers
/// count. `test` is the test's full name (`module::function`). Answers `true`
/// in the child, where the test's body runs, and `false` here once the child
/// passed (the test is then done); panics with the child's output if it failed.
pub fn alone_in_a_process(test: &str) -> bool {
    const CHILD: &str = "HERALD_IT_ALONE";
    if std::env::var(CHILD).is_ok_and(|t| t == test) {
        return true;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test} failed in its own process");
    assert!(stdout.contains("1 passed"), "no test named {test} ran in the child process");
    false
}

/// A throwaway RSA-2048 PKCS#8 key (ring cannot generate RSA keys): the
/// private_key of test service accounts, which saving an app checks.
pub const TEST_RSA_PEM: &str = include_str!("../../../actors/src/providers/testdata/rsa2048.pem");

/// A new APNs token-auth key (a P-256 PKCS#8 PEM, as Apple's `.p8`) in base64,
/// as an app body carries it.
pub fn apns_key_base64() -> String {
    use base64::Engine as _;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("P-256 key");
    base64::engine::general_purpose::STANDARD.encode(key.serialize_pem())
}

pub fn fcm_app_body() -> Value {
    use base64::Engine as _;
    let sa = json!({"type": "service_account", "project_id": "demo", "private_key_id": "k1", "private_key": TEST_RSA_PEM, "client_email": "svc@demo.iam.gserviceaccount.com"});
    json!({"categories": ["chat", "payment"], "fcmServiceAccountJSON": base64::engine::general_purpose::STANDARD.encode(sa.to_string())})
}

/// The part of an error message before the first colon: the field path.
pub fn field(body: &Value) -> String {
    body["message"].as_str().unwrap_or_default().split(':').next().unwrap_or_default().to_string()
}

/// Herald wired to the provider simulators, with tenant `acme` and app `demo`
/// configured from the simulators' generated credentials (APNs token auth, FCM, HMS).
pub struct PushWorld {
    pub server: TestServer,
    pub sims: herald_sim::Simulators,
    pub creds: herald_sim::Credentials,
    pub admin: String,
}

impl PushWorld {
    pub async fn start() -> PushWorld {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> PushWorld {
        let dir = tempfile::tempdir().expect("temp dir");
        let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.path().join("certs")))
            .await
            .expect("simulators start");
        let creds = sims.generate_credentials(&dir.path().join("creds")).expect("credentials");
        let server = TestServer::start_with(|c| {
            point_at(c, &sims);
            tweak(c);
        })
        .await;
        server.create_tenant("acme").await;
        let admin = server.admin_token("acme").await;
        let (st, b) =
            server.call(Method::POST, "/v1/tenants/acme/apps/demo", Some(&admin), Some(creds.app_json.clone())).await;
        assert_eq!(st, StatusCode::CREATED, "{b}");
        std::mem::forget(dir); // the simulators keep using their cert dir
        PushWorld { server, sims, creds, admin }
    }

    /// A client of `app` linked to `user`, with `token` (legacy prefix included); returns its id.
    pub async fn client(&self, app: &str, user: &str, token: &str) -> String {
        let s = &self.server;
        let (id, _) = s.register_client("acme", &self.admin, app).await;
        let (st, b) = s
            .call(
                Method::PUT,
                &format!("/v1/tenants/acme/users/{user}/clients/{id}"),
                Some(&self.admin),
                Some(json!({})),
            )
            .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        let (st, b) = s
            .call(
                Method::PUT,
                &format!("/v1/tenants/acme/clients/{id}/pushtoken"),
                Some(&self.admin),
                Some(json!({"appName": app, "pushToken": token})),
            )
            .await;
        assert_eq!(st, StatusCode::OK, "{b}");
        id
    }

    pub async fn send(&self, body: Value) -> (StatusCode, Value) {
        self.server.call(Method::POST, "/v1/tenants/acme/push_notification/send", Some(&self.admin), Some(body)).await
    }

    /// Polls the delivery report until the broadcast completes (at most `secs`).
    pub async fn wait_report(&self, id: &str, secs: u64) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let (st, r) = self
                .server
                .call(Method::GET, &format!("/v1/tenants/acme/push_notification/{id}"), Some(&self.admin), None)
                .await;
            assert_eq!(st, StatusCode::OK, "{r}");
            if r["state"] == "COMPLETED" || std::time::Instant::now() > deadline {
                return r;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// Points Herald's provider endpoints at the simulators and trusts their CA.
pub fn point_at(c: &mut Config, sims: &herald_sim::Simulators) {
    c.push.endpoints = herald_actors::Endpoints {
        apns: sims.apns_url(),
        apns_sandbox: sims.apns_url(),
        fcm: sims.fcm_url(),
        hms: sims.hms_url(),
        hms_token: sims.hms_token_url(),
    };
    c.push.extra_ca_pem = sims.ca_pem().into_bytes();
    c.push.retry_base = std::time::Duration::from_millis(20);
}

/// An APNs-shaped token: 64 hex characters from a seed.
pub fn apns_token(seed: u64) -> String {
    format!("{seed:064x}")
}

/// A send to one client.
pub fn to_client(user: &str, client: &str, message: Value) -> Value {
    json!({"category": "chat", "recipient": {"tenantId": "acme", "userId": user, "astClientId": client}, "payload": {"message": message}})
}

/// `herald serve` as a child process, on an ephemeral port.
pub struct Herald {
    pub child: Child,
    pub base: String,
    /// `http://addr` of the operations port, when `HERALD_OPS_LISTEN` was set.
    pub ops: Option<String>,
}

impl Herald {
    pub fn start(data_dir: &Path, env: &[(&str, String)]) -> Herald {
        Self::spawn(data_dir, env, Stdio::inherit())
    }

    /// [`Herald::start`] with stderr piped (`child.stderr`), for a test to
    /// read, or to leave unread.
    pub fn start_piping_stderr(data_dir: &Path, env: &[(&str, String)]) -> Herald {
        Self::spawn(data_dir, env, Stdio::piped())
    }

    fn spawn(data_dir: &Path, env: &[(&str, String)], stderr: Stdio) -> Herald {
        let mut child = Command::new(env!("CARGO_BIN_EXE_herald"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("HERALD_OPERATOR_TOKEN", OPERATOR)
            .env("HERALD_LOG", "warn")
            .envs(store_for(data_dir).map(|url| ("HERALD_STORE", url)))
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("herald starts");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let mut next = || lines.next().expect("herald prints its address").unwrap();
        let base = loop {
            if let Some(url) = next().strip_prefix("herald listening on ") {
                break url.trim().to_string();
            }
        };
        let ops = env.iter().any(|(k, _)| *k == "HERALD_OPS_LISTEN").then(|| loop {
            if let Some(rest) = next().strip_prefix("operations (/healthz, /readyz, /metrics) on ") {
                break rest.trim().to_string();
            }
        });
        // Keep draining stdout so the child never writes into a closed pipe.
        std::thread::spawn(move || for _ in lines {});
        Herald { child, base, ops }
    }

    /// An access token of tenant `acme`'s admin (the password grant).
    pub async fn admin_token(&self, http: &Client) -> String {
        self.login(http, "acme").await
    }

    /// Creates `tenant` (admin `admin`, password [`PASSWORD`]) through the
    /// operator API; answers its admin's access token.
    pub async fn create_tenant(&self, http: &Client, tenant: &str) -> String {
        let r = http
            .post(format!("{}/v1/tenants", self.base))
            .bearer_auth(OPERATOR)
            .json(&json!({"tenantId": tenant, "adminUsername": "admin", "adminPassword": PASSWORD}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED, "creating tenant {tenant}");
        self.login(http, tenant).await
    }

    /// An access token of `tenant`'s admin (the password grant).
    pub async fn login(&self, http: &Client, tenant: &str) -> String {
        let r = http
            .post(format!("{}/auth/realms/{tenant}/protocol/openid-connect/token", self.base))
            .form(&[("grant_type", "password"), ("username", "admin"), ("password", PASSWORD)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "admin login");
        r.json::<Value>().await.unwrap()["access_token"].as_str().unwrap().to_string()
    }

    /// Sends `body` as tenant `acme`; answers the 202's body.
    pub async fn send(&self, http: &Client, token: &str, body: &Value) -> Value {
        let r = http.post(format!("{}/v1/tenants/acme/push_notification/send", self.base)).bearer_auth(token);
        let r = r.json(body).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        r.json().await.unwrap()
    }

    /// A broadcast's delivery report once it stopped running (or after `secs`).
    pub async fn wait_report(&self, http: &Client, token: &str, id: &str, secs: u64) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let r = http.get(format!("{}/v1/tenants/acme/push_notification/{id}", self.base)).bearer_auth(token);
            let report: Value = r.send().await.unwrap().json().await.unwrap();
            if report["state"] != "RUNNING" || std::time::Instant::now() > deadline {
                return report;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    pub fn kill9(mut self) {
        signal(&self.child, Signal::KILL);
        let _ = self.child.wait();
    }
}

/// A test that fails (panics) while holding a `Herald` must not leak a `herald serve`:
/// dropping it kills and reaps the child (a no-op after `kill9`).
impl Drop for Herald {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment pointing a child `herald serve` at the simulators (their CA
/// written into `dir`).
pub fn sim_env(sims: &herald_sim::Simulators, dir: &Path) -> Vec<(&'static str, String)> {
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, sims.ca_pem()).unwrap();
    vec![
        ("HERALD_APNS_URL", sims.apns_url()),
        ("HERALD_APNS_SANDBOX_URL", sims.apns_url()),
        ("HERALD_FCM_URL", sims.fcm_url()),
        ("HERALD_HMS_URL", sims.hms_url()),
        ("HERALD_HMS_TOKEN_URL", sims.hms_token_url()),
        ("HERALD_EXTRA_CA_FILE", ca.display().to_string()),
    ]
}

/// Prepares `data` for a child Herald: tenant `acme` (admin `admin`,
/// [`PASSWORD`]) and app `demo` with the simulators' credentials, created
/// through the API of a Herald that is then stopped, and `n` APNs clients
/// (tokens from `first_token` on) seeded into its storage. Answers the
/// clients' ids and tokens.
pub async fn acme_with_apns_clients(
    data: &Path,
    env: &[(&str, String)],
    creds: &herald_sim::Credentials,
    n: u64,
    first_token: u64,
) -> Vec<(String, String)> {
    acme_with_clients(data, env, creds, n, |i| {
        (herald_storage::push_tokens::PushProvider::Apns, apns_token(first_token + i))
    })
    .await
}

/// As [`acme_with_apns_clients`], with the push token `token_of(i)` for the `i`th client.
pub async fn acme_with_clients(
    data: &Path,
    env: &[(&str, String)],
    creds: &herald_sim::Credentials,
    n: u64,
    token_of: impl Fn(u64) -> (herald_storage::push_tokens::PushProvider, String),
) -> Vec<(String, String)> {
    let http = http_client();
    let h = Herald::start(data, env);
    let admin = h.create_tenant(&http, "acme").await;
    let r = http.post(format!("{}/v1/tenants/acme/apps/demo", h.base)).bearer_auth(&admin).json(&creds.app_json);
    assert_eq!(r.send().await.unwrap().status(), StatusCode::CREATED, "app demo");
    h.kill9();
    seed_clients(data, n, token_of)
}

/// The simulators, credentials they accept, and the environment of a child
/// `herald serve` pointed at them (`data` is its data directory), in a temp dir.
pub struct ChildWorld {
    pub sims: herald_sim::Simulators,
    pub creds: herald_sim::Credentials,
    pub env: Vec<(&'static str, String)>,
    pub data: PathBuf,
    pub dir: tempfile::TempDir,
}

impl ChildWorld {
    pub async fn start() -> ChildWorld {
        let dir = tempfile::tempdir().unwrap();
        let sims = herald_sim::Simulators::start(herald_sim::SimConfig::local(dir.path().join("certs"))).await.unwrap();
        let creds = sims.generate_credentials(&dir.path().join("creds")).unwrap();
        let env = sim_env(&sims, dir.path());
        ChildWorld { data: dir.path().join("data"), sims, creds, env, dir }
    }

    /// The environment of engine `node` of a cluster on the PostgreSQL at
    /// `store`: the simulators', one master key file and one public URL for
    /// all (tokens name one issuer whichever node issued them, an address
    /// nothing here ever calls), and `extra`.
    pub fn node_env(&self, store: &str, node: &str, extra: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
        let mut env = self.env.clone();
        env.extend([
            ("HERALD_STORE", store.to_string()),
            ("HERALD_NODE_ID", node.to_string()),
            ("HERALD_MASTER_KEY_FILE", self.dir.path().join("master.key").display().to_string()),
            ("HERALD_PUBLIC_URL", "https://127.0.0.1:9".to_string()),
        ]);
        env.extend(extra.iter().cloned());
        env
    }
}

/// Seeds `n` clients of app `demo` of tenant `acme`, each with the push token
/// `token_of(i)`, straight into a stopped Herald's storage; answers the
/// clients' ids and tokens.
pub fn seed_clients(
    data: &Path,
    n: u64,
    token_of: impl Fn(u64) -> (herald_storage::push_tokens::PushProvider, String),
) -> Vec<(String, String)> {
    use herald_storage::clients::Client;
    use herald_storage::push_tokens::PushToken;
    let store = herald_storage::Store::open(&herald_storage::test_options(data)).unwrap();
    let mut seeded = Vec::new();
    for i in 0..n {
        let id = ulid::Ulid::generate().to_string();
        let client = Client {
            id: id.clone(),
            app_name: "demo".into(),
            platform: "ios".into(),
            lock_state: "NONE".into(),
            ..Client::default()
        };
        store.clients().create("acme", &client).unwrap();
        let (provider, token) = token_of(i);
        let record =
            PushToken { app_name: "demo".into(), provider, token: token.clone(), is_valid: true, updated_ms: 1 };
        store.push_tokens().set("acme", &id, &record).unwrap();
        seeded.push((id, token));
    }
    store.flush_now().unwrap();
    seeded
}

pub use rustix::process::Signal;

/// Sends `sig` to a child process (gone already: nothing to do).
pub fn signal(child: &std::process::Child, sig: Signal) {
    let _ = rustix::process::kill_process(rustix::process::Pid::from_child(child), sig);
}

/// Whether process `pid` exists (signal 0).
pub fn process_exists(pid: u32) -> bool {
    rustix::process::Pid::from_raw(pid as i32).is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
}

/// One thread of a process, from its `/proc/<pid>/task/<tid>/stat`.
pub struct ThreadStat {
    pub name: String,
    /// CPU ticks so far, user and system.
    pub ticks: u64,
    pub nice: i64,
    /// Scheduling policy: 0 normal, 3 batch (`SCHED_*`).
    pub policy: i64,
}

/// The threads of process `pid` (Herald, our child); a thread that ends
/// while they are read is left out.
pub fn thread_stats(pid: u32) -> Vec<ThreadStat> {
    let parse = |stat: &str| {
        // `tid (comm) state ...`: the name may hold spaces, so split at its last ')'.
        let (head, rest) = stat.rsplit_once(')')?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        // Fields 14, 15 (utime, stime), 19 (nice) and 41 (policy) of proc(5), counted from `state` (3).
        let field = |i: usize| f.get(i)?.parse::<i64>().ok();
        let ticks = u64::try_from(field(11)?).ok()?.saturating_add(u64::try_from(field(12)?).ok()?);
        Some(ThreadStat { name: head.split_once('(')?.1.to_string(), ticks, nice: field(16)?, policy: field(38)? })
    };
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("Herald's /proc entry")
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .filter_map(|stat| parse(&stat))
        .collect()
}

/// CPU ticks of process `pid` so far, summed by thread name.
pub fn ticks_by_thread_name(pid: u32) -> BTreeMap<String, u64> {
    let mut by_name = BTreeMap::<String, u64>::new();
    for t in thread_stats(pid) {
        let sum = by_name.entry(t.name).or_default();
        *sum = sum.saturating_add(t.ticks);
    }
    by_name
}

/// CPU ticks of process `pid` by thread name since `before` (a [`ticks_by_thread_name`]).
pub fn ticks_since(pid: u32, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    since(ticks_by_thread_name(pid), before)
}

/// Write system calls (`syscw` of proc(5)) of process `pid` so far, by thread name.
pub fn writes_by_thread_name(pid: u32) -> BTreeMap<String, u64> {
    let mut by_name = BTreeMap::<String, u64>::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("Herald's /proc entry").flatten() {
        let (Ok(comm), Ok(io)) =
            (std::fs::read_to_string(task.path().join("comm")), std::fs::read_to_string(task.path().join("io")))
        else {
            continue; // the thread ended meanwhile
        };
        let writes = io.lines().find_map(|l| l.strip_prefix("syscw: ")).and_then(|n| n.trim().parse::<u64>().ok());
        let sum = by_name.entry(comm.trim().to_string()).or_default();
        *sum = sum.saturating_add(writes.unwrap_or(0));
    }
    by_name
}

/// Write system calls of process `pid` by thread name since `before` (a [`writes_by_thread_name`]).
pub fn writes_since(pid: u32, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    since(writes_by_thread_name(pid), before)
}

/// A per-thread-name reading minus an earlier one.
fn since(now: BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    now.into_iter()
        .map(|(name, n)| {
            let spent = n.saturating_sub(before.get(&name).copied().unwrap_or(0));
            (name, spent)
        })
        .collect()
}

/// How late a request may reach a simulator after the time Herald's pacing
/// gave it, on a busy machine: scheduling, the connection, the simulator's own
/// threads. Delays only: nothing arrives before its time.
pub const ARRIVAL_JITTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Asserts that requests arriving at the times `arrivals_ms` (ms, any order)
/// went at most at `rate` a second with a burst of `burst`, as a token bucket
/// paces them, each arriving up to [`ARRIVAL_JITTER`] after its paced time:
/// any `k` of them arriving within `span` seconds were paced within
/// `span + jitter`, so `k <= rate * (span + jitter) + burst`. For the first and
/// the last, this is the least time the pace implies for all of them. Counting
/// arrivals per calendar second instead fails when the machine delays a few
/// and they arrive together with the next second's.
pub fn assert_paced(arrivals_ms: &[u64], rate: f64, burst: f64) {
    let mut t = arrivals_ms.to_vec();
    t.sort_unstable();
    let jitter = ARRIVAL_JITTER.as_secs_f64();
    for i in 0..t.len() {
        for j in i..t.len() {
            let span = (t[j] - t[i]) as f64 / 1000.0;
            let k = (j - i + 1) as f64;
            assert!(
                k <= rate * (span + jitter) + burst,
                "{k} requests arrived within {span:.3} s: over {rate} a second (burst {burst}, {jitter} s of jitter); \
                 arrivals (ms from the first): {:?}",
                t.iter().map(|x| x - t[0]).collect::<Vec<_>>()
            );
        }
    }
}
