//! The commands that measure with micro-VMs or models: `exitcost`, `lab`, `stretch`, `model`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::*;
use crate::help;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 measured here (the JSON says \"measured\": true); 2 on bad \
    usage or without a usable /dev/kvm. A figure the clock cannot resolve (below its resolution \
    per operation, or negative once the nop loop is subtracted) has the status \"unresolved\"."
)]
pub struct ExitcostArgs {
    /// Interleaved runs per test (rounds over all tests)
    #[arg(long, value_name = "N", default_value_t = 21, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub runs: u64,
    /// Guest operations per run (default: calibrated so a run takes about 5 ms)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub ops: Option<u64>,
    /// Only this CPU mode of the guest (default: all four)
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Time budget in seconds: when the runs would take longer (estimated from the probe
    /// runs), fewer operations per run are made, and rounds stop when it is spent; both are
    /// said in the output
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub budget: f64,
    /// Print JSON (stable, versioned schema) instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub page: HtmlArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// 16-bit real mode
    Real,
    /// 32-bit protected mode, ring 0
    Prot32,
    /// 64-bit long mode, ring 0 (a guest kernel)
    Long64,
    /// 64-bit long mode, ring 3 (guest user space)
    User64,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 measured here; 3 with --json when nothing was measured \
    (--offline, or no usable /dev/kvm) and the output is the bundled recording, whose JSON says \
    \"measured\": false; 2 on bad usage."
)]
pub struct LabArgs {
    /// Fewer and shorter runs (a few seconds instead of up to a minute)
    #[arg(long)]
    pub quick: bool,
    /// Do not measure: show the bundled recording (what runs when /dev/kvm is missing)
    #[arg(long)]
    pub offline: bool,
    /// Run only the IO-path scenario (interrupt delivery modes × queue depths)
    #[arg(long, conflicts_with = "offline")]
    pub io_path: bool,
    /// Measure nothing: keep one trap running (SCENARIO/VARIANT, e.g. clock_read/trap) so that
    /// other tools (perf kvm stat, kvm_stat, virtlens record) can watch its exits
    #[arg(long, value_name = "SCENARIO/VARIANT", conflicts_with_all = ["offline", "io_path", "quick"])]
    pub replay: Option<String>,
    /// With --replay: seconds to keep it running
    #[arg(long, value_name = "S", default_value_t = 10.0, requires = "replay")]
    pub duration: f64,
    /// Print JSON (stable, versioned schema) instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub page: HtmlArgs,
}

#[derive(Debug, Args)]
pub struct StretchArgs {
    /// `bench --json` / `load --json` documents (one layer each) or published figures
    /// (virtlens.figures/1, several layers); the first layer is the baseline
    #[arg(value_name = "FILE", required_unless_present = "lab")]
    pub files: Vec<PathBuf>,
    /// Measure instead of reading files: the same compute and TLB kernels natively and in a
    /// micro-VM on /dev/kvm (ring 3; ring 0 too, labelled where it is emulated)
    #[arg(long, conflicts_with = "files")]
    pub lab: bool,
    /// With --lab: also write each layer's bench document into this directory
    #[arg(long, value_name = "DIR", requires = "lab")]
    pub save: Option<PathBuf>,
    /// With --lab: interleaved runs per kernel and layer
    #[arg(long, value_name = "N", default_value_t = 11, requires = "lab", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub runs: u64,
    /// Print JSON (stable, versioned schema) instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub page: HtmlArgs,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// vCPUs sharing too few pCPUs: predicted stretch and ready %; --measure checks it here
    #[command(after_long_help = help::OVERCOMMIT)]
    Overcommit(OvercommitArgs),
}

#[derive(Debug, Args)]
pub struct OvercommitArgs {
    /// Physical CPUs the vCPUs run on (default: this host's online CPUs)
    #[arg(long, value_name = "N")]
    pub pcpus: Option<u32>,
    /// vCPUs sharing them
    #[arg(
        long,
        value_name = "N",
        default_value_t = 4,
        required_unless_present = "measure"
    )]
    pub vcpus: u32,
    /// Share of time each vCPU wants a CPU (0..1]
    #[arg(long, value_name = "U", default_value_t = 1.0)]
    pub util: f64,
    /// Other host load, in CPUs
    #[arg(long, value_name = "CPUS", default_value_t = 0.0)]
    pub background: f64,
    /// Measure it on this host: k busy micro-VM vCPUs (ring 3) for k = 1..=--max-vcpus,
    /// each against one alone, next to the prediction
    #[arg(long)]
    pub measure: bool,
    /// With --measure: the largest k
    #[arg(long, value_name = "K", default_value_t = 8, requires = "measure", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_vcpus: u32,
    /// With --measure: interleaved repetitions per k
    #[arg(long, value_name = "N", default_value_t = 3, requires = "measure", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Print JSON (stable, versioned schema) instead of text
    #[arg(long)]
    pub json: bool,
}
