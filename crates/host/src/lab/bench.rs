//! The measuring engine shared by the exit tests and the scenarios: each [`Item`] (a program
//! in a mode, in a VM made for it) gets its own micro-VM, one probe run that decides whether
//! it works here (a hang caught by the watchdog or a missing capability makes it
//! `unsupported`, a wrong exit count or a guest fault makes it `failed`), a calibration of its
//! loop count to a target run time, and then the runs: round after round, each round running
//! every item once (starting one item later each round), so slow drifts of a noisy host hit
//! every item alike and a test and its baseline are paired by round. The KVM statistics are
//! read before and after every run. The VMs live until the group is done, then all close.
//!
//! A group has a time budget (`Plan::until`): when the rounds would take longer (estimated
//! from the probe and calibration runs), every run makes proportionally fewer operations, and
//! rounds stop once the budget is spent; both are said in the notes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kvm_ioctls::IoEventAddress;
use virtlens_core::measure::{Mode, Status};

use super::devices::LabDevices;
use crate::kvm_stats::{Snapshot, StatsFd};
use crate::microvm::{Access, Error, MicroVm, RunStats, VmConfig};
use virtlens_core::decode::StatType;

/// Loop count of the probe run.
const PROBE_OPS: u64 = 32;
/// Bounds of the calibrated loop count.
const MIN_OPS: u64 = 64;
const MAX_OPS: u64 = 50_000_000;

/// One thing to measure.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub name: String,
    pub mode: Mode,
    pub what: String,
    pub config: VmConfig,
    /// The assembled loop program, or the status and reason why there is none (unsupported
    /// when the mode cannot express it).
    pub program: Result<Vec<u8>, (Status, String)>,
    /// Set when the item cannot work here at all, with the reason.
    pub unsupported: Option<String>,
    pub ioeventfds: Vec<IoEventAddress>,
    pub coalesced: Option<(u64, u32)>,
    /// A port whose ioeventfd is also an irqfd routed as an MSI of the lab's vector (its
    /// signals are consumed by KVM, so they are not counted as the other ioeventfds are).
    pub irqfd_port: Option<u16>,
    /// Guest RAM to fill before the first run.
    pub data: Vec<(u64, Vec<u8>)>,
    /// Returns to userspace each operation must cause, when that is known exactly.
    pub expect_user_exits: Option<u64>,
    /// This is the nop loop the others are measured against.
    pub baseline: bool,
    /// A guest exception means the backend refuses the instruction (hypercalls): the item is
    /// unsupported rather than failed.
    pub fault_is_unsupported: bool,
}

/// How many runs, how long each, how long a `KVM_RUN` may take.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub rounds: usize,
    /// A fixed loop count instead of calibration.
    pub ops: Option<u64>,
    pub target_run: Duration,
    pub probe_limit: Duration,
    pub run_limit: Duration,
    /// When the group's runs must be done by.
    pub until: Option<Instant>,
}

/// What the runs of one item gave.
#[derive(Debug, Clone)]
pub(super) struct Measured {
    pub name: String,
    pub mode: Mode,
    pub what: String,
    pub baseline: bool,
    pub status: Status,
    pub reason: Option<String>,
    /// Gross ns per operation, one per round (`None` where that round did not run it).
    pub samples: Vec<Option<f64>>,
    pub ops_per_run: u64,
    pub total_ops: u64,
    pub elapsed_ns: u128,
    /// Cumulative KVM statistics moved over all runs (VM-level ones prefixed `vm.`).
    pub stats: BTreeMap<String, i128>,
    pub accesses: BTreeMap<Access, u64>,
    pub userspace_exits: u64,
    pub eventfd_signals: Vec<(IoEventAddress, u64)>,
}

impl Measured {
    fn new(item: &Item, rounds: usize) -> Self {
        Self {
            name: item.name.clone(),
            mode: item.mode,
            what: item.what.clone(),
            baseline: item.baseline,
            status: Status::Ok,
            reason: None,
            samples: vec![None; rounds],
            ops_per_run: 0,
            total_ops: 0,
            elapsed_ns: 0,
            stats: BTreeMap::new(),
            accesses: BTreeMap::new(),
            userspace_exits: 0,
            eventfd_signals: item.ioeventfds.iter().map(|a| (*a, 0)).collect(),
        }
    }

