//! Lines of a `perf kvm stat` table damaged on their way into a mail or a file, recognised for
//! what they were: a column header cut short (`Event name` and nothing after it), a header
//! whose newline was lost so that the rule or the first row under it follows on the same line,
//! a scope line cut short, and the rest of a wrapped row standing alone. The reader notes each
//! (the repairs through the line driver's book), so none of them ends a table or takes the
//! rows after it.

use std::sync::OnceLock;

use memchr::memmem;

use super::layout::{self, Header};
use super::pasted::unbox;
use super::row::{self, Parsed};
use crate::profile::TableKind;
use crate::sources::line_repairs::{damaged_rule, rule_joined};

/// Words a column header is made of (a kind, `Event name`, the column names of every layout).
fn header_word(w: &str) -> bool {
    matches!(
        w,
        "VM-EXIT"
            | "MMIO"
            | "IO"
            | "Port"
            | "MSR"
            | "Access"
            | "Event"
            | "name"
            | "Samples"
            | "Samples%"
            | "Sample%"
            | "Time%"
            | "Time"
            | "time"
            | "Min"
            | "Max"
            | "Avg"
            | "Mean"
            | "(ns)"
            | "Time(ns)"
            | "|"
    )
}

/// Where line `text` holds two lines of a table whose newline was lost: the byte offset at
/// which the second starts, and what the two were (for the note). The first split point when
/// there are several (the driver offers the rest again).
pub(super) fn joined(text: &str) -> Option<(usize, &'static str)> {
    if text.len() > MAX_JOINED {
        return None;
    }
    let mid = mid_line_structure(text);
    let header = joined_header(text);
    let rule =
        rule_joined(text).map(|at| (at, "a rule and another line on one line (a newline lost)"));
    [mid, header, rule]
        .into_iter()
        .flatten()
        .min_by_key(|(at, _)| *at)
}

/// A line that perf prints at the start of a line (a column header, the scope line, the totals
/// line) found after other text on it: where it starts. Each start is tried where it first
/// occurs only (a later one is inside text already judged).
fn mid_line_structure(text: &str) -> Option<(usize, &'static str)> {
    let bytes = text.as_bytes();
    let mut seen = [false; STARTS.len()];
    // One pass over the line, a start tried only at its first byte: seven searches of every
    // line that is not a plain row cost a twentieth of reading a live transcript.
    for j in crate::sources::blanks::skip(bytes, 0)..bytes.len() {
        if !STARTS_FIRST[usize::from(bytes[j])] {
            continue;
        }
        for (k, start) in STARTS.iter().enumerate() {
            if seen[k]
                || start.as_bytes().first() != Some(&bytes[j])
                || !bytes[j..].starts_with(start.as_bytes())
            {
                continue;
            }
            seen[k] = true;
            // `j` is at an ASCII byte, so a char boundary.
            let (before, rest) = text.split_at(j);
            if !before.trim_ascii().is_empty()
                && !before.contains('|')
                && (layout::header(rest).is_some()
                    || layout::scope(rest).is_some()
                    || layout::total(rest).is_some())
            {
                return Some((
                    j,
                    "another line and the line under it on one line (a newline lost)",
                ));
            }
        }
    }
    None
}

/// The starts of the lines perf prints at the start of a line (their first bytes are those
/// [`mid_line_structure`] tries).
const STARTS: [&str; 7] = [
    "VM-EXIT",
    "IO Port Access",
    "MMIO Access",
    "MSR Access",
    "Event name",
    "Analyze events for",
    "Total Samples:",
];

/// Whether a byte is the first byte of one of [`STARTS`] (made from them when compiled).
const STARTS_FIRST: [bool; 256] = {
    let mut first = [false; 256];
    let mut i = 0;
    while i < STARTS.len() {
        first[STARTS[i].as_bytes()[0] as usize] = true;
        i += 1;
    }
    first
};

/// The searcher for `Samples`, the word every header has.
fn samples() -> &'static memmem::Finder<'static> {
    static FINDER: OnceLock<memmem::Finder<'static>> = OnceLock::new();
    FINDER.get_or_init(|| memmem::Finder::new("Samples"))
}

/// A word a header can end with: the last word of a column name.
fn column_end(w: &str) -> bool {
    matches!(
        w,
        "Samples" | "Samples%" | "Sample%" | "Time%" | "Time" | "time" | "(ns)" | "Time(ns)" | "|"
    )
}

/// Longer lines are never searched for a joined header (the search is quadratic in the length).
const MAX_JOINED: usize = 512;

