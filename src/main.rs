use clap::Parser;

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
