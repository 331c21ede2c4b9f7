//! The words of `io.*` and `mmio.*`: the serial console, legacy virtio notifications, acpi_idle's
//! port reads, any other hot port, and emulated MMIO devices.

use super::fixes::F;
use super::io_path;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::hypotheses::IoRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: IoRule) -> Description {
    match id {
        IoRule::SerialPioStorm => Description {
            title: "the guest talks to the emulated 8250 serial port byte by byte",
            meaning: "Every byte written to THR (0x3f8) and every poll of the line status register (0x3fd) \
                      is an exit and a round trip to QEMU: a console logging to ttyS0 or a serial loop.",
            sources: &[TGLX_SERIAL, KVM_TIMEKEEPING],
        },
        IoRule::VirtioLegacyPioNotify => Description {
            title: "legacy virtio-pci devices notify their queues through port IO",
            meaning: "A port in the PCI IO range at BAR offset 0x10 is legacy virtio-pci's QUEUE_NOTIFY: the \
                      driver writes it for every batch of requests, each a PIO exit; modern virtio notifies \
                      through MMIO that KVM completes in the kernel.",
            sources: &[MFLEMING_2017, VIRTIO_SPEC, LIBVIRT_VIRTIO_MODELS],
        },
        IoRule::AcpiIdlePort => Description {
            title: "the guest idles through acpi_idle: C-state entry reads ACPI ports, each an exit",
            meaning: "acpi_idle enters C2/C3 by reading the P_LVLx port and then does a dummy PM-timer read \
                      (a chipset wait) — both trap in a VM, on every idle entry.",
            sources: &[ACPI_IDLE_CODE, GUEST_HALT_POLL_DOC],
        },
        IoRule::EmulatedPort => Description {
            title: "an emulated device's port is a hot exit",
            meaning: "Every IN/OUT to the port exits; unless KVM emulates the device in the kernel (PIC, PIT, \
                      ioeventfd) the access goes to QEMU and back.",
            sources: &[PERF_KVM, KVM_TIMEKEEPING],
        },
        IoRule::NotifyExits => io_path::NOTIFY_EXITS,
        IoRule::Polling => io_path::POLLING,
    }
}

