//! Each rule on hand-built evidence, positive and negative: faults, spinning vCPUs, halts,
//! nested virtualization, emulation, host interrupts, hypercalls and CPUID, unnamed exits, the
//! guest's inference, and severity from absolute cost.

use virtlens_core::config::GuestFamily;
use virtlens_core::diagnose::{CpuBasis, Measure, Role, Severity, Verdict};
use virtlens_core::diagnose::{GuestBasis, Strength};
use virtlens_core::profile::Access::Write;

use crate::handbuilt::{advice, get, has, ids, main_id, opts, profile, run};

// --- faults ---------------------------------------------------------------------------------

#[test]
fn one_fault_at_a_storm_rate_is_a_storm() {
    let p = || {
        profile().vmx(&[
            ("EXCEPTION_NMI", 3_300_000, 2.0),
            ("EXTERNAL_INTERRUPT", 1_000, 2.0),
        ])
    };
    let d = run(p().window(10.0), &opts());
    assert_eq!(get(&d, "mmu.fault-storm").severity, Severity::Critical);
    // The same mix without a rate cannot be told from a fault-heavy boot.
    let d = run(p(), &opts());
    assert!(!has(&d, "mmu.fault-storm"));
}

#[test]
fn ept_violations_and_intercepted_guest_faults() {
    let d = run(
        profile().vmx(&[
            ("EPT_VIOLATION", 300_000, 4.0),
            ("EXTERNAL_INTERRUPT", 100_000, 2.0),
        ]),
        &opts(),
    );
    assert!(
        get(&d, "mmu.ept-violation")
            .advice
            .contains(&"advice.hugepages")
    );
    let d = run(
        profile().kvm_stat(&[("exits", 1_000_000, 50_000), ("pf_guest", 800_000, 40_000)]),
        &opts().vcpus(2),
    );
    let f = get(&d, "mmu.guest-page-faults");
    // 20,000 intercepted faults/s per vCPU at a typical 8 µs: 16% of each vCPU.
    assert_eq!(f.severity, Severity::High);
    assert_eq!(f.grade.measure, Measure::CpuShare);
}

// --- spinning vCPUs -------------------------------------------------------------------------

#[test]
fn ten_pause_exits_among_interrupts_are_not_a_hung_vcpu() {
    let d = run(
        profile().vmx(&[
            ("EXTERNAL_INTERRUPT", 99_990, 2.0),
            ("PAUSE_INSTRUCTION", 10, 1.0),
        ]),
        &opts(),
    );
    assert!(!has(&d, "spin.hung-vcpu"), "{:?}", ids(&d));
    assert!(d.worst() < Some(Severity::High));
}

#[test]
fn a_vcpu_that_only_spins_is_context_never_an_alarm() {
    let d = run(
        profile().vmx(&[
            ("EXTERNAL_INTERRUPT", 9_000, 2.0),
            ("PAUSE_INSTRUCTION", 1_000, 1.0),
        ]),
        &opts(),
    );
    let f = get(&d, "spin.hung-vcpu");
    assert_eq!(f.role, Role::Context);
    assert!(f.severity <= Severity::Low);
}

#[test]
fn pause_exits_on_a_working_guest_are_lock_holder_preemption() {
    let d = run(
        profile().vmx(&[
            ("PAUSE_INSTRUCTION", 200_000, 1.0),
            ("MSR_WRITE", 20_000, 1.0),
            ("HLT", 5_000, 800.0),
        ]),
        &opts().windows(),
    );
    let f = get(&d, "spin.pause");
    assert!(f.severity <= Severity::Medium);
    assert!(f.advice.contains(&"advice.hv-spinlocks"));
}

#[test]
fn spin_halt_and_kick_together_are_lock_waits_not_churn() {
    let p = || {
        profile().vmx(&[
            ("HLT", 9_000, 300.0),
            ("VMCALL", 6_000, 2.2),
            ("PAUSE_INSTRUCTION", 2_000, 3.7),
        ])
    };
    let d = run(p(), &opts().linux());
    let f = get(&d, "spin.pv-lock-wait");
    assert_eq!(f.tag, "spin.pause-loop");
    assert_eq!(f.role, Role::Main);
    assert!(!has(&d, "halt.churn"));
    assert!(!advice(&d).contains(&"advice.halt-poll"));
    // Windows makes hypercalls for everything: not read as lock waits.
    let d = run(p(), &opts().windows());
    assert!(!has(&d, "spin.pv-lock-wait"));
}

