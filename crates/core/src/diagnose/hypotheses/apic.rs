//! `apic.*`: interrupts that exit because APIC virtualization is off, absent or inhibited —
//! SynIC's AutoEOI inhibiting APICv on a Windows guest (from the synthetic APIC MSRs, or from
//! MSR writes with interrupt-window exits on a guest that uses Hyper-V enlightenments), the
//! host having APICv/AVIC off, xAPIC page accesses trapped and emulated, interrupt-window /
//! TPR / CR8 / `vintr` exits that APIC virtualization would avoid, and EOIs that exit.

use super::{Ctx, Hint, Hypothesis, Rule};
use crate::config::{HvFlag, PitPolicy, Version};
use crate::decode::mmio;
use crate::diagnose::evidence::{Item, Part, is_hyperv_msr};
use crate::diagnose::model::{Confidence, Fact, Severity};
use crate::profile::Access;

pub const RULES: &[Rule] = &[
    Rule {
        id: "apic.apicv-inhibited-synic",
        tag: "apic.apicv-inhibited",
        context: false,
        thresholds: &[],
    },
    Rule {
        id: "apic.apicv-off",
        tag: "apic.avic-off",
        context: false,
        thresholds: &[],
    },
    Rule {
        id: "apic.apic-access-mmio",
        tag: "apic.apicv-inhibited",
        context: false,
        thresholds: &[],
    },
    Rule {
        id: "apic.apicv-inhibited",
        tag: "apic.apicv-inhibited",
        context: false,
        thresholds: &[],
    },
    Rule {
        id: "apic.eoi-exits",
        tag: "apic.eoi-exits",
        context: false,
        thresholds: &[],
    },
];

/// Versions that fix the SynIC trap: hv-avic in QEMU 6.2; KVM's AutoEOI-only inhibit (≈5.14).
pub const QEMU_AVIC: Version = Version(6, 2);
pub const KERNEL_AEOI: Version = Version(5, 14);

/// Exits KVM needs to inject interrupts only while APIC virtualization is off or inhibited.
pub const WINDOW: [&str; 6] = [
    "INTERRUPT_WINDOW",
    "TPR_BELOW_THRESHOLD",
    "vintr",
    "write_cr8",
    "irq_window_exits",
    "irq_window",
];

pub fn check(ctx: &mut Ctx<'_>) {
    synic(ctx);
    access(ctx);
    inhibited(ctx);
    eoi(ctx);
}

/// Hyper-V EOI/ICR/TPR and x2APIC ICR/EOI: what a guest writes per interrupt without APICv.
fn apic_msr(index: u64) -> bool {
    matches!(index, 0x4000_0070..=0x4000_0072 | 0x830 | 0x80b)
}

fn writes<'p>(ctx: &Ctx<'_>, m: &'p Part, pred: fn(u64) -> bool) -> Vec<&'p Item> {
    ctx.free_rows(m.coded(|r, i| pred(i) && r.key.access() != Some(Access::Read)))
}

