//! Hypotheses: each rule family reads the evidence set and proposes causes — a hypothesis has
//! the rows that speak for it (those it explains make up its cost), what speaks against it, a
//! confidence, its cost from the input's own numbers, how its severity is to be graded, the
//! competing causes of the same exits, and hints for the words (which variant of the cause
//! applies). Rules hold logic only: their prose is in `words`, their severity in `rank`.
//!
//! A family is the prefix of its rules' ids: `timer.rs` declares the `timer.*` rules
//! ([`rules!`]) and checks for them, `timer_<aspect>.rs` holds more of its checks. Families run
//! in a fixed order ([`STEPS`]); a row is explained by one hypothesis only, so later families
//! skip rows earlier ones claimed. docs/development.md has the recipes for a rule and a family.

pub(crate) mod apic;
pub(crate) mod apic_inhibit;
pub(crate) mod apic_ipi;
pub(crate) mod apic_synic;
pub(crate) mod arch;
pub(crate) mod cost;
pub(crate) mod cpuid;
pub(crate) mod effect;
pub(crate) mod emulation;
pub(crate) mod halt;
pub(crate) mod hostlog;
pub(crate) mod hv;
pub(crate) mod hypercall;
pub(crate) mod idle;
pub(crate) mod io;
pub(crate) mod io_path;
pub(crate) mod irq;
pub(crate) mod mmio;
pub(crate) mod mmu;
pub(crate) mod msr;
pub(crate) mod nested;
pub(crate) mod sched;
pub(crate) mod spin;
pub(crate) mod timer;
pub(crate) mod timer_tick;
pub(crate) mod unknown;

use std::collections::BTreeSet;

use super::evidence::{EvidenceSet, Item, Part};
use super::model::{Confidence, Cost, Fact, Measure, ModelEffect, Severity};
use super::rules::Family;
pub(crate) use super::rules::rules;
pub(crate) use super::rules::{RuleId, Threshold};
use crate::profile::{Key, TableKind};
pub(crate) use apic::ApicRule;
pub(crate) use arch::ArchRule;
pub(crate) use cpuid::CpuidRule;
pub(crate) use emulation::EmulationRule;
pub(crate) use halt::HaltRule;
pub(crate) use hostlog::HostlogRule;
pub(crate) use hv::HvRule;
pub(crate) use hypercall::HypercallRule;
pub(crate) use idle::IdleRule;
pub(crate) use io::IoRule;
pub(crate) use irq::IrqRule;
pub(crate) use mmio::MmioRule;
pub(crate) use mmu::MmuRule;
pub(crate) use msr::MsrRule;
pub(crate) use nested::NestedRule;
pub(crate) use sched::SchedRule;
pub(crate) use spin::SpinRule;
pub(crate) use timer::TimerRule;
pub(crate) use unknown::UnknownRule;

/// How a hypothesis's severity is read (see `rank`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Grading {
    /// From its absolute cost (share of vCPU time), or its share of exit handling when no
    /// absolute cost can be known; never above `max`.
    Cost { max: Severity },
    /// From its rate as well (whichever is worse): events per second — per vCPU when
    /// `per_vcpu`, else for the whole VM — against `[low, medium, high]`; without any rate,
    /// at most `without_rate`.
    Rate {
        thresholds: [f64; 3],
        per_vcpu: bool,
        max: Severity,
        without_rate: Severity,
    },
    /// A signature whose severity does not depend on its size.
    Fixed(Severity),
    /// Context (idle, host interrupts, the normal floor): at most this, never the main problem.
    Context(Severity),
    /// A measured value that is not an exit cost (ready %) against `[low, medium, high]`; never
    /// above `max`. The rule judges its own sample size (through `max` and `why`).
    Measured {
        measure: Measure,
        value: f64,
        thresholds: [f64; 3],
        max: Severity,
        why: &'static str,
    },
    /// Performance counters read against their own thresholds (PAL's, published alarm levels):
    /// the severity the reading found.
    Counters(Severity),
}