// --- halts ----------------------------------------------------------------------------------

#[test]
fn halts_that_do_not_block_are_not_cured_by_polling() {
    let d = run(
        profile().vmx(&[("HLT", 400_000, 2.0)]).window(10.0),
        &opts().linux().vcpus(2),
    );
    let f = get(&d, "halt.churn");
    assert!(!f.advice.contains(&"advice.halt-poll"), "{:?}", f.advice);
    assert!(f.cause.contains("runnable again at once"));
}

#[test]
fn short_halts_at_a_high_rate_are_churn_with_halt_polling_as_the_fix() {
    // 400,000 halts of 20 µs over 10 s on 2 vCPUs: 20,000 wake-ups/s each.
    let d = run(
        profile()
            .vmx(&[("HLT", 400_000, 20.0), ("MSR_WRITE", 400_000, 1.0)])
            .window(10.0),
        &opts().linux().vcpus(2),
    );
    let f = get(&d, "halt.churn");
    assert_eq!(f.severity, Severity::High);
    assert!(f.advice.contains(&"advice.halt-poll") && f.advice.contains(&"advice.guest-haltpoll"));
    assert!(f.fixes.iter().any(|x| {
        x.in_guest
            .as_deref()
            .is_some_and(|g| g.contains("idle=poll"))
    }));
}

#[test]
fn long_halts_are_idle_not_churn() {
    let d = run(
        profile()
            .vmx(&[("HLT", 4_000, 5_000.0), ("MSR_WRITE", 4_000, 1.0)])
            .window(10.0),
        &opts(),
    );
    assert!(!has(&d, "halt.churn"));
    assert_eq!(get(&d, "idle.hlt").role, Role::Context);
    assert_eq!(d.inputs[0].verdict, Verdict::Idle);
}

#[test]
fn churn_that_polling_already_absorbs_is_at_most_low() {
    let d = run(
        profile()
            .vmx(&[("HLT", 400_000, 20.0)])
            .kvm_stat(&[("halt_successful_poll", 900_000, 90_000)])
            .window(10.0),
        &opts().linux().vcpus(2),
    );
    assert!(get(&d, "halt.churn").severity <= Severity::Low);
}

#[test]
fn windows_churn_gets_no_guest_haltpoll() {
    let d = run(
        profile().vmx(&[("HLT", 400_000, 20.0)]).window(10.0),
        &opts().windows().vcpus(2),
    );
    let f = get(&d, "halt.churn");
    assert!(!f.advice.contains(&"advice.guest-haltpoll"));
    assert!(f.advice.contains(&"advice.halt-poll"));
}

// --- nested, emulation, unnamed exits -------------------------------------------------------

#[test]
fn vmx_instructions_say_the_guest_is_a_hypervisor() {
    let d = run(
        profile().vmx(&[
            ("VMREAD", 200_000, 1.0),
            ("VMWRITE", 150_000, 1.0),
            ("VMRESUME", 50_000, 3.0),
            ("HLT", 100, 100.0),
        ]),
        &opts().windows(),
    );
    let f = get(&d, "nested.l1-hypervisor");
    assert!(
        f.advice.contains(&"advice.hv-evmcs"),
        "Windows L1 on Intel: eVMCS"
    );
    let d = run(
        profile().vmx(&[("EXTERNAL_INTERRUPT", 100_000, 2.0)]),
        &opts(),
    );
    assert!(!has(&d, "nested.l1-hypervisor"));
}

#[test]
fn exits_reflected_from_l2_lead_with_nested() {
    let d = run(
        profile()
            .vmx(&[("IO_INSTRUCTION", 300, 30.0), ("EPT_VIOLATION", 100, 5.0)])
            .events(&[("kvm_nested_vmexit", 400)]),
        &opts(),
    );
    assert_eq!(main_id(&d), "nested.l1-hypervisor");
}

#[test]
fn rsm_then_gp_is_the_nested_svm_bug() {
    let d = run(
        profile().svm(&[("rsm", 5, 2.0), ("GP excp", 5, 2.0), ("npf", 5, 2.0)]),
        &opts(),
    );
    assert_eq!(get(&d, "nested.rsm-gp").tag, "nested.kvm-bug");
}

