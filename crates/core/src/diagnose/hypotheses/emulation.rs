//! `emulation.*`: KVM emulating guest instructions — and failing to. An emulated instruction
//! that faults (`kvm_emulate_insn` with an exception injected) or that KVM cannot emulate at all
//! (KVM_EXIT_INTERNAL_ERROR, `insn_emulation_fail`) breaks the guest whatever its cost; heavy
//! emulation (kvm_stat's `insn_emulation`, `kvm_emulate_insn` at a rate) is a cost.

use super::effect;
use super::{Ctx, Grading, Hint, Hypothesis, cost, rules};
use crate::diagnose::model::{Confidence, Fact, Severity};

/// Emulating one instruction (decode, execute, write back) costs a few microseconds.
pub(crate) const EMULATE_NS: u64 = 3_000;

rules! {
    /// The rules of `emulation.*`.
    pub enum EmulationRule in Emulation {
        Failed {
            id: "emulation.failed",
            tag: "emulation.insn",
            role: Problem,
            thresholds: &[],
        },
        Insn {
            id: "emulation.insn",
            tag: "emulation.insn",
            role: Problem,
            thresholds: &[],
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let fact = |table: &str, key: &str, n: u64, note: &str| {
        let mut f = Fact::said(table, key, note);
        f.count = n;
        f.explains = true;
        f
    };
    let internal = ev
        .userspace
        .get("KVM_EXIT_INTERNAL_ERROR")
        .copied()
        .unwrap_or(0);
    let fails = ev.counters.total(&["insn_emulation_fail"]).unwrap_or(0);
    let emulated = ev.event("kvm_emulate_insn").unwrap_or(0);
    let injected = ev.event("kvm_inj_exception").unwrap_or(0);
    if internal > 0 || fails > 0 || (emulated > 0 && injected > 0) {
        let mut facts = Vec::new();
        if internal > 0 {
            facts.push(fact(
                "userspace_exit",
                "KVM_EXIT_INTERNAL_ERROR",
                internal,
                "KVM gave up: the VM stops",
            ));
        }
        if fails > 0 {
            facts.push(fact(
                "kvm_stat",
                "insn_emulation_fail",
                fails,
                "instructions KVM could not emulate",
            ));
        }
        if emulated > 0 {
            facts.push(fact(
                "events",
                "kvm_emulate_insn",
                emulated,
                "instructions KVM emulated",
            ));
        }
        if injected > 0 {
            facts.push(fact(
                "events",
                "kvm_inj_exception",
                injected,
                "exceptions KVM injected into the guest",
            ));
        }
        let stops = internal > 0 || fails > 0;
        let h = Hypothesis::with_cost(EmulationRule::Failed, Default::default(), facts)
            .grading(Grading::Fixed(if stops {
                Severity::Critical
            } else {
                Severity::High
            }))
            .confidence(if stops {
                Confidence::Confirmed
            } else {
                Confidence::Likely
            })
            .hint_if(!stops, Hint::Aggregate)
            .hint_if(ev.event("kvm_nested_vmexit").is_some(), Hint::HypervL1)
            .removes(effect::REMOVED);
        return ctx.push(h);
    }
    let counted = ev.counters.get("insn_emulation").filter(|c| c.total > 0);
    let (n, rate) = match counted {
        Some(c) => (c.total, c.rate),
        None if emulated > 0 => (
            emulated,
            ev.rate
                .window_ns
                .map(|w| emulated as f64 / (w as f64 / 1e9)),
        ),
        None => return,
    };
    let facts = vec![fact(
        "events",
        "insn_emulation",
        n,
        "instructions KVM emulated",
    )];
    let h = Hypothesis::with_cost(
        EmulationRule::Insn,
        cost::of_rate(ev, n, rate, EMULATE_NS),
        facts,
    )
    // On an emulating backend (PVM) every ring-0 guest instruction is emulated: the counter
    // measures the backend, not something the guest or its configuration could change.
    .max(if ev.host.emulated() {
        Severity::Info
    } else {
        Severity::Medium
    })
    .hint_if(ev.host.emulated(), Hint::PvmBackend)
    .removes(effect::HALF);
    ctx.push(h);
}
