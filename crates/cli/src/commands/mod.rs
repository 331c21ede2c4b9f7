//! One module per command; each returns the process exit code.

pub mod compare;
pub mod counters;
pub mod diagnose;
pub mod exitcost;
pub mod inputs;
pub mod lab;
pub mod lint;
pub mod load_bench;
pub mod model;
pub mod record;
pub mod record_summary;
pub mod report;
pub mod serve;
pub mod stretch;
pub mod top;

use std::process::ExitCode;

use crate::args::{self, Cli, Command};

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
        Command::Exitcost(a) => exitcost::run(&a),
        Command::Lab(a) => lab::run(&a),
        Command::Lint(a) => lint::run(&a),
        Command::Record(a) => record::run(&a),
        Command::Top(a) => top::run(&a),
        Command::Load(a) => load_bench::load(&a),
        Command::Bench(a) => load_bench::bench(&a),
        Command::Workload(a) => load_bench::workload(&a),
        Command::Stretch(a) => stretch::run(&a),
        Command::Model(args::ModelCommand::Overcommit(a)) => model::overcommit(&a),
        Command::Serve(a) => serve::run(&a),
        Command::Mcp(a) => crate::mcp::run(&a),
    }
}
