//! Fuzzing the xenalyze summary source (proptest, bounded so it runs in every `cargo test`):
//! mutated samples, random text and bytes never panic, whatever is read round-trips through
//! JSON, every error names the input (and a line of it), and one damaged exit-reason row costs
//! at most that row and is noted at its line.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_xenalyze::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::sources::Format;

use crate::common::{self, Edit, apply};

const SAMPLE: &str =
    include_str!("../../../testdata/exit-reports/42-xenalyze-hvm-summary-io-instruction.txt");

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"Exit reasons:\n".to_vec(),
        b"|-- Domain 7 --|\n".to_vec(),
        b"-- v3 --\n".to_vec(),
        b"Total time: 7.49 seconds (using cpu speed 2.40 GHz)\n".to_vec(),
        b"Using SVM hardware-assisted virtualization.\n".to_vec(),
        b" VMEXIT_NPF   18446744073709551615  0.00s  0.00% 18446744073709551615 cyc\n".to_vec(),
        b" HLT ".to_vec(),
        b" cyc ".to_vec(),
        b"{1|2|3}".to_vec(),
        b"99999999999999999999".to_vec(),
        b"1e308s".to_vec(),
        b"NaN%".to_vec(),
        b"> ".to_vec(),
        b"  ".to_vec(),
        b"\n".to_vec(),
        b"\0".to_vec(),
        b"\xff".to_vec(),
    ])
}

/// The exit-reason rows of the sample (one blank of indentation, ending in cycles), 0-based.
fn row_lines() -> Vec<usize> {
    SAMPLE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with(' ') && !l.starts_with("  ") && l.contains(" cyc"))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn the_sample_has_rows_to_damage() {
    assert_eq!(row_lines().len(), 4);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(1500), ..ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<bool>(),
    ) {
        let bytes = apply(SAMPLE.as_bytes().to_vec(), &edits);
        common::check_tables_read(&bytes, forced.then_some(Format::Xenalyze), &[Format::Xenalyze])?;
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
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let input = common::damage_line(SAMPLE, line, at, cut, &bytes);
        common::check_one_bad_row(SAMPLE, line, count, &input, Format::Xenalyze, |_, _| false)?;
    }

    #[test]
    fn random_text_never_panics(
        text in "(\\PC|\\t|\\n|[0-9 .s%]{1,12}| cyc|Exit reasons:\\n|-- v[0-9] --\\n| HLT | VMEXIT_NPF ){0,200}",
    ) {
        common::check_tables_read(text.as_bytes(), Some(Format::Xenalyze), &[Format::Xenalyze])?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        common::check_tables_read(&bytes, Some(Format::Xenalyze), &[Format::Xenalyze])?;
    }
}
