//! Tests of the profile builder: pairing per thread, perf's duration definitions, unknown
//! codes, VMX flag bits and vCPU ids from thread names.

use super::*;
use crate::events::Reason;
use crate::profile::{Key, TableKind};

fn ev(ts: u64, tid: u32, kind: EventKind<'_>) -> Event<'_> {
    Event {
        ts_ns: Some(ts),
        tid: Some(tid),
        ..Event::new(kind)
    }
}

fn exit(name: &str) -> EventKind<'_> {
    EventKind::Exit {
        reason: Reason::Name(name),
        isa: None,
        vcpu: None,
        rip: None,
    }
}

const ENTRY: EventKind<'static> = EventKind::Entry { vcpu: Some(0) };

#[test]
fn exits_pair_with_the_next_entry_on_their_thread() {
    let mut b = ProfileBuilder::new(Origin::new("test", None));
    b.push(&ev(1_000, 7, ENTRY));
    b.push(&ev(2_000, 7, exit("HLT")));
    b.push(&ev(2_500, 8, exit("MSR_WRITE"))); // another thread, never entered again
    b.push(&ev(9_000, 7, ENTRY));
    b.push(&ev(10_000, 7, exit("HLT")));
    b.push(&ev(10_400, 7, ENTRY));
    let p = b.finish();
    let t = &p.tables[0];
    assert_eq!(t.kind, TableKind::Vmexit);
    assert_eq!(t.isa, Some(Isa::Vmx));
    let hlt = &t.rows[0];
    assert_eq!((hlt.key.key_text().as_str(), hlt.count), ("HLT", 2));
    assert_eq!(hlt.vcpu, Some(0));
    assert_eq!(hlt.time.total_ns, Some(7_000 + 400));
    assert_eq!((hlt.time.min_ns, hlt.time.max_ns), (Some(400), Some(7_000)));
    let msr = &t.rows[1];
    assert_eq!((msr.count, msr.time.total_ns), (1, None));
    let events = p.tables.iter().find(|t| t.kind == TableKind::Events);
    let total: u64 = events.map_or(0, |t| t.count());
    assert_eq!(total, 6);
    assert_eq!(t.window.as_ref().and_then(|w| w.duration_ns), Some(9_400));
}

#[test]
fn ports_msrs_and_mmio_follow_perf_definitions() {
    let mut b = ProfileBuilder::new(Origin::new("test", None));
    b.set_isa(Some(Isa::Vmx));
    let io = EventKind::Exit {
        reason: Reason::Code(30),
        isa: None,
        vcpu: Some(1),
        rip: None,
    };
    b.push(&ev(100, 1, io));
    b.push(&ev(
        150,
        1,
        EventKind::Pio {
            write: false,
            port: 0x608,
        },
    ));
    b.push(&ev(900, 1, ENTRY));
    b.push(&ev(
        1_000,
        1,
        EventKind::Exit {
            reason: Reason::Code(48),
            isa: None,
            vcpu: Some(1),
            rip: None,
        },
    ));
    b.push(&ev(
        1_100,
        1,
        EventKind::Mmio {
            access: MmioAccess::UnsatisfiedRead,
            gpa: 0xfed000f0,
        },
    ));
    b.push(&ev(
        1_700,
        1,
        EventKind::Mmio {
            access: MmioAccess::Read,
            gpa: 0xfed000f0,
        },
    ));
    b.push(&ev(1_800, 1, ENTRY));
    b.push(&ev(
        2_000,
        1,
        EventKind::Exit {
            reason: Reason::Code(32),
            isa: None,
            vcpu: Some(1),
            rip: None,
        },
    ));
    b.push(&ev(
        2_050,
        1,
        EventKind::Msr {
            write: true,
            index: 0x6e0,
        },
    ));
    b.push(&ev(2_300, 1, ENTRY));
    let p = b.finish();
    let find = |kind: TableKind| {
        p.tables
            .iter()
            .find(|t| t.kind == kind)
            .map(|t| t.rows[0].clone())
    };
    let pio = find(TableKind::Ioport).map(|r| (r.key, r.time.total_ns));
    assert_eq!(
        pio,
        Some((
            Key::Port {
                port: 0x608,
                access: Some(Access::In)
            },
            Some(750)
        ))
    );
    let mmio = find(TableKind::Mmio).map(|r| (r.count, r.time.total_ns));
    assert_eq!(
        mmio,
        Some((1, Some(700))),
        "read: exit → kvm_mmio read; unsatisfied ignored"
    );
    let msr = find(TableKind::Msr).map(|r| (r.key.key_text(), r.time.total_ns));
    assert_eq!(msr, Some(("0x6e0".to_string(), Some(250))));
    let exits = p
        .tables
        .iter()
        .find(|t| t.kind == TableKind::Vmexit)
        .map(|t| t.rows.len());
    assert_eq!(exits, Some(3));
}

