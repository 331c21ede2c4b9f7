//! The words of `sched.*`: vCPUs waiting for a host CPU — because the vCPUs alone outnumber
//! the CPUs (`sched.overcommit`), or because other work or the host's own steal takes them
//! (`sched.vcpu-ready`) — and the host's steal as context (`sched.host-steal`). The shared
//! over-commit prose and fixes are in [`super::overcommit`].

use super::fixes::F;
use super::overcommit::{self, READY_MEANS};
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::hypotheses::SchedRule;
use crate::diagnose::model::{Fix, ForGuest};
pub(super) fn describe(id: SchedRule) -> Description {
    match id {
        SchedRule::Overcommit => Description {
            title: "vCPUs wait for a host CPU: more vCPUs are runnable than the host has CPUs",
            meaning: "The vCPU threads were runnable but not running for a share of the time (ready time: \
                      VMware's %RDY, Hyper-V's CPU wait per dispatch), and more vCPU threads were runnable \
                      than the host has CPUs in most of the window: the vCPUs alone over-commit the host. \
                      Every vCPU's work stretches by the time it waits.",
            sources: &[
                SCHEDSTAT_DOC,
                VMWARE_READY_KB,
                IBM_CPU_READY,
                HYPERV_DISPATCH_WAIT,
                USE_METHOD,
                FRIEDMAN_OVERPROVISIONED,
                LIBVIRT_CPUTUNE,
            ],
        },
        SchedRule::VcpuReady => Description {
            title: "vCPUs wait for a host CPU that other work takes",
            meaning: "The vCPU threads were runnable but not running for a share of the time, yet the vCPUs \
                      alone do not outnumber the host's CPUs: other load — the host's own processes, the \
                      VMs' IO and emulator threads, or the host's own hypervisor when the host is itself a \
                      guest (steal) — takes the CPUs.",
            sources: &[
                SCHEDSTAT_DOC,
                VMWARE_READY_KB,
                HYPERV_DISPATCH_WAIT,
                LIBVIRT_CPUTUNE,
                CGROUP_CPU_WEIGHT,
            ],
        },
        SchedRule::HostSteal => Description {
            title: "this host is itself a guest and loses CPU time to steal",
            meaning: "The host's /proc/stat counts steal: the hypervisor it runs on ran other work while it \
                      wanted to run. Every VM here slows with it, and nothing on this host changes it; it is \
                      reported apart from the VMs' own ready time.",
            sources: &[PROC_STAT_DOC, SCHEDSTAT_DOC],
        },
    }
}

pub(super) fn write(w: &W<'_>, id: SchedRule) -> Words {
    match id {
        SchedRule::Overcommit => overcommit_words(w),
        SchedRule::VcpuReady => ready_words(w),
        SchedRule::HostSteal => Words {
            cause: "This host is itself a virtual machine: its /proc/stat counts steal, time the hypervisor \
                    it runs on gave its CPUs to other work. Every VM here runs slower with it, and nothing \
                    on this host changes it."
                .into(),
            fixes: vec![
                F::new(
                    ForGuest::Any,
                    "run the VMs on a host whose CPUs are its own (bare metal, or an instance with \
                     dedicated cores)",
                )
                .advice(&["advice.move-vm"])
                .done(),
            ],
            effect: "no change from any fix on this host".into(),
            ..Words::default()
        },
    }
}

/// The VMs that wait most, by name (the evidence lists their vCPUs).
fn waiting_vms(w: &W<'_>) -> String {
    let names: Vec<String> =
        w.ev.sched
            .iter()
            .flat_map(|s| &s.vms)
            .take(3)
            .map(|vm| vm.name.clone().unwrap_or_else(|| format!("pid {}", vm.pid)))
            .collect();
    names.join(", ")
}

/// What else takes the CPUs, as a clause.
fn also(w: &W<'_>) -> String {
    let mut parts = Vec::new();
    if w.has(Hint::OtherLoad) {
        parts.push("work that is not the vCPUs takes a CPU's worth or more");
    }
    if w.has(Hint::HostSteal) {
        parts.push("this host itself loses time to steal from the hypervisor it runs on");
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" Besides, {}.", parts.join("; and "))
    }
}

fn latency(w: &W<'_>) -> &'static str {
    if w.has(Hint::DispatchWait) {
        " Each dispatch waits long as well: every interrupt and wake-up the guest handles is delayed \
         by it."
    } else {
        ""
    }
}

const CHECK: &str = "watch the ready share per vCPU live: `virtlens top --vm NAME` (or `perf sched \
     latency`, `pidstat -t -p PID 1`); the runnable vCPUs per CPU tell over-commit from other load";

fn overcommit_words(w: &W<'_>) -> Words {
    let mut fixes = overcommit::fixes();
    fixes.extend(overcommit::spin_fixes(w));
    Words {
        cause: format!(
            "{READY_MEANS} Here more vCPU threads were runnable than the host has CPUs in most of the \
             window: the vCPUs alone over-commit it, and each gets a CPU only part of the time it \
             wants one. The VMs that wait most: {}.{}{} Multi-vCPU guests suffer twice: a vCPU \
             preempted while it holds a lock makes the others spin.",
            waiting_vms(w),
            also(w),
            latency(w)
        ),
        fixes,
        effect: "the vCPUs wait less for a CPU, and their work stretches less".into(),
        check: Some(CHECK.into()),
        ..Words::default()
    }
}

fn ready_words(w: &W<'_>) -> Words {
    let mut fixes: Vec<Fix> = Vec::new();
    if w.has(Hint::HostSteal) {
        fixes.push(
            F::new(
                ForGuest::Any,
                "this host waits for CPUs itself (steal): give it dedicated cores, or move the VMs",
            )
            .advice(&["advice.move-vm"])
            .done(),
        );
    }
    fixes.push(
        F::new(ForGuest::Any, "find the other load and move or limit it")
            .host(
                "top -H or pidstat -t 1: the threads that are not vCPUs and use the CPUs; limit them \
                 (systemd CPUQuota=, cgroup cpu.max) or move them off the vCPUs' CPUs",
            )
            .done(),
    );
    let mut shared = overcommit::fixes();
    // Weights and pinning first: the vCPUs alone fit the host.
    shared.sort_by_key(|f| {
        !f.advice
            .iter()
            .any(|a| matches!(*a, "advice.cpu-weight" | "advice.pin-vcpus"))
    });
    fixes.extend(shared);
    Words {
        cause: format!(
            "{READY_MEANS} Here the vCPU threads alone do not outnumber the host's CPUs, so something else \
             takes them while the vCPUs wait. The VMs that wait most: {}.{}{}",
            waiting_vms(w),
            match also(w) {
                a if a.is_empty() =>
                    " Neither other load nor steal is large over the window: the vCPUs \
                                      wake in bursts and queue behind each other for short spells."
                        .to_string(),
                a => a,
            },
            latency(w)
        ),
        fixes,
        effect: "the vCPUs wait less for a CPU once the other load leaves their CPUs".into(),
        check: Some(CHECK.into()),
        ..Words::default()
    }
}
