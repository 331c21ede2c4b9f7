//! The lab: micro-VMs on /dev/kvm that measure what each kind of exit costs on this host
//! (`virtlens exitcost`: [`run_exitcost`]) and replay the classic traps against their fixes
//! (`virtlens lab`: [`run_lab`], which adds the scenarios of `scenarios`).
//!
//! Each exit test (`catalog`) and scenario variant is a loop of one guest operation in its
//! own micro-VM. Per mode, every item is probed once (a hang caught by the watchdog or a
//! missing capability makes it `unsupported`), its loop count is calibrated to a target run
//! time, and then all items run round-robin, round after round (`bench`); each figure is
//! the median over rounds of (item − nop loop of the same round), so it is the operation's
//! own cost. The backend is labelled from the loaded modules and measured: whether ring-0
//! guest code is emulated (`insn_emulation` per guest instruction of a nop loop ≈ 1); so is
//! the clock's step, below which a figure is `unresolved` rather than a cost.
//! The whole run has a time budget, shared out among the modes; what staying within it
//! changed is in the report's notes. All VMs of a mode are closed before the next mode
//! starts; nothing outlives a call.

mod asm;
mod bench;
pub(crate) mod catalog;
pub(crate) mod crowd;
pub(crate) mod devices;
pub(crate) mod io_path;
#[allow(unsafe_code)]
mod jit;
mod kernels;
mod profile;
mod results;
pub(crate) mod scenarios;
pub(crate) mod stretch;

use std::time::{Duration, Instant};

use virtlens_core::measure::{
    BackendLabel, EXITCOST_SCHEMA, ExitCostReport, LAB_SCHEMA, LabReport, Mode, Recording, Status,
    TestResult, headline, utc_date,
};
use virtlens_core::{Backend, HostFacts};

pub use bench::Plan;
pub use profile::FORMAT as PROFILE_FORMAT;

// What other crates use of this area (docs/development.md, "Public API").
pub use crowd::{Busy, run as run_crowd};
pub use scenarios::{replay, variant_profile};
pub use stretch::run as run_stretch;

/// The default time budget of `exitcost` and `lab` (a full run takes 10 to 60 s).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(300);

/// What to run and how long.
#[derive(Debug, Clone)]
pub struct Options {
    pub modes: Vec<Mode>,
    /// Interleaved rounds (runs per test).
    pub rounds: usize,
    /// A fixed number of operations per run instead of calibration.
    pub ops: Option<u64>,
    /// The run time calibration aims at.
    pub target_run: Duration,
    /// Also run the trap scenarios (in 64-bit ring 0).
    pub scenarios: bool,
    /// Also run the IO-path scenario (delivery modes × queue depths).
    pub io_path: bool,
    /// Run only the IO-path scenario (no exit tests, no trap scenarios).
    pub io_path_only: bool,
    pub quick: bool,
    /// How long one `KVM_RUN` of the probe may take before the item counts as hung.
    pub probe_limit: Duration,
    /// How long the whole run may take (see the module doc).
    pub budget: Duration,
}

impl Options {
    /// `virtlens exitcost` defaults: every mode, 21 rounds of ≈ 5 ms runs.
    pub fn exitcost() -> Self {
        Self {
            modes: Mode::ALL.to_vec(),
            rounds: 21,
            ops: None,
            target_run: Duration::from_millis(5),
            scenarios: false,
            io_path: false,
            io_path_only: false,
            quick: false,
            probe_limit: Duration::from_millis(300),
            budget: DEFAULT_BUDGET,
        }
    }

    /// `virtlens lab` defaults (`quick`: 5 rounds of ≈ 1 ms runs).
    pub fn lab(quick: bool) -> Self {
        Self {
            rounds: if quick { 5 } else { 21 },
            target_run: Duration::from_millis(if quick { 1 } else { 5 }),
            scenarios: true,
            io_path: true,
            quick,
            ..Self::exitcost()
        }
    }

    fn plan(&self) -> Plan {
        Plan {
            rounds: self.rounds.max(1),
            ops: self.ops,
            target_run: self.target_run,
            probe_limit: self.probe_limit,
            run_limit: Duration::from_secs(3).max(self.target_run * 20),
            until: None,
        }
    }
}

/// Progress: `done` of `total` steps, now at `label`.
#[derive(Debug, Clone, Copy)]
pub struct Tick<'a> {
    pub done: u64,
    pub total: u64,
    pub label: &'a str,
}

