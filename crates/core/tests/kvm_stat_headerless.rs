//! kvm_stat blocks pasted without their title and column header: the rows of real screens
//! (`testdata/cases/web-02-…` and `web-03-…`, Martins3's host-freq post; `ml-07-…`, Jiri
//! Slaby's 2012 screens; their `case.json` give the sources) with the lines above them left
//! out, alone or after another block. Every block is read, or noted, never dropped in silence;
//! one damaged row costs at most that row and is noted.

use proptest::prelude::*;
use virtlens_core::profile::{Profile, TableKind};
use virtlens_core::sources::{self, Format};

use crate::common;

fn input(case: &str) -> String {
    let dir = virtlens_testkit::repo_root()
        .join("testdata/cases")
        .join(case);
    std::fs::read_to_string(dir.join("input.txt"))
        .or_else(|_| std::fs::read_to_string(dir.join("input-2.txt")))
        .unwrap()
}

/// The rows of a screen: the lines after its column header, up to its `Total` row.
fn rows(screen: &str) -> String {
    screen
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Event"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("Total"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn read(text: &str) -> Profile {
    sources::read_bytes(text.as_bytes(), "t.txt", None).unwrap_or_else(|e| panic!("{e}"))
}

/// The kvm_stat counter tables' totals, in order.
fn totals(p: &Profile) -> Vec<u64> {
    p.tables
        .iter()
        .filter(|t| t.kind == TableKind::KvmStat)
        .map(|t| t.count())
        .collect()
}

fn noted(p: &Profile, line: usize, what: &str) -> bool {
    p.warnings
        .iter()
        .any(|w| w.line == Some(line) && w.message.contains(what))
}

#[test]
fn a_screen_without_title_and_header_is_read_in_todays_columns() {
    let screen = input("web-02-linux-nohz-off-kvm-stat-timer-storm");
    let bare = rows(&screen);
    assert_eq!(sources::detect(bare.as_bytes()), Some(Format::KvmStat));
    let (p, full) = (read(&bare), read(&screen));
    assert_eq!(totals(&p), totals(&full));
    assert!(
        noted(&p, 1, "without its title and header"),
        "{:?}",
        p.warnings
    );
}

/// A screen with its header, then the rows of another pasted under a command line without
/// theirs: before, the second block was dropped without a word.
#[test]
fn a_second_block_without_header_is_read_not_dropped() {
    let first = input("web-03-linux-openeuler-kvm-stat-baseline");
    let second = rows(&input("web-02-linux-nohz-off-kvm-stat-timer-storm"));
    let text = format!("{first}\n# kvm_stat -p 4242\n{second}");
    let p = read(&text);
    let at = first.lines().count() + 3;
    assert_eq!(
        totals(&p),
        [totals(&read(&first))[0], totals(&read(&second))[0]]
    );
    assert!(
        noted(&p, at, "without its title and header"),
        "{:?}",
        p.warnings
    );
    // And right after a blank line, the same rows again: another screen like the one above.
    let text = format!("{first}\n{second}");
    let p = read(&text);
    assert_eq!(totals(&p).len(), 2, "{:?}", p.warnings);
    assert!(
        noted(&p, at - 1, "without its header, after the screen on line 1"),
        "{:?}",
        p.warnings
    );
}

/// Two `kvm_stat -1` listings one after the other (the 2012 debugfs counters of ml-07 in the
/// listing's columns): the second is a run of its own, not `#2` counters of the first.
#[test]
fn a_second_listing_is_a_run_of_its_own() {
    let listing = "exits                                      6778198  615942\n\
                   irq_exits                                     1523     138\n";
    let p = read(&format!("{listing}\n{listing}"));
    assert_eq!(totals(&p), [6_779_721, 6_779_721]);
    assert!(
        noted(&p, 4, "another listing, read as a run of its own"),
        "{:?}",
        p.warnings
    );
}

