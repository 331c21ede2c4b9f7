//! Each rule on hand-built evidence, positive and negative: timers, the APIC and IPIs, MSR
//! writes read as competing causes, port IO and MMIO. (Faults, spinning, halts, nested,
//! emulation, host interrupts, calls and the guest: `diagnose_hypotheses_more`.)

use virtlens_core::diagnose::{Confidence, ForGuest, Role, Severity};
use virtlens_core::profile::Access::{In, Out, Read, Write};

use crate::handbuilt::{self, advice, get, has, main_id, opts, profile, run};

// --- timers ---------------------------------------------------------------------------------

#[test]
fn pm_timer_reads_on_windows_are_fixed_by_hv_time() {
    let d = run(
        profile().ports(&[(0x608, In, 50_000, 4.0)]).window(10.0),
        &opts().windows(),
    );
    let f = get(&d, "timer.acpi-pm-port");
    assert_eq!(f.confidence, Confidence::Confirmed);
    assert_eq!(
        f.severity,
        Severity::High,
        "5,000 reads/s of a VM-wide device"
    );
    assert!(f.advice.contains(&"advice.hv-time"));
}

#[test]
fn pm_timer_writes_are_not_clock_reads() {
    let d = run(
        profile().ports(&[(0x608, Out, 50_000, 4.0)]),
        &opts().windows(),
    );
    assert!(!has(&d, "timer.acpi-pm-port"));
}

#[test]
fn pm_timer_on_linux_competes_with_acpi_idle_and_never_says_hv_time() {
    let d = run(
        profile().ports(&[(0xb008, In, 50_000, 4.0)]),
        &opts().linux(),
    );
    let f = get(&d, "timer.acpi-pm-port");
    assert!(f.competing.iter().any(|r| r.id == "io.acpi-idle-port"));
    assert!(!advice(&d).contains(&"advice.hv-time"));
    assert!(f.check.as_deref().unwrap().contains("current_clocksource"));
}

#[test]
fn c_state_ports_make_the_pm_reads_acpi_idle() {
    let d = run(
        profile().ports(&[(0x614, In, 20_000, 5.0), (0x608, In, 20_000, 4.0)]),
        &opts().linux(),
    );
    assert!(has(&d, "io.acpi-idle-port"));
    assert!(!has(&d, "timer.acpi-pm-port"));
}

#[test]
fn rtc_ports_are_fixed_by_hv_stimer_never_hv_time() {
    let d = run(
        profile()
            .ports(&[(0x70, Out, 20_000, 3.0), (0x71, In, 20_000, 3.0)])
            .window(10.0),
        &opts().windows(),
    );
    let f = get(&d, "timer.rtc-port");
    assert!(f.advice.contains(&"advice.hv-stimer"));
    assert!(!advice(&d).contains(&"advice.hv-time"));
}

#[test]
fn few_rtc_accesses_over_a_long_window_are_no_alarm() {
    let d = run(
        profile()
            .ports(&[(0x70, Out, 50, 3.0), (0x71, In, 50, 3.0)])
            .window(60.0),
        &opts().windows(),
    );
    assert!(d.worst() <= Some(Severity::Low), "{:?}", handbuilt::ids(&d));
}

#[test]
fn hpet_by_address_and_lapic_is_not_hpet() {
    let d = run(
        profile().mmio(&[(0xfed0_00f0, Read, 50_000, 6.0)]),
        &opts().windows(),
    );
    assert!(
        get(&d, "timer.hpet-mmio")
            .advice
            .contains(&"advice.hv-stimer")
    );
    let d = run(
        profile().mmio(&[(0xfee0_00b0, Write, 50_000, 6.0)]),
        &opts().windows(),
    );
    assert!(!has(&d, "timer.hpet-mmio"));
    assert!(has(&d, "apic.apic-access-mmio"));
}

#[test]
fn pit_ports_and_ps2_ports_are_not_the_pit() {
    let d = run(
        profile().ports(&[(0x40, In, 30_000, 3.0), (0x43, Out, 30_000, 3.0)]),
        &opts().windows(),
    );
    assert!(has(&d, "timer.pit-port"));
    let d = run(
        profile().ports(&[(0x60, In, 30_000, 3.0), (0x64, In, 30_000, 3.0)]),
        &opts().linux(),
    );
    assert!(!has(&d, "timer.pit-port"));
    assert_eq!(main_id(&d), "io.emulated-port");
}

