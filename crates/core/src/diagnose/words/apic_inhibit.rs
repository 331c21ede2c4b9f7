//! The words of one APICv/AVIC inhibit reason, as `kvm_apicv_inhibit_changed` named it: its
//! cause, whether it stuck or toggled, and its own fix with its public source — read by
//! `apic.apicv-inhibited` (the lead reason; the generic words when none is traced) and
//! `apic.apicv-inhibit-toggling`.

use super::apic::{apicv_on, hv_avic, pit_discard};
use super::fixes::F;
use super::{W, Words};
use crate::decode::apicv_inhibit::Inhibit;
use crate::diagnose::evidence::inhibits::{InhibitSeen, Seen};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::model::{Fix, ForGuest};

/// How the reason behaved, in words.
fn seen(s: &InhibitSeen) -> String {
    let held = s
        .held_mean_ns
        .map(|ns| format!(" (set {:.1} ms on average each time)", ns / 1e6))
        .unwrap_or_default();
    match s.seen() {
        Seen::Sticky if s.sets == 0 => "it was set before the trace began and is still set at its \
                                        end: it stuck, APIC virtualization stays off for the VM \
                                        while it is set"
            .to_string(),
        Seen::Sticky => format!(
            "it was set {} time(s) and cleared {} time(s): it stuck, APIC virtualization stays off \
             for the VM while it is set",
            s.sets, s.clears
        ),
        Seen::Toggling => format!(
            "it was set {} and cleared {} times{held}: it toggles",
            s.sets, s.clears
        ),
        Seen::Passing => format!("it was set and cleared {} time(s){held}", s.clears),
        Seen::Cleared => {
            "only its clearing is in the trace: it was set before the trace began".to_string()
        }
    }
}

/// Cause and fixes for `s`, the reason that leads.
pub(super) fn reason(w: &W<'_>, s: &InhibitSeen) -> (String, Vec<Fix>) {
    let how = seen(s);
    match s.reason() {
        Some(r) => {
            let (cause, fixes) = one(w, r);
            (
                format!("The trace names the inhibit: {} — {how}. {cause}", r.name()),
                fixes,
            )
        }
        None if s.reasons.is_empty() => (
            format!(
                "The trace names inhibit number {}, which no kernel this tool knows uses ({how}); \
                 the host kernel's arch/x86/include/asm/kvm_host.h (enum kvm_apicv_inhibit) names it.",
                s.number
            ),
            Vec::new(),
        ),
        None => {
            let names: Vec<&str> = s.reasons.iter().map(|r| r.name()).collect();
            let mut fixes = Vec::new();
            for &r in &s.reasons {
                for mut f in one(w, r).1 {
                    f.summary = format!("if it is {}: {}", r.name(), f.summary);
                    fixes.push(f);
                }
            }
            (
                format!(
                    "The trace prints inhibit number {} without its name, and the numbering \
                     changed between kernels: it is {} (Linux 5.18–5.19, 6.0–6.2, 6.3 and later \
                     respectively, where they differ) — {how}. `uname -r` on the host says which; \
                     kernels from 6.11 print the name.",
                    s.number,
                    names.join(" or ")
                ),
                fixes,
            )
        }
    }
}