#[test]
fn emulation_that_fails_stops_the_guest() {
    let d = run(
        profile()
            .vmx(&[("EPT_MISCONFIG", 1, 5.0)])
            .userspace(&[("KVM_EXIT_INTERNAL_ERROR", 1)])
            .events(&[("kvm_emulate_insn", 2)]),
        &opts(),
    );
    let f = get(&d, "emulation.failed");
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(main_id(&d), "emulation.failed");
    // Emulation without a fault or an internal error is not a failure.
    let d = run(
        profile()
            .vmx(&[("EPT_MISCONFIG", 500, 5.0)])
            .events(&[("kvm_emulate_insn", 500)]),
        &opts(),
    );
    assert!(!has(&d, "emulation.failed"));
}

#[test]
fn binary_statistics_are_counters_and_pvm_emulation_is_its_normal_mode() {
    // A capture's binary statistics (no kvm_stat screen, no exit table) are read like kvm_stat's
    // counters: exits by kind, and instruction emulation at a rate.
    let p = || {
        profile().window(1.0).kvm_stats(&[
            ("exits", 200_000),
            ("io_exits", 150_000),
            ("insn_emulation", 400_000),
        ])
    };
    let d = run(p(), &opts());
    let f = get(&d, "emulation.insn");
    assert!(f.severity >= Severity::Low, "{:?}", f.severity);
    let ev = &d.inputs[0].evidence;
    assert!(ev.from_counters, "the exit counters form the exit part");
    assert_eq!(ev.totals.as_ref().map(|t| t.count), Some(200_000));
    // On PVM every ring-0 guest instruction is emulated: the same counter is the backend's
    // normal mode, said, never a problem to fix.
    let d = run(p().backend("pvm"), &opts());
    let f = get(&d, "emulation.insn");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.cause.contains("PVM"), "{}", f.cause);
}

#[test]
fn unnamed_exits_are_kept_and_said() {
    let d = run(
        profile().vmx(&[("UNKNOWN", 50_000, 1.0), ("HLT", 10, 100.0)]),
        &opts(),
    );
    assert_eq!(get(&d, "unknown.exit-codes").tag, "unknown-exit");
    assert_eq!(d.inputs[0].verdict, Verdict::NotDiagnosed);
}

#[test]
fn a_triple_fault_is_a_crash() {
    let d = run(profile().vmx(&[("TRIPLE_FAULT", 1, 5.0)]), &opts());
    assert_eq!(get(&d, "unknown.triple-fault").severity, Severity::Medium);
}

// --- host interrupts, hypercalls, CPUID, MSRs -----------------------------------------------

#[test]
fn host_interrupts_above_a_tick_per_vcpu_are_a_problem_below_context() {
    let p = |n| {
        profile()
            .vmx(&[("EXTERNAL_INTERRUPT", n, 2.0), ("HLT", 10_000, 500.0)])
            .window(10.0)
    };
    let d = run(p(400_000), &opts().vcpus(4));
    assert_eq!(
        get(&d, "irq.host-interrupts").role,
        Role::Main,
        "10,000/s per vCPU"
    );
    let d = run(p(20_000), &opts().vcpus(4));
    assert!(!has(&d, "irq.host-interrupts"));
    assert!(get(&d, "irq.external").role == Role::Context);
}

#[test]
fn hypercalls_and_cpuid_only_when_they_lead() {
    let d = run(
        profile().vmx(&[
            ("VMCALL", 500_000, 5.0),
            ("EXTERNAL_INTERRUPT", 100_000, 2.0),
        ]),
        &opts(),
    );
    assert!(has(&d, "hypercall.storm"));
    let d = run(
        profile().vmx(&[("VMCALL", 5_000, 5.0), ("EXTERNAL_INTERRUPT", 100_000, 2.0)]),
        &opts(),
    );
    assert!(!has(&d, "hypercall.storm"));
    let d = run(
        profile().vmx(&[("CPUID", 500_000, 1.5), ("HLT", 1_000, 100.0)]),
        &opts(),
    );
    assert!(has(&d, "cpuid.storm"));
}

