//! The words of `msr.*`: Hyper-V synthetic MSRs and any other hot MSR.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::MsrRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: MsrRule) -> Description {
    match id {
        MsrRule::HypervSynthetic => Description {
            title: "Hyper-V synthetic MSRs are accessed often enough to matter",
            meaning: "Reads and writes of the Hyper-V synthetic MSRs (0x400000xx) that no more specific \
                      finding explains: SynIC, the hypercall page, VP assist, crash MSRs.",
            sources: &[QEMU_HYPERV, LIBVIRT_HYPERV],
        },
        MsrRule::HotMsr => Description {
            title: "an MSR is accessed often enough to matter",
            meaning: "An intercepted MSR takes a real share of the exits: speculation control, a PMU MSR, a \
                      paravirtual MSR, or another MSR KVM traps.",
            sources: &[PERF_KVM, KVM_MSR_DOC],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: MsrRule) -> Words {
    match id {
        MsrRule::HypervSynthetic => Words {
            cause: "Hyper-V synthetic MSRs (0x400000xx) that no more specific finding explains: the guest uses \
                    the Hyper-V interface heavily (SynIC message slots, the hypercall page, VP assist)."
                .into(),
            fixes: vec![F::new(
                ForGuest::Windows,
                "check which MSR leads (the evidence names it) against the enlightenment that should make it \
                 cheap: hv-stimer-direct for timers, hv-avic for EOI/ICR, hv-time for the reference counter",
            )
            .done()],
            effect: "the synthetic MSR exits fall with the enlightenment that covers them".into(),
            ..Words::default()
        },
        MsrRule::HotMsr => Words {
            title: w.h.evidence.first().map(|f| {
                format!(
                    "{} is accessed often enough to matter",
                    f.name.clone().unwrap_or_else(|| f.key.clone())
                )
            }),
            cause: "Every intercepted RDMSR/WRMSR is an exit (about a microsecond or two in the kernel, more \
                    when userspace handles it). Speculation-control MSRs are intercepted until the guest's \
                    first write and on hosts that trap them; PMU MSRs when the vPMU is emulated."
                .into(),
            fixes: vec![F::new(
                ForGuest::Any,
                "find what in the guest accesses it so often (guest perf on the exiting rip) and whether the \
                 CPU model hides a feature that would avoid it",
            )
            .done()],
            effect: "the MSR's exits fall with the accesses".into(),
            ..Words::default()
        },
    }
}