/// One reason's cause and fixes.
fn one(w: &W<'_>, r: Inhibit) -> (String, Vec<Fix>) {
    match r {
        Inhibit::PitReinj => (
            "The in-kernel PIT re-injects missed ticks, which needs the EOI intercept AVIC cannot \
             give for edge-triggered interrupts: KVM inhibits AVIC for the whole VM while the PIT \
             is in reinject mode, QEMU's kvm-pit default and libvirt's tickpolicy='delay' \
             (KVM_REINJECT_CONTROL; libkrun issue #498)."
                .into(),
            vec![
                pit_discard(),
                F::new(
                    ForGuest::Any,
                    "or give the guest no PIT at all (guests that calibrate with the PIT need it)",
                )
                .libvirt("<timer name='pit' present='no'/>")
                .host("a VMM of its own: KVM_REINJECT_CONTROL with pit_reinject=0 after KVM_CREATE_PIT2")
                .advice(&["advice.pit-discard"])
                .done(),
            ],
        ),
        Inhibit::Hyperv => (
            "A Hyper-V guest (Windows) with hv-synic uses AutoEOI vectors, which APICv/AVIC cannot \
             deliver: KVM inhibits APIC virtualization for the VM (Vitaly Kuznetsov, \
             87y2c8iia0.fsf@vitty.brq.redhat.com). hv-avic tells Windows not to use AutoEOI \
             (QEMU e1f9a8e8c90a, QEMU 6.2)."
                .into(),
            vec![hv_avic(w)],
        ),
        Inhibit::ApicIdModified | Inhibit::ApicBaseModified => (
            format!(
                "The guest changed its {} from the reset value; KVM's APIC virtualization assumes \
                 the default. Before Linux 6.3 (d471bd853d38, \"KVM: x86: Allow APICv APIC ID \
                 inhibit to be cleared\") the inhibit stayed set until the VM was destroyed, even \
                 after the guest or a reboot restored the ID.",
                if r == Inhibit::ApicIdModified {
                    "xAPIC ID"
                } else {
                    "APIC base address"
                }
            ),
            vec![
                F::new(
                    ForGuest::Any,
                    "run a host kernel with the fix (6.3 or later) so the inhibit clears when the \
                     default is restored; until then, power the VM off and on rather than reboot it",
                )
                .host("Linux ≥ 6.3 (commit d471bd853d38)")
                .advice(&["advice.kernel-upgrade"])
                .done(),
            ],
        ),
        Inhibit::PhysicalIdAliased | Inhibit::LogicalIdAliased => (
            "Two vCPUs share an APIC ID (physical) or a logical destination (logical, AVIC): KVM \
             cannot map interrupts to one vCPU and inhibits APIC virtualization. The guest \
             programmed the aliasing, usually by rewriting xAPIC IDs or LDRs."
                .into(),
            vec![
                F::new(
                    ForGuest::Any,
                    "leave the guest's APIC IDs and logical destinations at their defaults: KVM clears \
                     the inhibit once they no longer alias; nothing on the host lifts it while they do",
                )
                .guest("find what rewrites the xAPIC IDs or LDRs (firmware, an old or custom kernel)")
                .done(),
            ],
        ),
        Inhibit::PhysicalIdTooBig => (
            "A vCPU's APIC ID is beyond what AVIC addresses (255 with AVIC, 511 with x2AVIC): KVM \
             inhibits AVIC for the VM instead of refusing the vCPU."
                .into(),
            vec![
                F::new(
                    ForGuest::Any,
                    "keep the APIC IDs in AVIC's range: fewer vCPUs, or a topology without gaps in \
                     the IDs",
                )
                .qemu("-smp N with N ≤ 256 (xAVIC) or ≤ 512 (x2AVIC), sockets/cores/threads powers of two")
                .done(),
            ],
        ),
        Inhibit::Nested => (
            "A vCPU runs a nested guest: peers cannot signal it through AVIC's doorbell while it is \
             in L2, so AVIC is inhibited. Before Linux 5.19 (f44509f849fe) exposing SVM alone \
             inhibited AVIC for the whole VM."
                .into(),
            vec![
                F::new(ForGuest::Any, "do not expose SVM to guests that do not run their own VMs")
                    .qemu("-cpu …,-svm")
                    .libvirt("<cpu …><feature policy='disable' name='svm'/></cpu>")
                    .host("or kvm_amd nested=0; Linux ≥ 5.19 keeps AVIC for vCPUs not in L2")
                    .advice(&["advice.nested-off"])
                    .done(),
            ],
        ),
        Inhibit::X2apic => (
            "The guest has x2APIC and the host's AVIC has no x2AVIC: before Linux 6.0 KVM inhibited \
             AVIC for x2APIC guests; 6.0 added x2AVIC (Zen 4) and hybrid AVIC (LWN 887196)."
                .into(),
            vec![
                F::new(
                    ForGuest::Any,
                    "on Linux before 6.0, hide x2APIC from the guest (≤ 255 vCPUs); or upgrade the host kernel",
                )
                .qemu("-cpu …,-x2apic")
                .libvirt("<cpu …><feature policy='disable' name='x2apic'/></cpu>")
                .host("Linux ≥ 6.0 (x2AVIC on Zen 4, hybrid AVIC on older CPUs)")
                .done(),
            ],
        ),
        Inhibit::Sev => (
            "The guest is an SEV guest: AVIC does not support SEV, and KVM inhibits it by design. \
             Nothing in the configuration lifts it."
                .into(),
            Vec::new(),
        ),
        Inhibit::Disabled => (
            "APIC virtualization is off by module parameter or absent from the CPU.".into(),
            vec![apicv_on(w)],
        ),
        Inhibit::Absent => (
            "The VMM has no in-kernel local APIC (or has not created it yet): set once at VM creation \
             and cleared when the irqchip is made, which is normal; kept set, the VMM runs the \
             APIC in userspace."
                .into(),
            vec![
                F::new(ForGuest::Any, "keep the local APIC in the kernel")
                    .qemu("-machine …,kernel-irqchip=on (or split)")
                    .done(),
            ],
        ),
        Inhibit::Irqwin | Inhibit::Blockirq => (
            benign_cause(r).into(),
            Vec::new(),
        ),
    }
}

