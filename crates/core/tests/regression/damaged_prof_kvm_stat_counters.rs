//! Issue 20, part 2 ("no row lost without a note"), defects D1–D6 and D12: one damaged line of
//! a pasted perf-prof, kvm_stat or counter table costs at most its own row, and a row that is
//! lost is noted with its line; two lines joined into one are read as two, with a note. Each
//! damaged file of `testdata/reliability/` is compared with the intact file it was made from:
//! every row not on the damaged line keeps its key and count, and no key appears that the
//! intact file does not have.

use std::collections::BTreeMap;

use virtlens_core::profile::Profile;
use virtlens_core::sources;

/// A file of `testdata/reliability/`, or of `testdata/` when `name` has a folder.
fn bytes(name: &str) -> Vec<u8> {
    let rel = if name.contains('/') {
        name.to_string()
    } else {
        format!("reliability/{name}")
    };
    let path = virtlens_testkit::testdata(&rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(name: &str) -> Profile {
    read_bytes(&bytes(name), name)
}

fn read_bytes(bytes: &[u8], name: &str) -> Profile {
    sources::read_bytes(bytes, name, None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `intact`'s file with line `n` (1-based) replaced by `with` (joined to the next line when
/// `with` ends in no newline and `join`).
fn damaged(intact: &str, n: usize, with: &str, join: bool) -> Vec<u8> {
    let text = String::from_utf8(bytes(intact)).unwrap();
    let mut out = String::new();
    for (i, l) in text.lines().enumerate() {
        if i + 1 == n {
            out.push_str(with);
            if !join {
                out.push('\n');
            }
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    out.into_bytes()
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
    compare_with(intact, read(damaged), damaged, line, lost)
}

/// As [`compare`], for a damaged profile `b` already read.
fn compare_with(
    intact: &str,
    b: Profile,
    damaged: &str,
    line: usize,
    lost: &[&str],
) -> (Profile, Profile) {
    let a = read(intact);
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
fn d1_perf_prof_row_cut_mid_line_keeps_its_count_and_says_so() {
    let (a, b) = compare(
        "D0-perf-prof-intact.txt",
        "D1-perf-prof-row-cut.txt",
        6,
        &["HLT"],
    );
    // The count is whole (a cell follows it): read. The times are cut: not read, and the
    // mean stays that of the events whose times are known (the other interval's).
    assert_eq!(counts(&a), counts(&b));
    assert!(
        noted(&b, 6, "its count is read, its times are not"),
        "{}",
        notes(&b)
    );
    let hlt = |p: &Profile| {
        let r = p.tables[0]
            .rows
            .iter()
            .find(|r| r.key.key_text() == "HLT")
            .unwrap();
        r.time.mean_ns(r.count)
    };
    assert_eq!(hlt(&a), hlt(&b));
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

// Beyond the campaign's files: the same damage classes on other lines of the intact files.

const PERF_PROF: &str = "D0-perf-prof-intact.txt";
const KVM_STAT: &str = "D0-kvm_stat-intact.txt";
const COUNTERS: &str = "D0-counter-table-intact.txt";
const HEADER: &str =
    "exit_reason             calls        total(us)   min(us)   avg(us)      max(us)  %gsys";

#[test]
fn perf_prof_damaged_header_reads_its_rows_in_the_columns_of_the_one_before() {
    for with in [
        HEADER.replacen("exit_reason", "x#!", 1),
        HEADER[..30].to_string(),
    ] {
        let b = read_bytes(&damaged(PERF_PROF, 11, &with, false), "header");
        let (a, b) = compare_with(PERF_PROF, b, "header", 11, &[]);
        assert_eq!(counts(&a), counts(&b), "{with}");
        assert!(
            noted(&b, 11, "columns of the header on line 4"),
            "{}",
            notes(&b)
        );
    }
    // A header glued to its rule: split.
    let b = read_bytes(&damaged(PERF_PROF, 4, HEADER, true), "header and rule");
    let (a, b) = compare_with(PERF_PROF, b, "header and rule", 4, &[]);
    assert_eq!(counts(&a), counts(&b));
    assert!(noted(&b, 4, "two lines joined"), "{}", notes(&b));
    // The first interval's header damaged: nothing to read its rows by; they are noted.
    let b = read_bytes(&damaged(PERF_PROF, 4, &HEADER[..30], false), "first header");
    let (_, b) = compare_with(PERF_PROF, b, "first header", 4, &["HLT", "MSR", "IO_"]);
    assert!(noted(&b, 4, "cannot be read"), "{}", notes(&b));
    assert!(noted(&b, 6, "no column header"), "{}", notes(&b));
}

#[test]
fn perf_prof_rule_joined_to_a_row_and_a_row_cut_after_its_name() {
    let rule =
        "-------------------- -------- ---------------- --------- --------- ------------ ------";
    let b = read_bytes(&damaged(PERF_PROF, 12, rule, true), "rule");
    let (a, b) = compare_with(PERF_PROF, b, "rule", 12, &[]);
    assert_eq!(counts(&a), counts(&b));
    assert!(noted(&b, 12, "two lines joined"), "{}", notes(&b));

    let b = read_bytes(&damaged(PERF_PROF, 13, "HLT", false), "name only");
    let (_, b) = compare_with(PERF_PROF, b, "name only", 13, &["HLT"]);
    assert_eq!(count(&b, "HLT"), Some(20_747));
    assert!(noted(&b, 13, "without its numbers"), "{}", notes(&b));

    // A garbled name is not read as an exit reason of its own.
    let row =
        "x#!                     20747     53004499.016     0.734  2554.803   199989.423 100.00";
    let b = read_bytes(&damaged(PERF_PROF, 13, row, false), "garbled name");
    let (_, b) = compare_with(PERF_PROF, b, "garbled name", 13, &["HLT"]);
    assert!(noted(&b, 13, "`x#!`"), "{}", notes(&b));
}

#[test]
fn kvm_stat_row_cut_inside_its_total_or_its_name() {
    for (with, why) in [
        (
            " exits                                    7056",
            "one number where",
        ),
        (" exi", "without its numbers"),
    ] {
        let b = read_bytes(&damaged(KVM_STAT, 4, with, false), with);
        let (_, b) = compare_with(KVM_STAT, b, with, 4, &["exits"]);
        assert_eq!(count(&b, "exits"), None, "{with}");
        assert!(noted(&b, 4, why), "{}", notes(&b));
    }
}

#[test]
fn counter_table_cut_value_and_rows_joined() {
    let b = read_bytes(
        &damaged(
            COUNTERS,
            5,
            "    Total Intercepts/sec                     9,21",
            false,
        ),
        "cut",
    );
    let (_, b) = compare_with(COUNTERS, b, "cut", 5, &["Total Intercepts"]);
    assert!(noted(&b, 5, "`9,21` is not a number"), "{}", notes(&b));

    let b = read_bytes(
        &damaged(
            COUNTERS,
            4,
            "    % Hypervisor Run Time                       20.216",
            true,
        ),
        "joined",
    );
    let (a, b) = compare_with(COUNTERS, b, "joined", 4, &[]);
    assert_eq!(counts(&a), counts(&b));
    assert!(noted(&b, 4, "joined"), "{}", notes(&b));
}

const ARM64: &str = "exit-reports/36-kvm_stat-arm64-4.19-idle-wfx.txt";

#[test]
fn kvm_stat_joined_header_and_children_are_split_and_a_cut_percent_is_noted() {
    // The header glued to the first row.
    let header = " Event                                        Total Current";
    let b = read_bytes(&damaged(KVM_STAT, 3, header, true), "header joined");
    let (a, b) = compare_with(KVM_STAT, b, "header joined", 3, &[]);
    assert_eq!(counts(&a), counts(&b));
    assert!(noted(&b, 3, "two lines joined"), "{}", notes(&b));

    // Two child rows glued together (`2028kvm_exit(SYS64)`): both read, children still.
    let text = String::from_utf8(bytes(ARM64)).unwrap();
    let row = text.lines().nth(6).unwrap().trim_end().to_string();
    let b = read_bytes(&damaged(ARM64, 7, &row, true), "children joined");
    let (a, b) = compare_with(ARM64, b, "children joined", 7, &[]);
    assert_eq!(counts(&a), counts(&b));
    assert!(noted(&b, 7, "two lines joined"), "{}", notes(&b));

    // A row cut inside its %Total: two integers are not a total and a rate.
    let cut = &row[..row.find('.').unwrap()];
    let b = read_bytes(&damaged(ARM64, 7, cut, false), "percent cut");
    let (_, b) = compare_with(ARM64, b, "percent cut", 7, &["WFx"]);
    assert!(
        b.warnings.iter().any(|w| w.line == Some(7)),
        "{}",
        notes(&b)
    );

    // A garbled word beside the name is not taken for pasted junk.
    let b = read_bytes(
        &damaged(
            KVM_STAT,
            5,
            " irq_exits x#!                            443033416    1590  ",
            false,
        ),
        "garbled word",
    );
    let (_, b) = compare_with(KVM_STAT, b, "garbled word", 5, &["irq_exits"]);
    assert!(noted(&b, 5, "could not read"), "{}", notes(&b));
}
