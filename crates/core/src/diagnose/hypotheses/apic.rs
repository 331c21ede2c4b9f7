//! `apic.*`: interrupts that exit because APIC virtualization is off, absent or inhibited —
//! the host having APICv/AVIC off, xAPIC page accesses trapped and emulated, interrupt-window /
//! TPR / CR8 / `vintr` exits that APIC virtualization would avoid (inhibited, or off: AVIC is
//! off by default in kvm_amd, APICv on by default in kvm_intel), inhibit changes traced, and
//! EOIs that exit. The Windows SynIC traps are in `synic`.

use super::RuleId;
use super::apic_inhibit;
use super::effect;
use super::{Ctx, Hint, Hypothesis, Threshold, rules};
use crate::config::{PitPolicy, Version};
use crate::decode::apicv_inhibit::Inhibit;
use crate::decode::mmio;
use crate::diagnose::evidence::inhibits::TOGGLE_CLEARS;
use crate::diagnose::evidence::{Item, Part};
use crate::diagnose::model::{Confidence, Fact, Severity};
use crate::profile::Access;

rules! {
    /// The rules of `apic.*`.
    pub enum ApicRule in Apic {
        ApicvInhibitedSynic {
            id: "apic.apicv-inhibited-synic",
            tag: "apic.apicv-inhibited",
            role: Problem,
            thresholds: &[],
        },
        HvApicMsrs {
            id: "apic.hv-apic-msrs",
            tag: "msr.hyperv-synthetic",
            role: Problem,
            thresholds: &[],
        },
        ApicvOff {
            id: "apic.apicv-off",
            tag: "apic.avic-off",
            role: Problem,
            thresholds: &[],
        },
        ApicAccessMmio {
            id: "apic.apic-access-mmio",
            tag: "apic.apicv-inhibited",
            role: Problem,
            thresholds: &[],
        },
        ApicvInhibited {
            id: "apic.apicv-inhibited",
            tag: "apic.apicv-inhibited",
            role: Problem,
            thresholds: &[Threshold {
                name: "window exits' share of the exits, for low whatever the cost",
                value: WINDOW_SHARE,
                unit: "share",
            }],
        },
        ApicvInhibitToggling {
            id: "apic.apicv-inhibit-toggling",
            tag: "apic.apicv-inhibited",
            role: Context,
            thresholds: &[Threshold {
                name: "clears of one reason for it to count as toggling",
                value: TOGGLE_CLEARS as f64,
                unit: "clears",
            }],
        },
        EoiExits {
            id: "apic.eoi-exits",
            tag: "apic.eoi-exits",
            role: Problem,
            thresholds: &[],
        },
        IpiStorm {
            id: "apic.ipi-storm",
            tag: "apic.ipi-storm",
            role: Problem,
            thresholds: super::apic_ipi::IPI_STORM_THRESHOLDS,
        },
    }
}

/// Versions that fix the SynIC trap: hv-avic in QEMU 6.2; KVM's AutoEOI-only inhibit (≈5.14).
pub(crate) const QEMU_AVIC: Version = Version(6, 2);
pub(crate) const KERNEL_AEOI: Version = Version(5, 14);

/// Exits KVM needs to inject interrupts only while APIC virtualization is off or inhibited.
pub(crate) const WINDOW: [&str; 6] = [
    "INTERRUPT_WINDOW",
    "TPR_BELOW_THRESHOLD",
    "vintr",
    "write_cr8",
    "irq_window_exits",
    "irq_window",
];

/// Window exits at least this share of the exits (idle apart) say APIC virtualization is
/// inactive whatever they cost: one in twenty exits is routine, not the odd interrupt a PIC or an
/// NMI needs a window for.
pub(crate) const WINDOW_SHARE: f64 = 0.05;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    access(ctx);
    inhibited(ctx);
    eoi(ctx);
}

