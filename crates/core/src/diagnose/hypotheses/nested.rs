//! `nested.*`: the guest is itself a hypervisor (L1) — its VMX instructions (VMREAD, VMWRITE,
//! VMRESUME, VMLAUNCH, VMPTRLD, INVEPT, INVVPID, …) or SVM instructions (vmrun, vmload, vmsave,
//! stgi, clgi, invlpga, skinit) exit to L0, as do `kvm_nested_*` events; and the nested-SVM
//! SMM bug (RSM exits followed by #GP). An L1 hypervisor's exits are not an L2-style problem:
//! their fixes are enlightened VMCS for Hyper-V, shadow VMCS, and a host kernel with mature
//! nested support.

use super::effect;
use super::{Ctx, Grading, Hint, Hypothesis, Threshold, cost, rules};
use crate::config::Version;
use crate::diagnose::model::{Confidence, Fact, Severity};

/// VMX instructions an L1 hypervisor executes.
pub(crate) const VMX: [&str; 13] = [
    "VMREAD", "VMWRITE", "VMRESUME", "VMLAUNCH", "VMPTRLD", "VMPTRST", "VMCLEAR", "VMXON",
    "VMXOFF", "INVEPT", "INVVPID", "VMFUNC", "VMOFF",
];
/// SVM instructions an L1 hypervisor executes (vmmcall is a plain hypercall).
pub(crate) const SVM: [&str; 7] = [
    "vmrun", "vmload", "vmsave", "stgi", "clgi", "invlpga", "skinit",
];
/// Events and counters of nested operation.
pub(crate) const EVENTS: [&str; 7] = [
    "kvm_nested_vmexit",
    "kvm_nested_vmexit_inject",
    "kvm_nested_vmenter",
    "kvm_nested_vmrun",
    "kvm_nested_intr_vmexit",
    "nested_run",
    "guest_mode",
];

/// Nested SVM became migratable and far more robust with the 5.8 rework (nested state
/// save/restore, KVM commit cc440cdad5b7); older hosts are a likely cause of trouble.
pub(crate) const NESTED_SVM_KERNEL: Version = Version(5, 8);

/// An L1 exit is followed by an L1 → L2 entry: about two exits' worth of work each.
pub(crate) const L1_EXIT_NS: u64 = 3_000;

rules! {
    /// The rules of `nested.*`.
    pub enum NestedRule in Nested {
        L1Hypervisor {
            id: "nested.l1-hypervisor",
            tag: "nested.l1-hypervisor",
            role: Problem,
            thresholds: &[Threshold {
                name: "host kernel for mature nested SVM",
                value: 5.8,
                unit: "version",
            }],
        },
        RsmGp {
            id: "nested.rsm-gp",
            tag: "nested.kvm-bug",
            role: Problem,
            thresholds: &[],
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    rsm(ctx);
    l1(ctx);
}

/// `nested.l1-hypervisor`.
fn l1(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let events: Vec<Fact> = EVENTS
        .iter()
        .filter_map(|n| {
            let count = ev.event(n).filter(|&c| c > 0)?;
            let mut f = Fact::said("events", *n, "nested operation");
            f.count = count;
            f.per_second = ev.counters.get(n).and_then(|c| c.rate);
            Some(f)
        })
        .collect();
    let rows: Vec<_> = ctx
        .exits()
        .map(|ex| {
            ctx.free_rows(ex.named(&VMX).into_iter().chain(ex.named(&SVM)).collect())
                .into_iter()
                .filter(|r| r.count > 0)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let amd = ev.host.amd() || rows.iter().any(|r| r.is(&SVM));
    // Exits reflected from L2 (a nested vmexit beside at least half of them): the vCPU runs an L2
    // guest, and nested virtualization is the frame of every exit the input shows.
    let reflected = ev.event("kvm_nested_vmexit").unwrap_or(0);
    let l2 = ctx.exits().filter(|ex| {
        !ex.from_counters && reflected > 0 && reflected.saturating_mul(2) >= ex.totals.count
    });
    let h = match ctx.exits() {
        Some(ex) if !rows.is_empty() => {
            Hypothesis::new(NestedRule::L1Hypervisor, ev, ex, &rows).support(events)
        }
        _ if let Some(ex) = l2 => {
            let all = ctx.free_rows(ex.rows.iter().filter(|r| r.count > 0).collect());
            Hypothesis::new(NestedRule::L1Hypervisor, ev, ex, &all)
                .support(events)
                .confidence(Confidence::Likely)
                .hint(Hint::Reflected)
        }
        _ if !events.is_empty() => {
            let n = events.iter().map(|f| f.count).max().unwrap_or(0);
            let rate = events.iter().find_map(|f| f.per_second);
            Hypothesis::with_cost(
                NestedRule::L1Hypervisor,
                cost::of_rate(ev, n, rate, L1_EXIT_NS),
                events,
            )
            .confidence(Confidence::Likely)
            .hint(Hint::Aggregate)
        }
        _ => return,
    };
    // The exits of a nested setup are a fact about it whatever they cost: low at least.
    let h = h
        .max(Severity::High)
        .floor_if(true, Severity::Low)
        .hint_if(amd, Hint::Amd)
        .hint_if(ev.windows() || !ev.hv_signs().is_empty(), Hint::HypervL1)
        .hint_if(
            amd && ev.host.kernel().is_some_and(|k| k < NESTED_SVM_KERNEL),
            Hint::OldKernel,
        )
        .removes(effect::HALF);
    ctx.push(h);
}

/// Nested SVM: `rsm` exits followed by #GP intercepts.
fn rsm(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rsm = ex.named(&["rsm", "RSM"]);
    let gp = ex.named(&["GP excp", "GP_EXCP"]);
    if rsm.iter().all(|r| r.count == 0) || gp.iter().all(|r| r.count == 0) {
        return;
    }
    let rows: Vec<_> = rsm.iter().chain(&gp).copied().collect();
    let h = Hypothesis::new(NestedRule::RsmGp, ev, ex, &rows)
        .grading(Grading::Fixed(Severity::High))
        .confidence(Confidence::Possible)
        .hint(Hint::Amd)
        .removes(effect::REMOVED);
    ctx.push(h);
}