    fn set(&mut self, status: Status, reason: String) {
        self.status = status;
        self.reason = Some(reason);
    }

    /// Each statistic that moved, per operation.
    pub(super) fn stats_per_op(&self) -> BTreeMap<String, f64> {
        let n = self.total_ops.max(1) as f64;
        self.stats
            .iter()
            .filter(|(_, d)| **d != 0)
            .map(|(k, d)| (k.clone(), *d as f64 / n))
            .collect()
    }

    /// Returns to userspace per operation.
    pub(super) fn userspace_exits_per_op(&self) -> Option<f64> {
        (self.total_ops > 0).then(|| self.userspace_exits as f64 / self.total_ops as f64)
    }
}

/// A live item: its VM, stats fds and devices.
struct Live {
    vm: MicroVm,
    vcpu_stats: Option<StatsFd>,
    vm_stats: Option<StatsFd>,
    devices: LabDevices,
    fds: usize,
    ops: u64,
    /// ns per operation, as the probe or the calibration measured it.
    ns_per_op: f64,
}

/// One run's results.
struct Run {
    stats: RunStats,
    moved: Vec<(String, i128)>,
    signals: Vec<u64>,
}

fn snap(fd: &Option<StatsFd>) -> Option<Snapshot> {
    fd.as_ref().and_then(|f| f.snapshot().ok())
}

fn cumulative_moved(
    fd: &StatsFd,
    before: &Snapshot,
    after: &Snapshot,
    prefix: &str,
) -> Vec<(String, i128)> {
    let layout = fd.layout();
    after
        .moved_since(before, layout)
        .into_iter()
        .filter(|(name, _)| {
            layout
                .index(name)
                .and_then(|i| layout.descriptors.get(i))
                .is_some_and(|d| d.kind == StatType::Cumulative)
        })
        .map(|(name, d)| (format!("{prefix}{name}"), d))
        .collect()
}

impl Live {
    fn run(&mut self, ops: u64, limit: Duration) -> Result<Run, Error> {
        self.vm.restart_with(|r| r.rdi = ops)?;
        let (c0, v0) = (snap(&self.vcpu_stats), snap(&self.vm_stats));
        let stats = self.vm.run_with(&mut self.devices, limit)?;
        let (c1, v1) = (snap(&self.vcpu_stats), snap(&self.vm_stats));
        let mut moved = Vec::new();
        if let (Some(fd), Some(a), Some(b)) = (&self.vcpu_stats, &c0, &c1) {
            moved.extend(cumulative_moved(fd, a, b, ""));
        }
        if let (Some(fd), Some(a), Some(b)) = (&self.vm_stats, &v0, &v1) {
            moved.extend(cumulative_moved(fd, a, b, "vm."));
        }
        let signals = (0..self.fds).map(|i| self.vm.ioeventfd_count(i)).collect();
        if !stats.done {
            return Err(Error::UnexpectedExit {
                exit: "the guest halted instead of finishing its loop".into(),
                rip: 0,
            });
        }
        Ok(Run {
            stats,
            moved,
            signals,
        })
    }
}

/// Why a probe error makes an item unsupported (a hang, a missing capability) rather than
/// failed.
fn classify(e: &Error) -> Status {
    match e {
        Error::Hung { .. } | Error::Unsupported(_) => Status::Unsupported,
        _ => Status::Failed,
    }
}

fn reason(e: &Error) -> String {
    match e {
        Error::Hung { .. } => format!(
            "{e}: the instruction never completes in the kernel on this backend; the watchdog \
             interrupted it"
        ),
        _ => e.to_string(),
    }
}

