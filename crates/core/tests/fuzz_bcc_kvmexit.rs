//! Fuzzing the bcc kvmexit source (proptest, bounded so it runs in every `cargo test`): mutated
//! real samples and random text never panic, every error names the input and, where a line is
//! at fault, the line; and one damaged row of a real run (a typo, a NUL, invalid UTF-8, a lost
//! cell) never takes the other rows with it.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_bcc_kvmexit::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

const SAMPLES: [&str; 3] = [
    include_str!("../../../testdata/exit-reports/01-bcc-kvmexit-all-threads.txt"),
    include_str!("../../../testdata/exit-reports/38-bcc-kvmexit-aarch64-idle.txt"),
    // `-p` rows pasted without kvmexit's header.
    include_str!("../../../testdata/cases/web-16-nullblk-fio-vcpu-timer-exits-normal/input-1.txt"),
];

/// The samples whose rows each have their own (reason, pid): no two rows are summed, so every
/// row's count is a count of the profile.
const ONE_ROW_EACH: [usize; 2] = [0, 2];

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"^C".to_vec(),
        b"\n".to_vec(),
        b"> ".to_vec(),
        b"EXIT_REASON_".to_vec(),
        b"# ./kvmexit.py -p 42\n".to_vec(),
        b"PID      TID      KVM_EXIT_REASON                     COUNT".to_vec(),
        b"Display kvm exit reasons and statistics for all threads... Hit Ctrl-C to end.\n".to_vec(),
        b"Exception: no such process\n".to_vec(),
        b"18446744073709551615".to_vec(),
        b"...\n".to_vec(),
        b"b'CPU 0/KVM'".to_vec(),
        b"\t".to_vec(),
        b"\0".to_vec(),
        b"\xe2\x80\x94".to_vec(),
        b"\xff\xfe".to_vec(),
    ])
}

/// Bytes a typo or a damaged copy puts into a row: never a line break.
fn typo() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(b"aZx09._-+ \t\0\xff/#!".to_vec()),
        0..4,
    )
}

/// The lines of `text` that are rows (the count last, an exit reason before it).
fn row_lines(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let mut cells = l.split_whitespace().rev();
            let count = cells.next()?.parse().ok()?;
            cells
                .next()
                .is_some_and(|r| r.chars().any(|c| c.is_ascii_uppercase()))
                .then_some((i, count))
        })
        .collect()
}

fn check(bytes: &[u8], forced: bool) -> Result<(), TestCaseError> {
    let format = Format::BccKvmexit;
    common::check_tables_read(bytes, forced.then_some(format), &[format])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(2000), ..ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(
        which in 0..SAMPLES.len(),
        edits in prop::collection::vec(edit(), 1..8),
        forced in any::<bool>(),
    ) {
        let bytes = apply(SAMPLES[which].as_bytes().to_vec(), &edits);
        check(&bytes, forced)?;
    }

    /// Damage one row of a real run (replace a stretch of it with typo bytes): every other row
    /// is still read with its own count, and the damaged row is either read or noted at its
    /// line.
    #[test]
    fn one_bad_row_never_takes_the_others(
        which in 0..ONE_ROW_EACH.len(),
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..8,
        bytes in typo(),
    ) {
        let text = SAMPLES[ONE_ROW_EACH[which]];
        let rows = row_lines(text);
        let (line, count) = rows[pick.index(rows.len())];
        let input = common::damage_line(text, line, at, cut, &bytes);
        let full = sources::read_bytes(text.as_bytes(), "full.txt", Some(Format::BccKvmexit))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let p = match sources::read_bytes(&input, "one-bad-row.txt", Some(Format::BccKvmexit)) {
            Ok(p) => p,
            // Only a run of one row can be left with none, and the error names the line.
            Err(e) => {
                prop_assert!(rows.len() == 1, "{}", e);
                return common::check_error(e, "one-bad-row.txt", &input);
            }
        };
        let mut others = common::sorted_counts(&full);
        if let Some(i) = others.iter().position(|c| *c == count) {
            others.remove(i);
        }
        let mut got = common::sorted_counts(&p);
        for c in &others {
            let i = got.iter().position(|g| g == c);
            prop_assert!(i.is_some(), "row count {} lost: {:?}", c, p.warnings);
            if let Some(i) = i {
                got.remove(i);
            }
        }
        let read_whole = got.len() == 1;
        let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
        prop_assert!(read_whole || noted, "line {} neither read nor noted: {:?}", line + 1, p.warnings);
    }

    #[test]
    fn random_text_never_panics(text in "(\\PC|\\t|\\n){0,400}") {
        check(text.as_bytes(), true)?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check(&bytes, true)?;
    }
}