/// A condition a rule established that the words need (which variant of a cause applies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hint {
    /// The reading rests on exit reasons or counters only (no ports, addresses or MSRs).
    Aggregate,
    /// The configuration has hv-time on.
    HvTimeOn,
    /// The configuration has hv-stimer on.
    StimerOn,
    /// The configuration turns the HPET off.
    HpetOff,
    /// The configuration already has hv-avic.
    AvicOn,
    /// The host's clocksource is not tsc.
    ClocksourceNotTsc,
    /// The host kernel predates a fix the cause needs.
    OldKernel,
    /// The QEMU version predates the flag the fix needs.
    OldQemu,
    /// The host has APIC virtualization off.
    ApicvOff,
    /// No Hyper-V enlightenment shows in the exits.
    NoEnlightenment,
    /// The hypervisor CPUID bit is hidden (configuration).
    HypervisorHidden,
    /// Halts pair with the exits (about one per exit or more).
    HaltsPaired,
    /// Halt polling already absorbs many wake-ups.
    PollingWorks,
    /// The exits are AMD's (SVM names).
    Amd,
    /// The guest is SEV (encrypted state).
    Sev,
    /// The exits' mean time says they go to userspace.
    Userspace,
    /// The nested guest runs Hyper-V (eVMCS applies).
    HypervL1,
    /// The unnamed exits look like RISC-V's.
    RiscV,
    /// The unnamed rows are printed as UNKNOWN by the tool.
    Unnamed,
    /// Most guest aborts were stage-2 faults on memory, not emulated MMIO (arm64, RISC-V).
    StageTwoFaults,
    /// The configuration keeps the in-kernel PIT in reinjection mode (AMD AVIC inhibit).
    PitReinject,
    /// The EOIs that exit are EOI-induced exits (level-triggered interrupts under APICv).
    EoiInduced,
    /// The rows are Hyper-V synthetic MSRs.
    HypervMsr,
    /// The guest was halted most of the time (its exits come between halts).
    Idle,
    /// The backend emulates guest ring-0 code (PVM): emulation is its normal mode.
    PvmBackend,
    /// The host's other load (not the vCPUs) takes a CPU's worth or more.
    OtherLoad,
    /// The host is itself a guest and loses CPU time to steal.
    HostSteal,
    /// The vCPUs wait long before each dispatch (latency), whatever their ready share.
    DispatchWait,
    /// The exits are an L2 guest's, reflected through L1 (nested vmexits beside them).
    Reflected,
    /// The halts did not block: the vCPU was runnable again at once.
    NoBlock,
    /// The local APIC is emulated in the VMM: EOIs and halts return to it (no in-kernel
    /// irqchip, interrupts injected with KVM_INTERRUPT).
    UserspaceIrqchip,
    /// Half an IO or more pays a queue notification: nothing batches or suppresses them.
    NotifyEveryIo,
}

/// A proposed cause.
#[derive(Debug, Clone)]
pub(crate) struct Hypothesis {
    pub id: RuleId,
    pub confidence: Confidence,
    /// The rows for it; those with `explains` make up the cost.
    pub evidence: Vec<Fact>,
    pub against: Vec<Fact>,
    pub cost: Cost,
    pub grading: Grading,
    /// Causes of the same exits it competes with.
    pub rivals: Vec<(RuleId, Confidence)>,
    pub hints: Vec<Hint>,
    /// The part of the cost the fix removes (0–1).
    pub removes: f64,
    /// The least severity the evidence warrants whatever its cost (definite, fixable evidence:
    /// APIC virtualization seen inactive).
    pub floor: Severity,
    /// The over-commit model's prediction behind `removes`, when one was made.
    pub model: Option<ModelEffect>,
}

impl Hypothesis {
    /// A confirmed hypothesis explaining `rows` of `part`, graded by cost up to `max`.
    pub(crate) fn new(
        id: impl Into<RuleId>,
        ev: &EvidenceSet,
        part: &Part,
        rows: &[&Item],
    ) -> Hypothesis {
        let facts = rows.iter().map(|r| part.fact(r)).collect();
        Hypothesis::with_cost(id, cost::of(ev, part, rows), facts)
    }

    /// A hypothesis whose cost is given (counters, not exit rows).
    pub(crate) fn with_cost(id: impl Into<RuleId>, cost: Cost, evidence: Vec<Fact>) -> Hypothesis {
        Hypothesis {
            id: id.into(),
            confidence: Confidence::Confirmed,
            evidence,
            against: Vec::new(),
            cost,
            grading: Grading::Cost {
                max: Severity::High,
            },
            rivals: Vec::new(),
            hints: Vec::new(),
            removes: effect::REMOVED,
            floor: Severity::Info,
            model: None,
        }
    }

    pub(crate) fn confidence(mut self, c: Confidence) -> Self {
        self.confidence = c;
        self
    }

    pub(crate) fn grading(mut self, g: Grading) -> Self {
        self.grading = g;
        self
    }

    /// Graded by cost, at most `max`.
    pub(crate) fn max(self, max: Severity) -> Self {
        self.grading(Grading::Cost { max })
    }

    pub(crate) fn support(mut self, facts: impl IntoIterator<Item = Fact>) -> Self {
        self.evidence.extend(facts.into_iter().map(Fact::context));
        self
    }

    pub(crate) fn rival(mut self, id: impl Into<RuleId>, c: Confidence) -> Self {
        self.rivals.push((id.into(), c));
        self
    }