#[test]
fn tsc_deadline_writes_are_graded_by_their_rate_per_vcpu() {
    // 30,000 re-arms/s over 2 vCPUs: 15,000/s each — a storm.
    let p = || profile().msrs(&[(0x6e0, Write, 300_000, 0.9)]).window(10.0);
    let d = run(p(), &opts().linux().vcpus(2));
    let f = get(&d, "timer.tsc-deadline-rearm");
    assert_eq!(f.severity, Severity::High);
    assert!(f.advice.contains(&"advice.remove-nohz-off"));
    // The same writes over 64 vCPUs: under 500/s each, nothing alarming.
    let d = run(p(), &opts().linux().vcpus(64));
    assert!(get(&d, "timer.tsc-deadline-rearm").severity <= Severity::Low);
    // Reads of the deadline are not re-arms.
    let d = run(
        profile().msrs(&[(0x6e0, Read, 300_000, 0.9)]),
        &opts().linux(),
    );
    assert!(!has(&d, "timer.tsc-deadline-rearm"));
}

#[test]
fn a_windows_guest_is_never_told_to_remove_nohz_off() {
    let d = run(
        profile().msrs(&[(0x6e0, Write, 300_000, 0.9)]).window(10.0),
        &opts().windows(),
    );
    assert!(has(&d, "timer.tsc-deadline-rearm"));
    assert!(!advice(&d).contains(&"advice.remove-nohz-off"));
    assert!(advice(&d).contains(&"advice.hv-stimer"));
}

#[test]
fn unknown_guest_gets_both_fixes_labelled() {
    let d = run(
        profile().msrs(&[(0x6e0, Write, 300_000, 0.9)]).window(10.0),
        &opts(),
    );
    let f = get(&d, "timer.tsc-deadline-rearm");
    let guests: Vec<ForGuest> = f.fixes.iter().map(|x| x.guest).collect();
    assert!(guests.contains(&ForGuest::Linux) && guests.contains(&ForGuest::Windows));
    assert!(
        f.cause.contains("If the guest is Windows") && f.cause.contains("If the guest is Linux")
    );
}

#[test]
fn tick_storm_from_counters_alone() {
    let p = |inj| {
        profile().kvm_stat(&[
            ("kvm_exit", 10_000_000, 60_000),
            ("kvm_msr", 5_000_000, 30_000),
            ("kvm_inj_virq", 5_000_000, inj),
            ("kvm_eoi", 5_000_000, 30_000),
        ])
    };
    let d = run(p(30_000), &opts().linux().vcpus(2));
    let f = get(&d, "timer.tick-storm");
    assert!(f.severity >= Severity::Medium);
    assert_eq!(main_id(&d), "timer.tick-storm");
    // MSR writes without matching injected interrupts are not ticks.
    let d = run(p(1_000), &opts().linux().vcpus(2));
    assert!(!has(&d, "timer.tick-storm"));
}

// --- APIC, IPIs and MSR writes --------------------------------------------------------------

#[test]
fn x2apic_icr_writes_are_an_ipi_storm_by_rate() {
    let d = run(
        profile().msrs(&[(0x830, Write, 600_000, 1.0)]).window(10.0),
        &opts().linux().vcpus(2),
    );
    let f = get(&d, "apic.ipi-storm");
    assert_eq!(f.severity, Severity::High, "30,000 IPIs/s per vCPU");
    assert!(f.advice.contains(&"advice.pv-ipi"));
    let d = run(
        profile().msrs(&[(0x830, Write, 6_000, 1.0)]).window(10.0),
        &opts().linux().vcpus(2),
    );
    assert!(get(&d, "apic.ipi-storm").severity <= Severity::Low);
}

