//! The words of `mmu.*` and `spin.*`: fault storms, EPT violations, intercepted guest page
//! faults, a hung vCPU spinning, and pause-loop exits from lock-holder preemption.

use super::fixes::F;
use super::overcommit;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::model::ForGuest;

pub fn describe(id: &str) -> Option<Description> {
    Some(match id {
        "mmu.fault-storm" => Description {
            title: "a storm of one fault: the guest keeps faulting and makes no progress",
            meaning: "Nearly every exit is the same fault at a rate no working guest sustains: the fault is \
                      not being resolved (a host mm bug, an SEV-SNP page-state problem).",
            sources: &[AKPM_2012, PERF_KVM],
        },
        "mmu.ept-violation" => Description {
            title: "guest memory is being faulted in: EPT violations / NPFs are a large part of the cost",
            meaning: "The guest touches memory KVM has not mapped yet: after boot or migration, memory the \
                      host reclaimed or swapped (ballooning, KSM, THP splits), or dirty tracking.",
            sources: &[SENOZHATSKY_2021, PERF_KVM],
        },
        "mmu.guest-page-faults" => Description {
            title: "guest page faults are intercepted by the host",
            meaning: "EXCEPTION_NMI/#PF exits (or kvm_stat's pf_guest) at a high rate: with EPT/NPT a guest \
                      takes its own page faults without exits, so these mean shadow paging (ept=0/npt=0), an \
                      intercept KVM needs, or a fault that does not resolve.",
            sources: &[AKPM_2012, KVM_TIMEKEEPING],
        },
        "spin.hung-vcpu" => Description {
            title: "the vCPU only runs guest code: nothing but host interrupts and pause-loop exits",
            meaning: "A vCPU that never halts, programs no timer and touches no device exits only for host \
                      interrupts and pause loops: compute-bound, or spinning in a loop (a guest hung or \
                      stuck early in boot). The exits cost nothing; whether the guest makes progress tells \
                      which.",
            sources: &[PERF_KVM, QEMU_HYPERV],
        },
        "spin.pv-lock-wait" => Description {
            title: "vCPUs wait on contended locks: spin, halt, and are kicked awake by hypercall",
            meaning: "PAUSE exits, halts and hypercall kicks together: Linux's paravirtual spinlocks spin \
                      briefly, halt in pv_wait, and the unlocker wakes them with KVM_HC_KICK_CPU. The \
                      halts are lock waits, not idle: the cause is lock contention in the guest (or lock \
                      holders preempted on an overcommitted host), and halt polling does not cure it.",
            sources: &[KVM_CPUID_DOC, QEMU_HYPERV],
        },
        "spin.pause" => Description {
            title: "vCPUs spin on locks whose holder is not running (pause-loop exits)",
            meaning: "Pause-loop exiting fires when a vCPU spins past ple_window: lock-holder preemption, the \
                      mark of an overcommitted host or unpinned vCPUs (or heavy lock contention).",
            sources: &[QEMU_HYPERV, KVM_CPUID_DOC],
        },
        _ => return None,
    })
}

pub fn write(w: &W<'_>) -> Option<Words> {
    Some(match w.h.id {
        "mmu.fault-storm" => Words {
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
        "mmu.ept-violation" => Words {
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
        "mmu.guest-page-faults" => Words {
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
        "spin.hung-vcpu" => Words {
            cause: "The guest exits only because host interrupts arrive and because pause-loop exiting fires \
                    when a PAUSE loop runs past ple_window: it executes no privileged instruction, never halts \
                    and never touches a timer or device. A compute-bound guest looks like this, and so does a \
                    vCPU spinning in a loop — a guest hung or stuck early in boot (for SEV-ES/SNP guests, \
                    whose registers are encrypted, the exit mix is all there is). The exits themselves cost \
                    nothing worth fixing."
                .into(),
            fixes: vec![
                F::new(ForGuest::Any, "if the guest makes no progress, find where it spins")
                    .guest(
                        "look at its console/serial log; take a memory dump (virsh dump --memory-only) or read \
                         the registers (virsh qemu-monitor-command --hmp 'info registers'; not possible for \
                         SEV-ES/SNP guests — check firmware and guest kernel versions there)",
                    )
                    .done(),
            ],
            effect: "a hung guest that gets past the loop shows timer, idle and device exits again; a \
                     compute-bound one needs nothing"
                .into(),
            confirm: Some(
                "check that the vCPU thread runs at 100% (top -H -p <QEMU pid>) and capture longer: a busy \
                 guest doing real work also programs its timer and touches devices"
                    .into(),
            ),
            ..Words::default()
        },
        "spin.pv-lock-wait" => Words {
            cause: "Pause-loop exits, halts and hypercalls come together: the guest's paravirtual \
                    spinlocks spin, then halt the waiter (pv_wait), and the unlocker kicks it awake with \
                    a hypercall (KVM_HC_KICK_CPU). The halts are lock waits — contention inside the guest, \
                    or lock holders preempted by an overcommitted host — not idle time; polling the halts \
                    would only burn host CPU."
                .into(),
            fixes: vec![
                F::new(ForGuest::Any, "reduce the lock contention, and keep lock holders running")
                    .guest(
                        "find the contended lock (perf lock, lockstat, /proc/lock_stat in the guest) and \
                         fewer threads contending on it",
                    )
                    .host(
                        "do not overcommit this VM's vCPUs (pin them: <cputune><vcpupin …/>), so a lock \
                         holder is not preempted while waiters spin and halt",
                    )
                    .libvirt(overcommit::PIN_XML)
                    .advice(&["advice.pin-vcpus"])
                    .done(),
            ],
            effect: "fewer spin, halt and kick rounds as the contention falls".into(),
            ..Words::default()
        },
        "spin.pause" => Words {
            cause: "Pause-loop exiting fires when a vCPU spins in a PAUSE loop past ple_window: it waits for a \
                    lock held by a vCPU that is not running — lock-holder preemption, the mark of an \
                    overcommitted host or unpinned vCPUs (or heavy lock contention in the guest)."
                .into(),
            fixes: {
                let mut v = overcommit::spin_fixes(w);
                v.push(
                    F::new(ForGuest::Any, "reduce overcommit")
                        .host(
                            "fewer vCPUs than host CPUs, or pinned vCPUs (<cputune><vcpupin …/>); PLE tunables \
                             kvm_intel ple_gap/ple_window",
                        )
                        .libvirt(overcommit::PIN_XML)
                        .advice(&["advice.pin-vcpus"])
                        .done(),
                );
                v
            },
            effect: "spinning vCPUs yield to the lock holder instead of burning their time slice".into(),
            ..Words::default()
        },
        _ => return None,
    })
}
