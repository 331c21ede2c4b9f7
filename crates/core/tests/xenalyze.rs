//! Xen's `xenalyze` summary: the real HVM sample of sample 42 read row by row (its exit
//! reasons keyed as the VMX reasons a `perf kvm stat` table names, their breakdowns left out)
//! and diagnosed; domain headers, the `Total time` line and SVM names on a summary written as
//! xenalyze prints one; detection that claims no other sample.

use virtlens_core::decode::{Decoder, Isa};
use virtlens_core::diagnose::{self, Options};
use virtlens_core::profile::{Key, Profile, Table, TableKind};
use virtlens_core::sources::{self, Format};

use super::common::sample;
use super::diagnose_samples::contract;

const SAMPLE_42: &str =
    include_str!("../../../testdata/exit-reports/42-xenalyze-hvm-summary-io-instruction.txt");

fn read(text: &str) -> Profile {
    sources::read_bytes(text.as_bytes(), "summary.txt", Some(Format::Xenalyze)).unwrap()
}

fn vmexit(p: &Profile) -> &Table {
    p.tables
        .iter()
        .find(|t| t.kind == TableKind::Vmexit)
        .expect("a vmexit table")
}

fn by_code(t: &Table, code: u64) -> (&str, u64, Option<u64>, Option<u32>) {
    let r = t
        .rows
        .iter()
        .find(|r| matches!(&r.key, Key::Exit { code: Some(c), .. } if *c == code))
        .unwrap_or_else(|| panic!("no exit {code}"));
    let Key::Exit { name, .. } = &r.key else {
        unreachable!()
    };
    (name.as_str(), r.count, r.time.total_ns, r.vcpu)
}

#[test]
fn sample_42_every_exit_reason_is_read() {
    let p = read(SAMPLE_42);
    assert_eq!(p.origin.format, "xenalyze");
    assert_eq!(p.origin.isa, Some(Isa::Vmx));
    assert_eq!(p.tables.len(), 1);
    let t = vmexit(&p);
    // The four reasons of `-- v0 --`; `cr0` (458) and `(no handler)` (22758) are breakdowns.
    assert_eq!(t.rows.len(), 4);
    assert_eq!(t.count(), 4 + 182 + 458 + 40647);
    assert_eq!(
        by_code(t, 1),
        ("EXTERNAL_INTERRUPT", 4, Some(10_000_000), Some(0))
    );
    assert_eq!(by_code(t, 28), ("CR_ACCESS", 458, None, Some(0)));
    assert_eq!(
        by_code(t, 30),
        ("IO_INSTRUCTION", 40647, Some(5_480_000_000), Some(0))
    );
    let (_, count, time, _) = by_code(t, 7);
    assert_eq!((count, time), (182, None));
    assert!(t.window.is_none());
    assert!(!t.partial);
    let notes: Vec<&str> = p.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        notes.iter().any(|m| m.contains("2 rows print `0.00s`")),
        "{notes:?}"
    );
    assert!(notes.iter().any(|m| m.contains("no window")), "{notes:?}");
}

#[test]
fn sample_42_is_detected_and_no_other_sample_is() {
    let p = sources::read_path(&sample("exit-reports", "42-"), None).unwrap();
    assert_eq!(p.origin.format, "xenalyze");
    let dir = virtlens_testkit::testdata("exit-reports");
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("42-") || !name.ends_with(".txt") {
            continue;
        }
        let head = std::fs::read(e.path()).unwrap();
        let head = &head[..head.len().min(sources::DETECT_BYTES)];
        assert_ne!(sources::detect(head), Some(Format::Xenalyze), "{name}");
    }
}

/// The author shows the run without a conclusion; its exits are 98% `IO_INSTRUCTION`, 73.40% of
/// the trace's time: port IO is what the diagnosis must name.
#[test]
fn sample_42_diagnosed_as_port_io() {
    let p = sources::read_path(&sample("exit-reports", "42-"), None).unwrap();
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
    contract(&d);
    let main = d.main_of(1).expect("a main problem");
    assert_eq!(main.id, "io.emulated-port");
}

/// A summary as xenalyze prints one (`printf` formats of tools/xentrace/xenalyze.c): domain and
/// vCPU headers, the `Total time` line (its cpu speed converts cycles), SVM names, a reason
/// printed by number, a breakdown row.
#[test]
fn domains_vcpus_total_time_and_svm_names() {
    let text = "\
Using SVM hardware-assisted virtualization.
Total time: 10.00 seconds (using cpu speed 2.40 GHz)
|-- Domain 3 --|
-- v0 --
Exit reasons:
 VMEXIT_HLT                120  0.50s  5.00% 10000000 cyc
 VMEXIT_IOIO               240  0.01s  0.10%  100000 cyc
   [  0x70]    240  0.01s  0.10%  100000 cyc
                  1000       2  0.00s  0.00%   1200 cyc
-- v1 --
Exit reasons:
 VMEXIT_NPF                 10  0.00s  0.00%   2400 cyc
Guest interrupt counts:
";
    let p = read(text);
    assert_eq!(p.origin.isa, Some(Isa::Svm));
    let t = vmexit(&p);
    assert_eq!(t.label.as_deref(), Some("Xen domain 3"));
    assert_eq!(
        t.window.as_ref().and_then(|w| w.duration_ns),
        Some(10_000_000_000)
    );
    // 120 × 10,000,000 cycles at 2.4 GHz = 0.5 s.
    assert_eq!(by_code(t, 0x78), ("hlt", 120, Some(500_000_000), Some(0)));
    assert_eq!(by_code(t, 0x7b).1, 240);
    assert_eq!(by_code(t, 1000).1, 2);
    // 10 × 2400 cycles = 10 µs.
    assert_eq!(by_code(t, 0x400), ("npf", 10, Some(10_000), Some(1)));
    assert_eq!(t.count(), 120 + 240 + 2 + 10);
}

#[test]
fn a_damaged_row_is_noted_and_costs_only_itself() {
    let damaged = SAMPLE_42.replace(
        " CR_ACCESS                 458",
        " CR_ACCESS                 4x8",
    );
    let p = read(&damaged);
    let t = vmexit(&p);
    assert_eq!(t.count(), 4 + 182 + 40647);
    assert!(t.partial);
    let line = SAMPLE_42
        .lines()
        .position(|l| l.starts_with(" CR_ACCESS"))
        .unwrap()
        + 1;
    assert!(
        p.warnings.iter().any(|w| w.line == Some(line)),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_pv_only_summary_says_it_has_no_exits() {
    let text = "\
Total time: 9.98 seconds (using cpu speed 2.40 GHz)
|-- Domain 0 --|
-- v0 --
 Runstates:
   running:     496  2.00s 9666478 {196660|71888896|71848352}
PV events:
  hypercall  18940
";
    let e = sources::read_bytes(text.as_bytes(), "pv.txt", None).unwrap_err();
    assert!(e.to_string().contains("Exit reasons:"), "{e}");
}
