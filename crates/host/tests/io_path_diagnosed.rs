//! The done-when test of IO-aware diagnosis: a real micro-VM runs the lab's IO path, the lab's
//! own in-process capture of that run (`io_path::profile`) is diagnosed with `--iops` at the
//! rate the run measured (its IOs over its wall time), and interrupt delivery is named as the
//! cost when the VMM injects the interrupts (mode a) and not when the driver polls (mode c).
//!
//! What is counted: on this machine's backend (PVM) `kvm_exit` never fires, so the capture is
//! what the lab records — the driver's notify port writes and EOI writes (to the VMM for
//! vmm-inject, caught in the kernel by the ioeventfd for poll), the returns to the VMM by
//! reason, and the run's wall time as the window. The per-IO figures are those counts over
//! the run's IOs; no time enters any assertion.

use std::time::Duration;

use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::IoRate;
use virtlens_core::diagnose::{self, Diagnosis, Options, Role, Severity};
use virtlens_core::measure::Delivery;
use virtlens_host::testing::{
    IoPathConfig as Config, RunCounts, io_path_iops, io_path_profile, run_io_path,
};
use virtlens_testkit::Need;

const QD: u32 = 4;
const BATCHES: u32 = 200;

fn capture_and_diagnose(delivery: Delivery) -> (RunCounts, Diagnosis) {
    let c = Config {
        delivery,
        qd: QD,
        coalesce: 1,
        x2apic_eoi: false,
    };
    let r = run_io_path(&c, BATCHES, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{}: {e}", c.label()));
    let profile = io_path_profile(&c, &r, &virtlens_host::lab::host_label());
    let iops = io_path_iops(&r).unwrap();
    let options = Options {
        io: Some(IoRate {
            iops,
            basis: "option",
            fio: None,
        }),
        ..Options::default()
    };
    let d = diagnose::diagnose(&[profile], None, &Decoder::builtin(), &options);
    (r, d)
}

fn ids(d: &Diagnosis) -> Vec<&str> {
    d.findings.iter().map(|f| f.id.as_str()).collect()
}

#[test]
fn vmm_injected_interrupts_are_the_cost_per_io_and_polling_is_not() {
    if !virtlens_testkit::require(&[Need::Kvm]) {
        return;
    }
    // Alone: the diagnosis weighs the run's IO rate (its IOs over its wall time), which a busy
    // machine lowers.
    let _alone = virtlens_testkit::exclusive();
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-6);

    // (a) vmm-inject: every completion is an interrupt the VMM injects; its EOI and the HLT
    // that stands in for the window exit return to the VMM.
    let (r, d) = capture_and_diagnose(Delivery::VmmInject);
    let ios = r.ios as f64;
    assert_eq!(r.ios, u64::from(BATCHES * QD));
    let main = d.findings.iter().find(|f| f.role == Role::Main);
    assert_eq!(
        main.map(|f| f.id.as_str()),
        Some("irq.delivery-exits"),
        "{:?}",
        ids(&d)
    );
    let f = main.unwrap();
    assert!(f.severity >= Severity::Low, "{f:?}");
    assert!(f.cause.contains("emulated in the VMM"), "{}", f.cause);
    let io = d.inputs[0].evidence.io.clone().unwrap();
    // The per-IO numbers are the capture's counts over the run's IOs.
    assert!(close(io.eoi.per_io, r.vmm_eoi as f64 / ios), "{io:?}");
    assert!(close(io.eoi.per_io, 1.0), "one EOI per IO at k = 1: {io:?}");
    assert!(close(io.notify.per_io, r.vmm_notify as f64 / ios), "{io:?}");
    assert!(close(io.notify.per_io, 1.0 / f64::from(QD)), "{io:?}");
    assert!(close(io.halt.per_io, r.vmm_halt as f64 / ios), "{io:?}");
    assert!(close(io.returns.per_io, r.vmm_total as f64 / ios), "{io:?}");
    assert!(close(io.returns.per_io, 2.0), "{io:?}");
    // The EOI row the finding rests on carries its figure per IO.
    let eoi = f
        .evidence
        .iter()
        .find(|e| e.key.contains("fee000b0"))
        .unwrap();
    assert!(close(eoi.per_io, 1.0), "{eoi:?}");
    assert!(io.ceiling_iops_per_vcpu.is_some_and(|c| c > 0.0), "{io:?}");
    assert!(!io.polled());

    // (b) irqfd: the VMM injects nothing; the interrupts KVM delivered are counted by its
    // binary statistics (`irq_injections`, read over the run), one per completion.
    let (r, d) = capture_and_diagnose(Delivery::Irqfd);
    let ios = r.ios as f64;
    let io = d.inputs[0].evidence.io.clone().unwrap();
    assert!(
        io.injections
            .from
            .iter()
            .any(|f| f.contains("irq_injections")),
        "{io:?}"
    );
    // One per completion; KVM counts an injection again when an exit interrupts its delivery
    // (a host interrupt now and then), so never fewer and a few more at most.
    let per_irq = io.injections.per_io.unwrap() * ios / r.interrupts as f64;
    assert!(
        (1.0 - 1e-9..=1.03).contains(&per_irq),
        "{per_irq} per interrupt: {io:?}"
    );
    assert!(!io.polled());

    // (c) poll: notifies go on, no interrupt, no EOI, no halt, nothing returns to the VMM.
    let (r, d) = capture_and_diagnose(Delivery::Poll);
    let ios = r.ios as f64;
    assert_eq!((r.interrupts, r.eois, r.vmm_total), (0, 0, 0));
    let found = ids(&d);
    assert!(!found.contains(&"irq.delivery-exits"), "{found:?}");
    assert!(!found.iter().any(|id| id.starts_with("apic.")), "{found:?}");
    let polling = d.findings.iter().find(|f| f.id == "io.polling").unwrap();
    assert_eq!(polling.role, Role::Context);
    let io = d.inputs[0].evidence.io.clone().unwrap();
    assert!(io.polled(), "{io:?}");
    assert!(close(io.notify.per_io, r.notifies as f64 / ios), "{io:?}");
    assert!(close(io.notify.per_io, 1.0 / f64::from(QD)), "{io:?}");
    assert_eq!((io.eoi.per_io, io.delivery_per_io()), (None, None));
    assert_eq!(io.interrupts_per_io(), 0.0);
}
