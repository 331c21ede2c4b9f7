//! `irq.external`: host interrupts arriving while a vCPU runs (EXTERNAL_INTERRUPT, SVM
//! `interrupt`, kvm_stat's `irq_exits`) — the normal floor of an interrupt-heavy guest, a
//! problem only when host device interrupts and housekeeping land on the vCPUs' cores. Context:
//! never above low, never the main problem.

use super::{Ctx, Grading, Hypothesis, Rule, Threshold};
use crate::diagnose::model::Severity;

/// From half of the exit handling up, host interrupts are worth a look (low); below, context
/// at info. A healthy interrupt-heavy guest spends about half its exit time here.
pub const DOMINANT: f64 = 0.5;

pub const RULES: &[Rule] = &[Rule {
    id: "irq.external",
    tag: "irq.external-interrupt",
    context: true,
    thresholds: &[Threshold {
        name: "share of exit handling to be worth a look",
        value: DOMINANT,
        unit: "share",
    }],
}];

pub fn check(ctx: &mut Ctx<'_>) {
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
        Hypothesis::new("irq.external", ev, ex, &rows)
            .grading(Grading::Context(severity))
            .removes(0.3),
    );
}
