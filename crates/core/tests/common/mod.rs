//! Shared by the fuzz tests: how many cases a property runs, and the edits that mutate real
//! samples into near-misses (flipped and inserted bytes, format tokens in the wrong place,
//! duplicated lines, truncation), the check that an error names the input and a real line, and
//! the sample files by their number.

use std::path::PathBuf;

use proptest::prelude::*;
use virtlens_core::Error;
use virtlens_testkit::testdata;

/// `PROPTEST_CASES` when set (a longer campaign), else `default` (what CI runs every time).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One edit to a byte string.
#[derive(Debug, Clone)]
pub enum Edit {
    Flip(usize, u8),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    DuplicateLine(usize),
    Truncate(usize),
}

/// Random edits, with `tokens` (pieces of the format under test) as likely insertions.
pub fn edit(tokens: Vec<Vec<u8>>) -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<usize>(), 0usize..40).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 0..24))
            .prop_map(|(i, v)| Edit::Insert(i, v)),
        (any::<usize>(), prop::sample::select(tokens)).prop_map(|(i, v)| Edit::Insert(i, v)),
        any::<usize>().prop_map(Edit::DuplicateLine),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

/// `bytes` with every edit applied in turn (positions wrap around the current length).
pub fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = bytes.len().max(1);
        match e {
            Edit::Flip(i, b) => {
                if let Some(x) = bytes.get_mut(i % len) {
                    *x ^= b | 1;
                }
            }
            Edit::Delete(i, n) => {
                let start = (i % len).min(bytes.len());
                let end = (start + n).min(bytes.len());
                bytes.drain(start..end);
            }
            Edit::Insert(i, v) => {
                let at = (i % len).min(bytes.len());
                bytes.splice(at..at, v.iter().copied());
            }
            Edit::DuplicateLine(i) => {
                let text = bytes.clone();
                let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
                if !lines.is_empty() {
                    let line = lines[i % lines.len()];
                    let at: usize = lines[..i % lines.len()].iter().map(|l| l.len()).sum();
                    bytes.splice(at..at, line.iter().copied());
                }
            }
            Edit::Truncate(i) => bytes.truncate(i % len),
        }
    }
    bytes
}

/// An error from reading `bytes` as `path` must name the input and, when a line is at fault, a
/// line the input has, with what was expected there.
pub fn check_error(e: Error, path: &str, bytes: &[u8]) -> Result<(), TestCaseError> {
    let lines = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
    match e {
        Error::Parse {
            path: p,
            line,
            message,
        } => {
            prop_assert_eq!(p, path);
            prop_assert!(
                line >= 1 && line <= lines,
                "line {line} of {lines}: {message}"
            );
            prop_assert!(message.contains("expected"), "{message}");
        }
        e => prop_assert!(e.to_string().starts_with(&format!("{path}: ")), "{e}"),
    }
    Ok(())
}

/// `text` with one line damaged: `cut` bytes from `at` (a position in line `line`, 0-based)
/// replaced by `bytes`; every line ends with a newline.
pub fn damage_line(
    text: &str,
    line: usize,
    at: prop::sample::Index,
    cut: usize,
    bytes: &[u8],
) -> Vec<u8> {
    let len = text.lines().nth(line).map_or(0, str::len);
    splice_line(text, line, at.index(len.max(1)), cut, bytes)
}

/// `text` with `cut` bytes of line `line` (0-based) from byte `start` replaced by `bytes`,
/// every line ending in `\n`.
pub fn splice_line(text: &str, line: usize, start: usize, cut: usize, bytes: &[u8]) -> Vec<u8> {
    let mut input = Vec::with_capacity(text.len() + bytes.len() + 1);
    for (i, l) in text.lines().enumerate() {
        let l = l.as_bytes();
        if i == line {
            let start = start.min(l.len());
            let end = (start + cut).min(l.len());
            input.extend_from_slice(&l[..start]);
            input.extend_from_slice(bytes);
            input.extend_from_slice(&l[end..]);
        } else {
            input.extend_from_slice(l);
        }
        input.push(b'\n');
    }
    input
}

/// The first file in `dir` whose name starts with `prefix`.
pub fn sample(dir: &str, prefix: &str) -> PathBuf {
    let d = testdata(dir);
    let mut names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    d.join(
        names
            .first()
            .unwrap_or_else(|| panic!("no {dir}/{prefix}*")),
    )
}

/// Every count of the profile's tables, summed, saturating (rates left out).
pub fn total(p: &virtlens_core::profile::Profile) -> u64 {
    p.tables
        .iter()
        .filter(|t| !t.per_second)
        .fold(0u64, |a, t| a.saturating_add(t.count()))
}