#[test]
fn old_screens_keep_their_own_columns() {
    // ml-07's 2012 screen (`kvm statistics`, name, total, current) reads as before.
    let p = read(&input("ml-07-kvm-stat-host-mm-bug-page-fault-loop"));
    assert!(
        !p.warnings.iter().any(|w| w.message.contains("without its")),
        "{:?}",
        p.warnings
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(600), ..ProptestConfig::default() })]

    /// Damage one row of a header-less screen: the others keep their counts, and the damaged
    /// row is read or noted at its line.
    #[test]
    fn one_bad_row_costs_at_most_that_row(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..6,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09.%_- \t\0\xff".to_vec()), 0..4),
    ) {
        let bare = rows(&input("web-02-linux-nohz-off-kvm-stat-timer-storm"));
        let full = read(&bare);
        let lines: Vec<&str> = bare.lines().collect();
        let line = pick.index(lines.len());
        let count: u64 = lines[line].split_whitespace().nth(1).and_then(|w| w.parse().ok()).unwrap_or(0);
        let damaged = common::damage_line(&bare, line, at, cut, &bytes);
        let total = |p: &Profile| totals(p).iter().fold(0u64, |a, &t| a.saturating_add(t));
        let p = match sources::read_bytes(&damaged, "bad.txt", Some(Format::KvmStat)) {
            Ok(p) => p,
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        let (before, after) = (total(&full), total(&p));
        prop_assert!(after.saturating_add(count) >= before, "{} of {}: {:?}", after, before, p.warnings);
        // A row indented further than the others (`   vm_entry` after its `k` is cut) reads as
        // a child of the row above it, as kvm_stat draws children: it moves to another table.
        let n_rows = |p: &Profile| p.tables.iter().map(|t| t.rows.len()).sum::<usize>();
        let read_it = n_rows(&p) >= n_rows(&full) || after.saturating_add(count) != before;
        let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
        prop_assert!(read_it || noted, "line {} neither read nor noted: {:?}", line + 1, p.warnings);
    }
}

/// Listings of real counter names (the lab's `kvm_stat -1` of a halting ping-pong guest, its
/// totals and changes drawn at random) printed by a loop, with or without `date` lines: the
/// loop is one run whose counts are the sums of the changes, over one second per listing.
fn loop_listing() -> impl Strategy<Value = Vec<(u32, u32)>> {
    prop::collection::vec((0u32..5_000_000, 0u32..100_000), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn a_loop_of_listings_sums_the_changes(
        listings in prop::collection::vec(loop_listing(), 2..12),
        dated in any::<bool>(),
    ) {
        let sample = std::fs::read_to_string(
            virtlens_testkit::repo_root()
                .join("testdata/lab-cases/linux-halt-churn-pingpong/kvm_stat.txt"),
        )
        .unwrap();
        let names: Vec<&str> = sample
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| !n.starts_with("kvm_exit"))
            .collect();
        let mut text = String::new();
        let mut sums = std::collections::BTreeMap::<&str, u64>::new();
        for (i, listing) in listings.iter().enumerate() {
            if dated {
                text += &format!("Mon Nov 30 08:{:02}:{:02} UTC 2026\n", i / 60, i % 60);
            }
            for (name, (total, change)) in names.iter().zip(listing) {
                text += &format!("{name:<42}{total:>10}{change:>10}\n");
                *sums.entry(name).or_default() += u64::from(*change);
            }
        }
        let p = read(&text);
        let tables: Vec<_> = p.tables.iter().filter(|t| t.kind == TableKind::KvmStat).collect();
        prop_assert_eq!(tables.len(), 1, "{:?}", p.warnings);
        let got: std::collections::BTreeMap<&str, u64> = tables[0]
            .rows
            .iter()
            .map(|r| (r.key.key_text(), r.count))
            .map(|(k, c)| (names.iter().copied().find(|n| *n == k).unwrap_or("?"), c))
            .collect();
        prop_assert_eq!(got, sums);
        let w = tables[0].window.as_ref().unwrap();
        prop_assert_eq!(w.intervals as usize, listings.len());
        prop_assert_eq!(w.duration_ns, Some(listings.len() as u64 * 1_000_000_000));
        prop_assert!(!p.warnings.iter().any(|w| w.message.contains("could not read")), "{:?}", p.warnings);
    }
}
