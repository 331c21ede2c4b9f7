#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
//! The IO path on a real /dev/kvm: for each delivery mode and a few queue depths, the returns
//! to the VMM and the interrupts per IO are what the mode's design says — counts, never times.

use std::time::Duration;

use virtlens_host::lab::io_path::{self, Config, Delivery};
use virtlens_testkit::Need;

fn run(delivery: Delivery, qd: u32, coalesce: u32) -> io_path::Measured {
    let c = Config {
        delivery,
        qd,
        coalesce,
        batches: 20,
        x2apic_eoi: false,
    };
    io_path::run(&c, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{delivery:?} qd {qd}: {e}"))
}

#[test]
fn vmm_injected_interrupts_cost_a_notify_and_an_eoi_exit_per_interrupt() {
    if !virtlens_testkit::require(&[Need::Kvm]) {
        return;
    }
    for qd in [1, 4] {
        let m = run(Delivery::VmmInject, qd, 1);
        let batches = m.ios / u64::from(qd);
        // One interrupt per completion, each injected by virtlens and taken by the driver.
        // Every injected interrupt is taken by the driver, at least one per notify; at queue
        // depth 1 exactly one per IO.
        assert_eq!(m.guest_interrupts, m.vmm_injections, "qd {qd}: {m:?}");
        assert!(
            m.vmm_injections >= batches && m.vmm_injections <= m.ios,
            "qd {qd}: {m:?}"
        );
        // Returns to the VMM: one notify per batch and one EOI per interrupt (plus interrupt
        // windows where the backend reports them to userspace).
        assert!(
            m.vmm_returns >= batches + m.guest_interrupts,
            "qd {qd}: {m:?}"
        );
        if qd == 1 {
            assert_eq!(
                (m.vmm_injections, m.vmm_returns),
                (m.ios, 2 * m.ios),
                "{m:?}"
            );
        }
    }
    // Coalesced 4 per interrupt: a quarter of the interrupts.
    let m = run(Delivery::VmmInject, 4, 4);
    assert_eq!(
        (m.vmm_injections, m.guest_interrupts),
        (m.ios / 4, m.ios / 4)
    );
}

#[test]
fn irqfd_interrupts_and_polling_never_return_to_the_vmm() {
    if !virtlens_testkit::require(&[Need::Kvm]) {
        return;
    }
    for qd in [1, 4] {
        let m = run(Delivery::Irqfd, qd, qd);
        assert_eq!(m.vmm_returns, 0, "irqfd qd {qd}: {m:?}");
        assert_eq!(m.vmm_injections, 0);
        assert!(
            m.guest_interrupts >= 1 && m.guest_interrupts <= m.ios,
            "{m:?}"
        );
        let p = run(Delivery::Poll, qd, 1);
        assert_eq!(
            (p.vmm_returns, p.guest_interrupts),
            (0, 0),
            "poll qd {qd}: {p:?}"
        );
    }
}
