//! Guest code attribution on real recordings: the `guest_rip` table every trace source fills
//! (perf.data, perf script and trace-cmd text), bounded like every table, and the RIPs named
//! with the real System.map of the lab guest's Debian kernel, its KASLR offset inferred. The
//! expected functions were checked by hand against that kernel's `vmlinux`
//! (testdata/guest-symbols/README.md): the `hlt` and `wrmsr` instructions are at those RIPs.

use std::io::Read;
use std::sync::{Arc, OnceLock};

use virtlens_core::analysis::{Offset, Symbols, guest_code};
use virtlens_core::events::{Event, EventKind, ProfileBuilder, Reason};
use virtlens_core::profile::{Key, Origin, Profile, TableKind};
use virtlens_core::sources::{self, SymbolMap};
use virtlens_testkit::testdata;

/// The lab guest's System.map (Debian 6.1.0-56-amd64), read once.
pub fn debian_map() -> Arc<SymbolMap> {
    static MAP: OnceLock<Arc<SymbolMap>> = OnceLock::new();
    MAP.get_or_init(|| {
        let path = testdata("guest-symbols/System.map-6.1.0-56-amd64.xz");
        Arc::new(SymbolMap::read_path(&path).unwrap())
    })
    .clone()
}

fn lab(case: &str) -> Profile {
    sources::read_path(&testdata(&format!("lab-cases/{case}/perf.data")), None).unwrap()
}

fn table_count(p: &Profile, kind: TableKind) -> u64 {
    p.tables
        .iter()
        .filter(|t| t.kind == kind)
        .map(|t| t.count())
        .sum()
}

fn symbols(offset: Option<u64>) -> Symbols {
    Symbols {
        map: Some(debian_map()),
        offset,
    }
}

#[test]
fn the_debian_map_reads_whole() {
    let m = debian_map();
    assert!(m.functions > 45_000, "{} functions", m.functions);
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    let r = m.resolve(0xffff_ffff_81a5_92ea).map(|r| r.label());
    assert_eq!(r.as_deref(), Some("native_safe_halt+0xa"));
}

#[test]
fn perf_data_carries_every_exits_rip() {
    let p = lab("linux-halt-churn-pingpong");
    let exits = table_count(&p, TableKind::Vmexit);
    assert!(exits > 2000, "{exits} exits");
    assert_eq!(table_count(&p, TableKind::GuestRip), exits);
    assert!(
        p.tables
            .iter()
            .filter(|t| t.kind == TableKind::GuestRip)
            .all(|t| t
                .rows
                .iter()
                .all(|r| matches!(r.key, Key::GuestRip { .. }) && r.vcpu.is_some()))
    );
}

#[test]
fn halt_and_msr_exits_come_from_the_functions_that_execute_hlt_and_wrmsr() {
    let p = lab("linux-halt-churn-pingpong");
    let code = guest_code(&p, &symbols(None)).unwrap();
    let used = code.symbols.as_ref().unwrap();
    match used.offset {
        Offset::Inferred {
            offset,
            exits_in_code,
            exits,
            ..
        } => {
            assert_eq!(offset, 0x340_0000, "the offset checked by hand");
            assert!(
                exits_in_code * 100 >= exits * 99,
                "{exits_in_code} of {exits}"
            );
        }
        ref o => panic!("{o:?}"),
    }
    let reason = |name: &str| code.reasons.iter().find(|r| r.reason == name).unwrap();
    let hlt = reason("hlt");
    assert_eq!(hlt.code[0].name(), "native_safe_halt+0xa");
    assert_eq!(hlt.code[0].share, 1.0);
    let msr = reason("msr");
    assert_eq!(msr.code[0].name(), "native_write_msr+0x4");
    assert!(msr.code[0].share > 0.8, "{}", msr.code[0].share);
    assert_eq!(
        code.headline(msr).as_deref(),
        Some("87% of the msr exits come from native_write_msr+0x4")
    );
    let notes = code.notes().join("\n");
    assert!(notes.contains("0x3400000 inferred"), "{notes}");
}

#[test]
fn every_linux_lab_case_has_its_own_offset_and_the_same_functions() {
    for case in [
        "linux-idle",
        "linux-tick-storm-nohz-off",
        "linux-serial-console-flood",
    ] {
        let p = lab(case);
        let code = guest_code(&p, &symbols(None)).unwrap();
        assert!(
            matches!(
                code.symbols.as_ref().unwrap().offset,
                Offset::Inferred { .. }
            ),
            "{case}: {:?}",
            code.symbols
        );
        let hlt = code.reasons.iter().find(|r| r.reason == "hlt").unwrap();
        assert_eq!(hlt.code[0].name(), "native_safe_halt+0xa", "{case}");
    }
    let p = lab("linux-serial-console-flood");
    let code = guest_code(&p, &symbols(None)).unwrap();
    let io = code.reasons.iter().find(|r| r.reason == "io").unwrap();
    assert_eq!(io.code[0].function.as_deref(), Some("io_serial_out"));
    // The HPET's counter read: a load from its MMIO page, a nested-page fault each.
    let p = lab("linux-clocksource-hpet");
    let code = guest_code(&p, &symbols(None)).unwrap();
    let npf = code.reasons.iter().find(|r| r.reason == "npf").unwrap();
    assert_eq!(npf.code[0].name(), "read_hpet+0x6a");
}