fn benign_cause(r: Inhibit) -> &'static str {
    match r {
        Inhibit::Blockirq => {
            "A debugger set KVM_GUESTDBG_BLOCKIRQ: interrupts are blocked on purpose while it is \
             attached."
        }
        _ => {
            "KVM waits for an interrupt window (AVIC): it sets IRQWIN while an interrupt that AVIC \
             cannot deliver (ExtINT from the PIC, an NMI window) waits, and clears it right after. \
             Set and cleared by design: nothing to remove."
        }
    }
}

/// `apic.apicv-inhibited`: the traced reason's words, else the generic ones.
pub(super) fn inhibited(w: &W<'_>) -> Words {
    if let Some(lead) = crate::diagnose::hypotheses::apic_inhibit::lead(&w.ev.inhibits) {
        return inhibited_by(w, lead);
    }
    generic_inhibited(w)
}

/// The exits of this input APIC virtualization would also absorb beside the window exits:
/// x2APIC EOI and ICR writes (0x80b, 0x830) and xAPIC page accesses (APIC_ACCESS, LAPIC MMIO).
fn absorbed(w: &W<'_>) -> String {
    let sum = |rows: Vec<&crate::diagnose::evidence::Item>| -> u64 {
        rows.iter().map(|r| r.count).fold(0u64, u64::saturating_add)
    };
    let msr = w.ev.msrs.as_ref().map_or(0, |m| {
        sum(m.coded(|r, i| {
            matches!(i, 0x80b | 0x830) && r.key.access() != Some(crate::profile::Access::Read)
        }))
    });
    let page =
        w.ev.exits
            .as_ref()
            .map_or(0, |e| e.count_of(&["APIC_ACCESS"]))
            + w.ev.mmio.as_ref().map_or(0, |m| {
                sum(m.coded(|_, a| (0xfee0_0000..0xfee0_1000).contains(&a)))
            });
    let mut parts = Vec::new();
    if msr > 0 {
        parts.push(format!("{msr} x2APIC EOI/ICR writes"));
    }
    if page > 0 {
        parts.push(format!("{page} xAPIC page accesses"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" — here also {}", parts.join(" and "))
    }
}

/// The inhibit reason is in the trace: its own cause and fix.
fn inhibited_by(w: &W<'_>, lead: &crate::diagnose::evidence::inhibits::InhibitSeen) -> Words {
    let (reason, fixes) = reason(w, lead);
    let others: Vec<String> =
        w.ev.inhibits
            .iter()
            .filter(|s| *s != lead)
            .map(|s| format!("{} ({} set, {} cleared)", s.label(), s.sets, s.clears))
            .collect();
    let others = if others.is_empty() {
        String::new()
    } else {
        format!(" Also traced: {}.", others.join(", "))
    };
    let exits = if w.h.cost.exits > 0 {
        format!(
            " Meanwhile {} interrupt-window/TPR/CR8 exits carried the interrupts APIC virtualization \
             would have delivered without an exit.",
            w.h.cost.exits
        )
    } else {
        String::new()
    };
    let also = absorbed(w);
    Words {
        title: Some(format!("APIC virtualization is inhibited: {}", lead.label())),
        cause: format!("{reason}{exits}{others}"),
        fixes,
        effect: format!(
            "with {} gone, APIC virtualization stays active: the window exits of this input go, and \
             interrupt injection, EOIs and IPIs to running vCPUs stop exiting{also}",
            lead.label()
        ),
        confirm: Some(
            "trace kvm:kvm_apicv_inhibit_changed again after the change: the reason is no longer set"
                .into(),
        ),
        ..Words::default()
    }
}

fn generic_inhibited(w: &W<'_>) -> Words {
    let amd = if w.has(Hint::Amd) {
        format!(
            " On AMD `vintr` exits are KVM asking for an interrupt window; usual AVIC inhibitors: in-kernel \
             PIT reinjection (libvirt's default pit tickpolicy='delay'){}, SynIC AutoEOI without hv-avic, \
             x2APIC on CPUs or kernels without x2AVIC, nested guests.",
            if w.has(Hint::PitReinject) {
                " — this configuration keeps reinjection on"
            } else {
                ""
            }
        )
    } else {
        " Usual inhibitors: SynIC AutoEOI without hv-avic (Windows), nested guests, an APIC ID the guest \
         changed; or APICv is simply off."
            .to_string()
    };
    // Inhibited means enabled: turning it on is not the advice, removing the inhibitor is.
    let mut fixes = vec![
        F::new(ForGuest::Any, "find and remove what inhibits APIC virtualization")
            .host(
                "trace kvm:kvm_apicv_inhibit_changed for the reason; common ones: PIT reinjection (AMD), an \
                 APIC ID the guest rewrote (reboots, old firmware), a nested guest, IRQ windows",
            )
            .done(),
    ];
    if w.has(Hint::Amd) {
        fixes.push(pit_discard());
    }
    fixes.extend(w.fixes_by_guest(|g| match g {
        ForGuest::Windows => vec![hv_avic(w)],
        _ => Vec::new(),
    }));
    let traced = if w.ev.event("kvm_apicv_inhibit_changed").is_some() {
        " The inhibit changes are in the trace: APIC virtualization is enabled on this host, and \
         something inhibits it."
    } else {
        ""
    };
    Words {
        cause: format!(
            "Interrupt-window and TPR/CR8 exits are how KVM injects interrupts when APIC virtualization \
             cannot: with APICv/AVIC active they are rare.{amd}{traced}"
        ),
        fixes,
        effect: "window exits disappear once APIC virtualization stays active; interrupts are delivered \
                 without exits"
            .into(),
        confirm: Some(
            "`trace-cmd record -e kvm:kvm_apicv_inhibit_changed` names the inhibit reason (PIT_REINJ, \
             HYPERV, NESTED, APIC_ID_MODIFIED, …); if the host has it off, that is the other reading"
                .into(),
        ),
        ..Words::default()
    }
}

/// `apic.apicv-inhibit-toggling`: only benign reasons toggled.
pub(super) fn toggling(w: &W<'_>) -> Words {
    let parts: Vec<String> =
        w.ev.inhibits
            .iter()
            .map(|s| format!("{}: {}", s.label(), seen(s)))
            .collect();
    let why =
        w.ev.inhibits
            .first()
            .and_then(InhibitSeen::reason)
            .map_or("", benign_cause);
    Words {
        cause: format!(
            "Only benign inhibit reasons were traced ({}). {why} APIC virtualization is on; these \
             reasons lift themselves (IRQWIN when the window opens, BLOCKIRQ when the debugger \
             detaches).",
            parts.join("; ")
        ),
        fixes: Vec::new(),
        effect: "none: these inhibits come and go by design".into(),
        ..Words::default()
    }
}
