//! The words of `irq.*`: host interrupts arriving while vCPUs run, and interrupt delivery
//! that exits on the IO path (its prose is with the IO path's, `io_path`).

use super::fixes::F;
use super::io_path;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::hypotheses::IrqRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: IrqRule) -> Description {
    match id {
        IrqRule::HostInterrupts => Description {
            title: "host interrupts hit the vCPUs' CPUs above a host tick's rate",
            meaning: "External-interrupt exits at more than a host timer tick per vCPU: the host's device \
                      interrupts (NICs, NVMe) or IPIs land on the CPUs the vCPUs run on, and each one kicks \
                      the guest out.",
            sources: &[PERF_KVM, HALT_POLL_DOC],
        },
        IrqRule::External => Description {
            title: "host interrupts arrive while vCPUs run",
            meaning: "External-interrupt exits are host interrupts arriving while a vCPU runs: the host \
                      timer, device interrupts, IPIs that kick the vCPU. The normal floor of a busy guest; a \
                      cost only when host interrupts land on the vCPUs' cores.",
            sources: &[PERF_KVM, KVM_FORUM_2021],
        },
        IrqRule::DeliveryExits => io_path::DELIVERY_EXITS,
    }
}

pub(super) fn write(w: &W<'_>, id: IrqRule) -> Words {
    match id {
        IrqRule::HostInterrupts => Words {
            title: w.has(Hint::Aggregate).then(|| {
                "host interrupts are nearly all of a busy guest's exits".to_string()
            }),
            cause: if w.has(Hint::Aggregate) {
                "Nearly every exit of a guest that is not idle is a host interrupt arriving while it runs: \
                 without a rate the tool cannot tell a host tick from device interrupts, but a vCPU kicked \
                 out by little else is where host interrupt placement is worth a look (the rate, with \
                 --window, tells: above a host tick per vCPU the host's devices or IPIs land on its CPU)."
                    .into()
            } else {
                "More host interrupts arrive on the vCPUs' CPUs than a host timer tick explains: the \
                 host's device interrupts (network, storage) or its IPIs are routed to the cores the vCPUs \
                 run on, and every one is an exit and a delay for the guest."
                    .into()
            },
            fixes: vec![F::new(ForGuest::Any, "move host interrupts off the vCPUs' cores")
                .host(
                    "find where device interrupts go (/proc/interrupts), pin the vCPUs to other cores \
                     (libvirt <cputune><vcpupin …/>), set irqaffinity= / IRQ smp_affinity away from them, \
                     and keep housekeeping off them (isolcpus/nohz_full where fitting)",
                )
                .libvirt("<cputune><vcpupin vcpu='0' cpuset='2'/>…<emulatorpin cpuset='0-1'/></cputune>")
                .advice(&["advice.pin-vcpus"])
                .done()],
            effect: "the external-interrupt exits fall to the host tick's rate".into(),
            ..Words::default()
        },
        IrqRule::External => Words {
            cause: "An external-interrupt exit is a host interrupt arriving while the vCPU runs: the host's \
                    timer tick, device interrupts, and IPIs that kick the vCPU (wake-ups, TLB shootdowns). \
                    They are the normal floor of a busy or interrupt-heavy guest; they become a cost when host \
                    devices' interrupts and housekeeping land on the vCPUs' cores."
                .into(),
            fixes: vec![F::new(ForGuest::Any, "keep host interrupts off the vCPUs' cores when they matter")
                .host(
                    "pin vCPUs to dedicated cores (libvirt <cputune><vcpupin vcpu='0' cpuset='2'/>…) and keep \
                     host IRQs and housekeeping elsewhere (irqaffinity=, nohz_full=, irqbalance banned CPUs); \
                     passthrough devices with posted interrupts deliver without exits",
                )
                .advice(&["advice.pin-vcpus"])
                .done()],
            effect: "fewer exits from host noise; nothing to gain when the interrupts are the guest's own IPIs \
                     and timers"
                .into(),
            ..Words::default()
        },
        IrqRule::DeliveryExits => io_path::delivery(w),
    }
}
