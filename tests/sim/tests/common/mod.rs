//! Test helpers: a shared credential set, TLS clients trusting the simulators' CA, JWT
//! signing, and a small control-API client.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use herald_sim::{generate_credentials, Credentials, SimConfig, SimUrls, Simulators};
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub cert_dir: PathBuf,
    pub creds: Credentials,
}

/// One credential set for the whole test binary: the RSA key takes a while in debug builds.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let cert_dir = dir.path().join("certs");
        let urls = SimUrls {
            cert_dir: cert_dir.clone(),
            apns_url: "https://127.0.0.1:1".into(),
            fcm_url: "https://127.0.0.1:2".into(),
            hms_url: "https://127.0.0.1:3".into(),
            webpush_url: "https://127.0.0.1:4".into(),
        };
        let creds = generate_credentials(&dir.path().join("creds"), &urls).unwrap();
        Fixture { _dir: dir, cert_dir, creds }
    })
}

pub async fn start() -> Simulators {
    start_with(|_| {}).await
}

pub async fn start_with(f: impl FnOnce(&mut SimConfig)) -> Simulators {
    let mut cfg = SimConfig::local(&fixture().cert_dir);
    f(&mut cfg);
    Simulators::start(cfg).await.unwrap()
}

pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

// ---- TLS clients ------------------------------------------------------------------------

pub fn client_config(ca_pem: &str, client_cert: Option<(&str, &str)>, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut cfg = match client_cert {
        Some((cert_pem, key_pem)) => {
            let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
            let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
            builder.with_client_auth_cert(certs, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(cfg)
}

async fn tls_connect(addr: SocketAddr, cfg: Arc<rustls::ClientConfig>) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    TlsConnector::from(cfg).connect(ServerName::try_from("localhost").unwrap(), tcp).await.unwrap()
}

/// An HTTP/2 client connection; the connection task's handle tells when it ended.
pub struct H2 {
    pub send: h2::client::SendRequest<Bytes>,
    pub conn: tokio::task::JoinHandle<()>,
}

pub async fn h2_connect(addr: SocketAddr, ca_pem: &str, client_cert: Option<(&str, &str)>) -> H2 {
    let tls = tls_connect(addr, client_config(ca_pem, client_cert, &[b"h2"])).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (send, conn) = h2::client::handshake(tls).await.unwrap();
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    H2 { send, conn }
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl H2 {
    pub async fn try_send(&mut self, req: Request<()>, body: impl Into<Bytes>) -> Result<Answer, h2::Error> {
        let body = body.into();
        let mut send = self.send.clone().ready().await?;
        let (resp, mut stream) = send.send_request(req, body.is_empty())?;
        if !body.is_empty() {
            stream.send_data(body, true)?;
        }
        let resp = resp.await?;
        let (parts, mut recv) = resp.into_parts();
        let mut body = Vec::new();
        while let Some(chunk) = recv.data().await {
            let chunk = chunk?;
            let _ = recv.flow_control().release_capacity(chunk.len());
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { status: parts.status, headers: parts.headers, body: body.into() })
    }

    pub async fn send(&mut self, req: Request<()>, body: impl Into<Bytes>) -> Answer {
        self.try_send(req, body).await.unwrap()
    }

    /// Sends `req` and reads at most `most` bytes of the answer's body, for at
    /// most `time`; answers also whether the body ended.
    pub async fn send_reading(
        &mut self,
        req: Request<()>,
        body: impl Into<Bytes>,
        most: usize,
        time: std::time::Duration,
    ) -> (Answer, bool) {
        let body = body.into();
        let mut send = self.send.clone().ready().await.unwrap();
        let (resp, mut stream) = send.send_request(req, body.is_empty()).unwrap();
        if !body.is_empty() {
            stream.send_data(body, true).unwrap();
        }
        let (parts, mut recv) = resp.await.unwrap().into_parts();
        let mut body = Vec::new();
        let read = async {
            while let Some(chunk) = recv.data().await {
                let chunk = chunk.unwrap();
                let _ = recv.flow_control().release_capacity(chunk.len());
                body.extend_from_slice(&chunk);
                if body.len() >= most {
                    return false;
                }
            }
            true
        };
        let ended = tokio::time::timeout(time, read).await.unwrap_or(false);
        (Answer { status: parts.status, headers: parts.headers, body: body.into() }, ended)
    }
}

/// One HTTP/1.1 request over TLS (ALPN http/1.1).
pub async fn h1_post_form(addr: SocketAddr, ca_pem: &str, path: &str, form: &str) -> Answer {
    let tls = tls_connect(addr, client_config(ca_pem, None, &[b"http/1.1"])).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    let req = Request::post(path)
        .header("host", "localhost")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Full::new(Bytes::from(form.to_owned())))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    Answer { status: parts.status, headers: parts.headers, body: body.collect().await.unwrap().to_bytes() }
}

// ---- APNs ---------------------------------------------------------------------------------

pub fn apns_jwt(creds: &Credentials, iat: u64) -> String {
    #[derive(serde::Serialize)]
    struct Claims<'a> {
        iss: &'a str,
        iat: u64,
    }
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some(creds.apns_key_id.clone());
    let key = jsonwebtoken::EncodingKey::from_ec_pem(creds.apns_key_pem.as_bytes()).unwrap();
    jsonwebtoken::encode(&header, &Claims { iss: &creds.apns_team_id, iat }, &key).unwrap()
}

pub fn apns_token(n: u64) -> String {
    format!("{n:064x}")
}

pub fn apns_request(token: &str, bearer: Option<&str>, topic: Option<&str>) -> http::request::Builder {
    let mut b = Request::post(format!("https://localhost/3/device/{token}"));
    if let Some(bearer) = bearer {
        b = b.header("authorization", format!("bearer {bearer}"));
    }
    if let Some(topic) = topic {
        b = b.header("apns-topic", topic);
    }
    b.header("apns-push-type", "alert").header("apns-priority", "10")
}

pub const APNS_PAYLOAD: &str = r#"{"aps":{"alert":{"title":"Hi","body":"there"}}}"#;

// ---- FCM ----------------------------------------------------------------------------------

pub fn fcm_assertion(creds: &Credentials, iat: u64, exp: u64) -> String {
    let sa: Value = serde_json::from_str(&creds.fcm_service_account_json).unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some(sa["private_key_id"].as_str().unwrap().to_owned());
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(sa["private_key"].as_str().unwrap().as_bytes()).unwrap();
    let claims = serde_json::json!({
        "iss": sa["client_email"],
        "scope": "https://www.googleapis.com/auth/firebase.messaging",
        "aud": sa["token_uri"],
        "iat": iat,
        "exp": exp,
    });
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

pub fn fcm_token_form(assertion: &str) -> String {
    url_encode(&[("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)])
}

pub fn url_encode(pairs: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

pub fn post(path: &str) -> http::request::Builder {
    Request::post(format!("https://localhost{path}"))
}

// ---- Control API ----------------------------------------------------------------------

pub async fn control(addr: SocketAddr, method: &str, path: &str, body: &str) -> (StatusCode, Value) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(conn);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}