#[test]
fn hot_and_synthetic_msrs_are_named() {
    let d = run(
        profile().msrs(&[
            (0x48, Write, 100_000, 1.0),
            (0x4000_0073, Write, 50_000, 1.0),
        ]),
        &opts(),
    );
    assert_eq!(get(&d, "msr.hot-msr").tag, "msr.other");
    assert!(has(&d, "msr.hyperv-synthetic"));
}

// --- the guest ------------------------------------------------------------------------------

#[test]
fn the_guest_is_inferred_with_its_basis() {
    let g = |d: &virtlens_core::diagnose::Diagnosis| d.inputs[0].evidence.guest.clone();
    let d = run(profile().msrs(&[(0x4000_0070, Write, 1_000, 1.0)]), &opts());
    assert_eq!(
        (g(&d).family, g(&d).basis, g(&d).strength),
        (
            GuestFamily::Windows,
            GuestBasis::HypervInterface,
            Strength::Strong
        )
    );
    let d = run(
        profile().msrs(&[(0x4b56_4d01, Write, 10, 1.0), (0x6e0, Write, 1_000, 1.0)]),
        &opts(),
    );
    assert_eq!(
        (g(&d).family, g(&d).basis),
        (GuestFamily::Linux, GuestBasis::KvmParavirt)
    );
    let d = run(
        profile().vmx(&[("VMCALL", 1_000, 5.0), ("HLT", 10_000, 100.0)]),
        &opts(),
    );
    assert_eq!(
        (g(&d).family, g(&d).strength),
        (GuestFamily::Windows, Strength::Weak)
    );
    let d = run(profile().vmx(&[("HLT", 10_000, 100.0)]), &opts());
    assert_eq!(g(&d).family, GuestFamily::Unknown);
}

#[test]
fn a_weakly_inferred_windows_guest_also_gets_the_linux_reading() {
    let d = run(
        profile()
            .vmx(&[("VMCALL", 1_000, 5.0), ("HLT", 10_000, 100.0)])
            .msrs(&[(0x6e0, Write, 300_000, 0.9)])
            .window(10.0),
        &opts(),
    );
    let f = get(&d, "timer.tsc-deadline-rearm");
    assert!(f.cause.starts_with("Each write") || f.cause.contains("If the guest is Windows"));
    assert!(
        advice(&d).contains(&"advice.remove-nohz-off"),
        "labelled, for the Linux reading"
    );
}

// --- severity from absolute cost ------------------------------------------------------------

#[test]
fn idle_does_not_hide_a_costly_cause() {
    // 99% of the handled time is halts, but the port exits take 6% of each vCPU.
    let p = || {
        profile()
            .vmx(&[("IO_INSTRUCTION", 600_000, 10.0), ("HLT", 20_000, 50_000.0)])
            .ports(&[(0x70, Write, 300_000, 10.0), (0x71, Write, 300_000, 10.0)])
    };
    let d = run(p().window(100.0), &opts().windows());
    let f = get(&d, "timer.rtc-port");
    let c = f.cost.as_ref().unwrap();
    assert_eq!(c.cpu_basis, Some(CpuBasis::WindowOneCpu));
    assert!((c.cpu_share.unwrap() - 0.06).abs() < 0.001);
    assert_eq!(
        f.severity,
        Severity::High,
        "6,000 RTC accesses/s for the VM"
    );
    // Without a window the handled time with halts stands for the vCPUs' time.
    let d = run(p(), &opts().windows());
    let c = get(&d, "timer.rtc-port").cost.clone().unwrap();
    assert_eq!(c.cpu_basis, Some(CpuBasis::HandledWithHalts));
}

#[test]
fn a_large_share_of_a_tiny_cost_is_not_alarming() {
    // MSR writes are most of the exit handling, but 0.05% of a vCPU.
    let d = run(
        profile()
            .vmx(&[("MSR_WRITE", 5_000, 1.0), ("HLT", 5_000, 2_000.0)])
            .window(10.0),
        &opts().linux().vcpus(1),
    );
    assert!(d.worst() <= Some(Severity::Low), "{:?}", ids(&d));
    let f = get(&d, "timer.tsc-deadline-rearm");
    assert_eq!(f.grade.measure, Measure::CpuShare);
}
