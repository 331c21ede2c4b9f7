//! bhyve's DTrace VM-exit summary (propolis' `scripts/vm-exit-codes.d`, illumos bhyve on AMD
//! SVM): the real sample of propolis PR #859 read row by row and diagnosed as its author
//! concluded (the guest's clock reads go to the ACPI PM timer, port 0xb008); several seconds
//! summed; damaged rows noted; detection that claims no other sample.

use virtlens_core::decode::{Decoder, Isa};
use virtlens_core::diagnose::{self, Options};
use virtlens_core::profile::{Access, Key, Profile, Table, TableKind};
use virtlens_core::sources::{self, Format};

use super::common::sample;
use super::diagnose_samples::contract;

const SAMPLE_39: &str = include_str!(
    "../../../testdata/exit-reports/39-bhyve-dtrace-svm-exit-summary-acpi-pm-timer.txt"
);

fn read(text: &str) -> Profile {
    sources::read_bytes(text.as_bytes(), "summary.txt", Some(Format::BhyveDtrace)).unwrap()
}

fn table(p: &Profile, kind: TableKind) -> &Table {
    p.tables
        .iter()
        .find(|t| t.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} table"))
}

fn exit_count(t: &Table, name: &str) -> u64 {
    t.rows
        .iter()
        .filter(|r| matches!(&r.key, Key::Exit { name: n, .. } if n == name))
        .map(|r| r.count)
        .sum()
}

/// Sums what each section of `text` prints, independently of the reader: the last number of
/// every row under each title.
fn printed(text: &str) -> [u64; 4] {
    let mut sums = [0u64; 4];
    let mut at = None;
    for l in text.lines() {
        let t = l.trim();
        at = match t {
            "SVM code  Count" => Some(0),
            "IOIO SVM exits:" => Some(1),
            "NPF SVM exits:" => Some(2),
            "vm_run() VM_EXITCODE_BOGUS reasons:" => Some(3),
            _ if t.starts_with("===") => None,
            _ => at,
        };
        if let (Some(i), Some(n)) = (at, t.split_whitespace().last())
            && let Ok(n) = n.parse::<u64>()
        {
            sums[i] += n;
        }
    }
    sums
}

#[test]
fn sample_39_every_row_is_counted() {
    let p = read(SAMPLE_39);
    assert_eq!(p.origin.format, "bhyve-dtrace");
    assert_eq!(p.origin.isa, Some(Isa::Svm));
    let [exits, ports, npf, bogus] = printed(SAMPLE_39);
    let vm = table(&p, TableKind::Vmexit);
    assert_eq!(vm.count(), exits);
    assert_eq!(vm.count(), 5012);
    assert_eq!(exit_count(vm, "io"), 2611);
    assert_eq!(exit_count(vm, "npf"), 1065);
    assert_eq!(exit_count(vm, "hlt"), 16);
    assert_eq!(exit_count(vm, "interrupt"), 806);
    assert_eq!(exit_count(vm, "vintr"), 514);
    assert_eq!(
        vm.window.as_ref().and_then(|w| w.duration_ns),
        Some(1_000_000_000)
    );
    let io = table(&p, TableKind::Ioport);
    assert_eq!(io.count(), ports);
    assert_eq!(
        io.rows[0].key,
        Key::Port {
            port: 0xb008,
            access: Some(Access::In)
        }
    );
    let mmio = table(&p, TableKind::Mmio);
    assert_eq!(mmio.count(), npf);
    // The IOIO and NPF tables break down the io and npf exits, to the exit.
    assert_eq!(io.count(), exit_count(vm, "io"));
    assert_eq!(mmio.count(), exit_count(vm, "npf"));
    // 0xfee00300 read and written: two rows; the two zero-count rows left out, and said so.
    assert_eq!(mmio.rows.len(), 5);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("2 rows with a count of 0"))
    );
    assert_eq!(
        table(&p, TableKind::Event("vm_run_bogus".into())).count(),
        bogus
    );
    assert!(p.tables.iter().all(|t| !t.partial));
}

