//! `apic.ipi-storm`: cross-vCPU interrupts — writes to the x2APIC ICR (0x830) or the Hyper-V
//! ICR (0x40000071, outside the SynIC case), IPIs counted by `kvm_apic_ipi`, or (from exit
//! reasons) APIC_WRITE exits, which under APICv are ICR writes or timer programming. Every IPI
//! costs the sender an exit and, unless it is posted, the receiver a kick or a wake-up.

use super::effect;
use super::{ApicRule, TimerRule};
use super::{Ctx, Grading, Hint, Hypothesis, Threshold, cost};
use crate::diagnose::model::{Confidence, Severity};
use crate::profile::Access;

/// IPIs per second per vCPU: from 2,000/s worth a look, 10,000/s medium, 25,000/s high (the
/// IPI-heavy cloud-gaming load of the KVM Forum 2021 talk sent 35,000/s for the whole VM).
pub(crate) const IPI_RATE: [f64; 3] = [2_000.0, 10_000.0, 25_000.0];

/// An IPI costs the sender's ICR exit (~1.5 µs) and the receiver's kick or wake-up (~3 µs).
pub(crate) const IPI_NS: u64 = 4_500;

pub(crate) const IPI_STORM_THRESHOLDS: &[Threshold] = &[
    Threshold {
        name: "IPIs per vCPU, low",
        value: IPI_RATE[0],
        unit: "/s per vCPU",
    },
    Threshold {
        name: "IPIs per vCPU, medium",
        value: IPI_RATE[1],
        unit: "/s per vCPU",
    },
    Threshold {
        name: "IPIs per vCPU, high",
        value: IPI_RATE[2],
        unit: "/s per vCPU",
    },
];

/// IPIs are graded by cost and rate per vCPU; a count alone (no rate) says nothing of a storm.
pub(crate) fn ipi_grading(without_rate: Severity) -> Grading {
    Grading::Rate {
        thresholds: IPI_RATE,
        per_vcpu: true,
        max: Severity::High,
        without_rate,
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    if let Some(m) = &ev.msrs {
        let rows = ctx.free_rows(m.coded(|r, i| {
            matches!(i, 0x830 | 0x4000_0071) && r.key.access() != Some(Access::Read)
        }));
        if !rows.is_empty() {
            let h = Hypothesis::new(ApicRule::IpiStorm, ev, m, &rows)
                .grading(ipi_grading(Severity::Medium))
                .removes(effect::LARGELY);
            return ctx.push(h);
        }
    }
    if let Some(n) = ev.event("kvm_apic_ipi").filter(|&n| n > 0)
        && ev.msrs.is_none()
    {
        let facts: Vec<_> = ["kvm_apic_ipi", "kvm_apic_accept_irq", "kvm_vcpu_wakeup"]
            .iter()
            .filter_map(|name| {
                let count = ev.event(name)?;
                let mut f = crate::diagnose::model::Fact::said("events", *name, "");
                f.note = None;
                f.count = count;
                f.per_second = ev.event_rate(name);
                f.explains = *name == "kvm_apic_ipi";
                Some(f)
            })
            .collect();
        let h = Hypothesis::with_cost(
            ApicRule::IpiStorm,
            cost::of_rate(ev, n, ev.event_rate("kvm_apic_ipi"), IPI_NS),
            facts,
        )
        .grading(ipi_grading(Severity::Low))
        .hint(Hint::Aggregate)
        .removes(effect::LARGELY);
        return ctx.push(h);
    }
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<_> = ctx
        .free_rows(ex.named(&["APIC_WRITE"]))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if rows.is_empty() {
        return;
    }
    let h = Hypothesis::new(ApicRule::IpiStorm, ev, ex, &rows)
        .confidence(Confidence::Possible)
        .grading(ipi_grading(Severity::Info))
        .hint(Hint::Aggregate)
        .rival(TimerRule::TscDeadlineRearm, Confidence::Possible)
        .removes(effect::LARGELY);
    ctx.push(h);
}
