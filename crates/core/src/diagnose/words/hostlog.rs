//! The words of `hostlog.*`: what the host's kernel log says — split-lock traps of vCPU
//! threads, MSRs KVM does not emulate, stuck vCPU threads.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::HostlogRule;
use crate::diagnose::model::ForGuest;

pub(super) fn describe(id: HostlogRule) -> Description {
    match id {
        HostlogRule::SplitLock => Description {
            title: "the guest takes split-lock traps on the host",
            meaning: "The host kernel logged a split-lock (#AC) or bus-lock (#DB) trap of a VM's thread: \
                      the guest ran an atomic instruction on data that straddles two cache lines. With \
                      split_lock_detect=warn (the default where the CPU detects split locks) each trap \
                      stops the vCPU; while kernel.split_lock_mitigate is 1 it also sleeps 10 ms and \
                      split lockers run one at a time. The kernel logs each thread once, so the log \
                      says which vCPUs trapped, not how often.",
            sources: &[
                BUSLOCK_DOC,
                SPLIT_LOCK_MITIGATE,
                SPLIT_LOCK_PARAM,
                LWN_SPLIT_LOCK_MISERY,
            ],
        },
        HostlogRule::UnhandledMsr => Description {
            title: "the guest touches MSRs KVM does not emulate",
            meaning: "KVM logged guest reads or writes of MSRs it does not emulate (`unhandled rdmsr`, \
                      `Unhandled WRMSR(…)`, `ignored …` with kvm.ignore_msrs=1). A guest probing \
                      hardware at boot does this once per vCPU and it is harmless; it matters only when \
                      the same MSR comes back again and again (each access exits) or the guest fails on \
                      the #GP it gets.",
            sources: &[IGNORE_MSRS, IGNORE_MSRS_QUIET, KVM_MSR_DOC],
        },
        HostlogRule::VcpuStall => Description {
            title: "the host kernel reports a vCPU thread stuck",
            meaning: "A soft lockup (the vCPU thread ran in the host kernel for 20 s or more without \
                      yielding the CPU), a hung task (blocked uninterruptibly for 120 s or more) or an \
                      RCU stall naming a vCPU thread: the vCPU made no progress for that long.",
            sources: &[LOCKUP_WATCHDOGS, RCU_STALLS],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: HostlogRule) -> Words {
    let joined = w.ev.host_log.as_ref().is_some_and(|l| l.joined);
    let from = if joined {
        "The kernel log given with this input"
    } else {
        "The host's kernel log"
    };
    match id {
        HostlogRule::SplitLock => Words {
            cause: format!(
                "{from} shows split-lock traps of VM threads: the guest runs locked instructions on \
                 misaligned data (old or badly packed code, some games and DRM, DOS and Windows \
                 drivers). Each trap exits to the host kernel, which stops the vCPU — 10 ms a time \
                 while kernel.split_lock_mitigate=1 — and serializes split lockers host-wide. One \
                 thread that trapped once can be a one-off; every vCPU trapping means the guest's \
                 common code does it."
            ),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "find and fix the guest code that split-locks (the trap's address is a guest \
                     rip): align the data its atomics touch",
                )
                .done(),
                F::new(
                    ForGuest::Any,
                    "on a host whose guests you trust, take the penalty away: \
                     `sysctl kernel.split_lock_mitigate=0` (Linux 6.2 and later; the trap remains, \
                     the 10 ms sleep goes) or boot the host with `split_lock_detect=off`",
                )
                .host("sysctl -w kernel.split_lock_mitigate=0   # or the kernel parameter split_lock_detect=off")
                .done(),
            ],
            effect: "the vCPUs stop sleeping in split-lock traps".into(),
            ..Words::default()
        },
        HostlogRule::UnhandledMsr => Words {
            cause: format!(
                "{from} shows the guest reading or writing MSRs KVM does not emulate (performance \
                 monitoring, power and thermal MSRs a driver probes). Once per vCPU at boot this is \
                 harmless noise; the same MSR logged again and again means the guest keeps \
                 touching it."
            ),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "if the guest works, leave it; to silence the lines, stop KVM logging ignored \
                     accesses, or let it ignore them (no #GP to the guest)",
                )
                .host("modprobe kvm ignore_msrs=1 report_ignored_msrs=0")
                .libvirt("<features><msrs unknown='ignore'/></features>")
                .done(),
                F::new(
                    ForGuest::Any,
                    "if it repeats, find the guest driver that touches the MSR (the line's guest rIP) \
                     and turn it off, or give the guest a CPU model with the feature it looks for",
                )
                .done(),
            ],
            effect: "nothing to gain in speed unless the accesses repeat; quieter logs".into(),
            ..Words::default()
        },
        HostlogRule::VcpuStall => Words {
            cause: format!(
                "{from} reports vCPU threads that made no progress for many seconds. A soft lockup \
                 or RCU stall of a vCPU thread means it looped in the host kernel (KVM) without \
                 scheduling — a KVM or host-kernel bug, or a huge operation (populating or zapping \
                 the memory of a very large guest); a hung task means it waited on the host \
                 (storage, memory pressure, a lock held elsewhere). Heavy host over-commit makes \
                 both more likely."
            ),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "read the stack trace after the report (`dmesg`: the lines after the lockup) and \
                     search the KVM list for its top functions; update the host kernel",
                )
                .done(),
                F::new(
                    ForGuest::Any,
                    "check the host's load and memory when it happened (`virtlens top`, `vmstat 1`, \
                     `cat /proc/pressure/*`) and lower the over-commit",
                )
                .done(),
            ],
            effect: "the guest stops freezing for the length of the stall".into(),
            ..Words::default()
        },
    }
}
