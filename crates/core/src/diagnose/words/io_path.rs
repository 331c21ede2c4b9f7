//! The words of the IO-path findings (`irq.delivery-exits`, `io.notify-exits`, `io.polling`):
//! interrupt delivery that exits and its fixes (the in-kernel irqchip, APIC virtualization and
//! posted interrupts, no inhibitors, or polling with its CPU cost), notifications per IO and
//! what suppresses them (EVENT_IDX, an iothread that polls, vhost-user-blk), and polled
//! completions — for Linux and Windows guests.

use super::apic;
use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::model::{Fix, ForGuest};

/// The catalogue prose of `io.notify-exits`.
pub(super) const NOTIFY_EXITS: Description = Description {
    title: "queue notifications exit on the IO path: doorbell writes cost exits per IO",
    meaning: "A queue notification (virtio kick, NVMe doorbell) is a write that exits. Drivers batch \
                      requests per notification and devices suppress notifications while they are busy \
                      (virtio EVENT_IDX, an iothread or vhost back end that polls), so at any queue depth \
                      above one it should be well under one per IO.",
    sources: &[
        VIRTIO_SPEC,
        QEMU_IOTHREAD,
        LIBVIRT_IOTHREADS,
        QEMU_VHOST_USER_BLK,
    ],
};

/// The catalogue prose of `io.polling`.
pub(super) const POLLING: Description = Description {
    title: "completions are polled: no interrupt delivery on the IO path, a spinning vCPU instead",
    meaning: "IO goes on while no interrupt is delivered and the guest never halts: the driver polls \
                      its completion queues (NVMe poll queues with io_uring IOPOLL, virtio-blk poll queues, \
                      SPDK/DPDK). That removes the interrupt-delivery exits at the price of CPU: at low \
                      queue depth the vCPU spins for the device's whole latency.",
    sources: &[
        IO_URING_IOPOLL,
        NVME_POLL_QUEUES,
        VIRTIO_BLK_POLL,
        SNIA_10M_IOPS,
    ],
};

/// The catalogue prose of `irq.delivery-exits`.
pub(super) const DELIVERY_EXITS: Description = Description {
    title: "interrupt delivery exits on the IO path: EOIs and interrupt windows cost exits per IO",
    meaning: "Each completion interrupt costs exits when APIC virtualization is not in effect: one to \
                      inject it into a vCPU that runs with interrupts off (an interrupt window) or to kick it, \
                      and one for the guest's EOI. APICv with posted interrupts (Intel) or AVIC (AMD) deliver \
                      both without exits; a local APIC emulated in the VMM adds a return to it for each.",
    sources: &[SNIA_10M_IOPS, ELI_2012, KVM_APICV_PARAMS, KVM_API_DOC],
};

/// The words of `io.polling`.
pub(super) fn polling() -> Words {
    Words {
                cause: "Completions arrive without interrupts and the guest does not halt between them: it polls. \
                        No injection, no EOI, no interrupt window is paid per IO; the vCPU spins instead, which at \
                        queue depth 1 costs it the device's whole latency per IO and at high queue depth little."
                    .into(),
                fixes: vec![
                    F::new(
                        ForGuest::Linux,
                        "keep polling for the latency-critical, high-IOPS queues; at low queue depth or with few \
                         vCPUs, take interrupts again",
                    )
                    .guest(
                        "nvme.poll_queues=0 (or virtio_blk.poll_queues=0), and io_uring without \
                         IORING_SETUP_IOPOLL (fio without --hipri)",
                    )
                    .done(),
                ],
                effect: "none to remove: this is where the interrupt cost went (to the vCPU's spinning)".into(),
                ..Words::default()
            }
}

