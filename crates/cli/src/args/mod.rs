//! Command-line arguments (clap derive). Every command takes `--json`. The top-level parser
//! and what several commands share are here; each family's arguments are in its own file.

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use virtlens_core::sources::Format;

use crate::help;

mod files;
mod lint;
mod live;
mod mcp;
mod measure;
mod seconds;
mod severity;

pub use files::*;
pub use lint::*;
pub use live::*;
pub use mcp::*;
pub use measure::*;
pub use seconds::parse_seconds;
pub use severity::SeverityArg;

#[derive(Debug, Parser)]
#[command(
    name = "virtlens",
    version,
    about = "Measure, explain and fix the overhead a hypervisor adds to a guest",
    long_about = None,
    after_long_help = help::VIRTLENS,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read exit profiles (perf kvm stat text, …) and print them decoded, ranked, idle apart
    #[command(after_long_help = help::REPORT)]
    Report(ReportArgs),
    /// Put several inputs side by side: deltas per key, totals without idle, a verdict
    #[command(after_long_help = help::COMPARE)]
    Compare(CompareArgs),
    /// Analyse performance counters (perfmon/typeperf/relog CSV, esxtop -b, pasted tables) like PAL does
    #[command(after_long_help = help::COUNTERS)]
    Counters(CountersArgs),
    /// Explain a profile: findings ranked by cost, with evidence, cause, fix and expected effect
    #[command(after_long_help = help::DIAGNOSE)]
    Diagnose(DiagnoseArgs),
    /// Measure what each kind of VM exit costs on this host (micro-VMs on /dev/kvm)
    #[command(after_long_help = help::EXITCOST)]
    Exitcost(ExitcostArgs),
    /// Measure exit costs and replay classic traps against their fixes (micro-VMs on /dev/kvm)
    #[command(after_long_help = help::LAB)]
    Lab(LabArgs),
    /// Check a VM configuration (libvirt XML, QEMU command line, Proxmox config) for Hyper-V traps
    #[command(after_long_help = help::LINT)]
    Lint(LintArgs),
    /// Capture KVM events live (own tracefs instance) into a file report/compare/diagnose read
    #[command(after_long_help = help::RECORD)]
    Record(RecordArgs),
    /// Live per-VM view of exit reasons and events, like kvm_stat with names (`q` quits)
    #[command(after_long_help = help::TOP)]
    Top(TopArgs),
    #[cfg(target_arch = "x86_64")]
    /// Run the load generator: fixed work on worker threads, elapsed time is the measure
    #[command(after_long_help = help::LOAD)]
    Load(virtlens_guest::cli::LoadArgs),
    #[cfg(target_arch = "x86_64")]
    /// Run the guest-side benchmark suite (one JSON per layer, for `virtlens stretch`)
    #[command(after_long_help = help::BENCH)]
    Bench(virtlens_guest::cli::BenchArgs),
    #[cfg(target_arch = "x86_64")]
    /// Switch on one known cause of VM exits inside a guest and keep it running (the causal lab's
    /// workloads)
    #[command(after_long_help = help::WORKLOAD)]
    Workload(virtlens_guest::cli::WorkloadArgs),
    /// How much slower the same work runs from layer to layer, with noise bounds and causes
    #[command(after_long_help = help::STRETCH)]
    Stretch(StretchArgs),
    /// Capacity models (over-commit: joint probability and Erlang C), checked against measurement
    #[command(subcommand, after_long_help = help::MODEL)]
    Model(ModelCommand),
    /// Export per-VM exit counts, latencies, ready time and findings for Prometheus (read-only)
    #[command(after_long_help = help::SERVE)]
    Serve(ServeArgs),
    /// Serve every answer above as a typed tool to AI agents (Model Context Protocol over stdio)
    #[command(after_long_help = help::MCP)]
    Mcp(McpArgs),
}

/// Options shared by every command that reads input files.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Force the input format instead of detecting it
    #[arg(long, value_name = "FORMAT", value_parser = PossibleValuesParser::new(Format::ALL.map(Format::name)))]
    pub format: Option<String>,
    /// Name ports and addresses from a QEMU `info mtree` dump (overrides the built-in map)
    #[arg(long, value_name = "FILE")]
    pub mtree: Option<PathBuf>,
    /// Keep only the rows of this VMM process id
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Keep only the rows of the VM with this name (or a unique part of it)
    #[arg(long, value_name = "NAME")]
    pub vm: Option<String>,
    /// Keep only the rows of this vCPU
    #[arg(long, value_name = "N")]
    pub vcpu: Option<u32>,
    /// Print JSON (stable, versioned schema) instead of text
    #[arg(long)]
    pub json: bool,
}

/// `--html FILE [--force]`, on the commands that have a page.
#[derive(Debug, Args)]
pub struct HtmlArgs {
    /// Also write the result as one self-contained HTML page (charts, tables; opens offline)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Replace the --html FILE if it exists (the new page is renamed over it once complete)
    #[arg(long, requires = "html")]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GuestArg {
    Windows,
    Linux,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VendorArg {
    Intel,
    Amd,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OnOffArg {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HostFactsArg {
    Auto,
}

/// The shortest and longest span `--duration`/`--interval` take, in seconds.
const SECONDS: std::ops::RangeInclusive<f64> = 0.001..=86_400.0;

/// A span in seconds for `diagnose --live --duration`, `record --duration` and `top
/// --interval`: a finite number from 1 ms to one day (a longer capture runs until Ctrl-C).
pub fn seconds(text: &str) -> Result<f64, String> {
    let s: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a number of seconds, not `{text}`"))?;
    if !SECONDS.contains(&s) {
        return Err(format!(
            "expected seconds between {} and {} (one day), not {text}",
            SECONDS.start(),
            SECONDS.end()
        ));
    }
    Ok(s)
}
