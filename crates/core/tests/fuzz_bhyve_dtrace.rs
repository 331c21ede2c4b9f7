//! Fuzzing the bhyve DTrace exit-summary source (proptest, bounded so it runs in every
//! `cargo test`): mutated samples, random text and bytes never panic, whatever is read
//! round-trips through JSON, every error names the input (and a line of it), and one damaged
//! row costs at most that row and is noted at its line.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_bhyve_dtrace::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::sources::Format;

use crate::common::{self, Edit, apply};

const SAMPLE: &str = include_str!(
    "../../../testdata/exit-reports/39-bhyve-dtrace-svm-exit-summary-acpi-pm-timer.txt"
);

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"=== Exit summary, one second ending at 2025 Feb 14 23:47:33 ===\n".to_vec(),
        b"  SVM code  Count\n".to_vec(),
        b"IOIO SVM exits:\n".to_vec(),
        b"NPF SVM exits:\n".to_vec(),
        b"vm_run() VM_EXITCODE_BOGUS reasons:\n".to_vec(),
        b"  Port   Op  OpSz  Addr  Count\n".to_vec(),
        b"Exits this script did not understand: 18446744073709551616\n".to_vec(),
        b"ffffffffffffffffff".to_vec(),
        b"18446744073709551615".to_vec(),
        b"D-UW-".to_vec(),
        b"0x".to_vec(),
        b"> ".to_vec(),
        b"  ".to_vec(),
        b"\n".to_vec(),
        b"\0".to_vec(),
        b"\xff".to_vec(),
    ])
}

/// The lines of the sample that are rows (they end with a count), 0-based.
fn row_lines() -> Vec<usize> {
    SAMPLE
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() >= 2
                && w.last().is_some_and(|c| c.parse::<u64>().is_ok())
                && !l.starts_with("===")
                && !l.contains("Count")
        })
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn the_sample_has_rows_to_damage() {
    assert_eq!(row_lines().len(), 14);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(1500), ..ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<bool>(),
    ) {
        let bytes = apply(SAMPLE.as_bytes().to_vec(), &edits);
        common::check_tables_read(&bytes, forced.then_some(Format::BhyveDtrace), &[Format::BhyveDtrace])?;
    }

    /// Damage one row (a stretch of it replaced by typo bytes): the other rows keep their
    /// counts, and the damaged row is read or noted at its line.
    #[test]
    fn one_bad_row_never_takes_the_others(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..6,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09.%_-I \t\0\xff".to_vec()), 0..4),
    ) {
        let lines = row_lines();
        let line = lines[pick.index(lines.len())];
        let count: u64 = SAMPLE
            .lines()
            .nth(line)
            .and_then(|l| l.split_whitespace().last())
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let input = common::damage_line(SAMPLE, line, at, cut, &bytes);
        common::check_one_bad_row(SAMPLE, line, count, &input, Format::BhyveDtrace, |p, damaged| {
            // A damaged count that reads as 0 is a row of 0, left out with the others (and said).
            String::from_utf8_lossy(damaged)
                .split_whitespace()
                .last()
                .and_then(|c| c.parse::<u64>().ok())
                == Some(0)
                && p.warnings.iter().any(|w| w.message.contains("with a count of 0"))
        })?;
    }

    #[test]
    fn random_text_never_panics(
        text in "(\\PC|\\t|\\n|[0-9a-f ]{1,18}|SVM code  Count\\n|IOIO SVM exits:\\n|NPF SVM exits:\\n|[ID][R-][US][WR][P-]){0,200}",
    ) {
        common::check_tables_read(text.as_bytes(), Some(Format::BhyveDtrace), &[Format::BhyveDtrace])?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        common::check_tables_read(&bytes, Some(Format::BhyveDtrace), &[Format::BhyveDtrace])?;
    }
}
