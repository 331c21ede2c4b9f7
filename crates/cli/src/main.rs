//! virtlens: measure, explain and fix the overhead a hypervisor adds to a guest.
//!
//! This binary is thin: it parses arguments, calls virtlens-core / virtlens-host, prints,
//! and maps outcomes to exit codes (0 ok, 1 findings at or above `--fail-on`, 2 bad input or
//! usage).

mod args;
mod commands;
mod help;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
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
