//! The Windows interrupt traps of the Hyper-V enlightenments: SynIC's AutoEOI inhibiting APICv
//! for the whole VM (`apic.apicv-inhibited-synic`), and Windows steered to the synthetic
//! EOI/ICR/TPR MSRs by hv-vapic without hv-avic, so its EOIs exit although APICv is on
//! (`apic.hv-apic-msrs`). Both show as MSR writes; interrupt-window/TPR exits or host kicks on
//! the receiving side say APICv is off (the first), their absence says it is on (the second).
//! On VMX, an APIC write APICv virtualizes exits as APIC_WRITE, not MSR_WRITE: MSR writes with
//! no APIC_WRITE beside them are APIC accesses APICv does not see.

use super::apic::{KERNEL_AEOI, QEMU_AVIC, WINDOW};
use super::effect;
use super::{ApicRule, RuleId, TimerRule};
use super::{Ctx, Hint, Hypothesis};
use crate::config::HvFlag;
use crate::diagnose::evidence::sat_sum;
use crate::diagnose::evidence::{Item, Part, is_hyperv_msr};
use crate::diagnose::model::{Confidence, Fact, Severity};
use crate::profile::Access;

/// Hyper-V EOI/ICR/TPR and x2APIC ICR/EOI: what a guest writes per interrupt without APICv.
fn apic_msr(index: u64) -> bool {
    matches!(index, 0x4000_0070..=0x4000_0072 | 0x830 | 0x80b)
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    if !ev.windows() || ev.flag(HvFlag::Synic) == Some(false) {
        return;
    }
    match &ev.msrs {
        Some(m) => keyed(ctx, m),
        None => aggregate(ctx),
    }
}

/// Whether the exits show APICv off: interrupt-window/TPR/CR8 exits, or host kicks on the
/// receiving side at half the writes or more.
fn apicv_off_signs(ctx: &Ctx<'_>, writes: u64) -> (bool, bool) {
    let Some(ex) = ctx.exits() else {
        return (false, false);
    };
    let window = ex.count_of(&WINDOW) > 0;
    let kicks = ex.count_of(&["EXTERNAL_INTERRUPT", "interrupt", "irq_exits"]);
    (window, window || kicks.saturating_mul(2) >= writes)
}

/// With MSR rows: the synthetic or x2APIC APIC MSRs, on a guest that uses SynIC.
fn keyed(ctx: &mut Ctx<'_>, m: &Part) {
    let ev = ctx.ev;
    let rows = ctx.free_rows(m.coded(|r, i| apic_msr(i) && r.key.access() != Some(Access::Read)));
    let synic_on =
        ev.flag(HvFlag::Synic) == Some(true) || !m.coded(|_, i| is_hyperv_msr(i)).is_empty();
    if !synic_on || rows.is_empty() {
        return;
    }
    let n = sat_sum(rows.iter().map(|r| r.count));
    let hv = rows.iter().any(|r| r.code().is_some_and(is_hyperv_msr));
    let (window, off) = apicv_off_signs(ctx, n);
    let id = if off || !hv || ctx.exits().is_none() {
        RuleId::Apic(ApicRule::ApicvInhibitedSynic)
    } else {
        RuleId::Apic(ApicRule::HvApicMsrs)
    };
    let h = Hypothesis::new(id, ev, m, &rows)
        .support(context(ctx))
        .floor_if(window, Severity::Low)
        .rival(other(id), Confidence::Possible)
        .removes(effect::REPLACED);
    let h = hints(ctx, h);
    ctx.push(h);
}

/// Without MSR rows: MSR writes on a Windows guest that uses the Hyper-V interface, or whose
/// APIC writes do not show as APIC_WRITE.
fn aggregate(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let writes: Vec<&Item> = ctx
        .free_rows(ex.named(&["MSR_WRITE", "msr"]))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    let n = sat_sum(writes.iter().map(|r| r.count));
    if writes.is_empty() || ex.share_of(&writes).0 < 0.10 {
        return;
    }
    let apicv_writes = ex.count_of(&["APIC_WRITE"]).saturating_mul(10) >= n;
    let enlightened = ev.enlightened();
    if !(enlightened == Some(true) || (!apicv_writes && enlightened != Some(false))) {
        return;
    }
    let (window, off) = apicv_off_signs(ctx, n);
    let mut rows = writes;
    if off {
        rows.extend(
            ctx.free_rows(ex.named(&WINDOW))
                .into_iter()
                .filter(|r| r.count > 0),
        );
    }
    let id = if off {
        RuleId::Apic(ApicRule::ApicvInhibitedSynic)
    } else {
        RuleId::Apic(ApicRule::HvApicMsrs)
    };
    let h = Hypothesis::new(id, ev, ex, &rows)
        .confidence(if window {
            Confidence::Likely
        } else {
            Confidence::Possible
        })
        .support(context(ctx))
        .hint(Hint::Aggregate)
        .floor_if(window, Severity::Low)
        .rival(other(id), Confidence::Possible)
        .rival(TimerRule::TscDeadlineRearm, Confidence::Possible)
        .removes(effect::REPLACED);
    let h = hints(ctx, h);
    ctx.push(h);
}

fn other(id: RuleId) -> RuleId {
    if id == RuleId::Apic(ApicRule::HvApicMsrs) {
        RuleId::Apic(ApicRule::ApicvInhibitedSynic)
    } else {
        RuleId::Apic(ApicRule::HvApicMsrs)
    }
}

/// The receiving side, the Hyper-V signs and the inhibit events, as context.
fn context(ctx: &Ctx<'_>) -> Vec<Fact> {
    let ev = ctx.ev;
    let mut v = Vec::new();
    if let Some(ex) = ctx.exits() {
        v.extend(
            ex.named(&["EXTERNAL_INTERRUPT", "interrupt"])
                .into_iter()
                .map(|r| {
                    ex.fact(r)
                        .note("the receiving side: IPIs kick the target vCPU out")
                }),
        );
    }
    v.extend(ev.hv_signs());
    if let Some(n) = ev.event("kvm_apicv_inhibit_changed") {
        let mut f = Fact::said(
            "events",
            "kvm_apicv_inhibit_changed",
            "APICv inhibit changes were traced",
        );
        f.count = n;
        v.push(f);
    }
    v
}

/// The trap's variants: host APICv off, hv-avic already on, old kernel or QEMU.
fn hints(ctx: &Ctx<'_>, h: Hypothesis) -> Hypothesis {
    let ev = ctx.ev;
    let id = if ev.host.apic_virt() == Some(false) {
        RuleId::Apic(ApicRule::ApicvOff)
    } else {
        h.id
    };
    Hypothesis { id, ..h }
        .hint_if(ev.host.apic_virt() == Some(false), Hint::ApicvOff)
        .hint_if(ev.flag(HvFlag::Avic) == Some(true), Hint::AvicOn)
        .hint_if(
            ev.host.kernel().is_some_and(|k| k < KERNEL_AEOI),
            Hint::OldKernel,
        )
        .hint_if(
            ev.host.qemu_version.is_some_and(|q| q < QEMU_AVIC),
            Hint::OldQemu,
        )
}
