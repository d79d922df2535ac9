//! `herald-sim`: runs the APNs, FCM and HMS simulators, or generates credentials for them.

#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use herald_sim::{generate_credentials, SimConfig, SimUrls, Simulators};

/// Simulators of Apple APNs, Google FCM v1 and Huawei Push Kit, for Herald's tests, demo
/// and benchmarks. Runs until SIGINT or SIGTERM.
#[derive(Parser, Debug)]
#[command(name = "herald-sim", version)]
struct Cli {
    /// APNs simulator address (HTTPS, HTTP/2).
    #[arg(long, env = "HERALD_SIM_APNS", default_value = "127.0.0.1:8443")]
    apns: SocketAddr,
    /// FCM simulator address (HTTPS).
    #[arg(long, env = "HERALD_SIM_FCM", default_value = "127.0.0.1:8444")]
    fcm: SocketAddr,
    /// HMS simulator address (HTTPS).
    #[arg(long, env = "HERALD_SIM_HMS", default_value = "127.0.0.1:8445")]
    hms: SocketAddr,
    /// Web Push simulator address (HTTPS, HTTP/2): subscription endpoints are https://ADDR/{id}.
    #[arg(long, env = "HERALD_SIM_WEBPUSH", default_value = "127.0.0.1:8447")]
    webpush: SocketAddr,
    /// Control API address (plain HTTP): /stats, /faults, /requests, /accepted, /reset.
    #[arg(long, env = "HERALD_SIM_CONTROL", default_value = "127.0.0.1:8446")]
    control: SocketAddr,
    /// Directory of the simulators' CA and registered credentials (created if absent).
    #[arg(long, env = "HERALD_SIM_CERT_DIR", default_value = "sim-certs")]
    cert_dir: PathBuf,
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised to clients.
    #[arg(long, default_value_t = herald_sim::DEFAULT_MAX_CONCURRENT_STREAMS)]
    max_concurrent_streams: u32,
    /// Write a credential set into DIR (and register it in --cert-dir), then exit.
    #[arg(long, value_name = "DIR")]
    gen_credentials: Option<PathBuf>,
    /// With --gen-credentials: the APNs simulator's URL (default from --apns).
    #[arg(long)]
    apns_url: Option<String>,
    /// With --gen-credentials: the FCM simulator's URL, for the service account's token_uri
    /// (default from --fcm).
    #[arg(long)]
    fcm_url: Option<String>,
    /// With --gen-credentials: the HMS simulator's URL (default from --hms).
    #[arg(long)]
    hms_url: Option<String>,
    /// With --gen-credentials: the Web Push simulator's URL, the subscriptions' endpoints
    /// (default from --webpush).
    #[arg(long)]
    webpush_url: Option<String>,
}

fn https(addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        format!("https://127.0.0.1:{}", addr.port())
    } else {
        format!("https://{addr}")
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();

    if let Some(dir) = &cli.gen_credentials {
        let urls = SimUrls {
            cert_dir: cli.cert_dir.clone(),
            apns_url: cli.apns_url.clone().unwrap_or_else(|| https(cli.apns)),
            fcm_url: cli.fcm_url.clone().unwrap_or_else(|| https(cli.fcm)),
            hms_url: cli.hms_url.clone().unwrap_or_else(|| https(cli.hms)),
            webpush_url: cli.webpush_url.clone().unwrap_or_else(|| https(cli.webpush)),
        };
        return match generate_credentials(dir, &urls) {
            Ok(c) => {
                println!("credentials written to {}", c.dir.display());
                println!("  apns     key id {} team id {} bundle {}", c.apns_key_id, c.apns_team_id, c.bundle_id);
                println!("  fcm      project {} ({})", c.fcm_project_id, c.fcm_client_email);
                println!("  hms      client id {}", c.hms_client_id);
                println!("  webpush  {}", c.webpush_subscriptions_path.display());
                println!("  app.json {}", c.app_json_path.display());
                println!("registered in {}", urls.cert_dir.join("creds").join(&c.name).display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("herald-sim: {e}");
                ExitCode::FAILURE
            }
        };
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("herald-sim: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> ExitCode {
    let cfg = SimConfig {
        apns: cli.apns,
        fcm: cli.fcm,
        hms: cli.hms,
        webpush: cli.webpush,
        control: Some(cli.control),
        cert_dir: cli.cert_dir,
        max_concurrent_streams: cli.max_concurrent_streams,
    };
    let sims = match Simulators::start(cfg).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("herald-sim: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("apns    {}", sims.apns_url());
    println!("fcm     {} (token {})", sims.fcm_url(), sims.fcm_token_url());
    println!("hms     {} (token {})", sims.hms_url(), sims.hms_token_url());
    println!("webpush {}", sims.webpush_url());
    if let Some(control) = sims.control_url() {
        println!("control {control}");
    }
    println!("ca      {}", sims.cert_dir().join("ca.pem").display());
    wait_for_signal().await;
    sims.shutdown().await;
    ExitCode::SUCCESS
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
