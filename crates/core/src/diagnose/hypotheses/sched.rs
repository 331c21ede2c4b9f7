//! Scheduling: vCPUs that wait for a host CPU, from the vCPU threads' scheduler samples a live
//! capture took (`evidence::sched`). A vCPU thread's **ready share** — runnable but not
//! running, over wall time — is what VMware reports as %RDY per vCPU and what Hyper-V's CPU
//! Wait Time Per Dispatch measures per dispatch. When vCPUs wait, the cause is one of two:
//!
//! - `sched.overcommit`: the vCPU threads alone outnumber the host's CPUs (more runnable vCPUs
//!   than CPUs in most intervals) — fewer vCPUs, pinning, CPU weights or moving VMs;
//! - `sched.vcpu-ready`: they do not, so other load on the host (its own threads, other
//!   processes, or its own hypervisor's steal when the host is itself a guest) takes the CPUs.
//!
//! Both are graded on the most waiting VM's mean ready share; a long wait per dispatch on
//! enough dispatches raises them (latency) whatever the share. What the fix should change is
//! predicted by the over-commit model (`crate::model::overcommit`) from the measured demand.
//! `sched.host-steal` is context: the host's own steal, reported apart.

use super::RuleId;
use super::effect;
use super::{Ctx, Grading, Hint, Hypothesis, Threshold, rules};
use crate::analysis::sched::{SchedSummary, VcpuShare, VmSched};
use crate::diagnose::model::{Cost, CpuBasis, Fact, Measure, ModelEffect, Scenario, Severity};
use crate::model::overcommit::{Inputs, Overcommit, predict};
use crate::profile::TableKind;

/// Ready share per vCPU for low, medium and high. VMware's guidance keeps %RDY under 5% per
/// vCPU in normal operation and names 10% per vCPU the level where VMs degrade; at 20% a busy
/// vCPU's work takes a quarter longer (1 / (1 − 0.2)), the size of the stretch the over-commit
/// studies measure.
pub const READY: [f64; 3] = [0.05, 0.10, 0.20];

/// Mean wait per dispatch that makes a finding low, then medium, whatever its ready share:
/// the 60 µs and 100 µs alarm levels a Hyper-V monitoring product sets on CPU Wait Time Per
/// Dispatch (a wake-up waiting that long delays every interrupt the vCPU handles).
pub(crate) const DISPATCH_WAIT_NS: [f64; 2] = [60_000.0, 100_000.0];

/// A vCPU's mean wait per dispatch counts from this many dispatches on.
pub(crate) const MIN_DISPATCHES: u64 = 1_000;

/// Fewer state readings, or a shorter window, and the finding is low at most: one burst would
/// decide it.
pub(crate) const MIN_READINGS: u64 = 10;
pub(crate) const MIN_WINDOW_NS: u64 = 1_000_000_000;

/// Runnable vCPU threads per host CPU above which the vCPUs alone over-commit the host, and
/// the share of intervals that must be above it (sustained, not a burst).
pub(crate) const OVER_ONE: f64 = 1.0;
pub(crate) const SUSTAINED: f64 = 0.5;

/// Other host load, in CPUs, worth naming beside the vCPUs.
pub(crate) const OTHER_LOAD_CPUS: f64 = 0.5;

/// vCPU rows a finding lists (the most waiting first).
const MAX_ROWS: usize = 16;

const SCHED_THRESHOLDS: &[Threshold] = &[
    Threshold {
        name: "ready share per vCPU, low",
        value: READY[0],
        unit: "share",
    },
    Threshold {
        name: "ready share per vCPU, medium",
        value: READY[1],
        unit: "share",
    },
    Threshold {
        name: "ready share per vCPU, high",
        value: READY[2],
        unit: "share",
    },
    Threshold {
        name: "wait per dispatch, low",
        value: DISPATCH_WAIT_NS[0],
        unit: "ns",
    },
    Threshold {
        name: "wait per dispatch, medium",
        value: DISPATCH_WAIT_NS[1],
        unit: "ns",
    },
    Threshold {
        name: "runnable vCPUs per host CPU (over-commit)",
        value: OVER_ONE,
        unit: "per CPU",
    },
    Threshold {
        name: "intervals above it (sustained)",
        value: SUSTAINED,
        unit: "share",
    },
];

