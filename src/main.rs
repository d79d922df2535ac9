#![forbid(unsafe_code)]

use clap::Parser;

/// The server's allocator (the library leaves the choice to embedding programs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match herald::cli::run(herald::cli::Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("herald: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
