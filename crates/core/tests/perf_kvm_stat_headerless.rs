//! `perf kvm stat report` rows pasted without their column header: the rows of real samples
//! (`testdata/exit-reports/INDEX.md` gives their sources) with everything above and below them
//! left out, in each layout perf has printed — today's stdio layout (13), that of 2012 (09) and
//! the default hists layout (34) — read exactly as under their header, with a note naming the
//! layout assumed; one damaged row costs at most that row and is noted.

use std::collections::BTreeMap;

use proptest::prelude::*;
use virtlens_core::profile::Profile;
use virtlens_core::sources::{self, Format};

use crate::common;

fn sample(prefix: &str) -> String {
    let dir = virtlens_testkit::repo_root().join("testdata/exit-reports");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(prefix)
        {
            return std::fs::read_to_string(path).unwrap();
        }
    }
    panic!("no sample {prefix}");
}

/// The rows of the first table of `text`: the lines after its column header (the first line
/// naming `Samples`), up to the first blank line or totals line after a row.
fn rows_only(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("Samples") && !l.contains("Sample%"));
    lines.next();
    for l in lines {
        let t = l.trim();
        if t.starts_with("---") || t.is_empty() && out.is_empty() {
            continue;
        }
        if t.is_empty() || t.starts_with("Total") {
            break;
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn counts(p: &Profile) -> BTreeMap<String, u64> {
    p.tables[0]
        .rows
        .iter()
        .map(|r| (r.key.key_text(), r.count))
        .collect()
}

fn read(text: &str, name: &str) -> Profile {
    sources::read_bytes(text.as_bytes(), name, None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const LAYOUTS: [(&str, &str); 3] = [
    (
        "13-",
        "perf's stdio layout (Samples, Samples%, Time%, Min Time, Max Time, Avg time)",
    ),
    (
        "09-",
        "perf's stdio layout of 2012 (Samples, Samples%, Time%, Avg time)",
    ),
    (
        "34-",
        "perf's default hists layout (Samples, Sample%, Time(ns))",
    ),
];

#[test]
fn rows_without_their_header_read_as_under_it() {
    for (prefix, layout) in LAYOUTS {
        let text = sample(prefix);
        let rows = rows_only(&text);
        assert!(rows.lines().count() >= 5, "{prefix}: {rows}");
        assert_eq!(
            sources::detect(rows.as_bytes()),
            Some(Format::PerfKvmStat),
            "{prefix}"
        );
        let bare = read(&rows, "rows.txt");
        let full = read(&text, "full.txt");
        assert_eq!(counts(&bare), counts(&full), "{prefix}");
        assert_eq!(bare.tables[0].rows.len(), rows.lines().count(), "{prefix}");
        let note = format!("rows without a column header above them: read in {layout}");
        assert!(
            bare.warnings
                .iter()
                .any(|w| w.line == Some(1) && w.message == note),
            "{prefix}: {:?}",
            bare.warnings
        );
        // Times come through as under the header (the 2012 and stdio layouts in µs, hists in ns).
        assert_eq!(
            bare.tables[0].time_ns(),
            full.tables[0].time_ns(),
            "{prefix}"
        );
    }
}

/// The hists layout in full, as perf ≥ 6.11 prints it with every column: eight cells.
#[test]
fn the_full_hists_layout_is_read_too() {
    let rows = "STORE_GUEST_PAGE_FAULT     26968     54.00%    2003031800    48.00%   \
                1000000    100    74274\n\
                LOAD_GUEST_PAGE_FAULT      15483     43.00%    1553031800    40.00%   \
                2000000    200    100306\n";
    let p = read(rows, "hists.txt");
    assert_eq!(p.origin.format, "perf-kvm-stat");
    let t = &p.tables[0];
    assert_eq!(t.rows[0].count, 26968);
    assert_eq!(t.rows[0].time.max_ns, Some(1_000_000));
    assert_eq!(t.rows[0].time.min_ns, Some(100));
    assert!(
        p.warnings[0]
            .message
            .contains("hists layout (Samples, Sample%, Time (ns), Time%")
    );
}

/// Two rows are needed before header-less rows are taken for perf's: one such line in other
/// text is not enough.
#[test]
fn one_bare_row_is_not_a_table() {
    let text = "the numbers were\nSTORE_GUEST_PAGE_FAULT 1496461 53.00% 889612544\nand then\n";
    assert_ne!(sources::detect(text.as_bytes()), Some(Format::PerfKvmStat));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(600), ..ProptestConfig::default() })]

    /// Damage one row of the header-less rows: the others keep their counts and the damaged
    /// row is read or noted at its line.
    #[test]
    fn one_bad_row_costs_at_most_that_row(
        which in 0..LAYOUTS.len(),
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..6,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09.%_- \t\0\xff".to_vec()), 0..4),
    ) {
        let rows = rows_only(&sample(LAYOUTS[which].0));
        let full = read(&rows, "rows.txt");
        let line = pick.index(rows.lines().count());
        let count = rows.lines().nth(line).and_then(|l| l.split_whitespace().nth(1))
            .and_then(|w| w.parse::<u64>().ok()).unwrap_or(0);
        let input = common::damage_line(&rows, line, at, cut, &bytes);
        let total = |p: &Profile| p.tables.iter().fold(0u64, |a, t| a.saturating_add(t.count()));
        let before = total(&full);
        let p = match sources::read_bytes(&input, "bad.txt", Some(Format::PerfKvmStat)) {
            Ok(p) => p,
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        let after = total(&p);
        prop_assert!(after.saturating_add(count) >= before, "{} of {}: {:?}", after, before, p.warnings);
        let n_rows = |p: &Profile| p.tables.iter().map(|t| t.rows.len()).sum::<usize>();
        let read_it = n_rows(&p) >= n_rows(&full) || after.saturating_add(count) != before;
        let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
        prop_assert!(read_it || noted, "line {} neither read nor noted: {:?}", line + 1, p.warnings);
    }
}
