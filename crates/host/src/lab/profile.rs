//! The exit profile of a lab measurement, as a `virtlens_core::profile::Profile` so that
//! `report`, `compare` and `diagnose` read it like any capture: what the guest hit that reached
//! the VMM (`ioport`, `mmio`, `msr` tables keyed by port, address or MSR and direction, with
//! the counts the lab's exit handling saw), the returns to the VMM by reason
//! (`userspace_exit`), hypercalls, ioeventfd signals (counted from the eventfds: accesses the
//! kernel caught), coalesced-MMIO writes, and the KVM statistics that moved (`kvm_stats`).

use std::collections::BTreeMap;

use kvm_ioctls::IoEventAddress;
use virtlens_core::profile::{Access as Dir, Key, Origin, Profile, Row, Table, TableKind, Window};

use super::HostLabel;
use super::bench::Measured;
use crate::microvm::Access;

/// The source format name of lab profiles.
pub const FORMAT: &str = "virtlens-lab";

fn row(key: Key, count: u64) -> Row {
    let mut r = Row::new(key, count);
    r.pid = Some(std::process::id());
    r.vcpu = Some(0);
    r
}

/// The profile of everything `m`'s measured runs did.
pub(super) fn profile(m: &Measured, host: &HostLabel) -> Profile {
    let mut origin = Origin::new(FORMAT, None);
    origin.backend = Some(host.backend.clone());
    origin.cpu.clone_from(&host.facts.cpu_model);
    origin.cpu_emulator.clone_from(&host.facts.cpu_emulator);
    origin.kernel = host.kernel.clone();
    origin.vendor = host.vendor.clone();
    origin
        .vm_names
        .insert(std::process::id(), format!("virtlens-lab:{}", m.name));
    let mut p = Profile::new(origin);
    let window = Window {
        duration_ns: u64::try_from(m.elapsed_ns).ok(),
        ..Window::default()
    };
    let label = format!("{} ({}): {} operations", m.name, m.mode, m.total_ops);
    let mut tables: BTreeMap<TableKind, Vec<Row>> = BTreeMap::new();
    let mut exits: BTreeMap<&str, u64> = BTreeMap::new();
    for (access, n) in &m.accesses {
        let (kind, key, reason) = match *access {
            Access::PortIn(port) => (TableKind::Ioport, port_key(port, Dir::In), "KVM_EXIT_IO"),
            Access::PortOut(port) => (TableKind::Ioport, port_key(port, Dir::Out), "KVM_EXIT_IO"),
            Access::MmioRead(gpa) => (TableKind::Mmio, mmio_key(gpa, Dir::Read), "KVM_EXIT_MMIO"),
            Access::MmioWrite(gpa) => (TableKind::Mmio, mmio_key(gpa, Dir::Write), "KVM_EXIT_MMIO"),
            Access::Rdmsr(i) => (TableKind::Msr, msr_key(i, Dir::Read), "KVM_EXIT_X86_RDMSR"),
            Access::Wrmsr(i) => (TableKind::Msr, msr_key(i, Dir::Write), "KVM_EXIT_X86_WRMSR"),
            Access::Hypercall(nr) => (
                TableKind::Hypercall,
                Key::Event {
                    name: format!("hypercall {nr}"),
                },
                "KVM_EXIT_HYPERCALL",
            ),
            Access::Halt => (
                TableKind::UserspaceExit,
                Key::Event {
                    name: "KVM_EXIT_HLT".into(),
                },
                "",
            ),
            Access::Coalesced(gpa) => (TableKind::CoalescedMmio, mmio_key(gpa, Dir::Write), ""),
        };
        if !reason.is_empty() {
            *exits.entry(reason).or_default() += n;
        }
        tables.entry(kind).or_default().push(row(key, *n));
    }
    let userspace = tables.entry(TableKind::UserspaceExit).or_default();
    userspace.extend(exits.into_iter().map(|(name, n)| {
        row(
            Key::Event {
                name: name.to_string(),
            },
            n,
        )
    }));
    for (addr, n) in &m.eventfd_signals {
        let key = match *addr {
            IoEventAddress::Pio(port) => port_key(port as u16, Dir::Out),
            IoEventAddress::Mmio(gpa) => mmio_key(gpa, Dir::Write),
        };
        tables
            .entry(TableKind::Ioeventfd)
            .or_default()
            .push(row(key, *n));
    }
    let stats: Vec<Row> = m
        .stats
        .iter()
        .filter(|(_, d)| **d > 0)
        .map(|(name, d)| row(Key::Event { name: name.clone() }, *d as u64))
        .collect();
    if !stats.is_empty() {
        tables.insert(TableKind::KvmStats, stats);
    }
    for (kind, rows) in tables {
        if rows.is_empty() {
            continue;
        }
        let mut t = Table::new(kind.clone());
        t.label = Some(label.clone());
        t.window = Some(window.clone());
        t.scope = Some(
            match &kind {
                TableKind::KvmStats => "KVM binary statistics of the VM and vCPU",
                TableKind::Ioeventfd => "accesses caught in the kernel (eventfd signals)",
                _ => "returns to the VMM, counted by the lab's exit handling",
            }
            .to_string(),
        );
        t.overlapping = matches!(&kind, TableKind::KvmStats);
        t.rows = rows;
        p.tables.push(t);
    }
    p
}

fn port_key(port: u16, access: Dir) -> Key {
    Key::Port {
        port: u64::from(port),
        access: Some(access),
    }
}

fn mmio_key(gpa: u64, access: Dir) -> Key {
    Key::Mmio {
        gpa,
        access: Some(access),
    }
}

fn msr_key(index: u32, access: Dir) -> Key {
    Key::Msr {
        index: u64::from(index),
        access: Some(access),
    }
}