/// Where a header line is followed, on the same line, by the rule or the row that was under
/// it (their newline lost): the byte offset at which that second line starts, and what it is.
pub(super) fn joined_header(text: &str) -> Option<(usize, &'static str)> {
    if text.len() > MAX_JOINED || samples().find(text.as_bytes()).is_none() {
        return None;
    }
    if unbox(text).split_ascii_whitespace().all(header_word) {
        return None; // a whole header
    }
    if !text.contains('|') && text.split_ascii_whitespace().next() == Some("Total") {
        // The totals line of every interval: no head of it is a header (a header's first
        // word is a kind, `Event` or a column name), so none is searched for.
        return None;
    }
    // The longest head that is a header ending in a whole column word, followed by a rule or a
    // row of that header's layout.
    let start = text.find("Samples")?;
    (start + "Samples".len()..text.len())
        .rev()
        .filter(|&i| text.is_char_boundary(i))
        .find_map(|i| {
            let (head, rest) = text.split_at(i);
            // The last byte of a column word, checked first: this runs at every byte of a
            // `Total Samples:` line of every interval of a live transcript.
            let end = head.trim_ascii_end().bytes().next_back()?;
            if !matches!(end, b's' | b'%' | b'e' | b')' | b'|') {
                return None;
            }
            let last = head.split_ascii_whitespace().next_back()?;
            if !column_end(last) || rest.trim_ascii().is_empty() {
                return None;
            }
            let header = layout::header(unbox(head).trim_ascii())?;
            second_line(&header, rest).map(|what| (i, what))
        })
}

/// What `rest` is, under `header`: a rule or a row.
fn second_line(header: &Header, rest: &str) -> Option<&'static str> {
    let t = rest.trim_ascii();
    if layout::decoration(t) || damaged_rule(t).is_some() {
        return Some("the column header and the rule under it on one line (a newline lost)");
    }
    let unboxed = unbox(t);
    match row::parse(unboxed.trim_ascii(), &header.layout, 0) {
        Parsed::Row(_) => {
            Some("the column header and the first row under it on one line (a newline lost)")
        }
        _ => None,
    }
}

/// A column header cut short: its first cell (a kind, `Event name`, `Event`) and at most the
/// start of its column names, with too few of them left to read (`Event name`,
/// `VM-EXIT    Samples  Sam`). The kind it names, if any.
pub(super) fn header_stub(t: &str) -> Option<Option<TableKind>> {
    let t = unbox(t);
    let words: Vec<&str> = t.split_ascii_whitespace().collect();
    let (kind, rest) = match words.as_slice() {
        ["Event", "name", rest @ ..] | ["Event", rest @ ..] => (None, rest),
        ["VM-EXIT", rest @ ..] => (Some(TableKind::Vmexit), rest),
        ["MMIO", "Access", rest @ ..] => (Some(TableKind::Mmio), rest),
        ["IO", "Port", "Access", rest @ ..] => (Some(TableKind::Ioport), rest),
        ["MSR", "Access", rest @ ..] => (Some(TableKind::Msr), rest),
        // The first cell itself cut (`VM-EX`, `Eve`).
        [first] if first.len() >= 2 && "VM-EXIT".starts_with(first) => {
            (Some(TableKind::Vmexit), &[][..])
        }
        [first] if first.len() >= 3 && "Event".starts_with(first) => (None, &[][..]),
        _ => return None,
    };
    let prefix_of_a_column = |w: &str| {
        [
            "Samples", "Samples%", "Sample%", "Time%", "Time(ns)", "(ns)", "Min", "Max", "Avg",
            "Mean",
        ]
        .iter()
        .any(|c| c.starts_with(w))
    };
    let (last, whole) = match rest.split_last() {
        Some((last, whole)) => (Some(*last), whole),
        None => (None, rest),
    };
    (whole.iter().all(|w| header_word(w))
        && last.is_none_or(|w| header_word(w) || prefix_of_a_column(w)))
    .then_some(kind)
}

/// The scope line cut short: `Analyze events f`, `Analyze ev`.
pub(super) fn scope_stub(t: &str) -> bool {
    const SCOPE: &str = "Analyze events for ";
    let t = t.trim_ascii();
    t.len() >= "Analyze".len() && (SCOPE.starts_with(t) || t.starts_with("Analyze events"))
}

/// The rest of a wrapped row standing alone (`19.09us ( +-   9.11% )`, `96.25us`): values and
/// a spread only, the first a number, or the first damaged and a spread after it (never an
/// elision: it has a digit).
pub(super) fn fragment(t: &str) -> bool {
    let mut cells = t.split_ascii_whitespace();
    let Some(first) = cells.next() else {
        return false;
    };
    let value = |c: &str| continues(c) || matches!(c, "(" | ")" | "+-" | "(+-");
    t.bytes().any(|b| b.is_ascii_digit())
        && (continues(first) || t.contains("+-") && !row::name_like(first))
        && cells.all(value)
}