    pub(crate) fn hint(mut self, h: Hint) -> Self {
        if !self.hints.contains(&h) {
            self.hints.push(h);
        }
        self
    }

    /// Adds `h` when `cond`.
    pub(crate) fn hint_if(self, cond: bool, h: Hint) -> Self {
        if cond { self.hint(h) } else { self }
    }

    /// Sets the severity floor when `cond`.
    pub(crate) fn floor_if(mut self, cond: bool, floor: Severity) -> Self {
        if cond {
            self.floor = self.floor.max(floor);
        }
        self
    }

    pub(crate) fn removes(mut self, share: f64) -> Self {
        self.removes = share;
        self
    }

    pub(crate) fn has(&self, h: Hint) -> bool {
        self.hints.contains(&h)
    }
}

/// What every rule reads: the evidence, and which rows earlier rules explained.
pub(crate) struct Ctx<'a> {
    pub ev: &'a EvidenceSet,
    claimed: BTreeSet<(TableKind, Key)>,
    /// What earlier families found.
    pub found: Vec<Hypothesis>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(ev: &'a EvidenceSet) -> Ctx<'a> {
        Ctx {
            ev,
            claimed: BTreeSet::new(),
            found: Vec::new(),
        }
    }

    /// Whether an earlier hypothesis already explained `row`.
    pub(crate) fn free(&self, row: &Item) -> bool {
        !self.claimed.contains(&(row.table.clone(), row.key.clone()))
    }

    /// The rows no earlier hypothesis explained.
    pub(crate) fn free_rows<'p>(&self, rows: Vec<&'p Item>) -> Vec<&'p Item> {
        rows.into_iter().filter(|r| self.free(r)).collect()
    }

    /// Whether a hypothesis `id` was found.
    pub(crate) fn has(&self, id: impl Into<RuleId>) -> bool {
        let id = id.into();
        self.found.iter().any(|h| h.id == id)
    }

    /// Records `h`, claiming the rows it explains.
    pub(crate) fn push(&mut self, h: Hypothesis) {
        for f in h.evidence.iter().filter(|f| f.explains) {
            if let Some(id) = &f.id {
                self.claimed.insert(id.clone());
            }
        }
        self.found.push(h);
    }

    /// The exit part, when the input has one.
    pub(crate) fn exits(&self) -> Option<&'a Part> {
        self.ev.exits.as_ref()
    }
}

/// A family's check: reads `ctx.ev`, pushes what it finds.
pub(crate) type Check = fn(&mut Ctx<'_>);

/// The families' checks in the order they run: each later one leaves alone the rows earlier
/// ones explained, so a specific reading (a port, an address, an MSR) claims its rows before
/// the generic ones (emulated port IO, NPFs, halts) see them. Families first run in the order
/// of [`Family::ALL`] (a test checks it); some have a second, later step.
pub(crate) const STEPS: &[(Family, Check)] = &[
    (Family::Unknown, unknown::check),
    (Family::Arch, arch::check),
    (Family::Emulation, emulation::check),
    (Family::Nested, nested::check),
    (Family::Mmu, mmu::storm),
    (Family::Spin, spin::hang),
    (Family::Timer, timer::check),
    (Family::Apic, apic_synic::check),
    (Family::Io, io_path::check),
    (Family::Apic, apic::check),
    (Family::Timer, timer_tick::check),
    (Family::Apic, apic_ipi::check),
    (Family::Msr, msr::check),
    (Family::Io, io::check),
    (Family::Mmio, mmio::check),
    (Family::Mmu, mmu::check),
    (Family::Spin, spin::check),
    (Family::Halt, halt::check),
    (Family::Hypercall, hypercall::check),
    (Family::Cpuid, cpuid::check),
    (Family::Sched, sched::check),
    (Family::Hv, hv::check),
    (Family::Irq, irq::check),
    (Family::Idle, idle::check),
    (Family::Hostlog, hostlog::check),
];

/// Every family's checks, in [`STEPS`] order.
pub(crate) fn run(ev: &EvidenceSet) -> Vec<Hypothesis> {
    let mut ctx = Ctx::new(ev);
    // On arm64 and RISC-V the x86 families would read their exits under x86's names and causes.
    let x86 = ev.isa().is_none_or(|isa| isa.is_x86());
    for (family, step) in STEPS {
        if x86 || !family.x86_only() {
            step(&mut ctx);
        }
    }
    ctx.found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_first_run_in_catalogue_order() {
        let mut first: Vec<Family> = Vec::new();
        for (f, _) in STEPS {
            if !first.contains(f) {
                first.push(*f);
            }
        }
        assert_eq!(first, Family::ALL, "STEPS and Family::ALL disagree");
    }
}
