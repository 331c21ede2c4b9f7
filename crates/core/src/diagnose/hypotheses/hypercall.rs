//! `hypercall.*`: hypercalls (VMCALL/VMMCALL, kvm_stat's `hypercalls`) that dominate the cost.
//! A guest with paravirtual features makes them normally, but should not make most of its
//! exits of them.

use super::effect;
use super::{Ctx, Hypothesis, Threshold, rules};
use crate::diagnose::model::Severity;
use crate::diagnose::rules::RuleId;

/// The share of the exit handling hypercalls (or CPUID, `cpuid`) must take to be a cause.
pub(crate) const DOMINANT: f64 = 0.2;

pub(crate) const SHARE: &[Threshold] = &[Threshold {
    name: "share of exit handling",
    value: DOMINANT,
    unit: "share",
}];

rules! {
    /// The rules of `hypercall.*`.
    pub enum HypercallRule in Hypercall {
        Storm {
            id: "hypercall.storm",
            tag: "hypercall.storm",
            role: Problem,
            thresholds: SHARE,
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    dominating(
        ctx,
        HypercallRule::Storm.into(),
        &[
            "VMCALL",
            "VMMCALL",
            "vmmcall",
            "hypercalls",
            "kvm_hypercall",
            "kvm_hv_hypercall",
        ],
    );
}

/// `id` when the exits `names` lead the exit handling: calls a guest makes normally (with
/// paravirtual features, or at boot) are a cause only when they do.
pub(crate) fn dominating(ctx: &mut Ctx<'_>, id: RuleId, names: &[&str]) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<_> = ctx
        .free_rows(ex.named(names))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if !rows.is_empty() && ex.share_of(&rows).0 >= DOMINANT {
        ctx.push(
            Hypothesis::new(id, ev, ex, &rows)
                .max(Severity::Medium)
                .removes(effect::HALF),
        );
    }
}
