//! Command-line arguments (clap derive). Every command takes `--json`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::help;

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
    /// Run the load generator: fixed work on worker threads, elapsed time is the measure
    #[command(after_long_help = help::LOAD)]
    Load(virtlens_guest::cli::LoadArgs),
    /// Run the guest-side benchmark suite (one JSON per layer, for `virtlens stretch`)
    #[command(after_long_help = help::BENCH)]
    Bench(virtlens_guest::cli::BenchArgs),
    /// How much slower the same work runs from layer to layer, with noise bounds and causes
    #[command(after_long_help = help::STRETCH)]
    Stretch(StretchArgs),
    /// Capacity models (over-commit: joint probability and Erlang C), checked against measurement
    #[command(subcommand, after_long_help = help::MODEL)]
    Model(ModelCommand),
    /// Export per-VM exit counts, latencies, ready time and findings for Prometheus (read-only)
    #[command(after_long_help = help::SERVE)]
    Serve(ServeArgs),
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

/// Options shared by every command that reads input files.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Force the input format instead of detecting it
    #[arg(long, value_name = "FORMAT", value_parser = ["perf-kvm-stat", "perf-data", "kvm-stat", "bcc-kvmexit", "perf-prof", "trace-text", "capture", "perfmon-csv", "counter-table"])]
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
    #[command(flatten)]
    pub page: HtmlArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more inputs; a file holding several labelled tables counts as several inputs
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub page: HtmlArgs,
}