/// What the lab says about this host in every result.
#[derive(Debug, Clone)]
pub struct HostLabel {
    pub facts: HostFacts,
    pub backend: String,
    pub kernel: Option<String>,
    pub vendor: Option<String>,
    pub host: Option<String>,
}

/// This host's label, from `facts::probe`.
pub fn host_label() -> HostLabel {
    let facts = crate::facts::probe();
    HostLabel {
        backend: facts.backend.clone().unwrap_or(Backend::None).to_string(),
        kernel: facts.kernel.clone(),
        vendor: facts
            .vendor
            .as_ref()
            .map(|v| format!("{v:?}").to_lowercase()),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string()),
        facts,
    }
}

/// Whether /dev/kvm opens for reading and writing and answers as KVM (API version 12); the
/// error says why not.
pub fn kvm_usable() -> Result<(), String> {
    let kvm = kvm_ioctls::Kvm::new().map_err(|e| format!("/dev/kvm: {e}"))?;
    match kvm.get_api_version() {
        12 => Ok(()),
        v if v < 0 => Err(format!(
            "/dev/kvm does not answer KVM_GET_API_VERSION ({}): it is not the KVM device",
            std::io::Error::last_os_error()
        )),
        v => Err(format!("/dev/kvm has KVM API version {v}, not 12")),
    }
}

fn amd(host: &HostLabel) -> bool {
    matches!(host.vendor.as_deref(), Some("amd" | "hygon"))
}

/// Items per group: the exit tests of the mode, plus the scenarios in their mode.
fn groups(opts: &Options, amd: bool) -> Vec<(Mode, Vec<bench::Item>, usize)> {
    if opts.io_path_only {
        return Vec::new();
    }
    opts.modes
        .iter()
        .map(|&mode| {
            let mut items = catalog::items(mode, amd);
            let tests = items.len();
            if opts.scenarios && scenarios::MODES.contains(&mode) {
                items.extend(scenarios::items(mode));
            }
            (mode, items, tests)
        })
        .collect()
}

/// The steps `run_exitcost`/`run_lab` report through `progress`.
fn total_steps(groups: &[(Mode, Vec<bench::Item>, usize)], io_path: usize, rounds: usize) -> u64 {
    let items: usize = groups.iter().map(|(_, i, _)| i.len()).sum::<usize>() + io_path;
    (items * (rounds.max(1) + 1) + 4) as u64
}

/// Measures the ring-0 (64-bit) and ring-3 nop loops' `insn_emulation` per guest
/// instruction (3 per iteration: nop, dec, jnz).
fn emulation_ratios(tick: &mut dyn FnMut(&str)) -> (Option<f64>, Option<f64>) {
    const OPS: u64 = 3000;
    let plan = Plan {
        rounds: 1,
        ops: Some(OPS),
        target_run: Duration::from_millis(1),
        probe_limit: Duration::from_millis(500),
        run_limit: Duration::from_secs(3),
        until: None,
    };
    let items = [
        catalog::Exit::NopLoop.item(Mode::Long64, false),
        catalog::Exit::NopLoop.item(Mode::User64, false),
    ];
    let measured = bench::measure(&items, &plan, tick, &mut Vec::new());
    let ratio = |i: usize| {
        let m = measured.get(i).filter(|m| m.status == Status::Ok)?;
        let n = m.stats.get("insn_emulation").copied().unwrap_or(0);
        Some(n as f64 / (m.total_ops.max(1) * 3) as f64)
    };
    (ratio(0), ratio(1))
}

struct Outcome {
    backend: BackendLabel,
    host: HostLabel,
    tests: Vec<TestResult>,
    scenarios: Vec<virtlens_core::measure::ScenarioResult>,
    io_path: Option<virtlens_core::measure::IoPathReport>,
    recorded: Recording,
    notes: Vec<String>,
}

/// The smallest step the monotonic clock (`Instant`) moves by here, ns: the least difference
/// between two reads that differ, over many tries.
fn clock_step_ns() -> f64 {
    let mut best = u128::MAX;
    for _ in 0..2000 {
        let a = Instant::now();
        let mut b = Instant::now();
        for _ in 0..1_000_000 {
            if b > a {
                break;
            }
            b = Instant::now();
        }
        if b > a {
            best = best.min((b - a).as_nanos());
        }
    }
    if best == u128::MAX { 1.0 } else { best as f64 }
}

