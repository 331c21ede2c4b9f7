//! `hypercall.*` and `cpuid.*`: guest calls into the hypervisor that dominate the cost —
//! hypercalls (VMCALL/VMMCALL, kvm_stat's `hypercalls`), which a guest with paravirtual features
//! makes normally but should not make most of its exits of, and CPUID, which every call exits
//! for and which a guest should not run in a hot loop.

use super::{Ctx, Hypothesis, Rule, Threshold};
use crate::diagnose::model::Severity;

/// The share of the exit handling hypercalls or CPUID must take to be a cause.
pub const DOMINANT: f64 = 0.2;

const SHARE: &[Threshold] = &[Threshold {
    name: "share of exit handling",
    value: DOMINANT,
    unit: "share",
}];

pub const RULES: &[Rule] = &[
    Rule {
        id: "hypercall.storm",
        tag: "hypercall.storm",
        context: false,
        thresholds: SHARE,
    },
    Rule {
        id: "cpuid.storm",
        tag: "cpuid.storm",
        context: false,
        thresholds: SHARE,
    },
];

pub fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    for (id, names, max) in [
        (
            "hypercall.storm",
            &[
                "VMCALL",
                "VMMCALL",
                "vmmcall",
                "hypercalls",
                "kvm_hypercall",
                "kvm_hv_hypercall",
            ][..],
            Severity::Medium,
        ),
        ("cpuid.storm", &["CPUID", "cpuid"][..], Severity::Medium),
    ] {
        let rows: Vec<_> = ctx
            .free_rows(ex.named(names))
            .into_iter()
            .filter(|r| r.count > 0)
            .collect();
        // Hypercalls are normal with paravirtual features and CPUID runs at boot: only when
        // they lead the exit handling are they a cause.
        if !rows.is_empty() && ex.share_of(&rows).0 >= DOMINANT {
            ctx.push(Hypothesis::new(id, ev, ex, &rows).max(max).removes(0.5));
        }
    }
}