fn writes<'p>(ctx: &Ctx<'_>, m: &'p Part, pred: fn(u64) -> bool) -> Vec<&'p Item> {
    ctx.free_rows(m.coded(|r, i| pred(i) && r.key.access() != Some(Access::Read)))
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
    let mut h = Hypothesis::new(ApicRule::ApicAccessMmio, ev, part, &rows)
        .max(Severity::High)
        .hint_if(ev.host.apic_virt() == Some(false), Hint::ApicvOff)
        .removes(effect::MOSTLY);
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
    let rows: Vec<&Item> = ctx.exits().map_or_else(Vec::new, |ex| {
        ctx.free_rows(ex.named(&WINDOW))
            .into_iter()
            .filter(|r| r.count > 0)
            .collect()
    });
    // Inhibit changes traced: APIC virtualization is enabled and something inhibits it.
    let events = ev
        .event("kvm_apicv_inhibit_changed")
        .or_else(|| ev.event("kvm_apicv_update_request"))
        .filter(|&n| n > 0);
    if rows.is_empty() && events.is_none() {
        return;
    }
    // An inhibit traced while the IO path takes no interrupt (completions polled) costs it
    // nothing: not a finding of this input.
    if rows.is_empty() && ev.io.as_ref().is_some_and(|io| io.polled()) {
        return;
    }
    // Only IRQWIN/BLOCKIRQ traced, and no window exits to explain: KVM toggling an inhibit by
    // design. Context, no fix.
    if rows.is_empty() && apic_inhibit::toggling_only(&ev.inhibits) {
        let h = Hypothesis::with_cost(
            ApicRule::ApicvInhibitToggling,
            Default::default(),
            apic_inhibit::facts(&ev.inhibits),
        )
        .grading(super::Grading::Context(Severity::Info));
        ctx.push(h);
        return;
    }
    let lead = apic_inhibit::lead(&ev.inhibits);
    let amd = ev.host.amd()
        || rows.iter().any(|r| r.is(&["vintr"]))
        || lead.is_some_and(|l| l.reason().is_some_and(avic_only));
    let pit_reinject = ev
        .config
        .as_ref()
        .is_some_and(|c| c.effective.pit != Some(PitPolicy::Discard));
    // Who is likelier: the host facts when given; DISABLED traced (off by parameter); an
    // inhibit (APICv enabled) when traced; else the module default — kvm_amd's avic is off by
    // default, kvm_intel's enable_apicv on.
    let disabled = lead.is_some_and(|l| l.reason() == Some(Inhibit::Disabled));
    let off = match ev.host.apic_virt() {
        Some(on) => !on,
        None => disabled || (events.is_none() && amd),
    };
    let id = if off {
        RuleId::Apic(ApicRule::ApicvOff)
    } else {
        RuleId::Apic(ApicRule::ApicvInhibited)
    };
    let mut context: Vec<Fact> = ctx.exits().map_or_else(Vec::new, |ex| {
        ex.named(&["EXTERNAL_INTERRUPT", "interrupt", "irq_exits"])
            .into_iter()
            .map(|r| ex.fact(r))
            .collect()
    });
    if ev.inhibits.is_empty() {
        if let Some(n) = events {
            let mut f = Fact::said(
                "events",
                "kvm_apicv_inhibit_changed",
                "APICv inhibit changes were traced",
            );
            f.count = n;
            f.explains = rows.is_empty();
            context.push(f);
        }
    } else {
        context.extend(apic_inhibit::facts(&ev.inhibits).into_iter().map(|mut f| {
            f.explains = rows.is_empty();
            f
        }));
    }
    let h = match ctx.exits() {
        Some(ex) if !rows.is_empty() => Hypothesis::new(id, ev, ex, &rows).support(context),
        _ => Hypothesis::with_cost(id, Default::default(), context),
    };
    let known = ev.host.apic_virt().is_some() || events.is_some();
    // A share of the exits says little when the input measures what they cost and it is
    // next to nothing (an idle guest's few interrupt windows): then the cost grades it.
    let negligible = h
        .cost
        .cpu_share
        .is_some_and(|c| c < crate::diagnose::rank::CPU_SHARE[0]);
    let mut h = h
        .confidence(if known {
            Confidence::Confirmed
        } else {
            Confidence::Likely
        })
        .floor_if(
            events.is_some()
                || (!negligible
                    && ctx
                        .exits()
                        .is_some_and(|ex| ex.share_of(&rows).0 >= WINDOW_SHARE)),
            Severity::Low,
        )
        .hint_if(!known, Hint::Aggregate)
        .hint_if(amd, Hint::Amd)
        .hint_if(
            ev.host.apic_virt() == Some(false) || disabled,
            Hint::ApicvOff,
        )
        .hint_if(
            amd && pit_reinject && ev.config.is_some(),
            Hint::PitReinject,
        )
        .removes(effect::REPLACED);
    if !known {
        h = h.rival(
            if off {
                RuleId::Apic(ApicRule::ApicvInhibited)
            } else {
                RuleId::Apic(ApicRule::ApicvOff)
            },
            Confidence::Possible,
        );
    }
    ctx.push(h);
}

/// Reasons only AMD's AVIC has: their trace says the host is AMD.
fn avic_only(r: Inhibit) -> bool {
    matches!(
        r,
        Inhibit::Nested
            | Inhibit::Irqwin
            | Inhibit::PitReinj
            | Inhibit::X2apic
            | Inhibit::Sev
            | Inhibit::LogicalIdAliased
            | Inhibit::PhysicalIdTooBig
    )
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
    let h = Hypothesis::new(ApicRule::EoiExits, ev, part, &rows)
        .max(if induced {
            Severity::Low
        } else {
            Severity::High
        })
        .hint_if(ev.host.apic_virt() == Some(false), Hint::ApicvOff)
        .hint_if(induced, Hint::EoiInduced)
        .removes(effect::REPLACED);
    ctx.push(h);
}
