//! The words of `unknown.*`: exits virtlens cannot name, and a guest that triple-faulted.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::decode::Isa;
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::hypotheses::UnknownRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: UnknownRule) -> Description {
    match id {
        UnknownRule::ExitCodes => Description {
            title: "exits virtlens cannot name",
            meaning: "Exit codes no table knows (a newer CPU or kernel, another architecture): kept as numbers; \
                      no cause is derived from them.",
            sources: &[RISCV_PERF, PERF_KVM],
        },
        UnknownRule::TripleFault => Description {
            title: "the guest triple-faulted: KVM shut it down",
            meaning: "A fault while delivering a double fault: KVM reports KVM_EXIT_SHUTDOWN and QEMU resets or \
                      stops the guest. A crash, not an overhead; its cause is not in the exits.",
            sources: &[KVM_API_DOC, BAUER_2022],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: UnknownRule) -> Words {
    match id {
        UnknownRule::ExitCodes => unknown(w),
        UnknownRule::TripleFault => Words {
            cause: "A triple fault is a fault while delivering a double fault: the CPU gives up and KVM reports \
                    KVM_EXIT_SHUTDOWN, after which QEMU resets or stops the guest. The exits cannot say why; \
                    in a nested setup an L1 hypervisor bug is as likely as a guest bug."
                .into(),
            fixes: vec![F::new(ForGuest::Any, "find the faulting state before the shutdown")
                .guest(
                    "trace the last exits before it (kvm:kvm_exit with its info fields, kvm:kvm_inj_exception), \
                     or stop instead of resetting (QEMU -no-reboot / -action reboot=shutdown) and read the \
                     registers",
                )
                .done()],
            effect: "with the fault found and fixed the guest keeps running".into(),
            ..Words::default()
        },
    }
}

fn unknown(w: &W<'_>) -> Words {
    let (cause, fix) = if w.has(Hint::RiscV) && w.has(Hint::Unnamed) {
        (
            "The rows printed as UNKNOWN are exits the tool could not name: perf kvm stat on RISC-V printed \
             interrupt exits as UNKNOWN until commit 3b7270c76622 taught it the interrupt causes \
             (IRQ_S_TIMER, IRQ_VS_EXT, …).",
            "use a perf with 3b7270c76622 (\"RISC-V: perf/kvm: Add reporting of interrupt events\") to see which \
             interrupts they are",
        )
    } else if w.has(Hint::Unnamed) {
        (
            "Exit codes no table knows: a newer CPU or kernel than virtlens's tables, or another hypervisor's \
             codes read under the wrong ISA. They are kept as numbers; no rule can say what they cost.",
            match w.ev.isa() {
                Some(Isa::Arm64) => {
                    "check the host's exception classes (arch/arm64/include/asm/esr.h) and the capture's ISA"
                }
                Some(Isa::Riscv) => {
                    "check the host's trap causes (arch/riscv/include/asm/csr.h) and the capture's ISA"
                }
                _ => {
                    "check the host's exit-reason list (arch/x86/include/uapi/asm/vmx.h, svm.h) and the capture's ISA"
                }
            },
        )
    } else {
        (
            "Exit names of an architecture virtlens's rules do not cover (they know x86: VMX, SVM, PVM; arm64; \
             RISC-V); the \
             rows are reported, but no cause is derived from them.",
            "read the rows with the architecture's KVM documentation",
        )
    };
    Words {
        cause: cause.into(),
        fixes: vec![F::new(ForGuest::Any, fix).done()],
        effect: "named exits can be diagnosed".into(),
        confirm: w
            .has(Hint::RiscV)
            .then(|| "compare with the same run under a newer perf: the UNKNOWN rows turn into IRQ_* rows".into()),
        ..Words::default()
    }
}