#[test]
fn a_map_in_runtime_addresses_needs_no_offset() {
    // A kallsyms dump of the running guest: the System.map shifted by its KASLR offset.
    let mut text = String::new();
    let mut plain = String::new();
    liblzma::read::XzDecoder::new(
        std::fs::File::open(testdata("guest-symbols/System.map-6.1.0-56-amd64.xz")).unwrap(),
    )
    .read_to_string(&mut plain)
    .unwrap();
    for l in plain.lines() {
        let (addr, rest) = l.split_once(' ').unwrap();
        let a = u64::from_str_radix(addr, 16)
            .unwrap()
            .wrapping_add(0x340_0000);
        text.push_str(&format!("{a:016x} {rest}\n"));
    }
    let map = SymbolMap::read(text.as_bytes(), "kallsyms").unwrap();
    let p = lab("linux-halt-churn-pingpong");
    let code = guest_code(
        &p,
        &Symbols {
            map: Some(Arc::new(map)),
            offset: None,
        },
    )
    .unwrap();
    assert!(matches!(
        code.symbols.as_ref().unwrap().offset,
        Offset::Inferred { offset: 0, .. }
    ));
    let hlt = code.reasons.iter().find(|r| r.reason == "hlt").unwrap();
    assert_eq!(hlt.code[0].name(), "native_safe_halt+0xa");
}

#[test]
fn module_rips_do_not_mislead_the_offset() {
    // The e1000 case's most frequent RIPs are in the e1000 module, which System.map lacks.
    let p = lab("linux-e1000-udp-flood");
    let code = guest_code(&p, &symbols(None)).unwrap();
    let used = code.symbols.as_ref().unwrap();
    assert!(
        matches!(
            used.offset,
            Offset::Inferred {
                offset: 0x1f40_0000,
                ..
            }
        ),
        "{used:?}"
    );
    let npf = code.reasons.iter().find(|r| r.reason == "npf").unwrap();
    assert!(
        npf.code[0].name().ends_with("(module)"),
        "{}",
        npf.code[0].name()
    );
}

#[test]
fn a_wrong_offset_or_another_kernel_resolves_nothing_and_says_so() {
    let p = lab("linux-halt-churn-pingpong");
    let code = guest_code(&p, &symbols(Some(0))).unwrap();
    let used = code.symbols.as_ref().unwrap();
    assert_eq!(used.resolved, 0);
    assert!(code.notes().join("\n").contains("no RIP resolved"));
    // The micro-VM guests are not Linux: no offset fits.
    let p = lab("microvm-serial-lsr-poll");
    let code = guest_code(&p, &symbols(None)).unwrap();
    assert!(matches!(
        code.symbols.as_ref().unwrap().offset,
        Offset::NoFit { .. }
    ));
    assert!(code.notes().join("\n").contains("not the guest's kernel"));
}

#[test]
fn trace_text_fills_the_table_from_its_rip_fields() {
    for (file, exits) in [
        (
            "exit-reports/24-perf-script-kvm-events-nested-triple-fault.txt",
            None,
        ),
        (
            "exit-reports/30-trace-cmd-report-kvm_exit-amd-sev-snp-npf.txt",
            Some(10),
        ),
    ] {
        let p = sources::read_path(&testdata(file), None).unwrap();
        let n = table_count(&p, TableKind::Vmexit);
        assert!(n > 0, "{file}");
        assert_eq!(table_count(&p, TableKind::GuestRip), n, "{file}");
        if let Some(e) = exits {
            assert_eq!(n, e, "{file}");
        }
        let code = guest_code(&p, &Symbols::default()).unwrap();
        assert!(code.symbols.is_none());
        assert!(code.notes()[0].contains("--guest-symbols"));
    }
    // SEV-SNP hides the guest's RIP: KVM traces 0.
    let p = sources::read_path(
        &testdata("exit-reports/30-trace-cmd-report-kvm_exit-amd-sev-snp-npf.txt"),
        None,
    )
    .unwrap();
    let code = guest_code(&p, &Symbols::default()).unwrap();
    assert_eq!(code.reasons[0].code[0].sites[0].rip, 0);
}

#[test]
fn endless_distinct_rips_fold_and_keep_every_exit() {
    let mut b = ProfileBuilder::new(Origin::new("test", None));
    let n = 40_000u64;
    for i in 0..n {
        // A hot RIP and a stream of new ones.
        let rip = if i % 2 == 0 {
            0xffff_ffff_8100_0000
        } else {
            0x1000 + i
        };
        b.push(&Event::new(EventKind::Exit {
            reason: Reason::Name("HLT"),
            isa: None,
            vcpu: Some(0),
            rip: Some(rip),
        }));
    }
    let p = b.finish();
    let t = p
        .tables
        .iter()
        .find(|t| t.kind == TableKind::GuestRip)
        .unwrap();
    assert!(t.rows.len() <= virtlens_core::profile::TABLE_CAP + 1);
    assert_eq!(t.count(), n);
    assert!(
        p.warnings.iter().any(|w| w.message.contains("guest_rip")),
        "{:?}",
        p.warnings
    );
    let code = guest_code(&p, &Symbols::default()).unwrap();
    assert_eq!(code.reasons[0].code[0].count, n / 2);
    assert!(code.folded > 0);
}

#[test]
fn the_table_round_trips_through_json() {
    let p = lab("linux-idle");
    let json = serde_json::to_string(&p).unwrap();
    assert!(json.contains("\"kind\":\"guest_rip\""));
    assert!(json.contains("\"key_kind\":\"guest_rip\""));
    let back: Profile = serde_json::from_str(&json).unwrap();
    let rows = |p: &Profile| {
        p.tables
            .iter()
            .filter(|t| t.kind == TableKind::GuestRip)
            .flat_map(|t| t.rows.iter().map(|r| (r.key.clone(), r.count)))
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&back), rows(&p));
}
