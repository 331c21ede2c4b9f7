//! `hostlog.*`: what the host's kernel log says about the guests (see
//! `evidence::hostlog`): split-lock and bus-lock traps taken by VM threads, MSRs KVM does not
//! emulate, and vCPU threads the kernel reports stuck (soft lockups, hung tasks, RCU stalls).
//! Each finding joins the exit profile of the same run where it speaks to the same cause
//! (BUS_LOCK exits, the MSR rows of the exits).

use std::collections::BTreeSet;

use super::{Ctx, Grading, HvRule, Hypothesis, RuleId, Threshold, effect, rules};
use crate::diagnose::evidence::hostlog::HostLog;
use crate::diagnose::model::{Confidence, Cost, Fact, Severity};
use crate::diagnose::rules::Family;
use crate::profile::{Key, Row};

/// The sleep `split_lock_warn` takes before letting a trapped thread go on, while
/// `kernel.split_lock_mitigate` is 1 (the default): `msleep_interruptible(10)` in
/// arch/x86/kernel/cpu/bus_lock.c ("misery factor #1").
pub(crate) const MISERY_SLEEP_S: f64 = 0.010;

/// Bus-lock exits per second per vCPU at which the traps behind them, at
/// [`MISERY_SLEEP_S`] each, would take 1%, 10% and 50% of the vCPU's time.
pub(crate) const LOCK_RATE: [f64; 3] = [
    0.01 / MISERY_SLEEP_S,
    0.1 / MISERY_SLEEP_S,
    0.5 / MISERY_SLEEP_S,
];

/// VM threads that trapped, from which the split locks are the guest's common code rather
/// than a one-off: more than one (the kernel reports each thread once, so each is another
/// vCPU, or another VM).
pub(crate) const SEVERAL_THREADS: usize = 2;

/// Lines of one MSR from one vCPU beyond which the guest is not probing it once at boot
/// (a guest's driver probes each MSR once per vCPU) but touching it again and again.
pub(crate) const MSR_REPEATS: u64 = 3;

/// Seconds a vCPU thread's stall must last to be high: the kernel's own default for calling
/// a task hung (`kernel.hung_task_timeout_secs` = 120).
pub(crate) const LONG_STALL_S: u64 = 120;

const LOCK_THRESHOLDS: &[Threshold] = &[
    Threshold {
        name: "bus-lock exits per vCPU per second (1% of a vCPU at 10 ms a trap), low",
        value: LOCK_RATE[0],
        unit: "/s per vCPU",
    },
    Threshold {
        name: "bus-lock exits per vCPU per second, medium",
        value: LOCK_RATE[1],
        unit: "/s per vCPU",
    },
    Threshold {
        name: "bus-lock exits per vCPU per second, high",
        value: LOCK_RATE[2],
        unit: "/s per vCPU",
    },
    Threshold {
        name: "VM threads that trapped, without exits (medium from)",
        value: SEVERAL_THREADS as f64,
        unit: "threads",
    },
];

const MSR_THRESHOLDS: &[Threshold] = &[Threshold {
    name: "lines of one MSR from one vCPU (low from, else info)",
    value: MSR_REPEATS as f64 + 1.0,
    unit: "lines",
}];

const STALL_THRESHOLDS: &[Threshold] = &[
    Threshold {
        name: "seconds a vCPU thread was stuck (high from)",
        value: LONG_STALL_S as f64,
        unit: "s",
    },
    Threshold {
        name: "vCPU threads reported stuck (high from)",
        value: SEVERAL_THREADS as f64,
        unit: "threads",
    },
];

