//! A local webhook receiver on loopback for tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the receiver saw of one delivery.
#[derive(Clone, Debug)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: String,
}

/// A local webhook receiver: answers with the scripted statuses in turn (then 200).
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub async fn start(script: Vec<u16>) -> Receiver {
        Self::listen(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), script)
    }

    pub async fn start_on(port: u16) -> Receiver {
        Self::listen(tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap(), vec![])
    }

    fn listen(listener: tokio::net::TcpListener, script: Vec<u16>) -> Receiver {
        let url = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
        let got = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let (g, sc) = (got.clone(), script.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let (g, sc) = (g.clone(), sc.clone());
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let (g, sc) = (g.clone(), sc.clone());
                        async move {
                            use http_body_util::BodyExt;
                            let headers = req
                                .headers()
                                .iter()
                                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                                .collect();
                            let body = String::from_utf8_lossy(&req.into_body().collect().await.unwrap().to_bytes())
                                .into_owned();
                            g.lock().unwrap().push(Received { headers, body });
                            let status = sc.lock().unwrap().next().unwrap_or(200);
                            Ok::<_, std::convert::Infallible>(
                                http::Response::builder()
                                    .status(status)
                                    .body(http_body_util::Full::new(bytes::Bytes::from("ok")))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Receiver { url, got }
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    pub async fn wait_for(&self, n: usize, secs: u64) -> Vec<Received> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let got = self.received();
            if got.len() >= n || std::time::Instant::now() > deadline {
                return got;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}
