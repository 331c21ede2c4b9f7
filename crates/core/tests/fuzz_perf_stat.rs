//! Fuzzing the `perf stat` source (proptest, bounded so it runs in every `cargo test`): mutated
//! samples, random text and bytes never panic, whatever is read round-trips through JSON, every
//! error names the input, and one damaged row costs at most that row and is noted at its line.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_perf_stat::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

/// The real paste and hand-written outputs of each mode (stat-display.c's formats).
const SAMPLES: [&str; 4] = [
    include_str!("../../../testdata/readers/perf-stat-kvm-all-zero-zcore.txt"),
    " Performance counter stats for 'system wide':\n\n\
     \x20       3,358,451      kvm:kvm_exit\n\
     \x20       1,100,000      kvm:kvm_pio\n\
     \x20          34,863      kvm:kvm_msr\n\
     \x20   <not counted>      kvm:kvm_mmio\n\n\
     \x20    10.001234567 seconds time elapsed\n",
    "#           time             counts unit events\n\
     \x20    1.000141995            312,012      kvm:kvm_exit\n\
     \x20    1.000141995             98,100      kvm:kvm_pio\n\
     \x20    2.000420051            300,988      kvm:kvm_exit\n\
     \x20    2.000420051            101,900      kvm:kvm_pio\n",
    "612000,,kvm:kvm_exit,5001234567,100.00,,\n200000,,kvm:kvm_pio,5001234567,100.00,,\n\
     7,,kvm:kvm_msr,5001234567,100.00,,\n",
];

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"\n".to_vec(),
        b"#".to_vec(),
        b"> ".to_vec(),
        b",".to_vec(),
        b"  ".to_vec(),
        b"<not counted>".to_vec(),
        b" Performance counter stats for 'x':\n".to_vec(),
        b"  99999999999.999999999 seconds time elapsed\n".to_vec(),
        b"18446744073709551615".to_vec(),
        b"999,999,999,999,999,999,999".to_vec(),
        b"kvm:".to_vec(),
        b"( +-  1.00% )".to_vec(),
        b"[...]\n".to_vec(),
        b"\0".to_vec(),
        b"\xff".to_vec(),
    ])
}

/// Every count of the profile, summed, saturating.
/// The lines of the samples' tracepoint rows, with their counts.
fn counted_rows(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("kvm:") && !l.contains("not counted") && !l.starts_with('#'))
        .filter_map(|(i, l)| {
            let words: Vec<&str> = l.split([' ', ',']).filter(|w| !w.is_empty()).collect();
            let at = words.iter().position(|w| w.starts_with("kvm:"))?;
            // The count is the digits before the event (thousands groups split by the `,`).
            let digits: String = words[..at]
                .iter()
                .rev()
                .take_while(|w| w.bytes().all(|b| b.is_ascii_digit()))
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .copied()
                .collect();
            Some((i, digits.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_row_counter_finds_rows() {
    for text in SAMPLES {
        assert!(counted_rows(text).len() >= 2, "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(1500), ..ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(
        which in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<bool>(),
    ) {
        let bytes = apply(SAMPLES[which].as_bytes().to_vec(), &edits);
        common::check_tables_read(&bytes, forced.then_some(Format::PerfStat), &[Format::PerfStat])?;
    }

    /// Damage one row (a stretch of it replaced by typo bytes): the other rows keep their
    /// counts (the total falls by at most the damaged row's count) and the damaged row is
    /// either read or noted at its line.
    #[test]
    fn one_bad_row_never_takes_the_others(
        which in 0..SAMPLES.len(),
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..6,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09.%_-: \t\0\xff".to_vec()), 0..4),
    ) {
        let text = SAMPLES[which];
        let rows_of = counted_rows(text);
        let (line, count) = rows_of[pick.index(rows_of.len())];
        let input = common::damage_line(text, line, at, cut, &bytes);
        let full = sources::read_bytes(text.as_bytes(), "full.txt", Some(Format::PerfStat))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let p = sources::read_bytes(&input, "one-bad-row.txt", Some(Format::PerfStat))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (before, after) = (common::total(&full), common::total(&p));
        prop_assert!(after.saturating_add(count) >= before, "{} of {}: {:?}", after, before, p.warnings);
        let read = common::rows(&p) >= common::rows(&full) || after.saturating_add(count) != before;
        let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
        let damaged = input.split(|&b| b == b'\n').nth(line).unwrap_or_default();
        // A name cut short reads as a shorter name (here it may merge with another row's):
        // nothing tells it from one.
        let original = text.lines().nth(line).unwrap_or_default().trim();
        let shown = String::from_utf8_lossy(damaged);
        let cut_short = !shown.trim().is_empty() && shown.trim().len() < original.len()
            && original.starts_with(shown.trim());
        // A cut inside a name can leave another row's name (`kvm_nested_intr_vmexit` less
        // `intr_` is `kvm_nested_vmexit`): the row is read, into that one.
        let merged = shown.split_whitespace().find(|w| w.contains("kvm:")).is_some_and(|name| {
            text.lines().enumerate().any(|(i, l)| i != line && l.split([' ', ',']).any(|w| w == name))
        });
        prop_assert!(read || noted || cut_short || merged, "line {} `{}` neither read nor noted: {:?}",
            line + 1, shown, p.warnings);
    }

    #[test]
    fn random_text_never_panics(
        text in "(\\PC|\\t|\\n|[0-9, ]{1,12}|kvm:kvm_exit|seconds time elapsed|<not counted>|# ){0,200}",
    ) {
        common::check_tables_read(text.as_bytes(), Some(Format::PerfStat), &[Format::PerfStat])?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        common::check_tables_read(&bytes, Some(Format::PerfStat), &[Format::PerfStat])?;
    }
}
