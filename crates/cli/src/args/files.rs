//! The commands that read files: `report`, `compare`, `counters`, `diagnose` (and the host facts
//! `diagnose` takes).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::*;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Input files (`-` for standard input)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Group rows by exit reason, IO port, MMIO address, MSR, vCPU or VM; `rip`: each exit
    /// reason's exits by the guest code they came from
    #[arg(long, value_enum)]
    pub by: Option<ByArg>,
    /// Show only the N largest rows of each table (`--by rip`: 10 unless given)
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub guest_code: GuestCodeArgs,
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
    #[arg(long, value_enum, default_value = "high", value_name = "SEVERITY")]
    pub fail_on: super::SeverityArg,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub page: HtmlArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ByArg {
    Reason,
    Port,
    Mmio,
    Msr,
    Vcpu,
    Vm,
    Rip,
}

/// The guest's symbols, for naming the guest code exits come from.
#[derive(Debug, Args)]
pub struct GuestCodeArgs {
    /// The guest kernel's symbols: its System.map, a dump of its /proc/kallsyms (as root), or
    /// a Windows linker .map; exits' guest RIPs are named `function+0xoff`
    #[arg(long, value_name = "FILE")]
    pub guest_symbols: Option<PathBuf>,
    /// The guest kernel's load offset (KASLR) from its symbol map, in hex (the guest's
    /// `_text` in /proc/kallsyms minus the map's); inferred from the RIPs when not given
    #[arg(long, value_name = "HEX", requires = "guest_symbols", value_parser = parse_hex)]
    pub guest_kaslr_offset: Option<u64>,
}

/// A hex number, with or without `0x`.
fn parse_hex(s: &str) -> Result<u64, String> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u64::from_str_radix(digits, 16).map_err(|e| format!("`{s}` is not a hex number: {e}"))
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
    #[arg(long, value_name = "SECONDS", value_parser = super::parse_seconds)]
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
    pub fail_on: super::SeverityArg,
    #[command(flatten)]
    pub guest_code: GuestCodeArgs,
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
    /// The host CPU's model name (/proc/cpuinfo), for inputs that do not carry it (perf kvm
    /// stat and perf script text, kvm_stat): "QEMU TCG CPU …" says the CPU was emulated, so the
    /// times are the emulator's
    #[arg(long, value_name = "MODEL")]
    pub host_cpu: Option<String>,
    /// Read the host facts from this machine (explicit --host-* flags win)
    #[arg(long, value_enum)]
    pub host_facts: Option<HostFactsArg>,
}
