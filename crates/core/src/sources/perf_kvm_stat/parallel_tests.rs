//! Reading a transcript in parts ([`super::parallel`]) reads what one reader reads: real
//! inputs from `testdata/`, strung together as the intervals of one live session (each under
//! a timestamp line), cut at every line and at every timestamp line at once, give the profile
//! one reader gives, notes and line numbers included (a row's variance may differ in its last
//! bits: it is summed in another order).

use serde_json::Value;

use super::parallel::read_parts;
use super::{Reader, looks_like};
use crate::error::Result;
use crate::profile::Profile;
use crate::sources::line_reader::read_lines;
use crate::sources::mapped::Mapped;

fn json(p: &Result<Profile>) -> Value {
    match p {
        Ok(p) => serde_json::to_value(p).unwrap_or(Value::Null),
        Err(e) => Value::String(format!("error: {e}")),
    }
}

/// `a` and `b` are the same, floats up to their last bits.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.fract() != 0.0 || y.fract() != 0.0 => {
                (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
            }
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Every real perf kvm stat input, each as one interval of a live session.
fn session() -> String {
    let files = virtlens_testkit::files_under(&virtlens_testkit::testdata(""));
    let mut out = String::new();
    let mut second = 0;
    for p in files {
        if std::fs::metadata(&p).is_ok_and(|m| m.len() >= 256 << 10) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        if looks_like(text.as_bytes()) {
            // Twice: so that intervals of one table follow one another too.
            for _ in 0..2 {
                second += 1;
                out.push_str(&format!(
                    "10:{:02}:{:02}.000123\n\n",
                    second / 60,
                    second % 60
                ));
                out.push_str(&text);
                out.push('\n');
            }
        }
    }
    out
}

fn mapped(text: &str, name: &str) -> Mapped {
    let path = std::env::temp_dir().join(format!("virtlens-{name}-{}", std::process::id()));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let map = Mapped::new(&file).unwrap_or_else(|| panic!("{}: not mapped", path.display()));
    let _ = std::fs::remove_file(&path);
    map
}

#[test]
fn parts_read_as_one_reader_reads() {
    let text = session();
    let map = mapped(&text, "parts");
    let one = json(&read_lines(text.as_bytes(), "s", Reader::new("s")));
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&i| i > 0 && i < text.len())
        .collect();
    let stamps: Vec<usize> = starts
        .iter()
        .copied()
        .filter(|&i| {
            text[i..]
                .split('\n')
                .next()
                .is_some_and(|l| l.ends_with(".000123"))
        })
        .collect();
    assert!(stamps.len() >= 40, "only {} intervals", stamps.len());
    let all = json(&read_parts(&map, text.as_bytes(), &stamps, "s"));
    assert!(same(&one, &all), "cut at every interval:\n{one}\n{all}");
    let cuts = starts
        .iter()
        .enumerate()
        .filter(|(k, c)| k % 10 == 0 || stamps.contains(c));
    for (k, &cut) in cuts {
        let parts = json(&read_parts(&map, text.as_bytes(), &[cut], "s"));
        assert!(same(&one, &parts), "cut at line {}: differs", k + 2);
    }
}

#[test]
fn a_cut_mid_session_sums_the_intervals_on_both_sides() {
    let interval = "\nAnalyze events for all VMs, all VCPUs:\n\n             VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n\n                 HLT        10    50.00%    50.00%      1.00us      3.00us      2.00us ( +-   5.00% )\n           MSR_WRITE        10    50.00%    50.00%      1.00us      3.00us      2.00us ( +-   5.00% )\n\nTotal Samples:20, Total events handled time:40.00us.\n";
    let text: String = (0..10)
        .map(|s| format!("10:00:{s:02}.000000\n{interval}"))
        .collect();
    let map = mapped(&text, "mid");
    let cut = text.find("10:00:05").unwrap_or(0);
    let parts = read_parts(&map, text.as_bytes(), &[cut], "s");
    let Ok(p) = parts else {
        panic!("{parts:?}");
    };
    assert_eq!(p.tables.len(), 1);
    assert_eq!(p.tables[0].count(), 200);
    let w = p.tables[0]
        .window
        .as_ref()
        .map(|w| (w.intervals, w.duration_ns));
    // Ten displays a second apart cover ten seconds.
    assert_eq!(w, Some((10, Some(10_000_000_000))));
}