#[derive(Debug, Args)]
pub struct CountersArgs {
    /// PDH-CSV logs (typeperf, relog -f csv, perfmon CSV, esxtop -b) or pasted counter tables
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The workload's IO rate, for intercepts and VP time per IO and the IOPS ceiling
    #[arg(long, value_name = "N")]
    pub iops: Option<f64>,
    /// Exit 1 when a finding is at or above this level
    #[arg(long, value_enum, default_value = "high", value_name = "LEVEL")]
    pub fail_on: CounterLevelArg,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CounterLevelArg {
    High,
    Medium,
    Low,
    Info,
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

#[derive(Debug, Args)]
pub struct LintArgs {
    /// libvirt domain XML, QEMU command line or launch script, or Proxmox VM config (`-`: stdin)
    #[arg(value_name = "FILE", required_unless_present = "recommend")]
    pub file: Option<PathBuf>,
    /// Force the input format instead of detecting it
    #[arg(long, value_enum)]
    pub format: Option<ConfigFormatArg>,
    /// The file is a QEMU command line (same as --format qemu)
    #[arg(long, conflicts_with = "format")]
    pub qemu_args: bool,
    /// The guest OS (default: from libosinfo metadata or ostype, else inferred)
    #[arg(long, value_enum)]
    pub guest: Option<GuestArg>,
    /// The host CPU vendor
    #[arg(long, value_enum)]
    pub host_vendor: Option<VendorArg>,
    /// Whether the host has APIC virtualization on (kvm_intel enable_apicv / kvm_amd avic)
    #[arg(long, value_enum, value_name = "on|off")]
    pub host_apicv: Option<OnOffArg>,
    /// The host clocksource (tsc, hpet, …)
    #[arg(long, value_name = "NAME")]
    pub host_clocksource: Option<String>,
    /// Read the host facts from this machine (explicit --host-* flags win)
    #[arg(long, value_enum)]
    pub host_facts: Option<HostFactsArg>,
    /// The VM is live-migrated (HV-OPS-001 high, HV-OPS-002)
    #[arg(long)]
    pub migratable: bool,
    /// The host is overcommitted (HV-PERF-009, HV-PERF-010)
    #[arg(long)]
    pub overcommitted: bool,
    /// The guest runs a hypervisor: Hyper-V role, WSL2, VBS (HV-PERF-011)
    #[arg(long)]
    pub nested_workload: bool,
    /// The workload is IPI-heavy (HV-PERF-005 high)
    #[arg(long)]
    pub ipi_heavy: bool,
    /// The QEMU version the VM runs on (HV-DEP-009)
    #[arg(long, value_name = "X.Y")]
    pub qemu_version: Option<String>,
    /// The libvirt version that defines it (HV-DEP-009)
    #[arg(long, value_name = "X.Y")]
    pub libvirt_version: Option<String>,
    /// Print the recommended set for a workload, as libvirt XML and QEMU flags
    #[arg(long, value_enum, value_name = "PRESET")]
    pub recommend: Option<PresetArg>,
    /// Exit 1 when a finding is at or above this severity
    #[arg(long, value_enum, default_value = "error", value_name = "SEVERITY")]
    pub fail_on: SeverityArg,
    /// Print JSON (stable, versioned schema) instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ConfigFormatArg {
    Libvirt,
    Qemu,
    Proxmox,
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

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PresetArg {
    WindowsGeneral,
    IpiHeavy,
    Vdi,
    Nested,
    Migration,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SeverityArg {
    Error,
    High,
    Medium,
    Low,
    Info,
}

#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// Inputs: any file `report` reads (`-` for stdin); two or more are also compared
    #[arg(required_unless_present = "live", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Capture this host's KVM events now (own tracefs instance; root) and diagnose them;
    /// --vm/--pid select the VM in the kernel
    #[arg(long, conflicts_with = "files")]
    pub live: bool,
    /// How long --live captures, in seconds
    #[arg(long, value_name = "S", default_value_t = 10.0, requires = "live", value_parser = seconds)]
    pub duration: f64,
    /// With --live: when tracing is on, write `ready` and a newline to this inherited file
    /// descriptor and close it
    #[arg(long, value_name = "FD", requires = "live")]
    pub ready_fd: Option<i32>,
    /// The VM's configuration (libvirt XML, QEMU command line, Proxmox config), joined with the exits
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Force the configuration's format instead of detecting it
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub config_format: Option<ConfigFormatArg>,
    /// The guest OS (default: from the configuration, else inferred from the profile)
    #[arg(long, value_enum)]
    pub guest: Option<GuestArg>,
    #[command(flatten)]
    pub host: HostArgs,
    /// The QEMU version the VM runs on (hv-avic needs 6.2)
    #[arg(long, value_name = "X.Y")]
    pub qemu_version: Option<String>,
    /// How long the input's capture ran, when it does not say (e.g. `perf kvm stat record -a
    /// sleep 10` → 10): costs become shares of vCPU time and rates per second
    #[arg(long, value_name = "SECONDS")]
    pub window: Option<f64>,
    /// How many vCPUs the input covers: rates and costs per vCPU instead of for all together
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub vcpus: Option<u32>,
    /// The workload's IO rate over the capture (IOs per second): exits per IO by kind, the
    /// exit handling per IO and the IOPS ceiling it implies, and the IO-path findings
    #[arg(long, value_name = "N", conflicts_with = "fio")]
    pub iops: Option<f64>,
    /// The IO rate from fio's JSON output (`fio --output-format=json`): the sum of its jobs'
    /// read and write IOPS
    #[arg(long, value_name = "FILE.json")]
    pub fio: Option<PathBuf>,
    /// Exit 1 when a finding is at or above this severity
    #[arg(long, value_enum, default_value = "high", value_name = "SEVERITY")]
    pub fail_on: DiagnoseSeverityArg,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub page: HtmlArgs,
}

/// The host a profile was captured on, for commands that diagnose it.
#[derive(Debug, Args)]
pub struct HostArgs {
    /// The host CPU vendor (default: from the exit names, VMX → Intel, SVM → AMD)
    #[arg(long, value_enum)]
    pub host_vendor: Option<VendorArg>,
    /// Whether the host has APIC virtualization on (kvm_intel enable_apicv / kvm_amd avic)
    #[arg(long, value_enum, value_name = "on|off")]
    pub host_apicv: Option<OnOffArg>,
    /// The host clocksource (tsc, hpet, …)
    #[arg(long, value_name = "NAME")]
    pub host_clocksource: Option<String>,
    /// The host kernel release (e.g. 5.10.0-21-amd64)
    #[arg(long, value_name = "RELEASE")]
    pub host_kernel: Option<String>,
    /// Read the host facts from this machine (explicit --host-* flags win)
    #[arg(long, value_enum)]
    pub host_facts: Option<HostFactsArg>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DiagnoseSeverityArg {
    Critical,
    High,
    Medium,
    Low,
    Info,
}

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
    /// Print JSON (stable, versioned schema) instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub page: HtmlArgs,
}

/// Options shared by the live-capture commands.
#[derive(Debug, Args)]
pub struct LiveArgs {
    /// Only this VM (its name, or a unique part of it)
    #[arg(long, value_name = "NAME", conflicts_with = "pid")]
    pub vm: Option<String>,
    /// Only this VMM process
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Tracepoints or systems to capture, comma-separated (default: kvm; also kvmmmu, irq, kvm:kvm_pio, …)
    #[arg(long, value_name = "LIST")]
    pub events: Option<String>,
    /// Ring-buffer size per CPU, in KiB (64 to 1048576). The kernel allocates it for every
    /// online CPU: the memory taken is this times the CPUs (8192 KiB × 64 CPUs = 512 MiB), said
    /// at start; more than half of the available memory is refused
    #[arg(long, value_name = "KB", default_value_t = 8192,
          value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub buffer_kb: u32,
    /// When tracing is on, write `ready` and a newline to this inherited file descriptor and
    /// close it (e.g. `--ready-fd 3 3>ready.fifo`), so a script starts its workload then
    #[arg(long, value_name = "FD")]
    pub ready_fd: Option<i32>,
    /// Do not read the VMs' KVM binary statistics
    #[arg(long)]
    pub no_kvm_stats: bool,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The capture file to write (Parquet: raw events + the profile)
    #[arg(short, long, value_name = "FILE", required_unless_present = "summary")]
    pub output: Option<PathBuf>,
    /// Write no file: count in the kernel (BPF; else the trace buffer) and print the profile
    /// as `report` does when the recording stops
    #[arg(long, conflicts_with_all = ["output", "force"])]
    pub summary: bool,
    /// Stop after this many seconds (default: at Ctrl-C)
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub duration: Option<f64>,
    /// Replace FILE if it exists (the new capture is renamed over it only once complete)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Print a JSON summary instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// Seconds between refreshes
    #[arg(long, value_name = "S", default_value_t = 2.0, value_parser = seconds)]
    pub interval: f64,
    /// Print one interval and exit
    #[arg(long)]
    pub once: bool,
    /// Reasons shown per VM
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub rows: usize,
    /// Use the tracefs capture even where in-kernel aggregation (BPF) is available
    #[arg(long)]
    pub no_bpf: bool,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Print JSON (one object per interval) instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to serve /metrics on (loopback unless told otherwise)
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9815")]
    pub listen: std::net::SocketAddr,
    /// Seconds between collections
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub interval: f64,
    /// Series of their own per VM and family (ports, MSRs, …); the rest add to `other`
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// VMs exported at most
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_vms: usize,
    /// Seconds a VM's series stay after its process is gone (so its last counts are scraped)
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub keep_gone: f64,
    /// Seconds of history the findings are computed on
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub window: f64,
    /// Use the tracefs capture even where in-kernel aggregation (BPF) is available
    #[arg(long)]
    pub no_bpf: bool,
    /// Have the kernel time the in-kernel programs (virtlens_bpf_program_run_seconds_total)
    #[arg(long)]
    pub bpf_stats: bool,
    /// A QEMU QMP socket to read the VM's KVM statistics from (`query-stats`); repeatable
    #[arg(long, value_name = "PATH")]
    pub qmp: Vec<PathBuf>,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Print the start (address, source, notes) as JSON on stdout
    #[arg(long)]
    pub json: bool,
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
