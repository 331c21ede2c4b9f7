//! The words of `mmu.*` and `spin.*`: fault storms, EPT violations, intercepted guest page
//! faults, a hung vCPU spinning, and pause-loop exits from lock-holder preemption.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::hypotheses::MmuRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: MmuRule) -> Description {
    match id {
        MmuRule::FaultStorm => Description {
            title: "a storm of one fault: the guest keeps faulting and makes no progress",
            meaning: "Nearly every exit is the same fault at a rate no working guest sustains: the fault is \
                      not being resolved (a host mm bug, an SEV-SNP page-state problem).",
            sources: &[AKPM_2012, PERF_KVM],
        },
        MmuRule::EptViolation => Description {
            title: "guest memory is being faulted in: EPT violations / NPFs are a large part of the cost",
            meaning: "The guest touches memory KVM has not mapped yet: after boot or migration, memory the \
                      host reclaimed or swapped (ballooning, KSM, THP splits), or dirty tracking.",
            sources: &[SENOZHATSKY_2021, PERF_KVM],
        },
        MmuRule::GuestPageFaults => Description {
            title: "guest page faults are intercepted by the host",
            meaning: "EXCEPTION_NMI/#PF exits (or kvm_stat's pf_guest) at a high rate: with EPT/NPT a guest \
                      takes its own page faults without exits, so these mean shadow paging (ept=0/npt=0), an \
                      intercept KVM needs, or a fault that does not resolve.",
            sources: &[AKPM_2012, KVM_TIMEKEEPING],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: MmuRule) -> Words {
    match id {
        MmuRule::FaultStorm => Words {
            cause: format!(
                "Nearly every exit is the same fault: the guest faults on memory again and again without the \
                 fault being resolved. A known case: a host mm bug left a guest unable to fault in its first \
                 page (EXCEPTION_NMI/#PF at 330k/s, fixed by reverting cf9b81d47a89).{}",
                if w.has(Hint::Sev) {
                    " On AMD SEV-SNP guests NPF storms come from page-state changes or VMPL activity (the \
                     exits' rip reads 0 because the guest state is encrypted)."
                } else {
                    ""
                }
            ),
            fixes: vec![
                F::new(ForGuest::Any, "find the faulting address and what keeps it from being mapped")
                    .host(
                        "trace the faults (`perf record -e kvm:kvm_page_fault -e kvm:kvm_exit`: the GPA and \
                         error code), check the host kernel against known KVM/mm fixes; on SEV-SNP check the \
                         host and guest page-state-change support",
                    )
                    .guest("look at the guest's state (console, crash dump) where it is not encrypted")
                    .done(),
            ],
            effect: "once the fault is resolved the exit rate falls to normal and the guest runs".into(),
            confirm: (w.h.confidence != crate::diagnose::model::Confidence::Confirmed).then(|| {
                "capture a few seconds more to see that the storm lasts".to_string()
            }),
            ..Words::default()
        },
        MmuRule::EptViolation => Words {
            cause: format!(
                "An EPT violation (NPF on AMD) is the guest touching memory KVM has not mapped yet: the first \
                 touch after boot or live migration, memory the host reclaimed or swapped (ballooning, KSM, \
                 THP splits), or dirty tracking.{}",
                if w.has(Hint::Amd) {
                    " On AMD, NPF exits also carry emulated MMIO: `perf kvm stat report --event=mmio` tells \
                     them apart."
                } else {
                    ""
                }
            ),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "back the guest with preallocated huge pages and keep the host from reclaiming its memory",
                )
                .qemu(
                    "-object memory-backend-file,id=mem,size=…,mem-path=/dev/hugepages,prealloc=on \
                     -machine memory-backend=mem",
                )
                .libvirt("<memoryBacking><hugepages/><allocation mode='immediate'/></memoryBacking>")
                .host("no swap or memory overcommit for this VM; KSM off if it keeps merging its pages")
                .advice(&["advice.hugepages"])
                .done(),
            ],
            effect: "one fault per 2 MiB/1 GiB page instead of per 4 KiB page, none after preallocation".into(),
            ..Words::default()
        },
        MmuRule::GuestPageFaults => Words {
            cause: "The host intercepts the guest's own page faults: with EPT/NPT the guest handles them \
                    without exits, so at this rate the host runs shadow paging (kvm_intel ept=0 / kvm_amd \
                    npt=0, or a nested setup without EPT for L1), or a fault keeps coming back unresolved."
                .into(),
            fixes: vec![
                F::new(ForGuest::Any, "let the hardware handle guest page faults (EPT/NPT)")
                    .host(
                        "check /sys/module/kvm_intel/parameters/ept (or kvm_amd/parameters/npt) is Y; with a \
                         nested host, give L1 EPT/NPT",
                    )
                    .advice(&["advice.ept-enable"])
                    .done(),
            ],
            effect: "the guest's page faults stop exiting".into(),
            ..Words::default()
        },
    }
}