/// The rows of the profile's tables.
pub fn rows(p: &virtlens_core::profile::Profile) -> usize {
    p.tables.iter().map(|t| t.rows.len()).sum()
}

/// Every row count of the profile, sorted.
pub fn sorted_counts(p: &virtlens_core::profile::Profile) -> Vec<u64> {
    let mut c: Vec<u64> = p
        .tables
        .iter()
        .flat_map(|t| t.rows.iter().map(|r| r.count))
        .collect();
    c.sort_unstable();
    c
}

/// What any reading of fuzzed `bytes` must do: a profile with tables or counters (each table of a format in
/// `ours` with rows and the line it starts at) that serialises and comes back with as many
/// tables, or an error that names the input and says what was expected.
pub fn check_tables_read(
    bytes: &[u8],
    format: Option<virtlens_core::sources::Format>,
    ours: &[virtlens_core::sources::Format],
) -> Result<(), TestCaseError> {
    use virtlens_core::profile::Profile;
    match virtlens_core::sources::read_bytes(bytes, "fuzz.txt", format) {
        Ok(p) => {
            // A counter table (perfmon, esxtop) reads into counters, the rest into tables.
            prop_assert!(
                !p.tables.is_empty() || p.counters.as_ref().is_some_and(|c| !c.series.is_empty()),
                "{} read nothing from {:?}",
                p.origin.format,
                String::from_utf8_lossy(bytes)
            );
            let own = ours.iter().any(|f| f.name() == p.origin.format);
            for t in p.tables.iter().filter(|_| own) {
                prop_assert!(!t.rows.is_empty());
                prop_assert!(t.line.is_some_and(|l| l >= 1), "{}", p.origin.format);
            }
            // Whatever was read must serialise and come back equal.
            let json = serde_json::to_string(&p).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back: Profile =
                serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back.tables.len(), p.tables.len());
        }
        Err(e) => check_error(e, "fuzz.txt", bytes)?,
    }
    Ok(())
}

/// One row of `sample` (0-based `line`, whose count is `count`) damaged into `input`, read
/// as `format`: the other rows keep their counts (the total falls by `count` at most), and the
/// damaged row is read (no row lost, or a changed total), read the format's own way
/// (`read_otherwise`, given the profile and the damaged line), or noted at its line.
pub fn check_one_bad_row(
    sample: &str,
    line: usize,
    count: u64,
    input: &[u8],
    format: virtlens_core::sources::Format,
    read_otherwise: impl Fn(&virtlens_core::profile::Profile, &[u8]) -> bool,
) -> Result<(), TestCaseError> {
    let read_as = |bytes: &[u8], name: &str| {
        virtlens_core::sources::read_bytes(bytes, name, Some(format))
            .map_err(|e| TestCaseError::fail(e.to_string()))
    };
    let full = read_as(sample.as_bytes(), "full.txt")?;
    let p = read_as(input, "one-bad-row.txt")?;
    let (before, after) = (total(&full), total(&p));
    prop_assert!(
        after.saturating_add(count) >= before,
        "{} of {}: {:?}",
        after,
        before,
        p.warnings
    );
    let damaged = input.split(|&b| b == b'\n').nth(line).unwrap_or_default();
    let read = rows(&p) >= rows(&full)
        || after.saturating_add(count) != before
        || read_otherwise(&p, damaged);
    let noted = p.warnings.iter().any(|w| w.line == Some(line + 1));
    prop_assert!(
        read || noted,
        "line {} `{}` neither read nor noted: {:?}",
        line + 1,
        String::from_utf8_lossy(damaged),
        p.warnings
    );
    Ok(())
}

/// `p`, an input of several polls of what `once` holds one poll of, read as one table of the
/// change between them: its label says over how many polls, a note starts with `note`, and
/// the values that are no counts are counted in one poll, as in `once`.
pub fn assert_read_as_polls(
    p: &virtlens_core::profile::Profile,
    once: &virtlens_core::profile::Profile,
    polls: usize,
    note: &str,
) {
    let label = p.tables.first().and_then(|t| t.label.as_deref());
    assert!(
        label.is_some_and(|l| l.contains(&format!("change over {polls} polls"))),
        "{label:?}"
    );
    let notes: Vec<&str> = p.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(notes.iter().any(|m| m.starts_with(note)), "{notes:?}");
    assert!(
        !notes.iter().any(|m| m.contains("since the VM started")),
        "{notes:?}"
    );
    let left_out = |p: &virtlens_core::profile::Profile| {
        p.warnings
            .iter()
            .find(|w| w.message.contains("not counts of events"))
            .map(|w| w.message.clone())
    };
    assert_eq!(left_out(p), left_out(once), "counted in one poll");
}