/// `text` read in two parts cut at `cut`: the profile, once it is checked to be one reader's.
fn cut_once_as_one(text: &str, cut: usize) -> Profile {
    let one = read_lines(text.as_bytes(), "s", Reader::new("s"));
    let map = mapped(text, "cut");
    let parts = read_parts(&map, text.as_bytes(), &[cut], "s");
    assert!(same(&json(&one), &json(&parts)), "cut at byte {cut}");
    match parts {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// The lines of the notes that say `what`.
fn noted(p: &Profile, what: &str) -> Vec<Option<usize>> {
    p.warnings
        .iter()
        .filter(|w| w.message.contains(what))
        .map(|w| w.line)
        .collect()
}

/// A `Lost events` line after the first table of a part: where that table has a printed
/// total (perf prints `Total Samples:` every interval) the part is still read on its own
/// core and joined; where it has none but the table one reader sums it into has one, the
/// loss looks back across the cut and the reader before reads the part itself. Both give
/// what one reader gives.
#[test]
fn lost_events_after_a_parts_first_table() {
    let rows = "\nAnalyze events for all VMs, all VCPUs:\n\n             VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n\n                 HLT        10    50.00%    50.00%      1.00us      3.00us      2.00us ( +-   5.00% )\n           MSR_WRITE        10    50.00%    50.00%      1.00us      3.00us      2.00us ( +-   5.00% )\n\n";
    let total = "Total Samples:20, Total events handled time:40.00us.\n";
    // Every interval with its total and a loss after it; or totals only before the cut
    // and one loss, read once the part's first table has ended.
    for every_total in [true, false] {
        let text: String = (0..10)
            .map(|s| match every_total {
                true => format!("10:00:{s:02}.000000\n{rows}{total}Lost events: 5\n"),
                false if s < 5 => format!("10:00:{s:02}.000000\n{rows}{total}"),
                false if s == 7 => format!("10:00:{s:02}.000000\nLost events: 5\n{rows}"),
                false => format!("10:00:{s:02}.000000\n{rows}"),
            })
            .collect();
        let cut = text.find("10:00:05").unwrap_or(0);
        let mut reader = Reader::new("s");
        let mut driver = crate::sources::line_reader::Driver::default();
        for (i, line) in text[cut..].lines().enumerate() {
            driver.line(&mut reader, i + 1, line);
        }
        assert_eq!(
            reader.fresh_start(),
            every_total,
            "every total: {every_total}"
        );
        let p = cut_once_as_one(&text, cut);
        let lost = p.tables[0]
            .printed_total
            .as_ref()
            .and_then(|t| t.lost_events);
        assert_eq!(lost, Some(if every_total { 50 } else { 5 }));
        // One note for all the `Lost events` lines, at the first.
        let said = noted(&p, "perf lost");
        let first = text
            .lines()
            .position(|l| l.starts_with("Lost"))
            .map(|i| i + 1);
        assert_eq!(said, vec![first]);
    }
}

/// `perf kvm stat live --vcpu` prints `Min Time 0.00us` in every interval: one note for
/// the input, at the first such table, whether it is read in parts or by one reader.
#[test]
fn zero_filled_min_times_are_noted_once() {
    let rows = "\nAnalyze events for all VMs, VCPU 0:\n\n             VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n\n                 HLT        10    50.00%    50.00%      0.00us      3.00us      2.00us ( +-   5.00% )\n           MSR_WRITE        10    50.00%    50.00%      0.00us      3.00us      2.00us ( +-   5.00% )\n\nTotal Samples:20, Total events handled time:40.00us.\n";
    let text: String = (0..10)
        .map(|s| format!("10:00:{s:02}.000000\n{rows}"))
        .collect();
    let p = cut_once_as_one(&text, text.find("10:00:05").unwrap_or(0));
    assert_eq!(noted(&p, "0.00us"), vec![Some(5)], "{:?}", p.warnings);
    assert_eq!(p.tables.len(), 1);
    assert!(p.tables[0].rows.iter().all(|r| r.time.min_ns.is_none()));
}

/// Lines a live transcript and what gets pasted with it are made of.
const VOCABULARY: [&str; 26] = [
    "10:00:00.000123",
    "10:00:01.000123",
    "",
    "Analyze events for all VMs, all VCPUs:",
    "Analyze events for pid(s) 1347712, VCPU 1:",
    "             VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time",
    "          IO Port Access    Samples  Samples%     Time%    Min Time    Max Time         Avg time",
    "                 HLT        10    50.00%    50.00%      1.00us      3.00us      2.00us ( +-   5.00% )",
    "           MSR_WRITE        7    35.00%    50.00%      1.00us      3.00us      2.00us ( +-   5.00% )",
    "             UNKNOWN        3    15.00%     0.00%      1.00us      3.00us      2.00us ( +-   5.00% )",
    "         0x70:POUT        4    50.00%    50.00%      1.00us      3.00us      2.00us ( +-   5.00% )",
    "           MSR_WRITE        7    35.00%    50.00%      1.00us",
    "      3.00us      2.00us ( +-   5.00% )",
    "unknown kvm exit code:131072 on VMX",
    "Total Samples:20, Total events handled time:40.00us.",
    "Lost events: 5",
    "baseline:",
    "with the patch:",
    "[...]",
    "# perf kvm stat live --event=ioport",
    "                 HLT        1O    50.00%    50.00%      1.00us      3.00us      2.00us",
    "-------------------------------------------",
    "                 HLT        10    50.00%    50.00%      0.00us      3.00us      2.00us ( +-   5.00% )",
    // SVM's names, and a name of neither ISA: the ISA guessed changes from one interval to
    // the next, and with it the key a name's row is summed under.
    "                 hlt        10    50.00%    50.00%      1.00us      3.00us      2.00us ( +-   5.00% )",
    "                 npf         4    20.00%    10.00%      1.00us      3.00us      2.00us ( +-   5.00% )",
    "           MYSTERY_EXIT      2    10.00%    10.00%      1.00us      3.00us      2.00us ( +-   5.00% )",
];

/// Reads `picks` of the vocabulary both ways, cut at every timestamp line after the first.
fn random_both_ways(picks: &[usize]) -> (Value, Value, String) {
    let text: String = picks
        .iter()
        .map(|&i| format!("{}\n", VOCABULARY[i]))
        .collect();
    let map = mapped(&text, "random");
    let one = json(&read_lines(text.as_bytes(), "s", Reader::new("s")));
    let mut stamps = Vec::new();
    let mut at = 0;
    for &i in picks {
        if at > 0 && VOCABULARY[i].starts_with("10:") {
            stamps.push(at);
        }
        at += VOCABULARY[i].len() + 1;
    }
    let parts = json(&read_parts(&map, text.as_bytes(), &stamps, "s"));
    (one, parts, text)
}

#[test]
fn cases_the_proptest_found() {
    // The middle part pushed no table, and the join took its (unset) window start.
    // A table of unknown ISA (`UNKNOWN` alone) is summed into one of a known ISA by one
    // reader; the join must not push it as a table of its own.
    // A `Lost events` line after the part's first table ended: one reader charged it to the
    // table it had summed that first table into, which has a printed total.
    // Two rows of one key in an interval: one reader summed the next interval's rows by
    // place, the join by key (both now sum every row of a key into the first row of it).
    for picks in [
        &[0, 7, 14, 0, 7, 0][..],
        &[0, 7, 14, 0, 9, 3, 0],
        &[0, 7, 14, 0, 7, 3, 15, 0],
        &[0, 7, 22, 0, 7, 22, 16],
    ] {
        let (one, parts, text) = random_both_ways(picks);
        assert!(same(&one, &parts), "{text}\n{one}\n{parts}");
    }
}

/// A live table guessed VMX sums `hlt` under VMX (into `HLT`'s first row, from the second
/// interval on). An interval whose names tie between VMX and SVM (`HLT`, `hlt`) is summed
/// into it under no ISA, where `hlt` is SVM's own exit: a row of its own, not the one `hlt`
/// was summed into before (one reader finds rows by name, the parts by key).
#[test]
fn an_interval_of_no_isa_keeps_its_own_rows() {
    let (one, parts, text) = random_both_ways(&[0, 5, 7, 8, 23, 1, 5, 7, 8, 23, 1, 5, 7, 23]);
    assert!(same(&one, &parts), "{text}\n{one}\n{parts}");
    let keys: Vec<(&str, u64)> = one["tables"][0]["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["key"].as_str().unwrap_or("?"),
                r["count"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [("HLT", 40), ("MSR_WRITE", 14), ("HLT", 10), ("hlt", 10)],
        "{text}\n{one}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random transcripts of those lines, cut at every timestamp line, read as one reader
    /// reads them.
    #[test]
    fn random_transcripts_read_in_parts_as_one(picks in proptest::collection::vec(0..VOCABULARY.len(), 1..160)) {
        let (one, parts, text) = random_both_ways(&picks);
        proptest::prop_assert!(same(&one, &parts), "{text}\n{one}\n{parts}");
    }
}
