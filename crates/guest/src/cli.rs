//! The command-line arguments of `load` and `bench` (clap), shared by the `virtlens-guest`
//! binary and the main `virtlens` binary, which flattens them into its own subcommands.

use std::path::PathBuf;

use clap::Args;

use crate::bench;
use crate::schema::{BenchReport, LoadOptions, LoadReport};

#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Tasks to run (fixed work: the elapsed time is the measure)
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub tasks: u64,
    /// Iterations of each task (fill the collection, search it, wait for the simulated IO)
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub iterations: u64,
    /// Worker threads (default: one per online CPU)
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Size of each task's collection, in MiB
    #[arg(long, value_name = "MB", default_value_t = 16)]
    pub footprint_mb: u64,
    /// Share (0..1) of each iteration's search done under the one lock all workers share
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    pub contention: f64,
    /// Mean simulated IO wait after each iteration, in ms (a timer sleep; 0: none)
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    pub io_wait_ms: f64,
    /// Coefficient of variation of the IO waits (0: all equal; log-normal otherwise)
    #[arg(long, value_name = "CV", default_value_t = 0.0)]
    pub io_wait_cv: f64,
    /// Seed of the random data and waits (same seed, same work)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Run for this many seconds instead of a fixed number of tasks
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Print JSON (schema virtlens.load/1) instead of text
    #[arg(long)]
    pub json: bool,
}

impl LoadArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> LoadOptions {
        LoadOptions {
            tasks: self.tasks,
            iterations: self.iterations,
            workers: self.workers.unwrap_or_else(crate::procfs::online_cpus),
            footprint_mb: self.footprint_mb,
            contention: self.contention,
            io_wait_ms: self.io_wait_ms,
            io_wait_cv: self.io_wait_cv,
            seed: self.seed,
            duration_s: self.duration,
        }
    }

    /// Runs the load.
    pub fn run(&self) -> Result<LoadReport, String> {
        crate::load::run(&self.options())
    }
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Repetitions of every measure (median and spread are taken over them)
    #[arg(long, value_name = "N", default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub runs: u64,
    /// Smaller loop counts, for slow layers (software emulation); results compare with full runs
    #[arg(long)]
    pub quick: bool,
    /// Name of this layer in the report (default: from the CPUID hypervisor leaf)
    #[arg(long, value_name = "NAME")]
    pub layer: Option<String>,
    /// Also measure storage with fio and these job arguments (e.g. "--name=rw4k --rw=randwrite --bs=4k --size=256M --runtime=10 --time_based --ioengine=libaio --direct=1 --iodepth=32")
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub fio: Option<String>,
    /// Also measure the network with iperf3 against this server
    #[arg(long, value_name = "HOST")]
    pub iperf3: Option<String>,
    /// Also write the JSON document to this file
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print JSON (schema virtlens.bench/1) instead of text
    #[arg(long)]
    pub json: bool,
}

impl BenchArgs {
    /// The suite's options.
    pub fn options(&self) -> bench::Options {
        bench::Options {
            runs: self.runs as usize,
            quick: self.quick,
            layer: self.layer.clone(),
            fio: self.fio.clone(),
            iperf3: self.iperf3.clone(),
        }
    }

    /// Runs the suite, writing `--output` when given.
    pub fn run(&self, progress: bench::Progress<'_>) -> Result<BenchReport, String> {
        let report = bench::run(&self.options(), progress);
        if let Some(path) = &self.output {
            let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
            std::fs::write(path, json + "\n")
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        Ok(report)
    }
}

#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// The cause of exits to switch on
    #[arg(value_enum)]
    pub kind: crate::workload::Kind,
    /// Seconds to keep it running
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub duration: f64,
    /// Threads (compute, spin-lock; default: one per online CPU)
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// The device or file to write or read (write, read-direct)
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// Where datagrams go (udp-send), ADDR:PORT
    #[arg(long, value_name = "ADDR:PORT")]
    pub to: Option<String>,
    /// Interrupts per second (rtc-irq; a power of two up to 8192)
    #[arg(long, value_name = "HZ", default_value_t = 1024)]
    pub hz: u64,
    /// Bytes per operation (write, read-direct, udp-send)
    #[arg(long, value_name = "BYTES", default_value_t = 4096)]
    pub block: usize,
}

impl WorkloadArgs {
    /// Runs the workload, its start line on stdout.
    pub fn run(&self) -> Result<crate::workload::Done, String> {
        if !(self.duration > 0.0 && self.duration.is_finite()) {
            return Err(format!(
                "--duration {} must be a positive number of seconds",
                self.duration
            ));
        }
        let options = crate::workload::Options {
            kind: self.kind,
            duration: std::time::Duration::from_secs_f64(self.duration),
            threads: self.threads.unwrap_or_else(crate::procfs::online_cpus),
            path: self.path.clone(),
            to: self.to.clone(),
            hz: self.hz,
            block: self.block,
        };
        crate::workload::run(&options, &mut std::io::stdout())
    }
}
