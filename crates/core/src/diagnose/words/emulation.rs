//! The words of `emulation.*`: instructions KVM failed to emulate (the guest gets an exception
//! or stops) and heavy instruction emulation.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::EmulationRule;
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: EmulationRule) -> Description {
    match id {
        EmulationRule::Failed => Description {
            title: "KVM could not emulate a guest instruction: the guest gets an exception or stops",
            meaning: "KVM emulates an instruction when hardware cannot run it directly (an access to emulated \
                      MMIO, real mode, an intercepted fault). When emulation fails it injects an exception \
                      (#UD, #GP) or gives up with KVM_EXIT_INTERNAL_ERROR and the VM stops — a KVM limitation \
                      or bug, or guest state KVM does not expect (page tables with reserved bits, code in \
                      MMIO).",
            sources: &[KVM_API_DOC, KVM_TRACE_H, KVM_NESTED_DOC],
        },
        EmulationRule::Insn => Description {
            title: "KVM emulates guest instructions at a high rate",
            meaning: "Each emulated instruction is decoded and executed in software (an MMIO access, real-mode \
                      or big-real-mode code, an intercepted fault): microseconds each.",
            sources: &[KVM_TRACE_H, PERF_KVM],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: EmulationRule) -> Words {
    match id {
        EmulationRule::Failed => Words {
            cause: format!(
                "{}KVM tried to emulate an instruction and failed: it injected an exception into the guest \
                 or returned KVM_EXIT_INTERNAL_ERROR, which stops the VM. Known causes: an instruction KVM's \
                 emulator does not implement, code or descriptor tables in emulated MMIO, guest page tables \
                 with bits the guest's CPU model reserves (1 GiB pages without pdpe1gb), and nested cases \
                 where KVM refuses to emulate for L2.{}",
                if w.has(Hint::Aggregate) {
                    "An emulated instruction followed by an injected exception: "
                } else {
                    ""
                },
                if w.has(Hint::HypervL1) {
                    " The exits here are an L2 guest's (nested): a KVM nested-emulation bug is a likely cause."
                } else {
                    ""
                }
            ),
            fixes: vec![
                F::new(ForGuest::Any, "find the instruction and why KVM cannot emulate it")
                    .host(
                        "trace kvm:kvm_emulate_insn, kvm:kvm_inj_exception and kvm:kvm_exit (the rip and bytes); \
                         check the host kernel against KVM emulator and nested fixes; give the guest the CPU \
                         features its page tables use (-cpu …,+pdpe1gb)",
                    )
                    .advice(&["advice.host-kernel"])
                    .done(),
            ],
            effect: "the guest runs past the instruction".into(),
            ..Words::default()
        },
        EmulationRule::Insn => Words {
            cause: format!(
                "KVM emulates guest instructions in software at this rate: MMIO accesses it must decode, \
                 real-mode code, intercepted faults.{}",
                if w.has(Hint::PvmBackend) {
                    " On a PVM backend ring-0 guest code is always emulated: this is its normal mode, not a \
                     fault of the guest."
                } else {
                    ""
                }
            ),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "find what is emulated (trace kvm:kvm_emulate_insn) and avoid it: paravirtual devices \
                     instead of emulated MMIO, a guest that leaves real mode",
                )
                .done(),
            ],
            effect: "fewer emulated instructions".into(),
            ..Words::default()
        },
    }
}