#[test]
fn msr_writes_with_paired_halts_lead_with_the_timer_and_name_the_ipi_reading() {
    let d = run(
        profile().vmx(&[
            ("MSR_WRITE", 100_000, 1.0),
            ("HLT", 90_000, 300.0),
            ("PREEMPTION_TIMER", 40_000, 1.0),
        ]),
        &opts().linux(),
    );
    let f = get(&d, "timer.tsc-deadline-rearm");
    assert!(f.competing.iter().any(|r| r.id == "apic.ipi-storm"));
    assert!(f.check.as_deref().unwrap().contains("--event=msr"));
}

#[test]
fn msr_writes_with_host_kicks_and_no_halts_lead_with_ipis() {
    let d = run(
        profile().vmx(&[
            ("MSR_WRITE", 100_000, 1.0),
            ("EXTERNAL_INTERRUPT", 80_000, 2.0),
        ]),
        &opts().linux(),
    );
    let f = get(&d, "apic.ipi-storm");
    assert!(
        f.competing
            .iter()
            .any(|r| r.id == "timer.tsc-deadline-rearm")
    );
}

#[test]
fn synic_trap_when_apicv_looks_off() {
    let d = run(
        profile().vmx(&[
            ("MSR_WRITE", 170_000, 1.6),
            ("EXTERNAL_INTERRUPT", 400_000, 2.1),
            ("INTERRUPT_WINDOW", 9_000, 1.0),
            ("VMCALL", 6_000, 5.8),
        ]),
        &opts().windows(),
    );
    let f = get(&d, "apic.apicv-inhibited-synic");
    assert_eq!(f.confidence, Confidence::Likely);
    assert!(f.competing.iter().any(|r| r.id == "apic.hv-apic-msrs"));
    assert!(f.advice.contains(&"advice.hv-avic"));
}

#[test]
fn synthetic_apic_msrs_when_apicv_looks_on() {
    let d = run(
        profile().vmx(&[
            ("MSR_WRITE", 900_000, 1.3),
            ("EXTERNAL_INTERRUPT", 30_000, 3.1),
            ("VMCALL", 18_000, 4.2),
        ]),
        &opts().windows(),
    );
    assert_eq!(main_id(&d), "apic.hv-apic-msrs");
    assert!(!has(&d, "apic.apicv-inhibited-synic"));
}

#[test]
fn msr_writes_on_linux_are_not_the_synic_trap() {
    let d = run(
        profile().vmx(&[
            ("MSR_WRITE", 170_000, 1.6),
            ("EXTERNAL_INTERRUPT", 400_000, 2.1),
            ("VMCALL", 6_000, 5.8),
        ]),
        &opts().linux(),
    );
    assert!(!has(&d, "apic.apicv-inhibited-synic") && !has(&d, "apic.hv-apic-msrs"));
}

#[test]
fn window_exits_on_intel_read_as_inhibited_with_the_off_reading_beside() {
    let d = run(
        profile().vmx(&[
            ("EXTERNAL_INTERRUPT", 50_000, 2.0),
            ("INTERRUPT_WINDOW", 20_000, 1.0),
            ("HLT", 10_000, 500.0),
        ]),
        &opts().linux(),
    );
    let f = get(&d, "apic.apicv-inhibited");
    assert!(f.competing.iter().any(|r| r.id == "apic.apicv-off"));
    assert!(
        !f.advice.contains(&"advice.apicv-enable"),
        "inhibited means enabled"
    );
}

#[test]
fn a_few_window_exits_raise_nothing() {
    let d = run(
        profile().vmx(&[
            ("MSR_WRITE", 2_000, 3.0),
            ("HLT", 500, 4000.0),
            ("INTERRUPT_WINDOW", 20, 3.0),
        ]),
        &opts().linux(),
    );
    assert!(
        d.main_of(1).is_none_or(|f| f.id != "apic.apicv-inhibited"),
        "{:?}",
        handbuilt::ids(&d)
    );
}

#[test]
fn inhibit_events_prove_apicv_is_enabled() {
    let d = run(
        profile().events(&[("kvm_apicv_inhibit_changed", 4)]),
        &opts(),
    );
    let f = get(&d, "apic.apicv-inhibited");
    assert_eq!(f.confidence, Confidence::Confirmed);
    assert!(!advice(&d).contains(&"advice.apicv-enable"));
    assert_eq!(f.role, Role::Main);
}