rules! {
    /// The rules of `hostlog.*`.
    pub enum HostlogRule in Hostlog {
        SplitLock {
            id: "hostlog.split-lock",
            tag: "hostlog.split-lock",
            role: Problem,
            thresholds: LOCK_THRESHOLDS,
        },
        UnhandledMsr {
            id: "hostlog.unhandled-msr",
            tag: "hostlog.unhandled-msr",
            role: Context,
            thresholds: MSR_THRESHOLDS,
        },
        VcpuStall {
            id: "hostlog.vcpu-stall",
            tag: "hostlog.vcpu-stall",
            role: Problem,
            thresholds: STALL_THRESHOLDS,
        },
    }
}

/// Exit names of a bus-lock VM exit (VMX 74, SVM 0xa5) and of SVM's #AC intercept (0x51),
/// every tool's spelling: the same guest instructions as the log's traps.
const BUS_LOCK_EXITS: &[&str] = &[
    "BUS_LOCK",
    "BUSLOCK",
    "buslock",
    "bus_lock",
    "EXIT_BUS_LOCK",
    "AC excp",
    "EXIT_EXCP_AC",
];

/// VMX's exit for every intercepted exception: a split-lock #AC (vector 17) exits as one of
/// them, so these rows may hold the traps without being only them.
const EXCEPTION_EXITS: &[&str] = &["EXCEPTION_NMI"];

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(log) = &ctx.ev.host_log else {
        return;
    };
    split_lock(ctx, log);
    unhandled_msr(ctx, log);
    stall(ctx, log);
}

/// Who a row's thread is, in words.
fn who(r: &Row) -> String {
    match r.vcpu {
        Some(v) => format!("vCPU {v}'s thread"),
        None => "a VMM thread (its name does not say which vCPU)".into(),
    }
}

fn fact(r: &Row, note: String) -> Fact {
    let mut f = Fact::said("kernel_log", r.key.key_text(), note);
    f.count = r.count;
    f
}

fn split_lock(ctx: &mut Ctx<'_>, log: &HostLog) {
    let rows = log.events(&["split_lock", "bus_lock"]);
    if rows.is_empty() {
        return;
    }
    let ev = ctx.ev;
    let facts: Vec<Fact> = rows
        .iter()
        .map(|r| {
            let what = r.key.key_text().replace('_', "-");
            fact(r, format!("{} took a {what} trap", who(r)))
        })
        .collect();
    let others: Vec<Fact> = log
        .events(&["split_lock_other", "bus_lock_other"])
        .into_iter()
        .map(|r| fact(r, "a process that is not a VM's trapped too".into()))
        .collect();
    let h = match ctx.exits() {
        Some(ex) => {
            let bus: Vec<_> = ex
                .named(BUS_LOCK_EXITS)
                .into_iter()
                .filter(|r| r.count > 0)
                .collect();
            if bus.is_empty() {
                let maybe: Vec<Fact> = ex
                    .named(EXCEPTION_EXITS)
                    .into_iter()
                    .filter(|r| r.count > 0)
                    .map(|r| {
                        let mut f = ex.fact(r).context();
                        f.note = Some(
                            "a split-lock #AC exits as an exception (vector 17): these may hold \
                             the traps, with every other intercepted exception"
                                .into(),
                        );
                        f
                    })
                    .collect();
                from_log(&rows, facts).support(maybe)
            } else {
                Hypothesis::new(HostlogRule::SplitLock, ev, ex, &bus)
                    .grading(Grading::Rate {
                        thresholds: LOCK_RATE,
                        per_vcpu: true,
                        max: Severity::High,
                        without_rate: Severity::Medium,
                    })
                    .support(facts)
            }
        }
        None => from_log(&rows, facts),
    };
    ctx.push(h.support(others).removes(effect::REMOVED));
}

/// `hostlog.split-lock` from the log's threads alone (the kernel names each once; a row is a
/// thread): low for one thread, medium when several VM threads trapped.
fn from_log(rows: &[&Row], facts: Vec<Fact>) -> Hypothesis {
    let severity = if rows.len() >= SEVERAL_THREADS {
        Severity::Medium
    } else {
        Severity::Low
    };
    Hypothesis::with_cost(HostlogRule::SplitLock, Cost::default(), facts)
        .grading(Grading::Fixed(severity))
}

