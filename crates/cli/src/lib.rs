//! The virtlens command line: arguments (clap), the commands that call virtlens-core and
//! virtlens-host, printing, and exit codes (0 ok, 1 findings at or above `--fail-on`, 2 bad
//! input or usage). The binary (`main.rs`) calls [`main`]; the integration tests reach the
//! parser ([`Cli`]) to check the examples every `--help` shows.

mod args;
mod commands;
mod help;
mod mcp;
mod output;

use std::process::ExitCode;

use clap::Parser;

pub use args::Cli;

/// Runs the command line of this process.
pub fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) if e.is::<output::StdoutClosed>() => ExitCode::SUCCESS,
        Err(e) => {
            output::error(&e);
            ExitCode::from(2)
        }
    }
}
