//! The words of `apic.*`: the SynIC AutoEOI trap, APIC virtualization off, inhibited, or
//! bypassed by xAPIC page accesses, EOIs that exit, and IPI storms — for Windows and Linux.

use super::fixes::{F, hv_fix};
use super::sources::*;
use super::{Description, W, Words};
use crate::config::HvFlag;
use crate::diagnose::hypotheses::ApicRule;
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::model::{Fix, ForGuest};
pub(super) fn describe(id: ApicRule) -> Description {
    match id {
        ApicRule::ApicvInhibitedSynic => Description {
            title: "SynIC's AutoEOI keeps APICv off: IPIs and EOIs exit through MSR writes",
            meaning: "A Windows guest with hv-synic uses AutoEOI unless told not to; KVM cannot combine \
                      AutoEOI with APICv/AVIC and inhibits APIC virtualization for the whole VM, so every \
                      EOI and IPI exits (synthetic EOI/ICR MSRs, x2APIC ICR) and injections need \
                      interrupt-window exits.",
            sources: &[
                LIANG_LI_2021,
                VITALY_AEOI,
                KVM_AEOI,
                QEMU_HV_AVIC,
                QEMU_HYPERV,
                KVM_FORUM_2021,
            ],
        },
        ApicRule::HvApicMsrs => Description {
            title: "Windows writes the synthetic EOI/ICR/TPR MSRs: every EOI exits although APICv could take it",
            meaning: "hv-vapic without hv-avic makes QEMU recommend the Hyper-V APIC-access MSRs \
                      (HV_APIC_ACCESS_RECOMMENDED); Windows then ends every interrupt with a write to \
                      HV_X64_MSR_EOI (0x40000070), an exit APICv cannot accelerate — even with APICv on.",
            sources: &[VITALY_AEOI, QEMU_HV_AVIC, QEMU_HYPERV, LIBVIRT_HYPERV],
        },
        ApicRule::ApicvOff => Description {
            title: "APIC virtualization is off on the host: every EOI and IPI exits",
            meaning: "With kvm_intel enable_apicv=0 (or kvm_amd avic=0, or a CPU without it) the local APIC is \
                      fully emulated: EOI, ICR and TPR accesses exit, and interrupts are injected through \
                      interrupt-window exits.",
            sources: &[QEMU_HYPERV, KVM_TRACE_H],
        },
        ApicRule::ApicAccessMmio => Description {
            title: "local APIC page accesses are trapped and emulated: APIC virtualization is off",
            meaning: "Accesses to the xAPIC page (0xfee00000: TPR, EOI, ICR) exit and are emulated one \
                      instruction at a time when APICv/AVIC is off, absent or inhibited.",
            sources: &[QEMU_HYPERV, KVM_TRACE_H, PERF_KVM],
        },
        ApicRule::ApicvInhibited => Description {
            title: "interrupts are injected through window exits: APIC virtualization is inhibited or off",
            meaning: "INTERRUPT_WINDOW, TPR_BELOW_THRESHOLD, CR8 writes (SVM) and `vintr` exits are what KVM \
                      needs to inject interrupts without APICv/AVIC; with it active they are rare. Inhibitors: \
                      PIT reinjection (AMD), SynIC AutoEOI, nested guests, x2APIC on hosts without x2AVIC. \
                      When kvm_apicv_inhibit_changed is traced, the finding names the reason (by name, \
                      or by number with every name it has had across kernels) and gives that reason's \
                      own fix; a reason set and kept (sticky) leads over ones that toggle.",
            sources: &[
                KVM_TRACE_H,
                KVM_I8254,
                VITALY_AEOI,
                LIBVIRT_TIME,
                KVM_INHIBIT_DOC,
                KVM_REINJECT_CONTROL,
                LIBKRUN_PIT_REINJ,
                QEMU_HV_AVIC,
                KVM_APIC_ID_CLEAR,
                KVM_AVIC_NESTED,
                LWN_X2AVIC,
                QEMU_IRQCHIP,
            ],
        },
        ApicRule::ApicvInhibitToggling => Description {
            title: "APICv/AVIC inhibits that toggle by design (IRQWIN, BLOCKIRQ): nothing to remove",
            meaning: "kvm_apicv_inhibit_changed shows only reasons KVM sets and clears around short \
                      events: IRQWIN while an interrupt AVIC cannot deliver waits for a window, \
                      BLOCKIRQ while a debugger blocks interrupts. Counted per reason from the trace \
                      (sets, clears, time set); a reason cleared three times or more toggles.",
            sources: &[KVM_INHIBIT_DOC, KVM_TRACE_H],
        },
        ApicRule::EoiExits => Description {
            title: "end-of-interrupt writes exit",
            meaning: "x2APIC EOI (0x80b) or Hyper-V EOI (0x40000070) writes, or EOI-induced exits: without \
                      virtual-interrupt delivery every EOI is an exit; under APICv only level-triggered \
                      interrupts' EOIs are.",
            sources: &[KVM_CPUID_DOC, QEMU_HYPERV],
        },
        ApicRule::IpiStorm => Description {
            title: "cross-vCPU interrupts (IPIs) at a high rate, an exit or more each",
            meaning: "Writes to the interrupt command register (x2APIC 0x830, Hyper-V 0x40000071, or APIC_WRITE \
                      exits under APICv): every IPI costs the sender an exit and, unless posted, the receiver \
                      a kick or a wake-up. Paravirtual IPIs batch them.",
            sources: &[PV_IPI, QEMU_HYPERV, KVM_FORUM_2021],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: ApicRule) -> Words {
    match id {
        ApicRule::ApicvInhibitedSynic => synic(w),
        ApicRule::HvApicMsrs => hv_msrs(w),
        ApicRule::ApicvOff => off(w),
        ApicRule::ApicvInhibitToggling => super::apic_inhibit::toggling(w),
        ApicRule::ApicAccessMmio => Words {
            cause: format!(
                "{}Accesses to the xAPIC page (TPR +0x80, EOI +0xb0, ICR +0x300/+0x310) exit and are decoded \
                 and emulated one instruction at a time when APICv/AVIC is off, absent (CPUs before APICv) or \
                 inhibited; with APICv they are virtualized without exits.",
                if w.has(Hint::Aggregate) {
                    "APIC_ACCESS exits are accesses to the local APIC page. "
                } else {
                    ""
                }
            ),
            fixes: vec![apicv_on(w), x2apic(w)],
            effect:
                "the APIC page exits mostly disappear with APICv; without it, x2APIC MSR exits are \
                     cheaper than emulating an MMIO instruction"
                    .into(),
            ..Words::default()
        },
        ApicRule::ApicvInhibited => super::apic_inhibit::inhibited(w),
        ApicRule::EoiExits => Words {
            cause: if w.has(Hint::EoiInduced) {
                "EOI-induced exits are the EOIs of level-triggered interrupts (legacy INTx devices: emulated \
                 IDE, e1000, …), which APICv still hands to KVM so it can update the IOAPIC."
                    .into()
            } else {
                "EOI writes exit when the guest's local APIC is not virtualized: APICv/AVIC off or \
                 inhibited, and no paravirtual EOI."
                    .into()
            },
            fixes: if w.has(Hint::EoiInduced) {
                vec![
                    F::new(ForGuest::Any, "use MSI-capable paravirtual devices instead of INTx-only emulated ones")
                        .qemu("-device virtio-blk-pci / virtio-net-pci instead of IDE / e1000")
                        .libvirt("<disk …><target bus='virtio'/></disk>, <interface …><model type='virtio'/></interface>")
                        .done(),
                ]
            } else {
                let mut v = vec![apicv_on(w)];
                v.extend(w.fixes_by_guest(|g| match g {
                    ForGuest::Linux => vec![
                        F::new(ForGuest::Linux, "let the guest use KVM's paravirtual EOI (on by default)")
                            .qemu("-cpu …,kvm-pv-eoi=on")
                            .done(),
                    ],
                    _ => vec![hv_fix(
                        w.ev,
                        "with hv-synic, add hv-avic so Windows stops using the synthetic EOI MSR where APICv \
                         can take it",
                        &[HvFlag::Avic],
                        &["advice.hv-avic"],
                    )],
                }));
                v
            },
            effect: "EOIs stop exiting".into(),
            ..Words::default()
        },
        ApicRule::IpiStorm => ipi(w),
    }
}

/// Turning APIC virtualization on in the host.
pub(super) fn apicv_on(w: &W<'_>) -> Fix {
    let _ = w;
    F::new(ForGuest::Any, "turn on APIC virtualization on the host")
        .host(
            "check /sys/module/kvm_intel/parameters/enable_apicv (or kvm_amd/parameters/avic); set \
             kvm_intel enable_apicv=1 / kvm_amd avic=1 in /etc/modprobe.d and reload the module",
        )
        .advice(&["advice.apicv-enable"])
        .done()
}

/// Stopping in-kernel PIT reinjection, which inhibits AMD AVIC.
pub(super) fn pit_discard() -> Fix {
    F::new(ForGuest::Any, "stop PIT reinjection, which inhibits AVIC")
        .qemu("-global kvm-pit.lost_tick_policy=discard")
        .libvirt("<timer name='pit' tickpolicy='discard'/>")
        .advice(&["advice.pit-discard"])
        .done()
}

/// Windows with SynIC: hv-avic, so that AutoEOI does not inhibit APIC virtualization.
pub(super) fn hv_avic(w: &W<'_>) -> Fix {
    hv_fix(
        w.ev,
        "with hv-synic, add hv-avic so AutoEOI does not inhibit APICv",
        &[HvFlag::Avic],
        &["advice.hv-avic"],
    )
}

fn x2apic(w: &W<'_>) -> Fix {
    let _ = w;
    F::new(
        ForGuest::Any,
        "give the guest x2APIC so what still exits is a cheaper MSR write",
    )
    .qemu("-cpu …,+x2apic")
    .libvirt("<cpu …><feature policy='require' name='x2apic'/></cpu>")
    .done()
}

fn synic(w: &W<'_>) -> Words {
    let reading = if w.has(Hint::Aggregate) {
        "Without MSR detail this is the likeliest reading: on a Windows guest using Hyper-V \
         enlightenments (hypercall exits), MSR writes at this share are EOI/ICR writes, and \
         interrupt-window or TPR exits, which APICv's virtual interrupt delivery avoids, back it. "
    } else {
        ""
    };
    let avic_on = if w.has(Hint::AvicOn) {
        " This configuration already has hv-avic: the inhibit then comes from a host kernel without the \
         AutoEOI series, a QEMU that ignores the flag, or a guest older than Windows 8/2012 that does not \
         honour the recommendation."
    } else {
        ""
    };
    let mut host =
        "a host kernel with KVM 0f250a646382 (the 2021 AutoEOI series, ≈5.14) and APICv/AVIC \
                    on (kvm_intel enable_apicv=1 / kvm_amd avic=1)"
            .to_string();
    if w.has(Hint::OldKernel) {
        host.push_str(&format!(
            "; this host runs {}, which inhibits APICv as soon as SynIC is on: upgrade it",
            w.ev.host
                .facts
                .kernel
                .as_deref()
                .unwrap_or("an older kernel")
        ));
    }
    let mut summary =
        "turn on hv-avic (QEMU ≥ 6.2, libvirt ≥ 8.10): it tells Windows not to use AutoEOI and \
                       stops steering it to the synthetic APIC MSRs"
            .to_string();
    if let Some(q) = w.ev.host.qemu_version.filter(|_| w.has(Hint::OldQemu)) {
        summary.push_str(&format!("; QEMU {q} predates hv-avic: upgrade QEMU first"));
    }
    if w.ev.host.apic_virt().is_none() {
        summary.push_str("; only on a host with APICv/AVIC — without it hv-avic hurts");
    }
    Words {
        cause: format!(
            "{reading}A Windows guest with hv-synic (which hv-stimer needs) uses AutoEOI for its synthetic \
             interrupts unless told not to; KVM cannot combine AutoEOI with APICv/AVIC and inhibits APIC \
             virtualization for the whole VM (kernels before 2021 as soon as SynIC is on). With hv-vapic and \
             without hv-avic, QEMU also steers Windows to the synthetic EOI/ICR/TPR MSRs — an exit each. \
             Every IPI then costs at least two exits: the sender's ICR write and the receiver's kick.{avic_on}"
        ),
        fixes: vec![
            F::new(ForGuest::Windows, &summary)
                .qemu("-cpu …,hv-avic=on")
                .libvirt("<avic state='on'/>")
                .host(&host)
                .guest("Windows Server 2012 / 8 or later honour the recommendation")
                .advice(&["advice.hv-avic"])
                .done(),
        ],
        effect: "APICv stays active: the EOI/ICR MSR writes and the interrupt-window exits mostly disappear"
            .into(),
        ..Words::default()
    }
}

fn hv_msrs(w: &W<'_>) -> Words {
    let reading = if w.has(Hint::Aggregate) {
        "Without MSR detail this is a reading: MSR writes lead on a Windows guest that uses the Hyper-V \
         interface, with no interrupt-window exits and few host kicks — so APICv is working, and the \
         writes are Windows' own choice of the synthetic APIC MSRs. "
    } else {
        "Writes to the Hyper-V EOI/ICR/TPR MSRs with no sign of APICv being off (no interrupt-window \
         exits, few host kicks). "
    };
    Words {
        cause: format!(
            "{reading}With hv-vapic and without hv-avic, QEMU sets HV_APIC_ACCESS_RECOMMENDED, so Windows \
             uses HV_X64_MSR_EOI/ICR/TPR instead of the APIC page; each of those MSR writes exits, and \
             APICv cannot accelerate them. hv-avic stops the recommendation (and deprecates AutoEOI)."
        ),
        fixes: vec![
            F::new(
                ForGuest::Windows,
                "turn on hv-avic (QEMU ≥ 6.2, libvirt ≥ 8.10) so QEMU stops recommending the synthetic APIC \
                 MSRs; on QEMU without it, turn hv-vapic off",
            )
            .qemu("-cpu …,hv-avic=on (or hv-vapic=off)")
            .libvirt("<avic state='on'/> (or <vapic state='off'/>)")
            .host("APICv/AVIC on (kvm_intel enable_apicv=1 / kvm_amd avic=1)")
            .advice(&["advice.hv-avic"])
            .done(),
        ],
        effect: "EOIs go through the virtualized APIC instead of an MSR exit each".into(),
        ..Words::default()
    }
}

fn off(w: &W<'_>) -> Words {
    let traced =
        w.ev.inhibits
            .iter()
            .find(|s| s.reason() == Some(crate::decode::apicv_inhibit::Inhibit::Disabled));
    let why = if let Some(s) = traced {
        &*format!(
            "The trace names the inhibit DISABLED ({} set): the host has APIC virtualization \
             (APICv/AVIC) off by module parameter, or the CPU lacks it",
            s.sets
        )
    } else if w.has(Hint::ApicvOff) {
        "The host has APIC virtualization (APICv/AVIC) off"
    } else if w.has(Hint::Amd) {
        "AVIC is off by default in kvm_amd (avic=0) and nothing says this host turned it on"
    } else {
        "APIC virtualization (APICv/AVIC) is likely off on the host"
    };
    Words {
        cause: format!(
            "{why}: EOI, ICR and TPR accesses exit whatever the guest does, and interrupts are injected \
             through window exits (`vintr`, INTERRUPT_WINDOW, CR8 writes). Enlightenments that assume \
             APICv (hv-avic) would not help and would hurt."
        ),
        fixes: {
            let mut v = vec![apicv_on(w)];
            if w.has(Hint::Amd) {
                v.push(pit_discard());
            }
            v
        },
        effect: "EOIs and interrupt injection stop exiting; IPIs to running vCPUs are posted"
            .into(),
        ..Words::default()
    }
}

fn ipi(w: &W<'_>) -> Words {
    let reading = if w.has(Hint::Aggregate) {
        "Without MSR or register detail this is a reading: these exits are writes to the interrupt command \
         register (IPIs) or timer programming, which the register trace tells apart. "
    } else {
        ""
    };
    let cause = w.by_guest(|g| match g {
        ForGuest::Windows => "Windows sends IPIs for TLB shootdowns, DPCs and scheduler wake-ups; without \
                              hv-ipi/hv-tlbflush each destination is an ICR write."
            .into(),
        _ => "Linux sends IPIs for wake-ups (reschedule), TLB shootdowns and smp_call_function; without \
              PV IPIs each destination is an ICR write, and each wake-up of a halted vCPU is an \
              exit-and-entry round."
            .into(),
    });
    Words {
        cause: format!("{reading}Every IPI costs the sender an exit and the receiver a kick or wake-up. {cause}"),
        fixes: {
            let mut v = w.fixes_by_guest(|g| match g {
                ForGuest::Windows => vec![hv_fix(
                    w.ev,
                    "let Windows send IPIs and TLB flushes by hypercall (hv-ipi, hv-tlbflush)",
                    &[HvFlag::Vpindex, HvFlag::Ipi, HvFlag::Tlbflush],
                    &["advice.hv-ipi"],
                )],
                _ => vec![
                    F::new(ForGuest::Linux, "let the guest batch IPIs with one hypercall (KVM PV IPIs, on by default)")
                        .qemu("-cpu …,kvm-pv-ipi=on,kvm-pv-tlb-flush=on")
                        .guest("check that the guest kernel has CONFIG_KVM_GUEST and that dmesg shows \"KVM setup pv IPIs\"")
                        .advice(&["advice.pv-ipi"])
                        .done(),
                ],
            });
            v.push(
                F::new(ForGuest::Any, "on CPUs with IPI virtualization (Intel Sapphire Rapids and later), let the CPU deliver them")
                    .host("kvm_intel enable_ipiv=1 (with APICv on)")
                    .done(),
            );
            v
        },
        effect: "fewer ICR exits (one hypercall for many destinations) and IPIs to running vCPUs without an exit"
            .into(),
        ..Words::default()
    }
}