/// Makes the VM of `item`, probes it and calibrates its loop count.
fn prepare(item: &Item, plan: &Plan, m: &mut Measured) -> Option<Live> {
    if let Some(why) = &item.unsupported {
        m.set(Status::Unsupported, why.clone());
        return None;
    }
    let program = match &item.program {
        Ok(p) => p,
        Err((status, why)) => {
            m.set(*status, why.clone());
            return None;
        }
    };
    let build = || -> Result<Live, Error> {
        let mut vm = MicroVm::with_config(&item.config)?;
        for addr in &item.ioeventfds {
            vm.add_ioeventfd(*addr)?;
        }
        if let Some((gpa, size)) = item.coalesced {
            vm.add_coalesced_mmio(gpa, size)?;
        }
        if let Some(port) = item.irqfd_port {
            let i = vm.add_ioeventfd(IoEventAddress::Pio(u64::from(port)))?;
            let fd = vm
                .ioeventfd(i)
                .and_then(|fd| fd.try_clone().ok())
                .ok_or_else(|| Error::Unsupported("cloning the irqfd's eventfd".into()))?;
            super::io_path::msi_irqfd(&vm, 1, &fd)?;
        }
        vm.load(item.mode, program)?;
        for (gpa, bytes) in &item.data {
            vm.write_mem(*gpa, bytes)?;
        }
        Ok(Live {
            vcpu_stats: vm.vcpu_stats().ok(),
            vm_stats: vm.vm_stats().ok(),
            vm,
            devices: LabDevices::default(),
            fds: item.ioeventfds.len(),
            ops: PROBE_OPS,
            ns_per_op: 0.0,
        })
    };
    let mut live = match build() {
        Ok(l) => l,
        Err(e) => {
            m.set(classify(&e), reason(&e));
            return None;
        }
    };
    let probe = match live.run(PROBE_OPS, plan.probe_limit) {
        Ok(p) => p,
        Err(e @ Error::GuestException { .. }) if item.fault_is_unsupported => {
            m.set(
                Status::Unsupported,
                format!("{e}: this backend refuses the instruction here"),
            );
            return None;
        }
        Err(e) => {
            m.set(classify(&e), reason(&e));
            return None;
        }
    };
    if let Some(k) = item.expect_user_exits {
        let seen = probe.stats.userspace_exits();
        if seen != k * PROBE_OPS {
            m.set(
                Status::Failed,
                format!("expected {k} return(s) to userspace per operation, saw {seen} for {PROBE_OPS} operations"),
            );
            return None;
        }
    }
    for (addr, n) in item.ioeventfds.iter().zip(&probe.signals) {
        if *n != PROBE_OPS {
            m.set(
                Status::Failed,
                format!("ioeventfd at {addr:?} was signalled {n} times for {PROBE_OPS} writes"),
            );
            return None;
        }
    }
    live.ns_per_op = probe.stats.elapsed.as_nanos() as f64 / PROBE_OPS as f64;
    live.ops = match plan.ops {
        Some(n) => n.max(1),
        None => match calibrate(&mut live, plan) {
            Ok((n, per_op)) => {
                live.ns_per_op = per_op;
                n
            }
            Err(e) => {
                m.set(Status::Failed, reason(&e));
                return None;
            }
        },
    };
    m.ops_per_run = live.ops;
    Some(live)
}

/// The loop count whose run takes about `plan.target_run`, and the ns per operation seen.
fn calibrate(live: &mut Live, plan: &Plan) -> Result<(u64, f64), Error> {
    let target = plan.target_run.as_nanos() as f64;
    let mut ops = 256u64;
    let mut ns = 0.0;
    for _ in 0..6 {
        ns = live.run(ops, plan.run_limit)?.stats.elapsed.as_nanos() as f64;
        if ns >= target * 0.5 || ops >= MAX_OPS {
            break;
        }
        let factor = (target / ns.max(1.0)).clamp(2.0, 1000.0);
        ops = ((ops as f64 * factor) as u64).min(MAX_OPS);
    }
    let per_op = ns.max(1.0) / ops as f64;
    Ok((((target / per_op) as u64).clamp(MIN_OPS, MAX_OPS), per_op))
}

/// Makes every run of the group do fewer operations when its rounds would not fit before
/// `until`; says so in `notes`.
fn fit_budget(
    slots: &mut [(Measured, Option<Live>)],
    plan: &Plan,
    until: Instant,
    notes: &mut Vec<String>,
) {
    let left = until
        .saturating_duration_since(Instant::now())
        .as_secs_f64();
    let per_round: f64 = slots
        .iter()
        .filter_map(|(_, l)| l.as_ref())
        .map(|l| l.ops as f64 * l.ns_per_op / 1e9)
        .sum();
    let estimate = per_round * plan.rounds as f64;
    if !(estimate > left && per_round > 0.0) {
        return;
    }
    // A tenth kept for what the estimate misses (setup between runs, a noisy host).
    let factor = (0.9 * left / estimate).clamp(0.0, 1.0);
    let mut largest = (0, 0);
    for (m, live) in slots.iter_mut() {
        if let Some(l) = live {
            let capped = ((l.ops as f64 * factor) as u64).max(1);
            largest = largest.max((l.ops, capped));
            l.ops = capped;
            m.ops_per_run = capped;
        }
    }
    let mode = slots.first().map(|(m, _)| m.mode.as_str()).unwrap_or("?");
    let what = match plan.ops {
        Some(n) => format!("--ops {n} is capped at {} operations per run", largest.1),
        None => format!(
            "each run makes {:.2}% of its calibrated operations",
            factor * 100.0
        ),
    };
    notes.push(format!(
        "{mode}: {} rounds would take about {estimate:.0} s (estimated from the probe runs), \
         more than the {left:.0} s of the time budget left for them: {what}",
        plan.rounds
    ));
}

