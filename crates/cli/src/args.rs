//! Command-line arguments (clap derive). Every command takes `--json`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "virtlens",
    version,
    about = "Measure, explain and fix the overhead a hypervisor adds to a guest",
    long_about = None,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read exit profiles (perf kvm stat text, …) and print them decoded, ranked, idle apart
    Report(ReportArgs),
    /// Put several inputs side by side: deltas per key, totals without idle, a verdict
    Compare(CompareArgs),
}

/// Options shared by every command that reads input files.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Force the input format instead of detecting it
    #[arg(long, value_name = "FORMAT", value_parser = ["perf-kvm-stat", "perf-data", "kvm-stat", "bcc-kvmexit", "perf-prof", "trace-text"])]
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

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Input files (`-` for standard input)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Group rows by exit reason, IO port, MMIO address, MSR, vCPU or VM
    #[arg(long, value_enum)]
    pub by: Option<ByArg>,
    /// Show only the N largest rows of each table
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more inputs; a file holding several labelled tables counts as several inputs
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ByArg {
    Reason,
    Port,
    Mmio,
    Msr,
    Vcpu,
    Vm,
}