rules! {
    /// The rules of `sched.*`.
    pub enum SchedRule in Sched {
        Overcommit {
            id: "sched.overcommit",
            tag: "sched.overcommit",
            role: Problem,
            thresholds: SCHED_THRESHOLDS,
        },
        VcpuReady {
            id: "sched.vcpu-ready",
            tag: "sched.overcommit",
            role: Problem,
            thresholds: SCHED_THRESHOLDS,
        },
        HostSteal {
            id: "sched.host-steal",
            tag: "sched.overcommit",
            role: Context,
            thresholds: &[
                Threshold {
                    name: "host steal share, info",
                    value: READY[0],
                    unit: "share",
                },
                Threshold {
                    name: "host steal share, low",
                    value: READY[1],
                    unit: "share",
                },
            ],
        },
    }
}

/// `sched.overcommit` or `sched.vcpu-ready`, and `sched.host-steal`.
pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(s) = ctx.ev.sched.as_ref() else {
        return;
    };
    // On a CPU that software emulates every wait is the emulator's time: the wait per dispatch
    // says nothing of hardware's latency there (the ready share, a ratio, still counts).
    let timed = !ctx.ev.host.cpu_emulated();
    if let Some(h) = waiting(s, timed) {
        ctx.push(h);
    }
    if let Some(h) = host_steal(s) {
        ctx.push(h);
    }
}

/// Whether the vCPU threads alone outnumber the host's CPUs, sustained.
pub(crate) fn overcommitted(s: &SchedSummary) -> bool {
    s.runnable_per_cpu.is_some_and(|r| r > OVER_ONE)
        && s.intervals_over_one.is_some_and(|x| x >= SUSTAINED)
}

/// The longest mean wait per dispatch of a vCPU with enough dispatches.
fn dispatch_wait(s: &SchedSummary) -> Option<f64> {
    s.vms
        .iter()
        .flat_map(|vm| &vm.vcpus)
        .filter(|v| v.sampled.dispatches >= MIN_DISPATCHES)
        .filter_map(|v| v.wait_per_dispatch_ns)
        .reduce(f64::max)
}

fn waiting(s: &SchedSummary, timed: bool) -> Option<Hypothesis> {
    let worst = s.vms.first()?;
    let dispatch = dispatch_wait(s).filter(|_| timed);
    let floor = match dispatch {
        Some(w) if w >= DISPATCH_WAIT_NS[1] => Severity::Medium,
        Some(w) if w >= DISPATCH_WAIT_NS[0] => Severity::Low,
        _ => Severity::Info,
    };
    if worst.ready_share < READY[0] && floor == Severity::Info {
        return None;
    }
    let over = overcommitted(s);
    let id = if over {
        RuleId::Sched(SchedRule::Overcommit)
    } else {
        RuleId::Sched(SchedRule::VcpuReady)
    };
    let enough = s.state_samples >= MIN_READINGS && s.window_ns >= MIN_WINDOW_NS;
    let other = s.host.other_load_cpus.unwrap_or(0.0);
    let steal = s.host.steal_share.unwrap_or(0.0);
    let cost = Cost {
        cpu_share: s.ready_share,
        cpu_basis: s.ready_share.map(|_| CpuBasis::WindowVcpus),
        ..Cost::default()
    };
    let mut h = Hypothesis::with_cost(id, cost, rows(s))
        .grading(Grading::Measured {
            measure: Measure::ReadyShare,
            value: worst.ready_share,
            thresholds: READY,
            max: if enough {
                Severity::High
            } else {
                Severity::Low
            },
            why: if enough {
                "the most waiting VM's ready share per vCPU"
            } else {
                "the most waiting VM's ready share per vCPU; the window is too short (under a \
                 second or ten readings) to weigh"
            },
        })
        .floor_if(true, floor)
        .hint_if(other >= OTHER_LOAD_CPUS, Hint::OtherLoad)
        .hint_if(steal >= READY[0], Hint::HostSteal)
        .hint_if(floor > Severity::Info, Hint::DispatchWait);
    if over && (other >= OTHER_LOAD_CPUS || steal >= READY[0]) {
        h = h.rival(SchedRule::VcpuReady, crate::diagnose::Confidence::Possible);
    }
    let background = other + steal * f64::from(s.online_cpus);
    h.model = model_effect(
        s.online_cpus,
        s.vms.iter().map(|vm| vm.vcpus.len() as u32).sum(),
        s.demand.unwrap_or(0.0),
        background,
        s.ready_share.unwrap_or(0.0),
        over,
    );
    h.removes = h.model.as_ref().map_or(0.0, removes);
    Some(h)
}