fn record(m: &mut Measured, round: usize, ops: u64, run: Run) {
    let ns = run.stats.elapsed.as_nanos();
    if let Some(s) = m.samples.get_mut(round) {
        *s = Some(ns as f64 / ops as f64);
    }
    m.total_ops += ops;
    m.elapsed_ns += ns;
    m.userspace_exits += run.stats.userspace_exits();
    for (k, d) in run.moved {
        *m.stats.entry(k).or_default() += d;
    }
    for (a, n) in run.stats.accesses {
        *m.accesses.entry(a).or_default() += n;
    }
    for ((_, total), n) in m.eventfd_signals.iter_mut().zip(run.signals) {
        *total += n;
    }
}

/// Measures `items` (one group, usually one mode, with its baseline among them): probe and
/// calibrate each, then `plan.rounds` interleaved rounds. `tick` is called once per item
/// prepared and once per run, with the item's name.
pub(super) fn measure(
    items: &[Item],
    plan: &Plan,
    tick: &mut dyn FnMut(&str),
    notes: &mut Vec<String>,
) -> Vec<Measured> {
    let mut slots: Vec<(Measured, Option<Live>)> = items
        .iter()
        .map(|item| {
            tick(&item.name);
            let mut m = Measured::new(item, plan.rounds);
            let live = prepare(item, plan, &mut m);
            (m, live)
        })
        .collect();
    if let Some(until) = plan.until {
        fit_budget(&mut slots, plan, until, notes);
    }
    let n = slots.len();
    for round in 0..plan.rounds {
        if round > 0 && plan.until.is_some_and(|u| Instant::now() >= u) {
            let mode = items.first().map(|i| i.mode.as_str()).unwrap_or("?");
            notes.push(format!(
                "{mode}: stopped after {round} of {} rounds: the time budget was spent",
                plan.rounds
            ));
            break;
        }
        for k in 0..n {
            let (m, live) = &mut slots[(k + round) % n];
            tick(&m.name);
            let Some(l) = live else { continue };
            let ops = l.ops;
            match l.run(ops, plan.run_limit) {
                Ok(run) => record(m, round, ops, run),
                Err(e) => {
                    m.set(
                        Status::Failed,
                        format!("run {} of {}: {}", round + 1, plan.rounds, reason(&e)),
                    );
                    *live = None;
                }
            }
        }
    }
    slots.into_iter().map(|(m, _)| m).collect()
}

/// Runs `item` again and again until `until`, after one probe run that checks it works here,
/// calling `started` once the loop runs; returns the operations made. For watching a trap with
/// other tools (`lab --replay`): nothing is measured.
pub(super) fn replay(
    item: &Item,
    until: Instant,
    started: &mut dyn FnMut(),
) -> Result<u64, String> {
    let plan = Plan {
        rounds: 1,
        ops: None,
        target_run: Duration::from_millis(20),
        probe_limit: Duration::from_millis(500),
        // A replay may be held (SIGSTOP) while tools start and stop around it, and the watchdog
        // counts wall time: a run of 20 ms is only called stuck after ten minutes.
        run_limit: Duration::from_secs(600),
        until: None,
    };
    let mut m = Measured::new(item, 1);
    let Some(mut live) = prepare(item, &plan, &mut m) else {
        return Err(m
            .reason
            .unwrap_or_else(|| "the micro-VM did not start".into()));
    };
    started();
    let mut done = 0;
    while Instant::now() < until {
        live.run(live.ops, plan.run_limit).map_err(|e| reason(&e))?;
        done += live.ops;
    }
    Ok(done)
}
