//! `lint`: the configuration to check and the host it will run on.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::*;

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
    /// The host kernel release (`uname -r`, e.g. 5.15.0-91-generic): which AVIC inhibits apply
    /// (HV-PERF-014, HV-PERF-015)
    #[arg(long, value_name = "X.Y")]
    pub host_kernel: Option<String>,
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
    /// Exit 1 when a finding is at or above this severity (`error` is `critical`)
    #[arg(long, value_enum, default_value = "high", value_name = "SEVERITY")]
    pub fail_on: super::SeverityArg,
    /// Print JSON (stable, versioned schema) instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub page: super::HtmlArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ConfigFormatArg {
    Libvirt,
    Qemu,
    Proxmox,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PresetArg {
    WindowsGeneral,
    IpiHeavy,
    Vdi,
    Nested,
    Migration,
}
