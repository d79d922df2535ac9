//! The command line: `herald serve`, and the offline `herald tenant create`
//! and `herald store recount-tokens`.

use crate::config::{Config, Settings};
use crate::engine::Engine;
use crate::models::tenant::CreateTenant;
use clap::{Args, Parser, Subcommand};
use herald_storage::{Store, StoreOptions};
use std::path::PathBuf;

/// The `herald` command line, as `main` parses it and [`run`] executes it.
#[derive(Parser, Debug)]
#[command(name = "herald", version, about = "Herald: a push and delivery engine")]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the engine.
    Serve {
        /// TOML file of settings (flags and HERALD_* variables take precedence).
        #[arg(long, env = "HERALD_CONFIG")]
        config: Option<PathBuf>,
        /// Start the provider simulators in-process and seed tenant `demo` for a first try.
        #[arg(long, env = "HERALD_DEMO")]
        demo: bool,
        /// Every other setting, as flags or `HERALD_*` variables.
        #[command(flatten)]
        settings: Box<Settings>,
    },
    /// Tenant administration without a running server.
    Tenant {
        /// Which tenant command.
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Maintenance of the store without a running server.
    Store {
        /// Which store command.
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// The configuration reference.
    Config {
        /// Which configuration command.
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

/// The commands of `herald config`.
#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print every option of `herald serve` as commented TOML with its default.
    Defaults,
}

/// The commands of `herald tenant`, which work on the data directory directly (stop the server first).
#[derive(Subcommand, Debug)]
pub enum TenantCommand {
    /// Create a tenant and its first admin user, as `POST /v1/tenants` does.
    Create {
        /// Id of the new tenant: 3 to 255 characters of a-z, 0-9 and -.
        tenant_id: String,
        /// Username of the tenant's first admin.
        #[arg(long)]
        admin: String,
        /// Password of the first admin (8 to 1024 characters).
        #[arg(long, env = "HERALD_ADMIN_PASSWORD", hide_env_values = true)]
        password: String,
        /// Where the store is.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// The commands of `herald store`, which work on the store directly (stop every engine first).
#[derive(Subcommand, Debug)]
pub enum StoreCommand {
    /// Count the push tokens again and replace the stored counts that
    /// broadcasts and the `pushTokens` quota read: after an engine of a
    /// version from before the counts wrote tokens into the store.
    RecountTokens {
        /// Where the store is.
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Where an offline command finds the store: the options of `herald serve` that name it.
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Directory of the database.
    #[arg(long, env = "HERALD_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
    /// Hex file with the key that seals secrets (the data dir's when absent).
    #[arg(long, env = "HERALD_MASTER_KEY_FILE")]
    master_key_file: Option<PathBuf>,
    /// The store of `herald serve --store`, when not the data directory.
    #[arg(long, env = "HERALD_STORE")]
    store: Option<String>,
}

impl StoreArgs {
    fn open(self) -> Result<Store, String> {
        crate::engine::install_crypto_providers();
        let dir = self.data_dir.display().to_string();
        let (master_key_file, store_url) = (self.master_key_file, self.store);
        Store::open(&StoreOptions { master_key_file, store_url, ..StoreOptions::new(&self.data_dir) })
            .map_err(|e| format!("opening storage in {dir}: {e}"))
    }
}

/// Runs the command line; the exit code is the process's.
pub async fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Serve { config, settings, demo } => {
            let from_file = match config {
                Some(path) => Settings::from_toml_file(&path)?,
                None => Settings::default(),
            };
            let config = Config::resolve(settings.or(from_file))?;
            // Held until `serve` returns: dropping it writes the lines still queued.
            let _log = crate::logging::init(config.log_json);
            serve(config, demo).await
        }
        Command::Config { command: ConfigCommand::Defaults } => {
            print!("{}", crate::config_reference::defaults_toml());
            Ok(())
        }
        Command::Tenant { command: TenantCommand::Create { tenant_id, admin, password, store } } => {
            let store = store.open()?;
            let body = CreateTenant { tenant_id: tenant_id.clone(), admin_username: admin, admin_password: password };
            crate::api::tenants::create_tenant(&store, &body).map_err(|e| e.message)?;
            store.durable().await.map_err(|e| e.to_string())?;
            println!("created tenant {tenant_id}");
            Ok(())
        }
        Command::Store { command: StoreCommand::RecountTokens { store } } => {
            let store = store.open()?;
            let tokens = store.recount_push_tokens().map_err(|e| format!("counting push tokens: {e}"))?;
            store.close().map_err(|e| e.to_string())?;
            println!("counted {tokens} push tokens");
            Ok(())
        }
    }
}

async fn serve(mut config: Config, demo: bool) -> Result<(), String> {
    let generated = config.operator_token.is_none();
    #[cfg_attr(not(feature = "demo"), allow(unused_variables))]
    let sims = demo_simulators(&mut config, demo).await?;
    let fds = crate::server::raise_fd_limit();
    let (listeners, config) = crate::server::bind(config).await?;
    let engine = Engine::open(config).await?;
    #[cfg(feature = "demo")]
    if let Some(sims) = &sims {
        crate::demo::seed(&engine, sims).await?;
    }
    if generated {
        // Printed once, on purpose: the operator needs it to create tenants.
        println!("operator token (generated; set HERALD_OPERATOR_TOKEN to fix it): {}", engine.operator_token);
    }
    let connections = engine.config.limits.connections();
    let node = engine.store.node_id();
    tracing::info!(addr = %engine.config.listen, node, data_dir = %engine.config.data_dir.display(), fds, connections, "herald listening");
    // The address bound (a load balancer's target); the public URL when it differs.
    let scheme = if engine.config.tls.is_some() { "https" } else { "http" };
    let listening = format!("{scheme}://{}", engine.config.listen);
    println!("herald listening on {listening}");
    if engine.config.public_url != listening {
        println!("public URL {}", engine.config.public_url);
    }
    if let Some(ops) = engine.config.ops_listen {
        println!("operations (/healthz, /readyz, /metrics) on http://{ops}");
    }
    #[cfg(feature = "demo")]
    if let Some(sims) = &sims {
        println!("{}", crate::demo::instructions(&engine.config.public_url, sims));
    }
    let tls = crate::server::tls_acceptor(&engine)?;
    crate::server::serve(engine.clone(), listeners, tls, shutdown_signal()).await;
    engine.shutdown().await;
    tracing::info!("herald stopped");
    Ok(())
}

/// The simulators of `serve --demo`, started in-process.
#[cfg(feature = "demo")]
async fn demo_simulators(config: &mut Config, demo: bool) -> Result<Option<herald_sim::Simulators>, String> {
    match demo {
        true => Ok(Some(crate::demo::start_simulators(config).await?)),
        false => Ok(None),
    }
}

/// A build without the `demo` feature has no simulators to start.
#[cfg(not(feature = "demo"))]
async fn demo_simulators(_config: &mut Config, demo: bool) -> Result<Option<()>, String> {
    match demo {
        true => Err("--demo: this build has no demo mode (it was built without the `demo` feature)".into()),
        false => Ok(None),
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down: finishing in-flight requests");
}
