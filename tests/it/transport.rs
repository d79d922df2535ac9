//! HTTP/1.1, h2c and TLS on one port; metrics; graceful shutdown.

use crate::common::*;
use reqwest::{Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn http1_and_h2c_on_one_port_and_metrics() {
    let s = TestServer::start().await;
    let h2 = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let r = h2.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert_eq!(r.status(), StatusCode::OK);
    let r = s.http.get(s.url("/readyz")).send().await.unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_11);
    assert_eq!(r.status(), StatusCode::OK);
    let (st, _) = s.call(Method::GET, "/nowhere", None, None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s.call(Method::DELETE, "/healthz", None, None).await;
    assert_eq!(st, StatusCode::METHOD_NOT_ALLOWED);

    let metrics = s.http.get(s.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains(r#"herald_http_requests_total{route="/healthz",method="GET",status="200"}"#), "{metrics}");
    assert!(metrics.contains(r#"herald_http_requests_total{route="unmatched",method="GET",status="404"}"#));
    assert!(metrics.contains("herald_http_request_duration_seconds_bucket{"), "histograms, not summaries");
    s.shutdown().await;
}

#[tokio::test]
async fn tls_with_alpn_h2() {
    herald::engine::install_crypto_providers();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let s = TestServer::start_with(|c| c.tls = Some((cert_path.clone(), key_path.clone()))).await;

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let tls = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_only().enable_http2().build();
    let client: hyper_util::client::legacy::Client<_, http_body_util::Empty<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).http2_only(true).build(https);
    let port = s.running.as_ref().unwrap().addr.port();
    let resp = client.get(format!("https://localhost:{port}/healthz").parse().unwrap()).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.version(), http::Version::HTTP_2);
    s.shutdown().await;
}

#[tokio::test]
async fn shutdown_finishes_in_flight_requests() {
    let s = TestServer::start().await;
    let addr = s.running.as_ref().unwrap().addr;
    // A request whose body is still arriving when the shutdown begins.
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = br#"{"tenantId":"late","adminUsername":"admin","adminPassword":"password-1"}"#;
    let head = format!(
        "POST /v1/tenants HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {OPERATOR}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(&body[..10]).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let running = s.running.as_ref().map(|r| r.addr);
    let mut server = s;
    let stop = tokio::spawn(async move {
        server.running.take().unwrap().shutdown().await;
        server
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(tokio::net::TcpStream::connect(running.unwrap()).await.is_err(), "no new connections during the drain");
    conn.write_all(&body[10..]).await.unwrap();
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 201"), "{text}");
    stop.await.unwrap();
}