/// Whether line `t` may continue a wrapped row: it starts with a value, or with the spread,
/// never with a name (a name starts a row of its own).
pub(super) fn continues(t: &str) -> bool {
    t.trim_ascii_start()
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'.' | b'(' | b'+' | b'-' | b'%'))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The one pass finds what a search for each start's first occurrence found.
        #[test]
        fn mid_line_structure_as_a_search_per_start(picks in proptest::collection::vec(0usize..12, 0..10)) {
            let pieces = [
                "x", " ", "|", "A", "VM-", "MSR Access", "Total Samples:",
                "Total Samples:5, Total events handled time:1.00us.",
                "VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time",
                "Analyze events for all VMs, all VCPUs:", "HLT 5 50.00% ", "Event name  Samples",
            ];
            let text: String = picks.iter().map(|&i| pieces[i]).collect();
            let searched = STARTS
                .iter()
                .filter_map(|s| text.find(s))
                .filter(|&j| j > 0 && !text[..j].trim_ascii().is_empty() && !text[..j].contains('|'))
                .filter(|&j| {
                    let rest = &text[j..];
                    layout::header(rest).is_some()
                        || layout::scope(rest).is_some()
                        || layout::total(rest).is_some()
                })
                .min();
            proptest::prop_assert_eq!(mid_line_structure(&text).map(|(j, _)| j), searched, "{:?}", text);
        }
    }

    #[test]
    fn joined_headers_are_split_where_the_second_line_starts() {
        let header = "Event name                    Samples  Sample%       Time(ns)";
        let rule = "---------------------------  --------  --------  ------------";
        let row = "STORE_GUEST_PAGE_FAULT        1496461   53.00%    889612544";
        assert_eq!(
            joined_header(&format!("{header}{rule}")).map(|(at, _)| at),
            Some(header.len())
        );
        assert_eq!(
            joined_header(&format!("{header}{row}")).map(|(at, _)| at),
            Some(header.len())
        );
        let stdio =
            "VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time";
        let row =
            "HLT      15885    19.92%    99.89%      0.63us  17539.26us   8224.34us ( +-   0.61% )";
        assert_eq!(
            joined_header(&format!("{stdio}{row}")).map(|(at, _)| at),
            Some(stdio.len())
        );
        assert_eq!(joined_header(header), None);
        let io = "IO_INSTRUCTION     1459    98.98%   99.97%   10.02us  6265.74us   258.98us ( +- 11.94% )";
        assert_eq!(
            joined_header(&format!("{stdio}         {io}")).map(|(at, _)| at),
            Some(stdio.len() + 9)
        );
        assert_eq!(
            joined(&format!("with my patch{stdio}")).map(|(at, _)| at),
            Some("with my patch".len())
        );
        let scope = "Analyze events for all VMs, all VCPUs:";
        assert_eq!(
            joined(&format!("{scope}{stdio}")).map(|(at, _)| at),
            Some(scope.len())
        );
        assert_eq!(
            joined(&format!("$ perf kvm stat live{scope}")).map(|(at, _)| at),
            Some("$ perf kvm stat live".len())
        );
        assert_eq!(joined_header(stdio), None);
    }

    #[test]
    fn stubs_and_fragments() {
        assert_eq!(header_stub("Event name   "), Some(None));
        assert_eq!(
            header_stub("VM-EXIT    Samples  Sam"),
            Some(Some(TableKind::Vmexit))
        );
        assert_eq!(header_stub("Event name was lost"), None);
        assert_eq!(header_stub("   VM"), Some(Some(TableKind::Vmexit)));
        assert_eq!(
            header_stub("|  Event name  |  Samples  |  Sample%  |  Time (n"),
            Some(None)
        );
        assert_eq!(header_stub("VM migration:"), None);
        assert!(scope_stub("Analyze events f"));
        assert!(!scope_stub("Analyze this"));
        assert!(fragment(" 19.09us ( +-   9.11% )"));
        assert!(!fragment("HLT 12"));
        assert!(fragment("x#!.77us ( +-   3.19% )"));
        assert!(!fragment("run 2"));
        assert!(!fragment("  .........."), "an elision");
        assert!(!fragment(
            "IO_INSTRUCTION 804 0.25% 0.88% 3.30us 59.74us 1.1us (+- 0.3%)"
        ));
        assert!(!continues("HLT 12"));
    }
}
