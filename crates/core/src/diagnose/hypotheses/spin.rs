//! `spin.*`: PAUSE-loop exits — a vCPU that exits only for host interrupts and pause loops runs
//! guest code without doing anything privileged: compute-bound, or spinning in a loop (a hung
//! guest); the exits cannot tell which, so it is context with the check that can. Pause exits
//! as a cost mean lock-holder preemption on an overcommitted host.

use super::effect;
use super::{Ctx, Grading, Hint, Hypothesis, Threshold, rules};
use crate::diagnose::evidence::sat_sum;
use crate::diagnose::model::{Confidence, Severity};

const PAUSE: [&str; 2] = ["PAUSE_INSTRUCTION", "pause"];
const INTERRUPT: [&str; 2] = ["EXTERNAL_INTERRUPT", "interrupt"];

/// Fewer exits than this say too little about what a vCPU does.
pub(crate) const HANG_MIN_EXITS: u64 = 50;
/// Pause exits must be at least this share of the exits to say the vCPU may spin: a handful
/// among a host's interrupts (10 in 100,000) is a lock that was briefly contended.
pub(crate) const HANG_PAUSE_SHARE: f64 = 0.01;

rules! {
    /// The rules of `spin.*`.
    pub enum SpinRule in Spin {
        HungVcpu {
            id: "spin.hung-vcpu",
            tag: "spin.pause-loop",
            role: Context,
            thresholds: &[
                Threshold {
                    name: "exits to judge",
                    value: HANG_MIN_EXITS as f64,
                    unit: "exits",
                },
                Threshold {
                    name: "pause share of the exits",
                    value: HANG_PAUSE_SHARE,
                    unit: "share",
                },
            ],
        },
        Pause {
            id: "spin.pause",
            tag: "spin.pause-loop",
            role: Problem,
            thresholds: &[],
        },
        PvLockWait {
            id: "spin.pv-lock-wait",
            tag: "spin.pause-loop",
            role: Problem,
            thresholds: &[Threshold {
                name: "kicks per halt, at least",
                value: KICKS_PER_WAIT,
                unit: "×",
            }],
        },
    }
}

/// A paravirtual spinlock waiter spins (PAUSE), then halts; the unlocker kicks it with a
/// hypercall: with at least one kick for every three halts, the halts are lock waits.
pub(crate) const KICKS_PER_WAIT: f64 = 0.3;

/// The hang signature (runs early so its rows stay its own).
pub(crate) fn hang(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits().filter(|p| !p.from_counters) else {
        return;
    };
    let only = ex
        .rows
        .iter()
        .filter(|r| r.count > 0)
        .all(|r| r.is(&PAUSE) || r.is(&INTERRUPT));
    let pause = ex.named(&PAUSE);
    let paused = sat_sum(pause.iter().map(|r| r.count));
    let share = crate::diagnose::evidence::ratio(paused, ex.totals.count);
    if !only || ex.totals.count < HANG_MIN_EXITS || paused == 0 || share < HANG_PAUSE_SHARE {
        return;
    }
    let rows: Vec<_> = pause.iter().chain(&ex.named(&INTERRUPT)).copied().collect();
    // A compute-bound guest shows the same mix as a hung one: context, with the check.
    let h = Hypothesis::new(SpinRule::HungVcpu, ev, ex, &rows)
        .grading(Grading::Context(Severity::Info))
        .confidence(Confidence::Possible)
        .hint_if(ev.host.amd(), Hint::Amd)
        .removes(effect::REMOVED);
    ctx.push(h);
}

/// Pause-loop exits as a cost: lock-holder preemption, or lock waits of paravirtual spinlocks.
pub(crate) fn check(ctx: &mut Ctx<'_>) {
    pv_wait(ctx);
    pause(ctx);
}

/// `spin.pv-lock-wait`: PAUSE, halts and hypercall kicks together on a guest that is not
/// Windows — Linux's paravirtual spinlocks (pv_wait halts, the unlocker's KVM_HC_KICK_CPU
/// wakes it): lock contention, which halt polling does not cure.
fn pv_wait(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    if ev.windows() {
        return;
    }
    let pause = ctx.free_rows(ex.named(&PAUSE));
    let kicks = ctx.free_rows(ex.named(&["VMCALL", "VMMCALL", "vmmcall", "hypercalls"]));
    let halts = ctx.free_rows(ex.named(&["HLT", "hlt", "halt_exits"]));
    let count = |rows: &[&crate::diagnose::evidence::Item]| sat_sum(rows.iter().map(|r| r.count));
    let (p, k, h) = (count(&pause), count(&kicks), count(&halts));
    if p == 0 || h == 0 || (k as f64) < KICKS_PER_WAIT * h as f64 {
        return;
    }
    let rows: Vec<_> = pause.iter().chain(&kicks).copied().collect();
    // Contention costs the guest its waiting, not the exits: a sign of it is worth a look.
    let mut hyp = Hypothesis::new(SpinRule::PvLockWait, ev, ex, &rows)
        .max(Severity::High)
        .floor_if(true, Severity::Low)
        .confidence(Confidence::Likely)
        .hint(Hint::Aggregate)
        .removes(effect::HALF);
    // The halts are the waits: explained here, at no cost of their own (halted time is idle).
    hyp.evidence.extend(
        halts
            .iter()
            .map(|r| ex.fact(r).note("the waiters halting until kicked")),
    );
    ctx.push(hyp);
}

fn pause(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<_> = ctx
        .free_rows(ex.named(&PAUSE))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if rows.is_empty() {
        return;
    }
    let h = Hypothesis::new(SpinRule::Pause, ev, ex, &rows)
        .max(Severity::Medium)
        .removes(effect::LARGELY);
    ctx.push(h);
}