fn run(opts: &Options, progress: &mut dyn FnMut(Tick<'_>)) -> Outcome {
    let start = Instant::now();
    let host = host_label();
    let groups = groups(opts, amd(&host));
    let io_configs = if opts.io_path || opts.io_path_only {
        io_path::rounds::configs(opts.quick)
    } else {
        Vec::new()
    };
    let total = total_steps(&groups, io_configs.len(), opts.rounds);
    let mut done = 0u64;
    let mut tick = |label: &str| {
        done += 1;
        progress(Tick {
            done: done.min(total),
            total,
            label,
        });
    };
    let (ring0, ring3) = emulation_ratios(&mut tick);
    let backend = BackendLabel::new(
        host.facts.backend.as_ref().unwrap_or(&Backend::None),
        host.facts.cpu_emulator.as_deref(),
        ring0,
        ring3,
        host.facts.nested,
    );
    let clock_ns = clock_step_ns();
    let deadline = start + opts.budget;
    let mut notes = Vec::new();
    let mut tests = Vec::new();
    let mut scenario_results = Vec::new();
    // The IO path counts as one more group in the budget.
    let parts = groups.len() + usize::from(!io_configs.is_empty());
    for (i, (mode, items, n_tests)) in groups.iter().enumerate() {
        // The budget left, shared equally among the groups left.
        let left = deadline.saturating_duration_since(Instant::now());
        let share = left / u32::try_from(parts - i).unwrap_or(1);
        let plan = Plan {
            until: Some(Instant::now() + share),
            ..opts.plan()
        };
        let measured = bench::measure(items, &plan, &mut tick, &mut notes);
        let base = measured.iter().find(|m| m.baseline);
        tests.extend(
            measured[..*n_tests]
                .iter()
                .map(|m| results::test_result(m, base, clock_ns)),
        );
        if opts.scenarios && scenarios::MODES.contains(mode) {
            scenario_results.extend(results::scenario_results(
                *mode,
                &scenarios::all(),
                &measured[*n_tests..],
                base,
                &host,
                clock_ns,
            ));
        }
    }
    let io_path = (!io_configs.is_empty()).then(|| {
        let plan = io_path::rounds::Plan {
            rounds: opts.plan().rounds,
            target_run: opts.target_run,
            // irqfd and poll runs are one KVM_RUN each: bound the whole run, generously.
            watchdog: Duration::from_secs(30),
            until: Some(deadline),
        };
        let mut io_notes = Vec::new();
        let rows = io_path::rounds::measure(&io_configs, &plan, &mut tick, &mut io_notes);
        notes.extend(io_notes);
        io_path::rounds::report(rows, &backend)
    });
    let recorded = Recording {
        date: utc_date(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        ),
        host: host.host.clone(),
        virtlens: virtlens_core::VERSION.to_string(),
        wall_s: start.elapsed().as_secs_f64(),
        rounds: opts.plan().rounds,
        quick: opts.quick,
        clock_resolution_ns: Some(clock_ns),
        budget_s: Some(opts.budget.as_secs_f64()),
    };
    Outcome {
        backend,
        host,
        tests,
        scenarios: scenario_results,
        io_path,
        recorded,
        notes,
    }
}

/// `virtlens exitcost`: every exit test in every mode of `opts`.
pub fn run_exitcost(opts: &Options, progress: &mut dyn FnMut(Tick<'_>)) -> ExitCostReport {
    let o = run(
        &Options {
            scenarios: false,
            ..opts.clone()
        },
        progress,
    );
    ExitCostReport {
        schema: EXITCOST_SCHEMA.to_string(),
        measured: true,
        backend: o.backend,
        cpu: o.host.facts.cpu_model.clone(),
        kernel: o.host.kernel.clone(),
        recorded: o.recorded,
        tests: o.tests,
        notes: o.notes,
    }
}

/// `virtlens lab`: the exit tests and the trap scenarios, with the headline numbers.
pub fn run_lab(opts: &Options, progress: &mut dyn FnMut(Tick<'_>)) -> LabReport {
    let o = run(opts, progress);
    let headline = headline(&o.tests, &o.scenarios);
    LabReport {
        schema: LAB_SCHEMA.to_string(),
        measured: true,
        backend: o.backend,
        cpu: o.host.facts.cpu_model.clone(),
        kernel: o.host.kernel.clone(),
        recorded: o.recorded,
        tests: o.tests,
        scenarios: o.scenarios,
        io_path: o.io_path,
        headline,
        notes: o.notes,
    }
}
