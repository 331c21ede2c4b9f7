//! The words of `hypercall.*`: hypercalls leading the exit handling.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::HypercallRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: HypercallRule) -> Description {
    match id {
        HypercallRule::Storm => Description {
            title: "hypercalls lead the exit handling",
            meaning: "VMCALL/VMMCALL exits dominate: Hyper-V hypercalls (Windows: TLB flushes, IPIs, \
                      long-spin notifications) or KVM hypercalls (Linux: PV IPIs, kicks).",
            sources: &[QEMU_HYPERV, KVM_CPUID_DOC],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: HypercallRule) -> Words {
    match id {
        HypercallRule::Storm => Words {
            cause: w.by_guest(|g| match g {
                ForGuest::Windows => "Windows calls the Hyper-V interface for TLB flushes, IPIs and long spin \
                                      waits: normal in small numbers, a cost when it leads — often spinlock \
                                      notifications (hv-spinlocks too low) or flushes under memory churn."
                    .into(),
                _ => "Linux makes KVM hypercalls for PV IPIs, PV spinlock kicks and sched_yield: when they lead, \
                      vCPUs wake each other constantly (lock hand-offs, IPIs)."
                    .into(),
            }),
            fixes: vec![F::new(
                ForGuest::Any,
                "trace which hypercall it is (`trace-cmd record -e kvm:kvm_hypercall -e kvm:kvm_hv_hypercall`) \
                 and treat its cause: lock contention, overcommit, TLB-flush storms",
            )
            .done()],
            effect: "fewer hypercall exits once their cause is treated".into(),
            ..Words::default()
        },
    }
}