/// The receiving side and the inhibit events, as context.
fn synic_context(ctx: &Ctx<'_>) -> Vec<Fact> {
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

/// The trap's variant hints: host APICv off, hv-avic already on, old kernel or QEMU.
fn synic_hints(ctx: &Ctx<'_>, h: Hypothesis) -> Hypothesis {
    let ev = ctx.ev;
    let id = if ev.host.apic_virt() == Some(false) {
        "apic.apicv-off"
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

/// `apic.apicv-inhibited-synic` (or `apic.apicv-off` on a host with APICv off).
fn synic(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    if !ev.windows() || ev.flag(HvFlag::Synic) == Some(false) {
        return;
    }
    if let Some(m) = &ev.msrs {
        let rows = writes(ctx, m, apic_msr);
        let synic_on =
            ev.flag(HvFlag::Synic) == Some(true) || !m.coded(|_, i| is_hyperv_msr(i)).is_empty();
        if synic_on && !rows.is_empty() {
            let h = Hypothesis::new("apic.apicv-inhibited-synic", ev, m, &rows)
                .support(synic_context(ctx))
                .removes(0.9);
            let h = synic_hints(ctx, h);
            ctx.push(h);
            return;
        }
    }
    let Some(ex) = ctx.exits() else {
        return;
    };
    if ev.msrs.is_some() || ev.enlightened() != Some(true) {
        return;
    }
    let writes = ctx.free_rows(ex.named(&["MSR_WRITE", "msr"]));
    if ex.share_of(&writes).0 < 0.10 {
        return;
    }
    let window = ctx.free_rows(ex.named(&WINDOW));
    let with_window = window.iter().any(|r| r.count > 0);
    let mut rows = writes.clone();
    rows.extend(window.iter().copied());
    let h = Hypothesis::new("apic.apicv-inhibited-synic", ev, ex, &rows)
        .confidence(if with_window {
            Confidence::Likely
        } else {
            Confidence::Possible
        })
        .support(synic_context(ctx))
        .hint(Hint::Aggregate)
        .rival("timer.tsc-deadline-rearm", Confidence::Possible)
        .rival("apic.ipi-storm", Confidence::Possible)
        .removes(0.9);
    let h = synic_hints(ctx, h);
    ctx.push(h);
}

/// `apic.apic-access-mmio`: xAPIC page accesses trapped (LAPIC MMIO rows, APIC_ACCESS exits).
fn access(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let keyed = ev
        .mmio
        .as_ref()
        .map(|m| (m, ctx.free_rows(m.coded(|_, a| mmio::is_lapic(a)))));
    let (part, rows, confirmed) = match keyed {
        Some((m, rows)) if !rows.is_empty() => (m, rows, true),
        _ => match ctx.exits() {
            Some(ex) => (ex, ctx.free_rows(ex.named(&["APIC_ACCESS"])), false),
            None => return,
        },
    };
    if rows.is_empty() {
        return;
    }
    let mut h = Hypothesis::new("apic.apic-access-mmio", ev, part, &rows)
        .max(Severity::High)
        .hint_if(ev.host.apic_virt() == Some(false), Hint::ApicvOff)
        .removes(0.8);
    if !confirmed {
        h = h.confidence(Confidence::Likely).hint(Hint::Aggregate);
    }
    ctx.push(h);
}

/// `apic.apicv-inhibited`: interrupt-window, TPR, CR8 and `vintr` exits that APIC
/// virtualization avoids — inhibited (PIT reinjection on AMD, nested, x2APIC on old AVIC, …) or
/// off on the host, which the module parameter tells apart.
fn inhibited(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<&Item> = ctx
        .free_rows(ex.named(&WINDOW))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if rows.is_empty() {
        return;
    }
    let amd = ev.host.amd() || rows.iter().any(|r| r.is(&["vintr"]));
    let pit_reinject = ev
        .config
        .as_ref()
        .is_some_and(|c| c.effective.pit != Some(PitPolicy::Discard));
    let off = ev.host.apic_virt() == Some(false);
    let id = if off {
        "apic.apicv-off"
    } else {
        "apic.apicv-inhibited"
    };
    let mut context: Vec<Fact> = ex
        .named(&["EXTERNAL_INTERRUPT", "interrupt", "irq_exits"])
        .into_iter()
        .map(|r| ex.fact(r))
        .collect();
    if let Some(n) = ev.event("kvm_apicv_inhibit_changed") {
        let mut f = Fact::said(
            "events",
            "kvm_apicv_inhibit_changed",
            "APICv inhibit changes were traced",
        );
        f.count = n;
        context.push(f);
    }
    let mut h = Hypothesis::new(id, ev, ex, &rows)
        .confidence(if off {
            Confidence::Confirmed
        } else {
            Confidence::Likely
        })
        .support(context)
        .hint(Hint::Aggregate)
        .hint_if(amd, Hint::Amd)
        .hint_if(off, Hint::ApicvOff)
        .hint_if(
            amd && pit_reinject && ev.config.is_some(),
            Hint::PitReinject,
        )
        .removes(0.9);
    if ev.host.apic_virt().is_none() {
        h = h.rival("apic.apicv-off", Confidence::Possible);
    }
    ctx.push(h);
}

/// `apic.eoi-exits`: EOIs that exit — x2APIC EOI MSR writes (no virtual-interrupt delivery),
/// Hyper-V EOI MSR writes outside the SynIC case, EOI_INDUCED exits (level-triggered interrupts
/// under APICv).
fn eoi(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let keyed = ev
        .msrs
        .as_ref()
        .map(|m| (m, writes(ctx, m, |i| matches!(i, 0x80b | 0x4000_0070))));
    let (part, rows) = match keyed {
        Some((m, rows)) if !rows.is_empty() => (m, rows),
        _ => match ctx.exits() {
            Some(ex) => (
                ex,
                ctx.free_rows(ex.named(&["EOI_INDUCED", "EOI_INDUCED_EXIT"])),
            ),
            None => return,
        },
    };
    let rows: Vec<&Item> = rows.into_iter().filter(|r| r.count > 0).collect();
    if rows.is_empty() {
        return;
    }
    let induced = rows
        .iter()
        .all(|r| r.is(&["EOI_INDUCED", "EOI_INDUCED_EXIT"]));
    let h = Hypothesis::new("apic.eoi-exits", ev, part, &rows)
        .max(if induced {
            Severity::Low
        } else {
            Severity::High
        })
        .hint_if(ev.host.apic_virt() == Some(false), Hint::ApicvOff)
        .hint_if(induced, Hint::EoiInduced)
        .removes(0.9);
    ctx.push(h);
}
