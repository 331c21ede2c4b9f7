//! The words of `nested.*`: an L1 hypervisor's exits (enlightened VMCS for Hyper-V on Intel,
//! shadow VMCS, a host kernel with mature nested SVM) and the nested-SVM SMM bug.

use super::fixes::{F, hv_fix};
use super::sources::*;
use super::{Description, W, Words};
use crate::config::HvFlag;
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::hypotheses::NestedRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: NestedRule) -> Description {
    match id {
        NestedRule::L1Hypervisor => Description {
            title: "the guest is itself a hypervisor: its VMX/SVM instructions exit to the host",
            meaning: "VMREAD/VMWRITE/VMRESUME/VMLAUNCH/INVEPT (Intel) or vmrun/vmload/vmsave/stgi/clgi (AMD) \
                      exits, or kvm_nested_* events: an L1 hypervisor (Hyper-V role, WSL2, VBS, KVM) runs its \
                      own guests, and every L2 exit costs L1 exits. Not an L2-style problem: the levers are \
                      enlightened VMCS, shadow VMCS and the host kernel's nested support.",
            sources: &[
                KVM_NESTED_DOC,
                NESTED_VMX_DOC,
                EVMCS,
                NESTED_SVM_STATE,
                QEMU_HYPERV,
            ],
        },
        NestedRule::RsmGp => Description {
            title: "RSM exits followed by #GP: the nested-SVM SMM state bug",
            meaning: "On nested SVM, returning from SMM lost L1 state and the guest then takes #GP: seen \
                      booting Windows Server 2016 with the Hyper-V role.",
            sources: &[VITALY_RSM],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: NestedRule) -> Words {
    match id {
        NestedRule::L1Hypervisor => l1(w),
        NestedRule::RsmGp => Words {
            cause: "On nested SVM, returning from SMM (RSM) lost L1 state because of the VMCB split, and the \
                    guest then takes #GP: seen booting Windows Server 2016 with the Hyper-V role."
                .into(),
            fixes: vec![
                F::new(ForGuest::Any, "use a host kernel with the fix that keeps L1 state across SMM (2021)")
                    .host("a host kernel from 5.14 on (or one with the nSVM SMM fix backported)")
                    .advice(&["advice.host-kernel"])
                    .done(),
            ],
            effect: "the nested guest boots".into(),
            confirm: Some("check that the guest runs a hypervisor (nested) and the host kernel predates mid-2021".into()),
            ..Words::default()
        },
    }
}

fn l1(w: &W<'_>) -> Words {
    let amd = w.has(Hint::Amd);
    let vendor = if amd {
        "On AMD, L1's vmrun/vmload/vmsave and clgi/stgi exit unless the CPU virtualizes them (VMCB \
         virtual VMLOAD/VMSAVE and vGIF, used by recent kernels)."
    } else {
        "On Intel, VMREAD/VMWRITE exit unless shadow VMCS is on (kvm_intel enable_shadow_vmcs, the \
         default where the CPU has it) or L1 uses the enlightened VMCS (Hyper-V)."
    };
    let old = if w.has(Hint::OldKernel) {
        " This host's kernel predates the 5.8 nested SVM rework: nested AMD guests were far less reliable \
         and not migratable before it."
    } else {
        ""
    };
    let mut fixes = Vec::new();
    if w.has(Hint::HypervL1) || !w.only(ForGuest::Linux) {
        if amd {
            fixes.push(
                F::new(
                    ForGuest::Windows,
                    "for a Hyper-V L1 on AMD: give it the Hyper-V enlightenments that work on AMD (hv-tlbflush \
                     direct; eVMCS is Intel-only) and a recent host kernel",
                )
                .qemu("-cpu …,hv-vpindex=on,hv-tlbflush=on,hv-tlbflush-direct=on")
                .libvirt("<tlbflush state='on'><direct state='on'/></tlbflush>")
                .advice(&["advice.nested-enlightenments"])
                .done(),
            );
        } else {
            fixes.push(hv_fix(
                w.ev,
                "for a Hyper-V L1 (Hyper-V role, WSL2, VBS) on Intel: turn on the enlightened VMCS, which \
                 replaces VMREAD/VMWRITE with memory accesses, and direct TLB flush",
                &[HvFlag::Vpindex, HvFlag::Evmcs, HvFlag::TlbflushDirect],
                &["advice.hv-evmcs"],
            ));
        }
    }
    fixes.push(
        F::new(ForGuest::Any, "run nested guests on a host that supports them well")
            .host(if amd {
                "kvm_amd nested=1 on a host kernel ≥ 5.8; check /sys/module/kvm_amd/parameters/nested"
            } else {
                "kvm_intel nested=1 and enable_shadow_vmcs=1 (check /sys/module/kvm_intel/parameters/); a recent host kernel"
            })
            .guest("if L1 need not be a hypervisor, turn the role off (Hyper-V, VBS/HVCI, WSL2) or do not pass vmx/svm to it")
            .advice(&["advice.nested-host"])
            .done(),
    );
    let reflected = if w.has(Hint::Reflected) {
        " The trace shows a nested vmexit beside the exits: they are the L2 guest's, taken while the vCPU \
         ran L2 — L0 handles each on L1's behalf or reflects it into L1, and a device or emulation exit \
         that L1 should have seen but L0 handled (or the reverse) is a nested-KVM bug, as in several \
         public reports."
    } else {
        ""
    };
    Words {
        cause: format!(
            "The guest runs its own guests: every exit of an L2 guest goes to L0 first and is reflected \
             into L1, whose handling executes VMX/SVM instructions that exit again. {vendor}{old}{reflected}"
        ),
        fixes,
        effect: "fewer L1 exits per L2 exit; the L2 guest's own exits remain".into(),
        ..Words::default()
    }
}