#[test]
fn host_apicv_off_says_turn_it_on() {
    let d = run(
        profile().vmx(&[
            ("EXTERNAL_INTERRUPT", 50_000, 2.0),
            ("INTERRUPT_WINDOW", 20_000, 1.0),
        ]),
        &opts().linux().apicv(false),
    );
    assert!(
        get(&d, "apic.apicv-off")
            .advice
            .contains(&"advice.apicv-enable")
    );
}

#[test]
fn eoi_induced_exits_are_at_most_low() {
    let d = run(
        profile().vmx(&[("EOI_INDUCED", 500_000, 1.5), ("HLT", 1_000, 100.0)]),
        &opts(),
    );
    assert!(get(&d, "apic.eoi-exits").severity <= Severity::Low);
}

// --- port IO and MMIO -----------------------------------------------------------------------

#[test]
fn serial_and_legacy_virtio_by_port() {
    let d = run(
        profile().ports(&[(0x3f8, Out, 90_000, 8.0), (0x3fd, In, 90_000, 8.0)]),
        &opts().linux(),
    );
    assert_eq!(get(&d, "io.serial-pio-storm").tag, "io.serial-console");
    let d = run(
        profile().ports(&[(0xc050, Out, 50_000, 20.0)]),
        &opts().linux(),
    );
    assert_eq!(
        get(&d, "io.virtio-legacy-pio-notify").confidence,
        Confidence::Likely
    );
    // A read of a BAR port is not a queue notification.
    let d = run(
        profile().ports(&[(0xc050, In, 50_000, 20.0)]),
        &opts().linux(),
    );
    assert!(!has(&d, "io.virtio-legacy-pio-notify"));
}

#[test]
fn io_exits_without_ports_on_an_idle_windows_guest_are_its_rtc_tick() {
    let d = run(
        profile().vmx(&[("IO_INSTRUCTION", 300_000, 7.0), ("HLT", 100_000, 2000.0)]),
        &opts().windows(),
    );
    let f = get(&d, "timer.rtc-port");
    assert!(f.competing.iter().any(|r| r.id == "timer.acpi-pm-port"));
    assert!(f.confirm.as_deref().unwrap().contains("--event=ioport"));
    assert!(!advice(&d).contains(&"advice.hv-time"));
}

#[test]
fn io_exits_without_ports_on_a_busy_windows_guest_are_its_clock() {
    let d = run(
        profile().vmx(&[
            ("IO_INSTRUCTION", 300_000, 4.0),
            ("EXTERNAL_INTERRUPT", 100_000, 2.0),
        ]),
        &opts().windows(),
    );
    assert_eq!(main_id(&d), "timer.acpi-pm-port");
}

#[test]
fn io_exits_without_ports_elsewhere_name_every_candidate() {
    let d = run(
        profile().vmx(&[("IO_INSTRUCTION", 300_000, 7.0)]),
        &opts().linux(),
    );
    let f = get(&d, "io.emulated-port");
    let rivals: Vec<&str> = f.competing.iter().map(|r| r.id).collect();
    for r in [
        "io.virtio-legacy-pio-notify",
        "io.serial-pio-storm",
        "timer.acpi-pm-port",
    ] {
        assert!(rivals.contains(&r), "{rivals:?}");
    }
}

#[test]
fn mmio_exits_without_addresses_on_windows_without_enlightenments_are_the_hpet() {
    let d = run(
        profile().vmx(&[
            ("EPT_MISCONFIG", 800_000, 6.5),
            ("EXTERNAL_INTERRUPT", 100_000, 4.0),
            ("CPUID", 45, 1.7),
        ]),
        &opts().windows(),
    );
    let f = get(&d, "timer.hpet-mmio");
    assert!(f.evidence.iter().any(|e| e.key == "VMCALL" && e.count == 0));
    let d = run(
        profile().vmx(&[("EPT_MISCONFIG", 800_000, 6.5)]),
        &opts().linux(),
    );
    assert_eq!(main_id(&d), "mmio.emulated-device");
}
