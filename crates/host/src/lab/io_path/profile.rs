//! One IO-path run as a `virtlens_core::profile::Profile`, so that `report` and `diagnose
//! --iops` read it like any capture. What it holds is what the lab counted, not a trace:
//!
//! - `ioport`: the driver's notify writes to its doorbell port (to the VMM for `vmm-inject`,
//!   caught in the kernel by the ioeventfd otherwise — a kvm_pio event either way);
//! - `mmio` / `msr`: the driver's EOI writes (the xAPIC EOI register, or the x2APIC EOI MSR),
//!   one per interrupt it took — to the VMM for `vmm-inject`, to the in-kernel LAPIC for
//!   `irqfd`; none when it polls;
//! - `userspace_exit`: the returns to the VMM by reason (notify, EOI, HLT, interrupt window);
//! - `ioeventfd`: the notifies the kernel caught (eventfd signals the device thread read);
//! - `kvm_stats`: KVM's binary statistics that moved over the run.
//!
//! The window is the run's wall time, so that counts per second over IOs per second are counts
//! per IO. On an emulating backend (PVM) nothing here is a hardware exit; the origin carries
//! the backend label.

use std::collections::BTreeMap;

use virtlens_core::profile::{Access, Key, Origin, Profile, Row, Table, TableKind, Window};

use super::guest::{APIC_EOI, NOTIFY_PORT, X2APIC_EOI};
use super::{Config, RunCounts};
use crate::lab::HostLabel;

/// The source format name of IO-path run profiles.
pub(crate) const FORMAT: &str = "virtlens-lab-io-path";

fn row(key: Key, count: u64) -> Row {
    let mut r = Row::new(key, count);
    r.pid = Some(std::process::id());
    r.vcpu = Some(0);
    r
}

fn event(name: &str, count: u64) -> Row {
    row(
        Key::Event {
            name: name.to_string(),
        },
        count,
    )
}

/// The profile of run `r` of configuration `c` on `host`.
pub fn profile(c: &Config, r: &RunCounts, host: &HostLabel) -> Profile {
    let mut origin = Origin::new(FORMAT, None);
    origin.backend = Some(host.backend.clone());
    origin.cpu.clone_from(&host.facts.cpu_model);
    origin.cpu_emulator.clone_from(&host.facts.cpu_emulator);
    origin.kernel = host.kernel.clone();
    origin.vendor = host.vendor.clone();
    origin.vm_names.insert(
        std::process::id(),
        format!("virtlens-lab:io_path {}", c.label()),
    );
    let mut p = Profile::new(origin);
    let label = format!("io_path {}: {} IOs", c.label(), r.ios);
    let window = Window {
        duration_ns: Some(r.wall_ns),
        ..Window::default()
    };
    let to_vmm = c.delivery == super::Delivery::VmmInject;
    let mut tables: BTreeMap<TableKind, (Vec<Row>, &str)> = BTreeMap::new();
    let guest_scope = if to_vmm {
        "the driver's accesses, each a return to the VMM (counted by the lab's exit handling)"
    } else {
        "the driver's accesses, handled in the kernel (ioeventfd, in-kernel LAPIC), counted by \
         the driver and the device thread"
    };
    let notifies = if to_vmm { r.vmm_notify } else { r.notifies };
    if notifies > 0 {
        let key = Key::Port {
            port: u64::from(NOTIFY_PORT),
            access: Some(Access::Out),
        };
        tables.insert(TableKind::Ioport, (vec![row(key, notifies)], guest_scope));
    }
    let eois = if to_vmm { r.vmm_eoi } else { r.eois };
    if eois > 0 {
        let (kind, key) = match c.eoi() {
            super::Eoi::X2apic => (
                TableKind::Msr,
                Key::Msr {
                    index: u64::from(X2APIC_EOI),
                    access: Some(Access::Write),
                },
            ),
            _ => (
                TableKind::Mmio,
                Key::Mmio {
                    gpa: APIC_EOI,
                    access: Some(Access::Write),
                },
            ),
        };
        tables.insert(kind, (vec![row(key, eois)], guest_scope));
    }
    let returns: Vec<Row> = [
        ("KVM_EXIT_IO", r.vmm_notify),
        ("KVM_EXIT_MMIO", r.vmm_eoi),
        ("KVM_EXIT_HLT", r.vmm_halt),
        ("KVM_EXIT_IRQ_WINDOW_OPEN", r.vmm_window),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(name, n)| event(name, n))
    .collect();
    tables.insert(
        TableKind::UserspaceExit,
        (
            returns,
            "returns to the VMM, counted by the lab's exit handling",
        ),
    );
    if !to_vmm && r.notifies > 0 {
        let key = Key::Port {
            port: u64::from(NOTIFY_PORT),
            access: Some(Access::Out),
        };
        tables.insert(
            TableKind::Ioeventfd,
            (
                vec![row(key, r.notifies)],
                "accesses caught in the kernel (eventfd signals)",
            ),
        );
    }
    let stats: Vec<Row> = r
        .kvm
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| event(name, *n))
        .collect();
    tables.insert(
        TableKind::KvmStats,
        (stats, "KVM binary statistics of the VM and vCPU"),
    );
    for (kind, (rows, scope)) in tables {
        if rows.is_empty() {
            continue;
        }
        let mut t = Table::new(kind.clone());
        t.label = Some(label.clone());
        t.window = Some(window.clone());
        t.scope = Some(scope.to_string());
        t.overlapping = matches!(&kind, TableKind::KvmStats);
        t.rows = rows;
        p.tables.push(t);
    }
    p
}

/// The IO rate of run `r`: IOs over its wall time, per second.
pub fn iops(r: &RunCounts) -> Option<f64> {
    (r.wall_ns > 0).then(|| r.ios as f64 * 1e9 / r.wall_ns as f64)
}
