//! The words of `spin.*`: a hung vCPU spinning, pause-loop exits from lock-holder preemption,
//! and paravirtual spinlock waits.

use super::fixes::F;
use super::overcommit;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::SpinRule;
use crate::diagnose::model::ForGuest;
pub(super) fn describe(id: SpinRule) -> Description {
    match id {
        SpinRule::HungVcpu => Description {
            title: "the vCPU only runs guest code: nothing but host interrupts and pause-loop exits",
            meaning: "A vCPU that never halts, programs no timer and touches no device exits only for host \
                      interrupts and pause loops: compute-bound, or spinning in a loop (a guest hung or \
                      stuck early in boot). The exits cost nothing; whether the guest makes progress tells \
                      which.",
            sources: &[PERF_KVM, QEMU_HYPERV],
        },
        SpinRule::PvLockWait => Description {
            title: "vCPUs wait on contended locks: spin, halt, and are kicked awake by hypercall",
            meaning: "PAUSE exits, halts and hypercall kicks together: Linux's paravirtual spinlocks spin \
                      briefly, halt in pv_wait, and the unlocker wakes them with KVM_HC_KICK_CPU. The \
                      halts are lock waits, not idle: the cause is lock contention in the guest (or lock \
                      holders preempted on an overcommitted host), and halt polling does not cure it.",
            sources: &[KVM_CPUID_DOC, QEMU_HYPERV],
        },
        SpinRule::Pause => Description {
            title: "vCPUs spin on locks whose holder is not running (pause-loop exits)",
            meaning: "Pause-loop exiting fires when a vCPU spins past ple_window: lock-holder preemption, the \
                      mark of an overcommitted host or unpinned vCPUs (or heavy lock contention).",
            sources: &[QEMU_HYPERV, KVM_CPUID_DOC],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: SpinRule) -> Words {
    match id {
        SpinRule::HungVcpu => Words {
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
        SpinRule::PvLockWait => Words {
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
        SpinRule::Pause => Words {
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
    }
}