/// The part of the measured ready time the change removes, by the model.
fn removes(m: &ModelEffect) -> f64 {
    if m.ready_measured > 0.0 {
        ((m.ready_measured - m.ready_after) / m.ready_measured).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The vCPU rows, the most waiting first; the first says what the columns are.
fn rows(s: &SchedSummary) -> Vec<Fact> {
    let mut all: Vec<(&VmSched, &VcpuShare)> = s
        .vms
        .iter()
        .flat_map(|vm| vm.vcpus.iter().map(move |v| (vm, v)))
        .collect();
    all.sort_by(|a, b| b.1.ready_share.total_cmp(&a.1.ready_share));
    let mut out: Vec<Fact> = all
        .into_iter()
        .take(MAX_ROWS)
        .map(|(vm, v)| {
            let who = vm.name.clone().unwrap_or_else(|| format!("pid {}", vm.pid));
            let t = &v.sampled;
            let key = match t.vcpu {
                Some(n) => format!("{who} vCPU {n}"),
                None => format!("{who} {}", t.comm),
            };
            Fact {
                key,
                table: TableKind::Sched,
                access: None,
                name: Some(format!("tid {}", t.tid)),
                count: t.dispatches,
                count_share: None,
                time_ns: Some(t.wait_ns),
                time_share: Some(v.ready_share),
                mean_ns: v.wait_per_dispatch_ns,
                per_second: None,
                per_io: None,
                explains: true,
                note: None,
                id: None,
            }
        })
        .collect();
    if let Some(first) = out.first_mut() {
        first.note =
            Some("(dispatches · waiting runnable · ready share · wait per dispatch)".into());
    }
    out
}

/// `sched.host-steal`: the host itself lost CPU time to its own hypervisor.
fn host_steal(s: &SchedSummary) -> Option<Hypothesis> {
    let steal = s.host.steal_share.filter(|&x| x >= READY[0])?;
    let fact = Fact {
        time_share: Some(steal),
        ..Fact::said(
            "proc-stat",
            "steal",
            "this host's own CPU time given to others by the hypervisor it runs on",
        )
    };
    let sev = if steal >= READY[1] {
        Severity::Low
    } else {
        Severity::Info
    };
    Some(
        Hypothesis::with_cost(SchedRule::HostSteal, Cost::default(), vec![fact])
            .grading(Grading::Context(sev))
            .removes(effect::NOTHING),
    )
}

fn prediction(o: &Overcommit) -> (&'static str, f64, f64) {
    let name = if o.never_waits {
        "never-waits"
    } else if o.saturated {
        "fair-share"
    } else {
        "erlang-c"
    };
    (name, o.erlang_c.ready_pct / 100.0, o.erlang_c.stretch)
}

/// The over-commit model for `vcpus` vCPUs, each wanting `demand` of a CPU, on `pcpus` CPUs
/// with `background` CPUs of other load, beside the `measured` ready share; and after the fix:
/// when `over` (the vCPUs over-commit the host), the most vCPUs that keep ready below the low
/// threshold (one when none does); else the other load gone. `None` when there is nothing to
/// model. Shared with any family that reads ready time (esxtop %RDY, Hyper-V counters).
pub fn model_effect(
    pcpus: u32,
    vcpus: u32,
    demand: f64,
    background: f64,
    measured: f64,
    over: bool,
) -> Option<ModelEffect> {
    let usable = demand > 0.0 && background.is_finite();
    if pcpus == 0 || vcpus == 0 || !usable {
        return None;
    }
    let inputs = |vcpus, background: f64| Inputs {
        pcpus,
        vcpus,
        util: demand.clamp(0.01, 1.0),
        background: background.max(0.0),
    };
    let now = predict(inputs(vcpus, background)).ok()?;
    let (model, ready_predicted, stretch_predicted) = prediction(&now);
    let (scenario, after) = if over {
        let mut chosen = None;
        for n in (1..vcpus).rev() {
            let p = predict(inputs(n, background)).ok()?;
            if prediction(&p).1 < READY[0] {
                chosen = Some((n, p));
                break;
            }
        }
        let (n, p) = match chosen {
            Some(c) => c,
            None => (1, predict(inputs(1, background)).ok()?),
        };
        (Scenario::FewerVcpus { vcpus: n }, p)
    } else {
        (Scenario::NoOtherLoad, predict(inputs(vcpus, 0.0)).ok()?)
    };
    let (_, ready_after, stretch_after) = prediction(&after);
    Some(ModelEffect {
        model,
        pcpus,
        vcpus,
        demand: demand.clamp(0.01, 1.0),
        background_cpus: background.max(0.0),
        ready_predicted,
        ready_measured: measured,
        scenario,
        ready_after,
        stretch_predicted,
        stretch_after,
    })
}
