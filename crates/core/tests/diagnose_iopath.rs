//! The IO-path family on hand-built evidence, positive and negative: interrupt delivery that
//! exits (EOIs through the xAPIC page or the x2APIC MSR, window exits; a local APIC in the
//! VMM), notifications per IO, polled completions, the per-IO view and its ceiling; and the
//! Hyper-V counters as diagnose evidence (the talk's VP table at 4.5 M IOPS).

use virtlens_core::config::GuestFamily;
use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Options, Role, Severity};
use virtlens_core::profile::Access::{Out, Write};

use crate::handbuilt::{self, get, has, opts, profile, run};

/// A guest doing `iops` IOs per second for 10 s, interrupt-driven with an exiting EOI per IO
/// (x2APIC MSR), a notify per four IOs, interrupt windows and host interrupts.
fn interrupt_driven(iops: u64) -> handbuilt::P {
    let ios = iops * 10;
    profile()
        .window(10.0)
        .vmx(&[
            ("MSR_WRITE", ios, 1.6),
            ("IO_INSTRUCTION", ios / 4, 6.0),
            ("INTERRUPT_WINDOW", ios / 2, 1.0),
            ("EXTERNAL_INTERRUPT", ios, 2.0),
            ("HLT", ios / 2, 50.0),
        ])
        .msrs(&[(0x80b, Write, ios, 1.6)])
        .ports(&[(0xc050, Out, ios / 4, 6.0)])
}

#[test]
fn exiting_eois_and_windows_are_interrupt_delivery_per_io() {
    let d = run(interrupt_driven(50_000), &opts().linux().iops(50_000.0));
    let f = get(&d, "irq.delivery-exits");
    assert!(f.severity >= Severity::Low, "{f:?}");
    // Per IO from the input's own numbers: one EOI and half a window exit.
    let io = d.inputs[0].evidence.io.clone().unwrap();
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
    assert!(close(io.eoi.per_io, 1.0), "{io:?}");
    assert!(close(io.window.per_io, 0.5), "{io:?}");
    assert!(close(io.notify.per_io, 0.25), "{io:?}");
    assert!(close(io.delivery_per_io(), 1.5));
    // External interrupts are reported per IO, and not counted as delivery exits by themselves.
    assert!(close(io.external.per_io, 1.0), "{io:?}");
    assert!(
        f.evidence
            .iter()
            .any(|e| e.key == "external interrupts per IO")
    );
    assert!(io.handling_ns_per_io.is_some_and(|h| h > 0.0));
    assert_eq!(io.handling_basis, "measured");
    // The ceiling is what the exit handling per IO leaves one vCPU.
    let h = io.handling_ns_per_io.unwrap();
    assert!(close(io.ceiling_iops_per_vcpu, 1e9 / h));
    // It claims the EOI and window rows: the apic family does not name them again.
    assert!(!has(&d, "apic.eoi-exits") && !has(&d, "apic.apicv-inhibited"));
    assert!(
        f.evidence
            .iter()
            .any(|e| e.key == "0x80b" && e.per_io.is_some())
    );
    // Its fixes: APIC virtualization, and (Linux) polling with its CPU cost.
    let fixes: Vec<&str> = f.fixes.iter().map(|x| x.summary.as_str()).collect();
    assert!(
        fixes.iter().any(|s| s.contains("posted interrupts")),
        "{fixes:?}"
    );
    assert!(fixes.iter().any(|s| s.contains("poll")), "{fixes:?}");
}

#[test]
fn without_the_io_rate_the_family_stays_silent() {
    let d = run(interrupt_driven(50_000), &opts().linux());
    assert!(!has(&d, "irq.delivery-exits") && !has(&d, "io.notify-exits"));
    assert!(d.inputs[0].evidence.io.is_none());
}

