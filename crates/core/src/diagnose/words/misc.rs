//! The words of the remaining families: MSRs (`msr.*`), hypercalls and CPUID (`hypercall.*`,
//! `cpuid.*`), host interrupts (`irq.external`) and exits virtlens cannot name (`unknown.*`).

use super::fixes::F;
use super::sources::*;
use super::{Description, W, Words};
use crate::diagnose::hypotheses::Hint;
use crate::diagnose::model::ForGuest;

pub fn describe(id: &str) -> Option<Description> {
    Some(match id {
        "msr.hyperv-synthetic" => Description {
            title: "Hyper-V synthetic MSRs are accessed often enough to matter",
            meaning: "Reads and writes of the Hyper-V synthetic MSRs (0x400000xx) that no more specific \
                      finding explains: SynIC, the hypercall page, VP assist, crash MSRs.",
            sources: &[QEMU_HYPERV, LIBVIRT_HYPERV],
        },
        "msr.hot-msr" => Description {
            title: "an MSR is accessed often enough to matter",
            meaning: "An intercepted MSR takes a real share of the exits: speculation control, a PMU MSR, a \
                      paravirtual MSR, or another MSR KVM traps.",
            sources: &[PERF_KVM, KVM_MSR_DOC],
        },
        "hypercall.storm" => Description {
            title: "hypercalls lead the exit handling",
            meaning: "VMCALL/VMMCALL exits dominate: Hyper-V hypercalls (Windows: TLB flushes, IPIs, \
                      long-spin notifications) or KVM hypercalls (Linux: PV IPIs, kicks).",
            sources: &[QEMU_HYPERV, KVM_CPUID_DOC],
        },
        "cpuid.storm" => Description {
            title: "CPUID leads the exit handling",
            meaning: "Every CPUID exits: a guest running it in a hot loop (timing code, feature checks on every \
                      call) pays an exit each time.",
            sources: &[PERF_KVM],
        },
        "irq.host-interrupts" => Description {
            title: "host interrupts hit the vCPUs' CPUs above a host tick's rate",
            meaning: "External-interrupt exits at more than a host timer tick per vCPU: the host's device \
                      interrupts (NICs, NVMe) or IPIs land on the CPUs the vCPUs run on, and each one kicks \
                      the guest out.",
            sources: &[PERF_KVM, HALT_POLL_DOC],
        },
        "irq.external" => Description {
            title: "host interrupts arrive while vCPUs run",
            meaning: "External-interrupt exits are host interrupts arriving while a vCPU runs: the host \
                      timer, device interrupts, IPIs that kick the vCPU. The normal floor of a busy guest; a \
                      cost only when host interrupts land on the vCPUs' cores.",
            sources: &[PERF_KVM, KVM_FORUM_2021],
        },
        "unknown.exit-codes" => Description {
            title: "exits virtlens cannot name",
            meaning: "Exit codes no table knows (a newer CPU or kernel, another architecture): kept as numbers; \
                      no cause is derived from them.",
            sources: &[RISCV_PERF, PERF_KVM],
        },
        "unknown.triple-fault" => Description {
            title: "the guest triple-faulted: KVM shut it down",
            meaning: "A fault while delivering a double fault: KVM reports KVM_EXIT_SHUTDOWN and QEMU resets or \
                      stops the guest. A crash, not an overhead; its cause is not in the exits.",
            sources: &[KVM_API_DOC, BAUER_2022],
        },
        _ => return None,
    })
}

