//! Issue 20, part 2 ("no row lost without a note"), defects D1–D6 and D12: one damaged line of
//! a pasted perf-prof, kvm_stat or counter table costs at most its own row, and a row that is
//! lost is noted with its line; two lines joined into one are read as two, with a note. Each
//! damaged file of `testdata/reliability/` is compared with the intact file it was made from:
//! every row not on the damaged line keeps its key and count, and no key appears that the
//! intact file does not have.

use std::collections::BTreeMap;

use virtlens_core::profile::Profile;
use virtlens_core::sources;

fn read(name: &str) -> Profile {
    let path = virtlens_testkit::testdata(&format!("reliability/{name}"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sources::read_bytes(&bytes, name, None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every count of the profile: (table kind and label, row key) for tables, (`counters`, path)
/// for counter values (their value, in thousandths).
fn counts(p: &Profile) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for t in &p.tables {
        let table = format!("{} {:?}", t.kind, t.label);
        for r in &t.rows {
            let previous = out.insert((table.clone(), r.key.key_text()), r.count);
            assert!(previous.is_none(), "{table}: {} twice", r.key.key_text());
        }
    }
    for s in p.counters.iter().flat_map(|c| &c.series) {
        let value = s.stats.map_or(0.0, |st| st.mean);
        out.insert(
            ("counters".into(), s.path.display()),
            (value * 1000.0).round() as u64,
        );
    }
    out
}

fn notes(p: &Profile) -> String {
    p.warnings
        .iter()
        .map(|n| format!("{:?}: {}", n.line, n.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A note on `line` that says `what`.
fn noted(p: &Profile, line: usize, what: &str) -> bool {
    p.warnings
        .iter()
        .any(|w| w.line == Some(line) && w.message.contains(what))
}

/// `damaged` read against `intact`: the rows whose key contains one of `lost` may differ (and
/// then a note names `line`); every other row is identical, and no row is new.
fn compare(intact: &str, damaged: &str, line: usize, lost: &[&str]) -> (Profile, Profile) {
    let (a, b) = (read(intact), read(damaged));
    let (ca, cb) = (counts(&a), counts(&b));
    assert!(!ca.is_empty(), "{intact}: nothing read");
    for (key, count) in &cb {
        assert!(
            ca.contains_key(key),
            "{damaged}: row {key:?} ({count}) is not in {intact}\n{}",
            notes(&b)
        );
    }
    let mut differs = false;
    for (key, count) in &ca {
        let ours = lost.iter().any(|l| key.1.contains(l));
        match cb.get(key) {
            Some(c) if c == count => {}
            _ if ours => differs = true,
            got => panic!(
                "{damaged}: row {key:?} is {got:?}, {count} in {intact}\n{}",
                notes(&b)
            ),
        }
    }
    if differs {
        assert!(
            b.warnings.iter().any(|w| w.line == Some(line)),
            "{damaged}: the row on line {line} is lost without a note\n{}",
            notes(&b)
        );
    }
    (a, b)
}

/// The count of the row `key` in the first table whose rows have it.
fn count(p: &Profile, key: &str) -> Option<u64> {
    p.tables
        .iter()
        .flat_map(|t| &t.rows)
        .find(|r| r.key.key_text() == key)
        .map(|r| r.count)
}

#[test]
fn d1_perf_prof_row_cut_mid_line_is_noted_and_the_rest_kept() {
    let (a, b) = compare(
        "D0-perf-prof-intact.txt",
        "D1-perf-prof-row-cut.txt",
        6,
        &["HLT"],
    );
    // The cut row is left out (its total is cut short: no number is guessed); the other
    // interval's HLT stays.
    assert_eq!(count(&a, "HLT"), Some(2 * 20_747));
    assert_eq!(count(&b, "HLT"), Some(20_747));
    assert!(noted(&b, 6, "cut short"), "{}", notes(&b));
    assert!(b.tables[0].partial);
}

#[test]
fn d2_perf_prof_title_joined_to_its_header_is_split() {
    let (a, b) = compare(
        "D0-perf-prof-intact.txt",
        "D2-perf-prof-title-joined.txt",
        3,
        &[],
    );
    assert_eq!(counts(&a), counts(&b));
    assert!(noted(&b, 3, "two lines joined"), "{}", notes(&b));
    assert_eq!(b.tables[0].window, a.tables[0].window);
}

#[test]
fn d3_perf_prof_two_rows_on_one_line_are_split() {
    let (a, b) = compare(
        "D0-perf-prof-intact.txt",
        "D3-perf-prof-rows-joined.txt",
        6,
        &[],
    );
    assert_eq!(counts(&a), counts(&b));
    assert!(noted(&b, 6, "two lines joined"), "{}", notes(&b));
    assert_eq!(a.tables[0].rows, b.tables[0].rows, "times too");
}

#[test]
fn d4_kvm_stat_row_cut_after_its_name_is_noted() {
    for (intact, damaged, line) in [
        ("D0-kvm_stat-intact.txt", "D4-kvm_stat-row-cut.txt", 4),
        (
            "D0-kvm_stat-quoted-intact.txt",
            "D4b-kvm_stat-quoted-row-cut.txt",
            3,
        ),
    ] {
        let (_, b) = compare(intact, damaged, line, &["exits"]);
        assert!(noted(&b, line, "without its numbers"), "{}", notes(&b));
        assert_eq!(count(&b, "exits"), None);
        assert!(b.tables.iter().all(|t| t.partial), "{damaged}");
    }
}

#[test]
fn d5_kvm_stat_quoted_rows_joined_are_split() {
    let (a, b) = compare(
        "D0-kvm_stat-quoted-intact.txt",
        "D5-kvm_stat-quoted-rows-joined.txt",
        4,
        &[],
    );
    assert_eq!(counts(&a), counts(&b));
    assert!(noted(&b, 4, "two lines joined"), "{}", notes(&b));
}

#[test]
fn d6_kvm_stat_garbled_total_leaves_the_row_out_with_a_note() {
    let (_, b) = compare(
        "D0-kvm_stat-intact.txt",
        "D6-kvm_stat-garbled-total.txt",
        4,
        &["exits"],
    );
    // Not 4037 (the Current column) taken for the total.
    assert_eq!(count(&b, "exits"), None);
    assert!(noted(&b, 4, "`x#!`"), "{}", notes(&b));
    assert!(!notes(&b).contains("stray"), "{}", notes(&b));
}

#[test]
fn d12_counter_table_garbled_value_keeps_object_and_instances() {
    let (_, b) = compare(
        "D0-counter-table-intact.txt",
        "D12-counter-table-garbled-value.txt",
        3,
        &["% Guest Run Time"],
    );
    assert!(noted(&b, 3, "`x#!` is not a number"), "{}", notes(&b));
    let series = &b.counters.as_ref().unwrap().series;
    assert_eq!(series.len(), 7);
    assert!(series.iter().all(|s| {
        s.path.instance.as_deref() == Some("_Total")
            && s.path.object == "Hyper-V Hypervisor Virtual Processor"
    }));
}