#[test]
fn a_local_apic_in_the_vmm_is_named_from_the_returns_to_it() {
    // What a capture of a VMM-injected IO path holds on a backend without kvm_exit: the EOI
    // writes to the xAPIC page and the returns to the VMM.
    let p = profile()
        .window(1.0)
        .mmio(&[(0xfee0_00b0, Write, 20_000, 7.0)])
        .ports(&[(0xc060, Out, 5_000, 7.0)])
        .userspace(&[
            ("KVM_EXIT_MMIO", 20_000),
            ("KVM_EXIT_HLT", 15_000),
            ("KVM_EXIT_IO", 5_000),
        ]);
    let d = run(p, &opts().iops(20_000.0));
    let f = get(&d, "irq.delivery-exits");
    assert!(f.cause.contains("emulated in the VMM"), "{}", f.cause);
    assert!(f.fixes.iter().any(|x| {
        x.qemu
            .as_deref()
            .is_some_and(|q| q.contains("kernel_irqchip"))
    }));
    let io = d.inputs[0].evidence.io.clone().unwrap();
    assert_eq!((io.eoi.per_io, io.halt.per_io), (Some(1.0), Some(0.75)));
    assert_eq!(io.returns.per_io, Some(2.0));
}

#[test]
fn a_notify_per_io_is_a_finding_and_fewer_are_not_alarming() {
    let p = |notifies: u64| {
        profile()
            .window(10.0)
            .vmx(&[("IO_INSTRUCTION", notifies, 6.0), ("HLT", 1_000, 100.0)])
            .ports(&[(0xc050, Out, notifies, 6.0)])
    };
    let d = run(p(200_000), &opts().linux().iops(20_000.0));
    let f = get(&d, "io.notify-exits");
    assert!(f.severity >= Severity::Low);
    assert!(
        f.fixes
            .iter()
            .any(|x| x.qemu.as_deref().is_some_and(|q| q.contains("poll-max-ns")))
    );
    assert!(f.fixes.iter().any(|x| {
        x.libvirt
            .as_deref()
            .is_some_and(|q| q.contains("vhostuser"))
    }));
    // One notify per 32 IOs of a cheap port: no floor, too small to report as a problem.
    let d = run(p(6_250), &opts().linux().iops(20_000.0));
    assert!(!has(&d, "io.notify-exits") || get(&d, "io.notify-exits").severity < Severity::Low);
}

#[test]
fn polled_completions_are_context_and_no_interrupt_finding() {
    let p = profile()
        .window(10.0)
        .ports(&[(0xc060, Out, 25_000, 2.0)])
        .events(&[("kvm_apicv_inhibit_changed", 1), ("kvm_pio", 25_000)]);
    let d = run(p, &opts().iops(10_000.0));
    let f = get(&d, "io.polling");
    assert_eq!(f.role, Role::Context);
    // Its cost: a vCPU spinning throughout spends 1 s / 10,000 IOPS = 100 µs per IO.
    let spin = f
        .evidence
        .iter()
        .find(|e| e.key.contains("polling vCPU"))
        .unwrap();
    assert_eq!(spin.mean_ns, Some(100_000.0));
    assert!(!has(&d, "irq.delivery-exits"));
    // An inhibit traced at VM creation costs a polled IO path nothing.
    assert!(!has(&d, "apic.apicv-inhibited"));
}