pub fn write(w: &W<'_>) -> Option<Words> {
    Some(match w.h.id {
        "msr.hyperv-synthetic" => Words {
            cause: "Hyper-V synthetic MSRs (0x400000xx) that no more specific finding explains: the guest uses \
                    the Hyper-V interface heavily (SynIC message slots, the hypercall page, VP assist)."
                .into(),
            fixes: vec![F::new(
                ForGuest::Windows,
                "check which MSR leads (the evidence names it) against the enlightenment that should make it \
                 cheap: hv-stimer-direct for timers, hv-avic for EOI/ICR, hv-time for the reference counter",
            )
            .done()],
            effect: "the synthetic MSR exits fall with the enlightenment that covers them".into(),
            ..Words::default()
        },
        "msr.hot-msr" => Words {
            title: w.h.evidence.first().map(|f| {
                format!(
                    "{} is accessed often enough to matter",
                    f.name.clone().unwrap_or_else(|| f.key.clone())
                )
            }),
            cause: "Every intercepted RDMSR/WRMSR is an exit (about a microsecond or two in the kernel, more \
                    when userspace handles it). Speculation-control MSRs are intercepted until the guest's \
                    first write and on hosts that trap them; PMU MSRs when the vPMU is emulated."
                .into(),
            fixes: vec![F::new(
                ForGuest::Any,
                "find what in the guest accesses it so often (guest perf on the exiting rip) and whether the \
                 CPU model hides a feature that would avoid it",
            )
            .done()],
            effect: "the MSR's exits fall with the accesses".into(),
            ..Words::default()
        },
        "hypercall.storm" => Words {
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
        "cpuid.storm" => Words {
            cause: "Every CPUID instruction exits. A guest running it in a hot loop — timing code that \
                    serializes with CPUID, a runtime re-checking features, a VM-detection loop — pays an \
                    exit each time."
                .into(),
            fixes: vec![F::new(
                ForGuest::Any,
                "find the code (guest perf on the exiting rip) and cache the feature checks; use RDTSCP or \
                 LFENCE instead of CPUID to serialize timing",
            )
            .done()],
            effect: "CPUID exits fall to what boot and feature discovery need".into(),
            ..Words::default()
        },
        "irq.host-interrupts" => Words {
            title: w.has(Hint::Aggregate).then(|| {
                "host interrupts are nearly all of a busy guest's exits".to_string()
            }),
            cause: if w.has(Hint::Aggregate) {
                "Nearly every exit of a guest that is not idle is a host interrupt arriving while it runs: \
                 without a rate the tool cannot tell a host tick from device interrupts, but a vCPU kicked \
                 out by little else is where host interrupt placement is worth a look (the rate, with \
                 --window, tells: above a host tick per vCPU the host's devices or IPIs land on its CPU)."
                    .into()
            } else {
                "More host interrupts arrive on the vCPUs' CPUs than a host timer tick explains: the \
                 host's device interrupts (network, storage) or its IPIs are routed to the cores the vCPUs \
                 run on, and every one is an exit and a delay for the guest."
                    .into()
            },
            fixes: vec![F::new(ForGuest::Any, "move host interrupts off the vCPUs' cores")
                .host(
                    "find where device interrupts go (/proc/interrupts), pin the vCPUs to other cores \
                     (libvirt <cputune><vcpupin …/>), set irqaffinity= / IRQ smp_affinity away from them, \
                     and keep housekeeping off them (isolcpus/nohz_full where fitting)",
                )
                .libvirt("<cputune><vcpupin vcpu='0' cpuset='2'/>…<emulatorpin cpuset='0-1'/></cputune>")
                .advice(&["advice.pin-vcpus"])
                .done()],
            effect: "the external-interrupt exits fall to the host tick's rate".into(),
            ..Words::default()
        },
        "irq.external" => Words {
            cause: "An external-interrupt exit is a host interrupt arriving while the vCPU runs: the host's \
                    timer tick, device interrupts, and IPIs that kick the vCPU (wake-ups, TLB shootdowns). \
                    They are the normal floor of a busy or interrupt-heavy guest; they become a cost when host \
                    devices' interrupts and housekeeping land on the vCPUs' cores."
                .into(),
            fixes: vec![F::new(ForGuest::Any, "keep host interrupts off the vCPUs' cores when they matter")
                .host(
                    "pin vCPUs to dedicated cores (libvirt <cputune><vcpupin vcpu='0' cpuset='2'/>…) and keep \
                     host IRQs and housekeeping elsewhere (irqaffinity=, nohz_full=, irqbalance banned CPUs); \
                     passthrough devices with posted interrupts deliver without exits",
                )
                .advice(&["advice.pin-vcpus"])
                .done()],
            effect: "fewer exits from host noise; nothing to gain when the interrupts are the guest's own IPIs \
                     and timers"
                .into(),
            ..Words::default()
        },
        "unknown.exit-codes" => unknown(w),
        "unknown.triple-fault" => Words {
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
        _ => return None,
    })
}

fn unknown(w: &W<'_>) -> Words {
    let (cause, fix) = if w.has(Hint::RiscV) && w.has(Hint::Unnamed) {
        (
            "These are RISC-V KVM's exit names (virtlens's rules know x86: VMX, SVM, PVM). The rows printed as \
             UNKNOWN are exits the tool could not name: perf kvm stat on RISC-V printed interrupt exits as \
             UNKNOWN until commit 3b7270c76622 taught it the interrupt causes (IRQ_S_TIMER, IRQ_VS_EXT, …).",
            "use a perf with 3b7270c76622 (\"RISC-V: perf/kvm: Add reporting of interrupt events\") to see which \
             interrupts they are",
        )
    } else if w.has(Hint::Unnamed) {
        (
            "Exit codes no table knows: a newer CPU or kernel than virtlens's tables, or another hypervisor's \
             codes read under the wrong ISA. They are kept as numbers; no rule can say what they cost.",
            "check the host's exit-reason list (arch/x86/include/uapi/asm/vmx.h, svm.h) and the capture's ISA",
        )
    } else {
        (
            "Exit names of an architecture virtlens's rules do not cover (they know x86: VMX, SVM, PVM); the \
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
