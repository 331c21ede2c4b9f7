//! The IO path on a real /dev/kvm: for each delivery mode, queue depth and coalescing, the
//! exits and returns to the VMM per IO are what the mode's design says — counts, never times.

use std::time::Duration;

use virtlens_core::measure::Delivery;
use virtlens_host::testing::{
    IoPathConfig as Config, IoPathPlan, RunCounts, check_io_path, measure_io_path, run_io_path,
};
use virtlens_testkit::Need;

const BATCHES: u32 = 10;

fn run(delivery: Delivery, qd: u32, coalesce: u32, x2apic_eoi: bool) -> RunCounts {
    let c = Config {
        delivery,
        qd,
        coalesce,
        x2apic_eoi,
    };
    let r = run_io_path(&c, BATCHES, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{}: {e}", c.label()));
    check_io_path(&c, BATCHES, &r).unwrap_or_else(|e| panic!("{e}"));
    r
}

#[test]
fn vmm_injected_interrupts_return_to_the_vmm_twice_per_interrupt() {
    if !virtlens_testkit::require(&[Need::Kvm]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    for (qd, k) in [(1, 1), (4, 1), (16, 1), (16, 4), (5, 2)] {
        let r = run(Delivery::VmmInject, qd, k, false);
        let b = u64::from(BATCHES);
        let irqs = b * u64::from(qd.div_ceil(k));
        // A notify per batch; an EOI per interrupt; before every interrupt but a batch's first,
        // the guest re-enabling interrupts (a window exit, or the HLT standing in for it).
        assert_eq!(r.vmm_notify, b, "qd {qd} k {k}: {r:?}");
        assert_eq!((r.interrupts, r.injections, r.vmm_eoi), (irqs, irqs, irqs));
        assert_eq!(r.vmm_halt + r.vmm_window, irqs - b, "qd {qd} k {k}: {r:?}");
        assert_eq!(r.vmm_total, 2 * irqs, "qd {qd} k {k}: {r:?}");
    }
}

#[test]
fn irqfd_interrupts_and_polling_never_return_to_the_vmm() {
    if !virtlens_testkit::require(&[Need::Kvm]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let b = u64::from(BATCHES);
    for qd in [1, 4, 16] {
        for (k, x2apic) in [(1, false), (4, false), (1, true)] {
            let r = run(Delivery::Irqfd, qd, k, x2apic);
            let irqs = b * u64::from(qd.div_ceil(k));
            assert_eq!(r.vmm_total, 0, "irqfd qd {qd}: {r:?}");
            assert_eq!((r.interrupts, r.eois, r.notifies), (irqs, irqs, b));
            // KVM injected each interrupt once (its own count agrees with the guest's).
            if let Some(n) = r.kvm("irq_injections") {
                assert!(n >= irqs, "qd {qd} k {k}: {r:?}");
            }
        }
        let p = run(Delivery::Poll, qd, 1, false);
        assert_eq!(
            (p.vmm_total, p.interrupts, p.halts),
            (0, 0, 0),
            "poll qd {qd}: {p:?}"
        );
        assert_eq!(p.notifies, b);
    }
}

/// The lab's rows (interleaved rounds, per-IO figures): every mode's exits and returns to the
/// VMM per IO are the design's, at any queue depth and coalescing.
#[test]
fn the_lab_rows_give_exits_and_vmm_returns_per_io_for_each_mode() {
    if !virtlens_testkit::require(&[Need::Kvm]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let mut configs = Vec::new();
    for qd in [1, 8] {
        for delivery in Delivery::ALL {
            for k in [1, 4] {
                if k == 1 || delivery != Delivery::Poll {
                    configs.push(Config {
                        delivery,
                        qd,
                        coalesce: k,
                        x2apic_eoi: false,
                    });
                }
            }
        }
    }
    let plan = IoPathPlan {
        rounds: 3,
        target_run: Duration::from_millis(1),
        watchdog: Duration::from_secs(30),
        until: None,
    };
    let rows = measure_io_path(&configs, &plan, &mut |_| {}, &mut Vec::new());
    assert_eq!(rows.len(), configs.len());
    for r in &rows {
        let what = format!("{} qd {} k {}", r.delivery.name(), r.qd, r.coalesce);
        assert_eq!(r.runs, 3, "{what}: {:?}", r.reason);
        let (e, v) = (r.exits_per_io.unwrap(), r.vmm_returns_per_io.unwrap());
        let qd = f64::from(r.qd);
        let irqs = f64::from(r.qd.div_ceil(r.coalesce)) / qd;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(e.notify, 1.0 / qd), "{what}: {e:?}");
        match r.delivery {
            Delivery::VmmInject => {
                // notify + EOI + (window or the HLT standing in for it) per interrupt but a
                // batch's first: all of them return to the VMM.
                assert!(
                    close(e.interrupts, irqs) && close(e.eoi, irqs),
                    "{what}: {e:?}"
                );
                assert!(close(e.halt + e.window, irqs - 1.0 / qd), "{what}: {e:?}");
                assert!(close(v.total, 2.0 * irqs), "{what}: {v:?}");
                assert!(close(e.total, v.total), "{what}: {e:?} {v:?}");
            }
            Delivery::Irqfd => {
                assert!(
                    close(e.interrupts, irqs) && close(e.eoi, irqs),
                    "{what}: {e:?}"
                );
                assert_eq!(v.total, 0.0, "{what}: {v:?}");
            }
            Delivery::Poll => {
                assert_eq!((e.interrupts, e.eoi, e.halt), (0.0, 0.0, 0.0), "{what}");
                assert!(close(e.total, 1.0 / qd) && v.total == 0.0, "{what}: {e:?}");
            }
        }
    }
}
