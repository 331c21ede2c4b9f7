//! One module per command; each returns the process exit code.

pub mod compare;
pub mod counters;
pub mod diagnose;
#[cfg(target_arch = "x86_64")]
pub mod exitcost;
pub mod inputs;
#[cfg(target_arch = "x86_64")]
pub mod lab;
pub mod lint;
#[cfg(target_arch = "x86_64")]
pub mod load_bench;
#[cfg(target_arch = "x86_64")]
pub mod model;
pub mod record;
pub mod record_summary;
pub mod report;
pub mod serve;
#[cfg(target_arch = "x86_64")]
pub mod stretch;
pub mod top;

use std::process::ExitCode;

use crate::args::{Cli, Command};

/// Runs the command the user asked for. Every command first removes what killed virtlens
/// processes left behind (capture commands do it themselves and say so in their notes).
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let captures = match &cli.command {
        Command::Record(_) | Command::Top(_) => true,
        Command::Diagnose(a) => a.live,
        // Its live tools capture; the others read files.
        Command::Mcp(_) => true,
        _ => false,
    };
    if !captures {
        let _ = virtlens_host::capture::sweep_leftovers();
    }
    match cli.command {
        Command::Report(a) => report::run(&a),
        Command::Compare(a) => compare::run(&a),
        Command::Counters(a) => counters::run(&a),
        Command::Diagnose(a) => diagnose::run(&a),
        #[cfg(target_arch = "x86_64")]
        Command::Exitcost(a) => exitcost::run(&a),
        #[cfg(target_arch = "x86_64")]
        Command::Lab(a) => lab::run(&a),
        Command::Lint(a) => lint::run(&a),
        Command::Record(a) => record::run(&a),
        Command::Top(a) => top::run(&a),
        #[cfg(target_arch = "x86_64")]
        Command::Load(a) => load_bench::load(&a),
        #[cfg(target_arch = "x86_64")]
        Command::Bench(a) => load_bench::bench(&a),
        #[cfg(target_arch = "x86_64")]
        Command::Workload(a) => load_bench::workload(&a),
        #[cfg(target_arch = "x86_64")]
        Command::Stretch(a) => stretch::run(&a),
        #[cfg(target_arch = "x86_64")]
        Command::Model(crate::args::ModelCommand::Overcommit(a)) => model::overcommit(&a),
        #[cfg(not(target_arch = "x86_64"))]
        Command::Exitcost(_) | Command::Lab(_) | Command::Stretch(_) | Command::Model(_) => {
            anyhow::bail!(
                "this command runs x86-64 micro-VMs, and this host is {}: record, top, serve, \
                 diagnose --live and every reader work here",
                std::env::consts::ARCH
            )
        }
        Command::Serve(a) => serve::run(&a),
        Command::Mcp(a) => crate::mcp::run(&a),
    }
}
