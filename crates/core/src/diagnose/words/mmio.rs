//! The words of `mmio.*`: emulated MMIO devices the guest hammers.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::hypotheses::MmioRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: MmioRule) -> Description {
    match id {
        MmioRule::EmulatedDevice => Description {
            title: "the guest hammers an emulated MMIO device: every access is an exit",
            meaning: "Accesses to emulated MMIO (EPT_MISCONFIG on Intel) go to QEMU unless an ioeventfd or an \
                      in-kernel device takes them: VGA framebuffers, USB controllers, virtio without \
                      ioeventfd.",
            sources: &[PERF_KVM, LIBVIRT_VIRTIO_MODELS],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: MmioRule) -> Words {
    match id {
        MmioRule::EmulatedDevice => mmio(w),
    }
}

fn mmio(w: &W<'_>) -> Words {
    let reading = if w.has(Hint::Aggregate) {
        w.by_guest(|g| match g {
            ForGuest::Windows => "Without addresses this is a reading: on a Windows guest the usual candidates \
                                  are the HPET (without hv-stimer), a legacy device's registers (VGA/QXL, USB \
                                  controller polling) or virtio without ioeventfd."
                .into(),
            _ => "Without addresses this is a reading: the usual candidates are virtio notifications without \
                  ioeventfd, a clock on the HPET (clocksource=hpet), or an emulated device polled by the guest \
                  (VGA, USB)."
                .into(),
        })
    } else {
        String::new()
    };
    let title =
        w.h.evidence
            .first()
            .filter(|_| !w.has(Hint::Aggregate))
            .map(|f| {
                format!(
                    "the guest hammers {}: every access is an MMIO exit",
                    f.name
                        .as_deref()
                        .and_then(|n| n.split([' ', ':']).next())
                        .map_or_else(|| f.key.clone(), str::to_string)
                )
            });
    Words {
        title,
        cause: format!(
            "{reading} Each access to emulated MMIO exits (EPT_MISCONFIG on Intel: KVM marks those pages with a \
             reserved-bit entry); unless an ioeventfd or an in-kernel device takes it, it is a round trip to \
             QEMU."
        )
        .trim()
        .to_string(),
        fixes: vec![
            F::new(
                ForGuest::Any,
                "replace the emulated device with a paravirtual one, or let KVM take the access in the kernel",
            )
            .qemu(
                "-device virtio-…-pci,ioeventfd=on; -device qemu-xhci instead of UHCI/EHCI; virtio-gpu or QXL \
                 instead of a VGA framebuffer the guest polls",
            )
            .libvirt("<driver ioeventfd='on'/> on virtio devices; <controller type='usb' model='qemu-xhci'/>")
            .guest("find the driver touching it (guest perf/ETW on the exiting rip)")
            .advice(&["advice.paravirtual-device"])
            .done(),
        ],
        effect: "the device's MMIO exits disappear or stay in the kernel (no userspace round trip)".into(),
        ..Words::default()
    }
}