pub(super) fn write(w: &W<'_>, id: IoRule) -> Words {
    match id {
        IoRule::SerialPioStorm => Words {
            cause: "The 8250 UART is emulated in QEMU: every byte written to THR and every poll of the line \
                    status register is an exit and a round trip to userspace, plus IRQ-line updates. A \
                    guest logging to a serial console (console=ttyS0 at a high log level) or spinning in a \
                    serial loop turns this into a storm."
                .into(),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "move bulk output to virtio-console and fix the guest's serial loop (do not tune the \
                     IRQ-storm detector)",
                )
                .qemu("-device virtio-serial-pci -device virtconsole,chardev=con0")
                .libvirt("<console type='pty'><target type='virtio' port='0'/></console>")
                .guest("log less to the serial console (loglevel=, quiet); use hvc0 (virtio-console) for bulk output")
                .advice(&["advice.virtio-console"])
                .done(),
            ],
            effect: "no exit per byte: virtio-console moves output through a ring with one notification per batch"
                .into(),
            ..Words::default()
        },
        IoRule::VirtioLegacyPioNotify => virtio(w),
        IoRule::AcpiIdlePort => Words {
            cause: "Reads of the ACPI P_LVLx ports (PMBASE+0x14/0x15) with PM-timer reads beside them: \
                    acpi_idle enters a C-state through the port and then reads the PM timer as a chipset \
                    wait. In a VM both are exits to QEMU, on every idle entry."
                .into(),
            fixes: vec![
                F::new(ForGuest::Linux, "idle without the ACPI C-state ports")
                    .guest(
                        "use the cpuidle-haltpoll driver (CONFIG_HALTPOLL_CPUIDLE, cpuidle_haltpoll.force=1) \
                         or boot with idle=halt; check /sys/devices/system/cpu/cpuidle/current_driver",
                    )
                    .qemu("-cpu …,kvm-poll-control=on")
                    .libvirt("<features><kvm><poll-control state='on'/></kvm></features>")
                    .advice(&["advice.guest-haltpoll"])
                    .done(),
            ],
            effect: "idle entry becomes a HLT (or a poll) without port exits".into(),
            ..Words::default()
        },
        IoRule::EmulatedPort if w.has(Hint::Aggregate) => Words {
            title: Some("port IO exits to an emulated device: every access goes to the VMM".into()),
            cause: format!(
                "Without port detail the device is unknown: these exits are port accesses of some \
                 emulated device, each a round trip to the VMM. {}",
                w.by_guest(|g| match g {
                    ForGuest::Windows => "On Windows the usual ones are the RTC (the tick, without \
                                          hv-stimer) and the ACPI PM timer (the clock, without hv-time)."
                        .into(),
                    _ => "The usual ones are a serial console (0x3f8–0x3fd), legacy virtio-pci \
                          notifications (a port of a PCI IO BAR, 0xc000 and up), the ACPI PM timer \
                          (clocksource acpi_pm), the RTC, PS/2 (0x60/0x64) and PCI configuration \
                          (0xcf8/0xcfc)."
                        .into(),
                })
            ),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "name the port first (the check), then replace the device it belongs to with a \
                     paravirtual or in-kernel one",
                )
                .done(),
            ],
            effect: "the port's exits disappear with the device access".into(),
            ..Words::default()
        },
        IoRule::EmulatedPort => Words {
            title: w.h.evidence.first().map(|f| {
                format!(
                    "port {}{} is a hot exit",
                    f.key,
                    f.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
                )
            }),
            cause: "Every IN/OUT to this port exits; unless KVM emulates the device in the kernel (PIC, PIT, \
                    ioeventfd) the access goes to QEMU and back."
                .into(),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "find what the guest uses this device for (virtlens diagnose --mtree FILE names the \
                     region) and replace it with a paravirtual or in-kernel device; port 0x80 writes are \
                     Linux's io_delay (guest: io_delay=none)",
                )
                .done(),
            ],
            effect: "the port's exits disappear with the device access".into(),
            ..Words::default()
        },
        IoRule::NotifyExits => io_path::notify(w),
        IoRule::Polling => io_path::polling(),
    }
}

fn virtio(w: &W<'_>) -> Words {
    let reading = if w.has(Hint::Aggregate) {
        "Without port detail this is a reading, not a certainty: the usual source of steady port IO on a \
         server guest is legacy virtio-pci queue notification; the competing readings are the ACPI PM timer, \
         the RTC and a serial console. "
    } else {
        ""
    };
    let slow = if w.has(Hint::Userspace) {
        " At tens of µs per notification these go through userspace: ioeventfd is off or not available."
    } else {
        ""
    };
    Words {
        cause: format!(
            "{reading}Legacy (virtio 0.9) virtio-pci devices notify through a port of their IO BAR \
             (QUEUE_NOTIFY): the driver's vp_notify does an iowrite16 for every batch of requests \
             (virtio-blk, virtio-net, virtio-rng), and every one is a PIO exit.{slow}"
        ),
        fixes: vec![
            F::new(
                ForGuest::Any,
                "use modern (virtio 1.0) devices, whose notifications are MMIO writes KVM completes in the \
                 kernel through ioeventfd",
            )
            .qemu("-device virtio-blk-pci,disable-legacy=on,ioeventfd=on (same for virtio-net-pci, virtio-rng-pci)")
            .libvirt(
                "<disk … model='virtio-non-transitional'><driver name='qemu' ioeventfd='on'/>…</disk> (libvirt \
                 ≥ 5.2; likewise for <interface>, <rng>)",
            )
            .guest("a guest kernel with modern virtio drivers (Linux ≥ 4.0; virtio-win on Windows)")
            .advice(&["advice.virtio-modern"])
            .done(),
        ],
        effect: "each notification becomes an in-kernel ioeventfd signal instead of a PIO exit to QEMU"
            .into(),
        confirm: (w.h.confidence != crate::diagnose::model::Confidence::Confirmed && !w.has(Hint::Aggregate))
            .then(|| {
                "name the port's device from QEMU's `info mtree` (virtlens diagnose --mtree FILE): a \
                 virtio-pci region confirms it"
                    .to_string()
            }),
        ..Words::default()
    }
}
