//! `idle.*`: the vCPU halted because it had nothing to run. That is not overhead: it is
//! reported apart, as context, so that the exits between halts are weighed on their own.

use super::effect;
use super::{Ctx, Grading, Hypothesis, Threshold, rules};
use crate::diagnose::evidence::ratio;
use crate::diagnose::model::Severity;

/// Idle is worth a word when it is most of the handled time (timed), or, by count, when at
/// least a third of exits are halts (untimed).
pub(crate) const IDLE_TIME: f64 = 0.5;
pub(crate) const IDLE_COUNT: f64 = 0.3;

rules! {
    /// The rules of `idle.*`.
    pub enum IdleRule in Idle {
        Hlt {
            id: "idle.hlt",
            tag: "idle",
            role: Context,
            thresholds: &[
                Threshold {
                    name: "idle share of handled time",
                    value: IDLE_TIME,
                    unit: "share",
                },
                Threshold {
                    name: "idle share of exits (untimed)",
                    value: IDLE_COUNT,
                    unit: "share",
                },
            ],
        },
    }
}

/// `idle.hlt`: the guest waiting, reported apart.
pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<_> = ex.rows.iter().filter(|r| r.idle && r.count > 0).collect();
    if rows.is_empty() {
        return;
    }
    let t = &ex.totals;
    let value = match (t.idle_time_ns, t.time_ns) {
        (Some(idle), Some(all)) if ex.timed => ratio(idle, all) >= IDLE_TIME,
        _ => ratio(t.idle_count, t.count) >= IDLE_COUNT,
    };
    if !value {
        return;
    }
    let mut h = Hypothesis::new(IdleRule::Hlt, ev, ex, &rows)
        .grading(Grading::Context(Severity::Info))
        .removes(effect::NOTHING);
    h.cost.cpu_share = None;
    h.cost.cpu_basis = None;
    ctx.push(h);
}