fn unhandled_msr(ctx: &mut Ctx<'_>, log: &HostLog) {
    let rows = log.msrs();
    if rows.is_empty() {
        return;
    }
    let repeated = rows.iter().any(|r| r.count > MSR_REPEATS);
    let facts: Vec<Fact> = rows
        .iter()
        .map(|r| {
            let vm = r.pid.map_or(String::new(), |p| format!("VM pid {p}, "));
            let v = r.vcpu.map_or("a vCPU".to_string(), |v| format!("vCPU {v}"));
            let op = match r.key.access() {
                Some(crate::profile::Access::Write) => "writes",
                _ => "reads",
            };
            fact(r, format!("{vm}{v} {op} it: {} line(s)", r.count))
        })
        .collect();
    let indices: BTreeSet<u64> = rows.iter().filter_map(|r| r.key.code()).collect();
    // The same MSRs in the exit profile: how often the guest really touches them.
    let exits: Vec<Fact> = ctx
        .ev
        .msrs
        .as_ref()
        .map(|m| {
            m.rows
                .iter()
                .filter(|r| matches!(r.key, Key::Msr { index, .. } if indices.contains(&index)))
                .map(|r| m.fact(r).context())
                .collect()
        })
        .unwrap_or_default();
    let severity = if repeated {
        Severity::Low
    } else {
        Severity::Info
    };
    let h = Hypothesis::with_cost(HostlogRule::UnhandledMsr, Cost::default(), facts)
        .grading(Grading::Context(severity))
        .confidence(Confidence::Confirmed)
        .removes(effect::NOTHING)
        .support(exits);
    ctx.push(h);
}

fn stall(ctx: &mut Ctx<'_>, log: &HostLog) {
    let rows = log.events(&["soft_lockup", "hung_task", "rcu_stall"]);
    if rows.is_empty() {
        return;
    }
    let facts: Vec<Fact> = rows
        .iter()
        .map(|r| {
            let secs = r.time.max_ns.map_or(String::new(), |ns| {
                format!(", stuck up to {} s", ns / 1_000_000_000)
            });
            let what = match r.key.key_text().as_str() {
                "soft_lockup" => "ran in the host kernel without yielding (soft lockup)",
                "hung_task" => "was blocked uninterruptibly (hung task)",
                _ => "held up an RCU grace period (RCU stall)",
            };
            fact(r, format!("{} {what}{secs}", who(r)))
        })
        .collect();
    let others: Vec<Fact> = log
        .events(&["soft_lockup_other", "hung_task_other", "rcu_stall_other"])
        .into_iter()
        .map(|r| fact(r, "a stall of a host thread that is not a VM's".into()))
        .collect();
    // The same input's scheduling findings (run before this family) say whether the host was
    // over-committed: then that is the likelier cause of the stall than a KVM bug.
    let crowded: Vec<Fact> = ctx
        .found
        .iter()
        .filter(|h| {
            matches!(h.id.family(), Family::Sched) || h.id == RuleId::Hv(HvRule::Overcommit)
        })
        .map(|h| {
            Fact::said(
                "sched",
                h.id.as_str(),
                "the same run shows vCPUs waiting for a host CPU: over-commit is the likelier \
                 cause of the stall",
            )
        })
        .collect();
    let longest = rows.iter().filter_map(|r| r.time.max_ns).max().unwrap_or(0);
    let high = longest >= LONG_STALL_S * 1_000_000_000 || rows.len() >= SEVERAL_THREADS;
    let h = Hypothesis::with_cost(HostlogRule::VcpuStall, Cost::default(), facts)
        .grading(Grading::Fixed(if high {
            Severity::High
        } else {
            Severity::Medium
        }))
        .removes(effect::NOTHING)
        .support(others)
        .support(crowded);
    ctx.push(h);
}
