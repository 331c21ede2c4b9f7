//! The words of `halt.churn` and `idle.hlt`: short halts at a high rate, whose cure is halt
//! polling (host, then guest; `idle=poll` only as a last resort, with its cost to the host
//! said), and idle, which is not overhead.

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::model::ForGuest;

/// Halts that return at once: polling cannot help, the pending wake-up is the question.
fn no_block() -> Words {
    Words {
        cause: "The vCPUs halt at a high rate but each halt lasts only microseconds: the vCPU is \
                runnable again at once. Either an interrupt is pending that the guest cannot take (it \
                halts with its local APIC or interrupts disabled, or an event is injected that it never \
                acknowledges), or a wake-up arrives before it ever sleeps. Halt polling shortens sleeps \
                these halts never have."
            .into(),
        fixes: vec![
            F::new(ForGuest::Any, "find what wakes the halted vCPU at once")
                .host(
                    "trace kvm:kvm_vcpu_wakeup, kvm:kvm_inj_virq, kvm:kvm_apic_accept_irq and the kvm_exit \
                     rips around the halts: an interrupt injected again and again, or one the guest cannot \
                     take",
                )
                .guest("check the guest's idle path with the local APIC disabled (early boot, CPU offline, firmware)")
                .done(),
        ],
        effect: "the halts block again (or stop), and the exit rate falls".into(),
        ..Words::default()
    }
}
use crate::diagnose::hypotheses::HaltRule;
pub(super) fn describe(id: HaltRule) -> Description {
    match id {
        HaltRule::Churn => Description {
            title: "halt/wake churn: the vCPUs halt and are woken again thousands of times a second",
            meaning: "Many short halts per second: every wake-up is an IPI, a trip through the host scheduler, \
                      an exit and an entry. Halt polling (host halt_poll_ns, the guest's cpuidle-haltpoll \
                      driver) absorbs halts shorter than its window.",
            sources: &[HALT_POLL_DOC, GUEST_HALT_POLL_DOC, HALTPOLL_GOVERNOR],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: HaltRule) -> Words {
    match id {
        HaltRule::Churn => churn(w),
    }
}

fn churn(w: &W<'_>) -> Words {
    if w.has(Hint::NoBlock) {
        return no_block();
    }
    let reading = if w.has(Hint::Aggregate) {
        "Without halt durations this is a reading: a high halt rate with short halts is churn; with long \
         halts it would be an idle guest ticking. "
    } else {
        ""
    };
    let works = if w.has(Hint::PollingWorks) {
        " Halt polling already ends most halts (halt_successful_poll): what remains is its cost in host CPU."
    } else {
        ""
    };
    let mut fixes = vec![
        F::new(
            ForGuest::Any,
            "let the host poll before putting a halted vCPU to sleep (halt polling)",
        )
        .host(
            "raise /sys/module/kvm/parameters/halt_poll_ns (x86 default 200000) or set it per VM \
             (KVM_CAP_HALT_POLL); it spends host CPU while polling",
        )
        .advice(&["advice.halt-poll"])
        .done(),
    ];
    // The guest-side fixes are x86's (cpuidle-haltpoll, cpu-pm); on arm64 and RISC-V only the
    // host's halt polling applies.
    if w.ev.isa().is_none_or(|isa| isa.is_x86()) {
        fixes.extend(w.fixes_by_guest(|g| match g {
            ForGuest::Linux => vec![
                F::new(
                    ForGuest::Linux,
                    "let the guest poll before halting (cpuidle-haltpoll): no exit, and no wake-up IPI for a \
                     polling vCPU",
                )
                .qemu("-cpu …,kvm-poll-control=on")
                .libvirt("<features><kvm><poll-control state='on'/></kvm></features>")
                .guest(
                    "CONFIG_HALTPOLL_CPUIDLE (cpuidle_haltpoll.force=1 on older kernels); only as a last resort \
                     idle=poll, which keeps every idle vCPU spinning at 100% of a host CPU",
                )
                .advice(&["advice.guest-haltpoll"])
                .done(),
            ],
            _ => vec![
                F::new(
                    ForGuest::Windows,
                    "Windows has no guest-side halt polling: rely on the host's, or keep HLT in the guest on \
                     dedicated cores",
                )
                .qemu("-overcommit cpu-pm=on (dedicated pCPUs only: HLT no longer exits, idle vCPUs hold their cores)")
                .advice(&["advice.halt-poll"])
                .done(),
            ],
        }));
    }
    Words {
        cause: format!(
            "{reading}The vCPUs halt for a short time and are woken again at a high rate: every wake-up is \
             an IPI to the halted vCPU's host CPU, a trip through the host scheduler, an exit and an entry — \
             the latency of each lands on the guest's work (request/response loads, lock hand-offs).{works}"
        ),
        fixes,
        effect:
            "short halts end in a poll instead of a sleep and a wake-up: fewer scheduler trips and \
                 wake-up IPIs, lower wake-up latency, at the price of host CPU while polling"
                .into(),
        ..Words::default()
    }
}