#[test]
fn unknown_codes_stay_numeric_and_separate() {
    let mut b = ProfileBuilder::new(Origin::new("test", None));
    for code in [0x2_0000u64, 0x2_0000, 0x3_0000] {
        b.push(&Event::new(EventKind::Exit {
            reason: Reason::Code(code),
            isa: Some(Isa::Vmx),
            vcpu: None,
            rip: None,
        }));
    }
    let p = b.finish();
    let rows = &p.tables[0].rows;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].count, 2);
    assert!(
        rows[0].key.key_text().contains("0x20000"),
        "{}",
        rows[0].key.key_text()
    );
}

#[test]
fn vmx_flag_bits_make_their_own_row() {
    let mut b = ProfileBuilder::new(Origin::new("test", None));
    for code in [33u64, 0x8000_0021] {
        b.push(&Event::new(EventKind::Exit {
            reason: Reason::Code(code),
            isa: Some(Isa::Vmx),
            vcpu: None,
            rip: None,
        }));
    }
    let p = b.finish();
    let keys: Vec<(String, Option<u64>)> = p.tables[0]
        .rows
        .iter()
        .map(|r| (r.key.key_text(), r.key.code()))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("INVALID_STATE".into(), Some(33)),
            ("INVALID_STATE|FAILED_VMENTRY".into(), Some(0x8000_0021))
        ]
    );
}

#[test]
fn vcpu_from_thread_name_when_events_do_not_say() {
    let mut b = ProfileBuilder::new(Origin::new("test", None));
    let mut e = ev(
        1,
        5,
        EventKind::Pio {
            write: true,
            port: 0x3f8,
        },
    );
    e.comm = Some("CPU 2/KVM");
    b.push(&e);
    let p = b.finish();
    assert_eq!(p.tables[0].rows[0].vcpu, Some(2));
}

#[test]
fn endless_distinct_addresses_fold_with_exact_totals_and_durations() {
    let mut b = ProfileBuilder::new(Origin::new("test", None));
    let n = 3 * super::super::slots::TABLE_CAP as u64;
    let mut ts = 0;
    for i in 0..n {
        ts += 100;
        b.push(&ev(ts, 7, exit("EPT_MISCONFIG")));
        let mmio = EventKind::Mmio {
            access: MmioAccess::Write,
            gpa: 0xfe00_0000 + 4 * i,
        };
        b.push(&ev(ts + 10, 7, mmio));
        b.push(&ev(ts + 50, 7, ENTRY));
    }
    let p = b.finish();
    let mmio = p.tables.iter().find(|t| t.kind == TableKind::Mmio);
    let rows = mmio.map(|t| t.rows.as_slice()).unwrap_or_default();
    assert!(
        rows.len() <= super::super::slots::TABLE_CAP + 1,
        "{} rows",
        rows.len()
    );
    assert_eq!(
        rows.iter().map(|r| r.count).sum::<u64>(),
        n,
        "every access counted"
    );
    let time: u64 = rows.iter().filter_map(|r| r.time.total_ns).sum();
    assert_eq!(time, 40 * n, "every write's duration kept, folded or not");
    assert!(
        rows.iter()
            .any(|r| r.key.key_text().starts_with("other addresses 0xfe000000–"))
    );
    let exits = p.tables.iter().find(|t| t.kind == TableKind::Vmexit);
    // The first exit comes before the entry that names the vCPU: a row of its own.
    let hot = exits.map(|t| {
        let rows = t
            .rows
            .iter()
            .filter(|r| r.key.key_text() == "EPT_MISCONFIG");
        rows.fold((0, 0), |(c, ns), r| {
            (c + r.count, ns + r.time.total_ns.unwrap_or(0))
        })
    });
    assert_eq!(hot, Some((n, 50 * n)), "the hot exit is never folded");
    assert!(
        p.warnings.iter().any(|w| w.message.contains("folded")),
        "{:?}",
        p.warnings
    );
}
