//! `irq.external`: host interrupts arriving while a vCPU runs (EXTERNAL_INTERRUPT, SVM
//! `interrupt`, kvm_stat's `irq_exits`) — the normal floor of an interrupt-heavy guest, a
//! problem only when host device interrupts and housekeeping land on the vCPUs' cores. Context:
//! never above low, never the main problem.

use super::effect;
use super::{Ctx, Grading, Hint, Hypothesis, Threshold, rules};
use crate::diagnose::evidence::sat_sum;
use crate::diagnose::model::Severity;

/// From half of the exit handling up, host interrupts are worth a look (low); below, context
/// at info. A healthy interrupt-heavy guest spends about half its exit time here.
pub(crate) const DOMINANT: f64 = 0.5;

/// Without a rate: host interrupts at least this share of the exits of a guest that is not
/// mostly idle — a vCPU kicked out mostly by the host — are worth a look.
pub(crate) const MOSTLY: f64 = 0.75;

/// Host interrupts per second per vCPU: a host tick is at most 1,000/s per CPU; above 2,000/s
/// device interrupts or IPIs land on the vCPUs' CPUs — a problem of the host's placement, not
/// the floor (low from 2,000/s, medium from 5,000/s, high from 20,000/s).
pub(crate) const HOST_IRQ_RATE: [f64; 3] = [2_000.0, 5_000.0, 20_000.0];

rules! {
    /// The rules of `irq.*`.
    pub enum IrqRule in Irq {
        DeliveryExits {
            id: "irq.delivery-exits",
            tag: "apic.apicv-inhibited",
            role: Problem,
            thresholds: super::io_path::DELIVERY_EXITS_THRESHOLDS,
        },
        External {
            id: "irq.external",
            tag: "irq.external-interrupt",
            role: Context,
            thresholds: &[Threshold {
                name: "share of exit handling to be worth a look",
                value: DOMINANT,
                unit: "share",
            }],
        },
        HostInterrupts {
            id: "irq.host-interrupts",
            tag: "irq.external-interrupt",
            role: Problem,
            thresholds: &[
                Threshold {
                    name: "share of a busy guest's exits, without a rate",
                    value: MOSTLY,
                    unit: "share",
                },
                Threshold {
                    name: "host interrupts per vCPU, low",
                    value: HOST_IRQ_RATE[0],
                    unit: "/s per vCPU",
                },
                Threshold {
                    name: "host interrupts per vCPU, medium",
                    value: HOST_IRQ_RATE[1],
                    unit: "/s per vCPU",
                },
                Threshold {
                    name: "host interrupts per vCPU, high",
                    value: HOST_IRQ_RATE[2],
                    unit: "/s per vCPU",
                },
            ],
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<_> = ctx
        .free_rows(ex.named(&["EXTERNAL_INTERRUPT", "interrupt", "irq_exits"]))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if rows.is_empty() {
        return;
    }
    let h = Hypothesis::new(IrqRule::External, ev, ex, &rows);
    // Above a host tick per vCPU, the interrupts are the host's devices or IPIs on the vCPUs'
    // CPUs: a problem with a fix, not the floor. Without a rate, a busy guest whose exits are
    // nearly all host interrupts says the same, less surely.
    let t = &ex.totals;
    let busy = t.idle_count.saturating_mul(2) < t.count;
    let count = sat_sum(rows.iter().map(|r| r.count));
    let mostly = h.cost.per_second.is_none()
        && h.cost.per_vcpu_second.is_none()
        && busy
        && crate::diagnose::evidence::ratio(count, t.overhead_count) >= MOSTLY;
    if mostly
        || h.cost
            .per_vcpu_second
            .is_some_and(|r| r >= HOST_IRQ_RATE[0])
    {
        let h = Hypothesis {
            id: IrqRule::HostInterrupts.into(),
            ..h
        }
        .grading(Grading::Rate {
            thresholds: HOST_IRQ_RATE,
            per_vcpu: true,
            max: Severity::High,
            without_rate: Severity::Low,
        })
        .floor_if(mostly, Severity::Low)
        .hint_if(mostly, Hint::Aggregate)
        .removes(effect::LARGELY);
        return ctx.push(h);
    }
    let share = ex.share_of(&rows).0;
    if share < 0.03 {
        return;
    }
    let severity = if share >= DOMINANT {
        Severity::Low
    } else {
        Severity::Info
    };
    ctx.push(
        Hypothesis::new(IrqRule::External, ev, ex, &rows)
            .grading(Grading::Context(severity))
            .removes(effect::PART),
    );
}
