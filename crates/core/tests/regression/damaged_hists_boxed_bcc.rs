//! Issue 20, defects D7–D11: one damaged line of a pasted table (a row cut after its name, a
//! header cut short or joined with its rule or first row, a NUL or a mailer's em dash in a
//! rule) costs at most that row, or that table's header with a note, never the other rows. Each
//! damaged file is compared with its intact version (`testdata/reliability/README.md`).

use virtlens_core::profile::Profile;
use virtlens_core::sources::{self, Format, REPAIR_NOTE};

fn read(rel: &str, format: Format) -> Profile {
    let path = virtlens_testkit::testdata(&format!("reliability/{rel}"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sources::read_bytes(&bytes, rel, Some(format)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Per table: its label, and its rows' (key, count, total time).
type Shape = Vec<(Option<String>, Vec<(String, u64, Option<u64>)>)>;

fn shape(p: &Profile) -> Shape {
    p.tables
        .iter()
        .map(|t| {
            let rows = t
                .rows
                .iter()
                .map(|r| (r.key.key_text(), r.count, r.time.total_ns))
                .collect();
            (t.label.clone(), rows)
        })
        .collect()
}

/// Whether a note on `line` says `what`; `repair` tells a note of a repair from one of a loss.
fn noted(p: &Profile, line: usize, what: &str, repair: bool) -> bool {
    p.warnings.iter().any(|w| {
        w.line == Some(line)
            && w.message.contains(what)
            && w.message.starts_with(REPAIR_NOTE) == repair
    })
}

/// The intact file's shape without the row of `key` in table `table`.
fn without(mut shape: Shape, table: usize, key: &str) -> Shape {
    shape[table].1.retain(|r| r.0 != key);
    shape
}

const HISTS: &str = "D0-hists-intact.txt";
const BOXED: &str = "D0-boxed-intact.txt";

#[test]
fn d7_hists_row_cut_after_its_name_costs_that_row_only() {
    let intact = read(HISTS, Format::PerfKvmStat);
    let p = read("D7-hists-row-cut.txt", Format::PerfKvmStat);
    // Line 6 is `UNKNOWN` alone: noted, and the 4 rows after it stay in their table.
    assert_eq!(shape(&p), without(shape(&intact), 0, "UNKNOWN"));
    assert!(
        noted(&p, 6, "no values after its name", false),
        "{:?}",
        p.warnings
    );
    assert!(p.tables[0].partial);
}

#[test]
fn d8_hists_header_cut_short_is_noted_and_keeps_the_label_and_rows() {
    let intact = read(HISTS, Format::PerfKvmStat);
    let p = read("D8-hists-header-cut.txt", Format::PerfKvmStat);
    // The header is lost (noted); the rows read in the layout their cells show, with their
    // times, under the label above the header.
    assert_eq!(shape(&p), shape(&intact));
    assert_eq!(p.tables[0].label.as_deref(), Some("testing without patch"));
    assert!(
        noted(&p, 3, "column header cut short", false),
        "{:?}",
        p.warnings
    );
}

#[test]
fn d9_hists_header_joined_with_its_rule_is_still_the_header() {
    let intact = read(HISTS, Format::PerfKvmStat);
    let p = read("D9-hists-header-joined-to-rule.txt", Format::PerfKvmStat);
    assert_eq!(shape(&p), shape(&intact));
    assert!(noted(&p, 3, "rule under it", true), "{:?}", p.warnings);
}

#[test]
fn d10_boxed_rule_with_a_nul_or_an_em_dash_is_still_a_rule() {
    let intact = read(BOXED, Format::PerfKvmStat);
    assert_eq!(intact.tables[0].rows.len(), 3);
    for (file, what) in [
        ("D10-boxed-nul-in-rule.txt", "NUL"),
        ("D10b-boxed-emdash-in-rule.txt", "—"),
    ] {
        let p = read(file, Format::PerfKvmStat);
        assert_eq!(shape(&p), shape(&intact), "{file}");
        assert!(noted(&p, 6, what, true), "{file}: {:?}", p.warnings);
        assert!(!p.tables[0].partial, "{file}");
    }
}

#[test]
fn d11_bcc_header_joined_with_its_first_row_reads_both() {
    let intact = read("D0-bcc-intact.txt", Format::BccKvmexit);
    let p = read("D11-bcc-header-joined.txt", Format::BccKvmexit);
    assert_eq!(shape(&p), shape(&intact));
    assert!(noted(&p, 3, "first row under it", true), "{:?}", p.warnings);
}

/// Two rows of a real table on one line (their newline lost): both read, the repair noted.
#[test]
fn two_stdio_rows_on_one_line_are_both_read() {
    let rel = "exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt";
    let bytes = std::fs::read(virtlens_testkit::testdata(rel)).unwrap();
    let intact = sources::read_bytes(&bytes, rel, Some(Format::PerfKvmStat)).unwrap();
    // Lines 9 (HLT) and 10 (IO_INSTRUCTION) joined.
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let joined = [lines[8], lines[9]].concat();
    lines[8] = &joined;
    lines.remove(9);
    let text = lines.join(&b'\n');
    let p = sources::read_bytes(&text, rel, Some(Format::PerfKvmStat)).unwrap();
    assert_eq!(shape(&p), shape(&intact));
    assert!(
        noted(&p, 9, "two rows on one line", true),
        "{:?}",
        p.warnings
    );
}
