//! Fuzzing the perf kvm stat source (proptest, bounded so it runs in every `cargo test`):
//! mutated real samples and random text never panic, every error names the input and, where a
//! line is at fault, the line; and one damaged row of a real table (a typo, a NUL, invalid
//! UTF-8, a lost cell) never takes the other rows with it. Mutations also insert the shapes
//! authors paste: label lines, elisions, headers cut to a few columns.
//!
//! `PROPTEST_CASES=100000 cargo test -p virtlens-core --test tests --release -- fuzz_perf_kvm_stat::`
//! runs a longer campaign.

use proptest::prelude::*;
use virtlens_core::sources::{self, Format};

use crate::common::{self, Edit, apply};

const SAMPLES: [&str; 11] = [
    include_str!("../../../testdata/exit-reports/05-perf-kvm-stat-msr-event-tscdeadline.txt"),
    include_str!("../../../testdata/exit-reports/06-perf-kvm-stat-vmexit-amd-svm-idle.txt"),
    include_str!("../../../testdata/exit-reports/09-perf-kvm-stat-vmexit-2012-format.txt"),
    include_str!("../../../testdata/exit-reports/11-perf-kvm-stat-ioport-2012-format.txt"),
    include_str!("../../../testdata/exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt"),
    include_str!("../../../testdata/exit-reports/17-perf-kvm-stat-live-amd-sev-es-hung-vcpu.txt"),
    include_str!(
        "../../../testdata/exit-reports/34-perf-kvm-stat-hists-format-riscv-before-after.txt"
    ),
    include_str!("../../../testdata/seed-kvm-hyperv-traps/1-no-hyperv-features.txt"),
    include_str!("../../../testdata/seed-kvm-hyperv-traps/2-all-hyperv-features.txt"),
    include_str!("../../../testdata/seed-kvm-hyperv-traps/3-hypervisor-cpuid-hidden.txt"),
    include_str!(
        "../../../testdata/seed-kvm-hyperv-traps/4-all-hyperv-features-stimer-optimized.txt"
    ),
];

fn edit() -> impl Strategy<Value = Edit> {
    common::edit(vec![
        b"( +-".to_vec(),
        b"us".to_vec(),
        b"%".to_vec(),
        b"\n".to_vec(),
        b"> ".to_vec(),
        b"Total Samples:".to_vec(),
        b"UNKNOWN".to_vec(),
        b"unknown kvm exit code:99 on SVM\n".to_vec(),
        b"19:49:57.094070\n".to_vec(),
        b"\t".to_vec(),
        b"18446744073709551615".to_vec(),
        b"baseline:\n".to_vec(),
        b"- with the patch\n".to_vec(),
        b"[..]\n".to_vec(),
        b".....\n".to_vec(),
        b"<snip>\n".to_vec(),
        b"VM-EXIT    Samples  Samples%     Time%\n".to_vec(),
        b"\0".to_vec(),
        b"\xff\xfe".to_vec(),
        b"| ".to_vec(),
    ])
}

/// Bytes a typo or a damaged copy puts into a row: never a line break, a colon or a `#`,
/// which would make the line another kind of line (a label, a comment) rather than a bad row.
fn typo() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(b"aZx09.%_-+ \t\0\xff()/".to_vec()),
        0..4,
    )
}

/// The lines of `text` that are rows of a table, with the count they print.
fn row_lines(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains('%') && !l.contains("Sample") && !l.contains("Total"))
        .filter_map(|(i, l)| {
            let mut cells = l.split_whitespace();
            let key = cells.next()?;
            let count = cells.next()?.parse().ok()?;
            (!key.starts_with(|c: char| c.is_ascii_digit())).then_some((i, count))
        })
        .collect()
}

fn check(bytes: &[u8], forced: bool) -> Result<(), TestCaseError> {
    let format = Format::PerfKvmStat;
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

    /// Damage one row of a real table (replace a stretch of it with typo bytes): every other
    /// row is still read with its own count, and the damaged row is either read or noted at its
    /// line.
    #[test]
    fn one_bad_row_never_takes_the_others(
        which in any::<prop::sample::Index>(),
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..8,
        bytes in typo(),
    ) {
        let tables: Vec<&str> = SAMPLES.into_iter().filter(|s| row_lines(s).len() >= 2).collect();
        let text = tables[which.index(tables.len())];
        let rows = row_lines(text);
        let (line, count) = rows[pick.index(rows.len())];
        let input = common::damage_line(text, line, at, cut, &bytes);
        let full = sources::read_bytes(text.as_bytes(), "full.txt", Some(Format::PerfKvmStat))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let p = sources::read_bytes(&input, "one-bad-row.txt", Some(Format::PerfKvmStat))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
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