/// The author: "a mildly loaded propolis-standalone that happens to use the ACPI PM timer
/// (seen as accesses to IO port 0xb008)".
#[test]
fn sample_39_diagnosed_as_its_author_concluded() {
    let p = sources::read_path(&sample("exit-reports", "39-"), None).unwrap();
    assert_eq!(p.origin.format, "bhyve-dtrace");
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
    contract(&d);
    let main = d.main_of(1).expect("a main problem");
    assert_eq!(main.id, "timer.acpi-pm-port");
    // The one-second window gives rates: 2,611 PM-timer reads a second.
    assert!(
        d.findings.iter().any(|f| f.id == "apic.apic-access-mmio"),
        "the LAPIC NPFs are named too"
    );
}

#[test]
fn seconds_are_summed_and_the_window_grows() {
    let two = format!("{SAMPLE_39}\n{SAMPLE_39}\nExits this script did not understand: 3\n");
    let p = read(&two);
    let vm = table(&p, TableKind::Vmexit);
    assert_eq!(vm.count(), 2 * 5012);
    let w = vm.window.as_ref().unwrap();
    assert_eq!(w.duration_ns, Some(2_000_000_000));
    assert_eq!(w.intervals, 2);
    assert_eq!(w.end.as_deref(), Some("2025 Feb 14 23:47:33"));
    let notes: Vec<&str> = p.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        notes.iter().any(|m| m.contains("2 one-second summaries")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|m| m.contains("did not understand 3")),
        "{notes:?}"
    );
}

#[test]
fn a_damaged_row_is_noted_and_costs_only_itself() {
    let damaged = SAMPLE_39.replace("  b008   in   32b", "  b008   i?   32b");
    let p = read(&damaged);
    assert!(p.tables.iter().all(|t| t.kind != TableKind::Ioport));
    assert_eq!(table(&p, TableKind::Vmexit).count(), 5012);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.line == Some(10) && w.message.contains("`in` or `out`")),
        "{:?}",
        p.warnings
    );
    let damaged = SAMPLE_39.replace("        64       514", "        64       5x4");
    let p = read(&damaged);
    let vm = table(&p, TableKind::Vmexit);
    assert!(vm.partial);
    assert_eq!(vm.count(), 5012 - 514);
    assert!(p.warnings.iter().any(|w| w.line == Some(4)));
}

#[test]
fn a_cut_last_row_is_said() {
    let cut = SAMPLE_39.trim_end_matches('\n');
    let p = read(cut);
    assert!(table(&p, TableKind::Event("vm_run_bogus".into())).partial);
    assert!(p.warnings.iter().any(|w| w.line == Some(21)));
}

#[test]
fn detection_is_by_banner_or_header_and_claims_no_other_sample() {
    assert_eq!(
        sources::detect(SAMPLE_39.as_bytes()),
        Some(Format::BhyveDtrace)
    );
    let headerless = SAMPLE_39.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(
        sources::detect(headerless.as_bytes()),
        Some(Format::BhyveDtrace)
    );
    let quoted: String = SAMPLE_39.lines().map(|l| format!("> {l}\n")).collect();
    assert_eq!(
        sources::detect(quoted.as_bytes()),
        Some(Format::BhyveDtrace)
    );
    assert_eq!(read(&quoted).tables.len(), 4);
    let dir = virtlens_testkit::repo_root().join("testdata");
    for sub in ["exit-reports", "seed-kvm-hyperv-traps", "cases", "perfmon"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() || name.starts_with("39-") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let head = &bytes[..bytes.len().min(sources::DETECT_BYTES)];
            assert_ne!(sources::detect(head), Some(Format::BhyveDtrace), "{name}");
        }
    }
}

#[test]
fn nothing_found_names_the_first_line_and_what_was_expected() {
    let e = sources::read_bytes(b"hello\nworld\n", "x.txt", Some(Format::BhyveDtrace))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("x.txt"), "{e}");
    assert!(e.contains("expected the bhyve DTrace exit summary"), "{e}");
    assert!(e.contains("hello"), "{e}");
}
