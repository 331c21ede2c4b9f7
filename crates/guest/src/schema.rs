//! The JSON documents the guest side writes and `virtlens stretch` reads: one [`BenchReport`]
//! per layer (`virtlens bench --json`) and one [`LoadReport`] per load run (`virtlens load
//! --json`). Both carry a versioned `schema` string; readers refuse a major version they do not
//! know. Pure data: no measuring code here, so the analysis side can read the documents on any
//! platform.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::Spread;

/// The schema of `virtlens bench --json`.
pub const BENCH_SCHEMA: &str = "virtlens.bench/1";
/// The schema of `virtlens load --json`.
pub const LOAD_SCHEMA: &str = "virtlens.load/1";

/// Which direction of a measure is good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Times, latencies, costs.
    Lower,
    /// Throughputs, rates, scores.
    Higher,
}

/// One layer's benchmark results: `virtlens bench --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub schema: String,
    /// What this layer is (`--layer`, default from the fingerprint: "native", "KVM guest", …).
    pub layer: String,
    pub recorded: Recorded,
    pub fingerprint: Fingerprint,
    pub measures: Vec<Measure>,
    /// Measures that could not run here, and why (tool not installed, one vCPU, …).
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// What the suite found about this environment (e.g. a clocksource that traps).
    #[serde(default)]
    pub findings: Vec<Finding>,
}

/// When and how a document was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// Seconds since the epoch (the guest's clock).
    pub unix_s: u64,
    pub virtlens: String,
    /// Wall time of the whole run, in seconds.
    pub wall_s: f64,
    /// Repetitions of every measure.
    pub runs: usize,
    /// Whether the short variant of the suite ran (smaller sizes, for slow layers).
    #[serde(default)]
    pub quick: bool,
}

/// One measure of one layer: its samples (one per repetition) and their spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// Stable key, e.g. `cpu.search`, `clock.read`, `tlb.random_4k`.
    pub name: String,
    /// What one sample is, in words.
    pub what: String,
    /// Unit of the samples: `ms`, `ns`, `us`, `MB/s`, `IOPS`.
    pub unit: String,
    pub better: Better,
    pub samples: Vec<f64>,
    /// Median and quartiles of `samples` (absent when there are none).
    pub spread: Option<Spread>,
    /// The checked answer of a deterministic kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Check>,
    /// Facts that explain the number: page size obtained, clocksource, CPUs used, …
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub detail: BTreeMap<String, String>,
}

impl Measure {
    /// A measure with its spread computed from `samples`.
    pub fn new(name: &str, what: &str, unit: &str, better: Better, samples: Vec<f64>) -> Self {
        Measure {
            name: name.to_string(),
            what: what.to_string(),
            unit: unit.to_string(),
            better,
            spread: Spread::of(&samples),
            samples,
            check: None,
            detail: BTreeMap::new(),
        }
    }

    /// Adds a detail.
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.detail.insert(key.to_string(), value.into());
        self
    }
}

/// A deterministic kernel's answer and the one it must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub expected: u64,
    pub got: u64,
    pub ok: bool,
}

/// A measure that did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub name: String,
    pub why: String,
}

/// Something the suite noticed about its environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable id, e.g. `clock.trapping_clocksource`.
    pub id: String,
    pub text: String,
}

/// What the environment is: enough to explain a stretch between two layers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// CPUID.1:ECX bit 31: "running under a hypervisor".
    pub hypervisor_bit: bool,
    /// The vendor string of CPUID leaf 0x40000000 (`KVMKVMKVM`, `Microsoft Hv`, `TCGTCGTCGTCG`,
    /// `VMwareVMware`, …), when the hypervisor bit is set.
    pub hypervisor_vendor: Option<String>,
    /// The highest hypervisor leaf.
    pub hypervisor_max_leaf: Option<u32>,
    /// KVM paravirtual features (CPUID 0x40000001 EAX) by name: `clocksource2`, `steal_time`, …
    #[serde(default)]
    pub kvm_features: Vec<String>,
    /// Hyper-V enlightenments offered (CPUID 0x40000003 EAX) by name: `reference_tsc`, `synic`, …
    #[serde(default)]
    pub hv_features: Vec<String>,
    /// Hints that this layer is nested or can nest: `vmx`/`svm` visible, Hyper-V nested leaf,
    /// KVM's `nested` parameter, a PVM (shadow-paging) host module.
    #[serde(default)]
    pub nested_hints: Vec<String>,
    pub clocksource: Option<String>,
    #[serde(default)]
    pub clocksources_available: Vec<String>,
    /// Steal time since boot, in percent of all CPU time (/proc/stat).
    pub steal_pct: Option<f64>,
    pub cpu_model: Option<String>,
    pub kernel: Option<String>,
    /// Online CPUs (vCPUs in a guest).
    pub cpus: usize,
    pub memory_mb: Option<u64>,
    /// Transparent huge pages mode (`always`, `madvise`, `never`).
    pub thp: Option<String>,
}

/// One load run: `virtlens load --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub schema: String,
    pub virtlens: String,
    pub options: LoadOptions,
    pub elapsed_s: f64,
    pub tasks_done: u64,
    pub tasks_per_s: f64,
    /// Per-task latency (dispatch to completion), in milliseconds.
    pub latency_ms: Latency,
    pub cpu: CpuTime,
    /// The steal time the guest's kernel accounted while the load ran (/proc/stat).
    pub steal_pct: Option<f64>,
    /// The worker threads' run-queue wait (schedstat): time runnable but not running.
    pub run_queue: Option<RunQueue>,
    pub cpus: usize,
    pub hypervisor_vendor: Option<String>,
}

/// What the load generator was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadOptions {
    pub tasks: u64,
    pub iterations: u64,
    pub workers: usize,
    pub footprint_mb: u64,
    pub contention: f64,
    pub io_wait_ms: f64,
    pub io_wait_cv: f64,
    pub seed: u64,
    /// Run for this long (seconds) instead of a fixed amount of work.
    pub duration_s: Option<f64>,
}

/// A latency distribution's percentiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

/// CPU time and context switches of the process over the run (getrusage).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub sys_s: f64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// Time the worker threads ran and waited on a run queue (/proc/self/task/*/schedstat).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunQueue {
    pub run_s: f64,
    pub wait_s: f64,
    /// Wait over the workers' wall time (workers × elapsed), in percent: the share of time a
    /// worker was runnable but had no CPU (VMware's %RDY, Hyper-V's CPU wait per dispatch).
    pub ready_pct: f64,
}
