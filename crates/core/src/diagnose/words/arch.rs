//! The words of `arch.*`: exits of KVM on arm64 and RISC-V — guest aborts, trapped system
//! registers, firmware calls.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::decode::Isa;
use crate::diagnose::hypotheses::{ArchRule, Hint};
use crate::diagnose::model::ForGuest;

pub(super) fn describe(id: ArchRule) -> Description {
    match id {
        ArchRule::GuestAbort => Description {
            title: "guest aborts lead the exit handling: emulated MMIO or stage-2 faults",
            meaning: "A data or instruction abort from the guest (arm64 DABT_LOW/IABT_LOW, RISC-V guest page \
                      faults) is either an access to an emulated device's registers, which KVM or QEMU \
                      emulates, or a fault on guest memory the host has not mapped yet.",
            sources: &[PERF_KVM_ARM64, QEMU_ARM_VIRT, HUGETLB_DOC],
        },
        ArchRule::SystemRegister => Description {
            title: "trapped system registers lead the exit handling",
            meaning: "The guest reads or writes system registers that trap to KVM (arm64 SYS64, AArch32 \
                      CP15/CP14): PMU, debug, timer or ID registers, or cache maintenance by set/way.",
            sources: &[PERF_KVM_ARM64, QEMU_ARM_CPU_FEATURES],
        },
        ArchRule::FirmwareCall => Description {
            title: "firmware calls lead the exit handling",
            meaning: "Hypercalls to the firmware interface KVM implements (arm64 HVC/SMC: PSCI, SMCCC, PTP; \
                      RISC-V SBI ecalls: timer, IPIs, remote fences) dominate the exits.",
            sources: &[KVM_ARM_HYPERCALLS, RISCV_SBI_SPEC],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: ArchRule) -> Words {
    let riscv = w.ev.isa() == Some(Isa::Riscv);
    match id {
        ArchRule::GuestAbort => abort(w, riscv),
        ArchRule::SystemRegister => Words {
            cause: "The guest keeps touching system registers that KVM traps. Which one decides the fix: \
                    PMU registers when the guest profiles itself (perf in the guest), debug registers on \
                    older kernels (switched on every entry), the physical timer instead of the virtual one, \
                    or cache maintenance by set/way, which KVM must emulate."
                .into(),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "find the register: trace kvm:kvm_sys_access (it prints the register's encoding) and \
                     remove what drives it",
                )
                .host("trace-cmd record -e kvm:kvm_sys_access -e kvm:kvm_handle_sys_reg")
                .done(),
                F::new(
                    ForGuest::Any,
                    "when it is the PMU and the guest needs no performance counters, hide them",
                )
                .qemu("-cpu host,pmu=off")
                .libvirt("<features><pmu state='off'/></features>")
                .done(),
            ],
            effect: "the register's traps stop or become rare".into(),
            ..Words::default()
        },
        ArchRule::FirmwareCall => Words {
            cause: if riscv {
                "The guest kernel calls the SBI at a high rate. Without the Sstc extension every timer \
                 programming is an SBI call (SBI_EXT_TIME), and IPIs and remote fences without an IMSIC/AIA \
                 are SBI calls too."
                    .into()
            } else {
                "The guest makes HVC/SMC calls at a high rate: PSCI (CPU on/off and suspend), SMCCC \
                 services, or a clock read through the KVM PTP service on every read."
                    .into()
            },
            fixes: vec![if riscv {
                F::new(
                    ForGuest::Any,
                    "give the guest the Sstc extension (it programs its timer directly) and an AIA/IMSIC \
                     for interrupts",
                )
                .qemu("-cpu rv64,sstc=true (with a host CPU and kernel that have Sstc)")
                .done()
            } else {
                F::new(
                    ForGuest::Any,
                    "find the call: trace kvm:kvm_hvc_arm64 (it prints the function id in r0) and remove \
                     what drives it",
                )
                .host("trace-cmd record -e kvm:kvm_hvc_arm64")
                .done()
            }],
            effect: "the calls stop or become rare".into(),
            ..Words::default()
        },
    }
}

fn abort(w: &W<'_>, riscv: bool) -> Words {
    let (data, code) = if riscv {
        (
            "load/store guest page faults",
            "instruction guest page faults",
        )
    } else {
        ("data aborts (DABT_LOW)", "instruction aborts (IABT_LOW)")
    };
    let faults = w.has(Hint::StageTwoFaults);
    let cause = if faults {
        format!(
            "Most {data} were faults on guest memory, not device accesses (KVM's MMIO events are far fewer): \
             the host maps guest memory on first touch and again after it unmapped it (swap, migration, \
             dirty logging, memory pressure). {code} are the same for code."
        )
    } else if w.has(Hint::Aggregate) {
        format!(
            "Without the MMIO events this is a reading: {data} are emulated device accesses (each a trip to \
             KVM or to QEMU) or faults on guest memory the host maps on first touch; {code} are always the \
             latter."
        )
    } else {
        format!(
            "The {data} are mostly emulated device accesses: each is a trip to KVM's in-kernel device (the \
             GIC distributor) or to QEMU's emulation (virtio-mmio notifications without ioeventfd, a UART, \
             a polled device)."
        )
    };
    let mut fixes = vec![
        F::new(
            ForGuest::Any,
            "find the device: trace the MMIO accesses with their addresses and match them to the machine's \
             memory map",
        )
        .host("trace-cmd record -e kvm:kvm_mmio -e kvm:kvm_guest_fault; QEMU `info mtree` names the regions")
        .done(),
        F::new(
            ForGuest::Any,
            "for virtio devices, notify through an eventfd so KVM completes the access in the kernel",
        )
        .qemu("-device virtio-…-pci,ioeventfd=on (or virtio-mmio with ioeventfd)")
        .libvirt("<driver ioeventfd='on'/> on virtio devices")
        .done(),
    ];
    if faults || w.has(Hint::Aggregate) {
        fixes.push(
            F::new(
                ForGuest::Any,
                "back guest memory with huge pages so the host maps it in fewer, larger faults",
            )
            .qemu("-object memory-backend-file,mem-path=/dev/hugepages,… (or -mem-path /dev/hugepages)")
            .libvirt("<memoryBacking><hugepages/></memoryBacking>")
            .done(),
        );
    }
    Words {
        cause,
        fixes,
        effect: "the aborts stay in the kernel or stop: fewer trips to QEMU, fewer faults".into(),
        confirm: Some(
            "count kvm:kvm_mmio against the aborts over the same run: mostly MMIO means a device, \
             mostly not means memory faults"
                .into(),
        ),
        ..Words::default()
    }
}