pub(super) fn delivery(w: &W<'_>) -> Words {
    let why = if w.has(Hint::UserspaceIrqchip) {
        "The local APIC is emulated in the VMM (no in-kernel irqchip: QEMU's kernel_irqchip=off, or a VMM \
         that injects with KVM_INTERRUPT): every EOI and every halt return to the VMM, and an interrupt that \
         comes while the guest has interrupts off waits for an interrupt-window exit."
    } else if w.has(Hint::ApicvOff) {
        "APIC virtualization is off on this host: each EOI exits, and injecting an interrupt into a running \
         vCPU takes a kick or an interrupt window."
    } else {
        "APIC virtualization is not in effect — off, absent, or inhibited (APICv with posted interrupts on \
         Intel, AVIC on AMD): each completion interrupt costs an exit to get into the vCPU (a kick, or an \
         interrupt window) and another for the guest's EOI; with it, both happen without exits."
    };
    let pvm = if w.has(Hint::PvmBackend) {
        " (This capture comes from a PVM backend, where guest ring-0 code is emulated: the counts per IO \
         hold, the times are the emulator's.)"
    } else {
        ""
    };
    let mut fixes = Vec::new();
    if w.has(Hint::UserspaceIrqchip) {
        fixes.push(
            F::new(
                ForGuest::Any,
                "let KVM emulate the local APIC (the in-kernel irqchip)",
            )
            .qemu("-machine …,kernel_irqchip=on (or split; QEMU's default is on)")
            .libvirt("<features><ioapic driver='kvm'/></features> (libvirt's default)")
            .done(),
        );
    }
    fixes.push(
        F::new(
            ForGuest::Any,
            "turn on APIC virtualization with posted interrupts, and keep it uninhibited",
        )
        .host(
            "kvm_intel enable_apicv=1 (posted interrupts need a CPU with them) / kvm_amd avic=1; for \
             assigned devices, interrupt remapping (intel_iommu=on / amd_iommu=on) so device interrupts \
             are posted to running vCPUs",
        )
        .advice(&["advice.apicv-enable"])
        .done(),
    );
    if w.has(Hint::Amd) {
        fixes.push(apic::pit_discard());
    }
    fixes.extend(w.fixes_by_guest(|g| match g {
        ForGuest::Windows => vec![apic::hv_avic(w)],
        _ => vec![poll_fix()],
    }));
    Words {
        cause: format!("{why}{pvm}"),
        fixes,
        effect: "with posted interrupts and virtual EOIs, the interrupt-delivery exits of each IO go away; \
                 polling removes them too, for a vCPU's CPU at low queue depth"
            .into(),
        confirm: Some(
            "check `/sys/module/kvm_intel/parameters/enable_apicv` (or kvm_amd's `avic`), trace \
             `kvm:kvm_apicv_inhibit_changed`, and compare the delivery modes on this host with \
             `virtlens lab --io-path`"
                .into(),
        ),
        ..Words::default()
    }
}

/// Polling instead of interrupts, with its cost.
fn poll_fix() -> Fix {
    F::new(
        ForGuest::Linux,
        "or poll for completions instead of taking interrupts: no delivery exits, but a vCPU spins while \
         IO is outstanding (at queue depth 1, for the device's whole latency)",
    )
    .guest(
        "NVMe: nvme.poll_queues=N and io_uring with IORING_SETUP_IOPOLL (fio --hipri); virtio-blk \
         (Linux 5.19+): virtio_blk.poll_queues=N",
    )
    .done()
}

pub(super) fn notify(w: &W<'_>) -> Words {
    let to_vmm = if w.has(Hint::Userspace) {
        " Here they return to the VMM: the device has no ioeventfd, so the VMM's main loop (QEMU's) takes \
         each one."
    } else {
        ""
    };
    let mut fixes = vec![
        F::new(
            ForGuest::Any,
            "let the device suppress notifications while it is busy (virtio EVENT_IDX, on by default)",
        )
        .qemu("-device virtio-blk-pci,…,event_idx=on")
        .libvirt("<disk …><driver name='qemu' event_idx='on'/></disk>")
        .done(),
        F::new(
            ForGuest::Any,
            "serve the disk from an iothread that polls its queues before it blocks: notifications stay \
             off while it polls",
        )
        .qemu("-object iothread,id=io1,poll-max-ns=32768 -device virtio-blk-pci,…,iothread=io1")
        .libvirt(
            "<iothreads>1</iothreads><iothreadids><iothread id='1'><poll max='32768'/></iothread></iothreadids> \
             and <disk …><driver name='qemu' iothread='1'/></disk>",
        )
        .done(),
        F::new(
            ForGuest::Any,
            "or move the data path out of QEMU: a vhost-user-blk back end (qemu-storage-daemon, SPDK) polls \
             the rings itself",
        )
        .qemu("-chardev socket,id=vub,path=/run/vub.sock -device vhost-user-blk-pci,chardev=vub")
        .libvirt("<disk type='vhostuser' device='disk'><source type='unix' path='/run/vub.sock'/><target dev='vda' bus='virtio'/></disk>")
        .done(),
    ];
    if w.has(Hint::Userspace) {
        fixes.insert(
            0,
            F::new(
                ForGuest::Any,
                "catch the notifications in the kernel (ioeventfd)",
            )
            .qemu("-device virtio-blk-pci,…,ioeventfd=on")
            .libvirt("<disk …><driver name='qemu' ioeventfd='on'/></disk>")
            .done(),
        );
    }
    let how_often = if w.has(Hint::NotifyEveryIo) {
        "The guest writes a doorbell for every IO or nearly: queue depth 1–2 leaves nothing to batch, and \
         nothing suppresses the notifications while the device works."
    } else {
        "Each of the guest's doorbell writes exits: requests are batched per notification, but nothing \
         suppresses the notifications while the device works."
    };
    Words {
        cause: format!("{how_often}{to_vmm}"),
        fixes,
        effect: "fewer notification exits per IO: a busy device takes many IOs per notification"
            .into(),
        ..Words::default()
    }
}
