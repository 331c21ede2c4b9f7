//! Timer ticks: the guest re-arming its timer through IA32_TSC_DEADLINE (0x6e0) or the x2APIC
//! timer count (0x838), one exit per re-arm (from MSR rows), and timer-interrupt storms seen
//! from kvm_stat's tracepoint counters alone — one MSR write, one injected interrupt and one
//! EOI per tick, at tens of thousands per second. (MSR_WRITE exits without MSR rows are read,
//! with their competitors, in `msr`.)

use super::effect;
use super::{ApicRule, TimerRule};
use super::{Ctx, Grading, Hint, Hypothesis, Threshold, cost};
use crate::diagnose::evidence::sat_sum;
use crate::diagnose::model::{Confidence, Severity};
use crate::profile::Access;

/// Timer re-arms (or ticks) per second per vCPU: a tickless idle guest re-arms tens to hundreds
/// of times a second; a periodic 1 kHz tick (`nohz=off`, HZ=1000) is 1,000/s — worth a look;
/// 4,000/s is a timer-heavy guest (medium); 10,000/s is a storm (high). Without a vCPU count
/// the whole input's rate stands for one vCPU (an upper bound).
pub(crate) const REARM_RATE: [f64; 3] = [1_000.0, 4_000.0, 10_000.0];

/// A tick costs about two exits: the re-arm (MSR write, ~1.6 µs) and the timer interrupt or
/// preemption-timer exit that delivers it (~3 µs): the KVM Forum 2021 table means.
pub(crate) const TICK_NS: u64 = 4_600;

/// The tick counters must agree within this factor to be one tick each.
pub(crate) const TICK_MATCH: f64 = 2.0;

pub(crate) const THRESHOLDS: &[Threshold] = &[
    Threshold {
        name: "re-arms per vCPU, low",
        value: REARM_RATE[0],
        unit: "/s per vCPU",
    },
    Threshold {
        name: "re-arms per vCPU, medium",
        value: REARM_RATE[1],
        unit: "/s per vCPU",
    },
    Threshold {
        name: "re-arms per vCPU, high",
        value: REARM_RATE[2],
        unit: "/s per vCPU",
    },
    Threshold {
        name: "tick counters agree within",
        value: TICK_MATCH,
        unit: "×",
    },
];

/// How re-arms and ticks are graded: by cost and by their rate per vCPU; without a rate, at
/// most medium (a count alone cannot tell a storm from a long capture).
pub(crate) fn rearm_grading() -> Grading {
    Grading::Rate {
        thresholds: REARM_RATE,
        per_vcpu: true,
        max: Severity::High,
        without_rate: Severity::Medium,
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    deadline(ctx);
    storm(ctx);
}

/// `timer.tsc-deadline-rearm` from MSR rows.
fn deadline(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(m) = &ev.msrs else {
        return;
    };
    let rows = ctx.free_rows(
        m.coded(|r, i| matches!(i, 0x6e0 | 0x838) && r.key.access() != Some(Access::Read)),
    );
    if rows.is_empty() {
        return;
    }
    let halts = ctx
        .exits()
        .map_or(0, |ex| ex.count_of(&["HLT", "hlt", "halt_exits"]));
    let writes = sat_sum(rows.iter().map(|r| r.count));
    let h = Hypothesis::new(TimerRule::TscDeadlineRearm, ev, m, &rows)
        .grading(rearm_grading())
        .hint_if(
            halts > 0 && halts.saturating_mul(3) >= writes,
            Hint::HaltsPaired,
        )
        .removes(effect::MOSTLY);
    ctx.push(h);
}

/// `timer.tick-storm` from kvm_stat tracepoint counters: MSR writes, injected interrupts and
/// (without APICv) EOIs at one per tick.
fn storm(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let c = &ev.counters;
    let (Some(msr), Some(inj)) = (
        c.rate(&["kvm_msr"]),
        c.rate(&["kvm_inj_virq", "kvm_apic_accept_irq"]),
    ) else {
        return;
    };
    let ticks = msr.min(inj);
    if ticks <= 0.0 || msr.max(inj) > ticks * TICK_MATCH || ctx.has(TimerRule::TscDeadlineRearm) {
        return;
    }
    let names = [
        "kvm_msr",
        "kvm_inj_virq",
        "kvm_apic_accept_irq",
        "kvm_eoi",
        "kvm_hv_timer_state",
        "kvm_apic",
        "kvm_exit",
    ];
    let facts: Vec<_> = names.iter().filter_map(|n| c.fact(n)).collect();
    let total = c.total(&["kvm_msr"]).unwrap_or(0);
    let h = Hypothesis::with_cost(
        TimerRule::TickStorm,
        cost::of_rate(ev, total, Some(ticks), TICK_NS),
        facts,
    )
    .confidence(Confidence::Likely)
    .grading(rearm_grading())
    .hint(Hint::Aggregate)
    .hint_if(
        c.get("kvm_eoi")
            .is_some_and(|e| e.rate.unwrap_or(0.0) * TICK_MATCH >= ticks),
        Hint::ApicvOff,
    )
    .rival(ApicRule::IpiStorm, Confidence::Possible)
    .removes(effect::MOSTLY);
    ctx.push(h);
}
