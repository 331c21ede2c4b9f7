//! Trace lines a mail client wrapped after the timestamp (the event on the next, indented line):
//! the real mail under `testdata/readers/` (Rümelin, qemu-devel 2021-05-07; its README gives the
//! source) is read with every event joined to its stamp, and one damaged line — the stamp half
//! or the event half — costs at most its event, which is then counted or noted.

use proptest::prelude::*;
use virtlens_core::profile::{Profile, TableKind};
use virtlens_core::sources::{self, Format};

use crate::common;

const WRAPPED: &str = include_str!("../../../testdata/readers/wrapped-trace-pckbd-ruemelin.txt");

/// Every event line (exits are also in the events table).
fn events(p: &Profile) -> u64 {
    p.tables
        .iter()
        .filter(|t| t.kind == TableKind::Events)
        .map(|t| t.count())
        .sum()
}

/// The mail's halves: stamp lines (`task [cpu] flags ts:`) and the event lines under them.
fn halves() -> Vec<usize> {
    let lines: Vec<&str> = WRAPPED.lines().collect();
    (1..lines.len())
        .filter(|&i| lines[i - 1].ends_with(':') && lines[i - 1].contains("] "))
        .flat_map(|i| [i - 1, i])
        .collect()
}

#[test]
fn every_wrapped_event_is_joined_and_the_join_noted() {
    let p = sources::read_bytes(WRAPPED.as_bytes(), "wrapped.txt", None).unwrap();
    assert_eq!(p.origin.format, Format::TraceText.name());
    let pairs = halves().len() as u64 / 2;
    assert_eq!(pairs, 31);
    assert_eq!(events(&p), pairs, "{:?}", p.warnings);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.line == Some(6) && w.message.contains("31 line(s): wrapped by a mailer")),
        "{:?}",
        p.warnings
    );
    // Paired across the wrap: the exits have their durations.
    let exits = p
        .tables
        .iter()
        .find(|t| t.kind == TableKind::Vmexit)
        .unwrap();
    assert_eq!(exits.count(), 10);
    assert!(exits.time_ns().is_some_and(|t| t > 0));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(800), ..ProptestConfig::default() })]

    #[test]
    fn one_damaged_half_costs_at_most_its_event(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..8,
        bytes in prop::collection::vec(prop::sample::select(b"aZx09.%_-+ \t\0\xff()/[]".to_vec()), 0..4),
    ) {
        let full = sources::read_bytes(WRAPPED.as_bytes(), "full.txt", Some(Format::TraceText))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let halves = halves();
        let line = halves[pick.index(halves.len())];
        let input = common::damage_line(WRAPPED, line, at, cut, &bytes);
        let p = sources::read_bytes(&input, "bad.txt", Some(Format::TraceText))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (before, after) = (events(&full), events(&p));
        prop_assert!(after + 1 >= before, "{} of {}: {:?}", after, before, p.warnings);
        // The other half of the pair is the line above or below the damaged one.
        let near = |w: &&virtlens_core::profile::Note| {
            w.line.is_some_and(|l| l.abs_diff(line + 1) <= 1)
        };
        let noted = p.warnings.iter().any(|w| near(&w));
        prop_assert!(after >= before || noted, "line {} neither counted nor noted: {:?}",
            line + 1, p.warnings);
    }
}
