//! The commands that watch a live host: `record`, `top`, `serve`, and `diagnose --live`'s options.

use std::path::PathBuf;

use clap::Args;

use super::*;

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
    #[arg(long, value_name = "S", default_value = "60", value_parser = super::parse_seconds)]
    pub keep_gone: f64,
    /// Seconds of history the findings are computed on
    #[arg(long, value_name = "S", default_value = "60", value_parser = super::parse_seconds)]
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
