//! virtlens-guest: `load`, `bench` and `workload` in one small static binary for any x86-64
//! Linux guest.
//! Exit codes: 0 ok, 2 bad usage or a run that could not be made.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use virtlens_guest::cli::{BenchArgs, LoadArgs, WorkloadArgs};
use virtlens_guest::render;

#[derive(Debug, Parser)]
#[command(
    name = "virtlens-guest",
    version,
    about = "virtlens inside a guest: load generator and benchmark suite"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the load generator (fixed work; elapsed time is the measure)
    Load(LoadArgs),
    /// Run the guest-side benchmark suite (one JSON per layer for `virtlens stretch`)
    Bench(BenchArgs),
    /// Switch on one known cause of VM exits and keep it running (the causal lab's workloads)
    Workload(WorkloadArgs),
}

fn main() -> ExitCode {
    let out = match Cli::parse().command {
        Command::Load(a) => a
            .run()
            .map(|r| if a.json { json(&r) } else { render::load(&r) }),
        Command::Bench(a) => {
            let tty = std::io::stderr().is_terminal();
            let mut progress = |done: usize, total: usize, label: &str| {
                if tty {
                    eprint!("\r\x1b[K[{done}/{total}] {label}");
                }
            };
            let r = a.run(&mut progress);
            if tty {
                eprint!("\r\x1b[K");
            }
            r.map(|r| if a.json { json(&r) } else { render::bench(&r) })
        }
        Command::Workload(a) => a.run().map(|d| render::workload(a.kind, &d)),
    };
    match out {
        Ok(text) => {
            let mut stdout = std::io::stdout();
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v)
        .map_or_else(|e| format!("{{\"error\": \"{e}\"}}\n"), |s| s + "\n")
}