#[test]
fn the_talks_vp_table_at_4_5_m_iops_is_interrupt_delivery_at_2_intercepts_per_io() {
    let text = include_bytes!("../../../testdata/perfmon/talk-10m-iops-vp-table.txt");
    let p = virtlens_core::sources::read_bytes(text, "talk-10m-iops-vp-table.txt", None).unwrap();
    let options = Options {
        io: Some(virtlens_core::diagnose::IoRate {
            iops: 4_500_000.0,
            basis: "option",
            fio: None,
        }),
        guest: Some(GuestFamily::Windows),
        ..Options::default()
    };
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &options);
    let f = get(&d, "hv.interrupt-delivery");
    assert_eq!(f.severity, Severity::High);
    let per_io = |key: &str| {
        f.evidence
            .iter()
            .find(|e| e.key == key)
            .and_then(|e| e.per_io)
            .unwrap_or_else(|| panic!("{key}: {:?}", f.evidence))
    };
    // 9,214,942 intercepts/s at 4.5 M IOPS: 2.0 per IO (2.05), of which external interrupts
    // 0.91, virtual interrupts 0.61, IPIs 0.27, EOIs 0.10.
    assert_eq!(format!("{:.1}", per_io("intercepts per IO")), "2.0");
    assert_eq!(
        format!("{:.2}", per_io("external interrupts per IO")),
        "0.91"
    );
    assert_eq!(format!("{:.2}", per_io("IPIs sent per IO")), "0.27");
    assert!(
        f.fixes
            .iter()
            .any(|x| x.summary.contains("posted interrupts"))
    );
    // Interrupt delivery is the main problem; the hypervisor's share of VP time is the other high
    // reading, costed at what is left of it: 20.216% of VP time, of which the interrupt
    // intercepts (external, EOI, IPI: 5,752,404 of 9,214,942/s) are 12.62%.
    assert_eq!(f.role, Role::Main);
    let t = get(&d, "hv.hypervisor-time");
    assert_eq!(t.severity, Severity::High);
    let share =
        |f: &virtlens_core::diagnose::Finding| f.cost.as_ref().and_then(|c| c.cpu_share).unwrap();
    let irq = 0.20216 * 5_752_404.0 / 9_214_942.0;
    assert!((share(f) - irq).abs() < 1e-9, "{}", share(f));
    assert!((share(t) - (0.20216 - irq)).abs() < 1e-9, "{}", share(t));
    assert_eq!(d.inputs[0].evidence.tables, ["perfmon"]);
}

#[test]
fn esxtop_ready_is_over_commit_in_diagnose() {
    let csv = "\"(PDH-CSV 4.0) (UTC)(0)\",\"\\\\esx01\\Group Cpu(1234:web)\\% Ready\",\"\\\\esx01\\Group Cpu(1234:web)\\% CoStop\"\n\
               \"11/24/2026 10:00:00\",\"24.0\",\"0.5\"\n\
               \"11/24/2026 10:00:05\",\"26.0\",\"0.7\"\n";
    let p = virtlens_core::sources::read_bytes(csv.as_bytes(), "esxtop.csv", None).unwrap();
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
    let f = get(&d, "hv.overcommit");
    // 25% ready per vCPU: high on the thresholds of the KVM ready time (sched.*), with its
    // words and fixes.
    assert_eq!(f.severity, Severity::High);
    assert_eq!(
        f.grade.measure,
        virtlens_core::diagnose::Measure::ReadyShare
    );
    assert_eq!(
        f.grade.thresholds,
        Some(virtlens_core::diagnose::READY_SHARE)
    );
    assert_eq!(f.grade.value, Some(0.25));
    assert!(
        f.cause
            .contains("Ready time is the time a vCPU was runnable"),
        "{}",
        f.cause
    );
    let fixes: Vec<&str> = f.fixes.iter().map(|x| x.summary.as_str()).collect();
    assert!(
        fixes.contains(&virtlens_core::testing::FEWER_VCPUS),
        "{fixes:?}"
    );
    assert!(fixes.contains(&virtlens_core::testing::PIN), "{fixes:?}");
}

#[test]
fn hyperv_cpu_wait_per_dispatch_is_over_commit_never_high_alone() {
    let csv = "\"(PDH-CSV 4.0) (UTC)(0)\",\"\\\\hv01\\Hyper-V Hypervisor Virtual Processor(sql01:Hv VP 0)\\CPU Wait Time Per Dispatch\"\n\
               \"11/24/2026 10:00:00\",\"150000\"\n\
               \"11/24/2026 10:00:05\",\"170000\"\n";
    let p = virtlens_core::sources::read_bytes(csv.as_bytes(), "hv.csv", None).unwrap();
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
    let f = get(&d, "hv.overcommit");
    assert_eq!(f.severity, Severity::Medium);
    assert_eq!(
        f.grade.measure,
        virtlens_core::diagnose::Measure::WaitPerDispatch
    );
    assert_eq!(f.grade.value, Some(160_000.0));
    assert_eq!(f.grade.capped_at, Some(Severity::Medium));
    assert!(
        f.cause.contains("CPU Wait Time Per Dispatch"),
        "{}",
        f.cause
    );
}
