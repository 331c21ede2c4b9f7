//! The rows of a `perf kvm stat` table: splitting off perf's `( +-x% )` spread, telling the
//! columns apart by their units and placing them by the header's order, knowing when a row is
//! incomplete because a mailer wrapped it onto the next line, and saying what is wrong with a
//! line that has a row's shape but cannot be read (so it is noted, never silently dropped).

use super::layout::{HistsColumn, Layout, StdioColumn, StdioColumns};
use crate::profile::TimeStats;
use crate::sources::numbers;

/// A row as printed, before its key is decoded.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RawRow {
    pub key: String,
    pub count: u64,
    pub time: TimeStats,
    /// The 1-based line the row starts on.
    pub line: usize,
}

/// What a line is, read as a row of the current table.
#[derive(Debug, PartialEq)]
pub(super) enum Parsed {
    Row(RawRow),
    /// The start of a row whose remaining columns are on the next line.
    Incomplete,
    /// A row that cannot be read, and why.
    Bad(String),
    /// Not a row at all.
    NotARow,
}

/// Up to this many whitespace-separated cells are looked at in a row.
pub(super) const MAX_CELLS: usize = 16;

/// Reads `text` as a row of a table with `layout`.
pub(super) fn parse(text: &str, layout: &Layout, line: usize) -> Parsed {
    let (body, spread, open) = split_spread(text);
    let mut cells = [""; MAX_CELLS];
    let mut n = 0;
    for cell in body.split_ascii_whitespace() {
        if n == MAX_CELLS {
            return damaged(text, layout);
        }
        cells[n] = cell;
        n += 1;
    }
    let cells = &cells[..n];
    let Some((&key, values)) = cells.split_first() else {
        return Parsed::NotARow;
    };
    if numbers::count(key).is_some()
        || key.ends_with('%')
        || key.ends_with("us") && looks_numeric(key)
        || !key_shaped(key)
    {
        return damaged(text, layout);
    }
    let parsed = match layout {
        Layout::Stdio { columns } => stdio(values, columns, spread),
        Layout::Hists { columns } => hists(values, columns),
    };
    match parsed {
        Some((count, time)) if !open => Parsed::Row(RawRow {
            key: key.to_string(),
            count,
            time,
            line,
        }),
        _ if values.is_empty() || open || values.iter().all(|v| value_shaped(v)) => {
            Parsed::Incomplete
        }
        _ => damaged(text, layout),
    }
}

/// A line that failed to read as a row: a bad row (with the reason) when it has a row's
/// shape, a name or address followed by values, at most one of them a stray word; prose
/// otherwise (`testing with patch:`, `after 10 minutes`).
fn damaged(text: &str, layout: &Layout) -> Parsed {
    // The whole line, spread included: a stray `+-` must not hide the cells after it.
    let cells = || {
        text.split_ascii_whitespace()
            .filter(|c| !matches!(*c, "(" | ")" | "+-" | "(+-"))
    };
    let Some(key) = cells().next() else {
        return Parsed::NotARow;
    };
    // Counted in one pass; the values are gathered only for a bad row's reason.
    let (mut count, mut numeric, mut shaped) = (0, 0, 0);
    for v in cells().skip(1) {
        count += 1;
        numeric += usize::from(starts_numeric(v));
        shaped += usize::from(value_shaped(v));
    }
    let words = count - numeric;
    let fits = count.abs_diff(layout.columns()) <= 1;
    let row_like = shaped >= 3
        || shaped >= 2 && fits && words <= 2
        || numeric >= 2 && words <= 1 && shaped >= 1
        || shaped >= 1 && crate::sources::unread::damage(text).is_some()
        || shaped >= 1 && name_like(key);
    if text.trim_ascii_end().ends_with(':') || !(row_like || starts_numeric(key) && shaped >= 1) {
        return Parsed::NotARow;
    }
    let values: Vec<&str> = cells().skip(1).collect();
    Parsed::Bad(why(text, key, &values, layout))
}

/// What is wrong with a row-shaped line.
fn why(text: &str, key: &str, values: &[&str], layout: &Layout) -> String {
    if let Some(why) = crate::sources::unread::damage(text) {
        return why.into();
    }
    if !key_shaped(key) {
        return format!("`{key}` is not an exit reason, port, address or MSR");
    }
    for v in values {
        if v.bytes().all(|b| b.is_ascii_digit()) && numbers::count(v).is_none() {
            return format!("the count `{v}` is larger than 2^64−1");
        }
        if !value_shaped(v) {
            return format!("`{v}` is not a count, a percentage or a time in µs");
        }
    }
    format!(
        "{} values where the header names {} columns",
        values.len(),
        layout.columns()
    )
}

/// Longer lines are not searched for two rows.
const MAX_TWO_ROWS: usize = 512;

/// Two whole rows of `layout` on one line whose newline was lost (`… ( +- 0.61% )IO_INSTRUCTION
/// 10892 …`): both, when the line splits into two parts that each read as a row, the second
/// starting with a name. Never a guess: each part reads in full, or there are not two rows.
pub(super) fn two_rows(text: &str, layout: &Layout, line: usize) -> Option<(RawRow, RawRow)> {
    if text.len() > MAX_TWO_ROWS {
        return None;
    }
    let starts = text.char_indices().filter(|&(i, c)| {
        i > 0 && (c.is_ascii_alphabetic() || c == '_') && {
            let before = text[..i].chars().next_back();
            before.is_some_and(|b| b.is_ascii_whitespace() || b == ')' || b.is_ascii_digit())
        }
    });
    for (at, _) in starts {
        let (head, rest) = text.split_at(at);
        if let (Parsed::Row(a), Parsed::Row(b)) = (
            parse(head.trim_ascii(), layout, line),
            parse(rest.trim_ascii(), layout, line),
        ) {
            return Some((a, b));
        }
    }
    None
}

/// A line holding only a spread, `( +- 7.34% )`, as a mailer leaves it after wrapping.
pub(super) fn spread_only(text: &str) -> Option<f64> {
    let (body, spread, open) = split_spread(text);
    (body.trim_ascii().is_empty() && !open)
        .then_some(spread)
        .flatten()
}

/// `text` without a spread that the input cut off (`… 2273.31us ( +-   1.8`), for a row cut
/// at the end of the input whose numbers are all there.
pub(super) fn without_cut_spread(text: &str) -> Option<&str> {
    let (_, _, open) = split_spread(text);
    let at = text.rfind('(')?;
    open.then(|| &text[..at])
}

/// Splits `… ( +-  0.10% )` into the part before it, the percentage, and whether the
/// parenthesis is left open (the row continues on the next line).
fn split_spread(text: &str) -> (&str, Option<f64>, bool) {
    // perf prints the spread last: the last `+-` of the line is the one.
    let bytes = text.as_bytes();
    let plus_minus = memchr::memrchr_iter(b'+', bytes).find(|&i| bytes.get(i + 1) == Some(&b'-'));
    let Some(at) = plus_minus else {
        return (text, None, text.trim_ascii_end().ends_with('('));
    };
    let before = text[..at].trim_ascii_end();
    let body = before.strip_suffix('(').unwrap_or(before);
    let after = text[at + 2..].trim_ascii();
    let closed = after.ends_with(')');
    let number = after.trim_end_matches(')').trim_ascii();
    let spread = numbers::percent(number);
    (body, spread, !closed && spread.is_none())
}

/// A stdio row: one count, the percentages and times the header names (placed in its order;
/// a row that kept all of perf's columns under a trimmed header is read as perf prints them).
pub(super) fn stdio(
    values: &[&str],
    columns: &StdioColumns,
    spread: Option<f64>,
) -> Option<(u64, TimeStats)> {
    stdio_cells(values.iter().map(|v| stdio_cell(v)), columns, spread)
}

/// A value of a stdio row, by its unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Cell {
    /// A percentage (checked, not kept: the shares are computed again from the counts).
    Percent,
    /// A time in microseconds, as nanoseconds.
    Micros(u64),
    Count(u64),
}

/// `v` read by its unit first: `%`, `us`, else a count; `None` when it is none of them.
pub(super) fn stdio_cell(v: &str) -> Option<Cell> {
    if v.ends_with('%') {
        numbers::percent(v).map(|_| Cell::Percent)
    } else if v.ends_with("us") {
        numbers::micros_as_ns(v).map(Cell::Micros)
    } else {
        numbers::count(v).map(Cell::Count)
    }
}

/// [`stdio`] of the row's values already read ([`stdio_cell`]); `None` for a value that is
/// none.
pub(super) fn stdio_cells(
    values: impl Iterator<Item = Option<Cell>>,
    columns: &StdioColumns,
    spread: Option<f64>,
) -> Option<(u64, TimeStats)> {
    let mut count = None;
    let mut percents = 0;
    let mut times = [0u64; 3];
    let mut n_times = 0;
    for v in values {
        match v? {
            Cell::Percent => percents += 1,
            Cell::Micros(ns) => {
                *times.get_mut(n_times)? = ns;
                n_times += 1;
            }
            Cell::Count(c) => {
                if count.replace(c).is_some() {
                    return None;
                }
            }
        }
    }
    let want_percents = columns.percents();
    if !(percents == want_percents || want_percents < 2 && percents == 2) {
        return None;
    }
    let named = columns.times();
    let order: &[StdioColumn] = match n_times {
        n if n == named.len() => named,
        3 => &[StdioColumn::Min, StdioColumn::Max, StdioColumn::Avg],
        1 if named.is_empty() => &[StdioColumn::Avg],
        _ => return None,
    };
    let (mut min, mut max, mut avg) = (None, None, None);
    for (column, ns) in order.iter().zip(times) {
        match column {
            StdioColumn::Min => min = Some(ns),
            StdioColumn::Max => max = Some(ns),
            _ => avg = Some(ns),
        }
    }
    let count = count?;
    Some((count, stats(count, min, max, avg, spread)))
}

fn hists(values: &[&str], columns: &[HistsColumn]) -> Option<(u64, TimeStats)> {
    // More cells than columns: two rows on one line, or a row with stray text in it.
    if values.len() != columns.len() || columns.is_empty() {
        return None;
    }
    let (mut count, mut total, mut min, mut max, mut mean) = (None, None, None, None, None);
    for (v, col) in values.iter().zip(columns) {
        match col {
            HistsColumn::Samples => count = Some(numbers::count(v)?),
            HistsColumn::SamplePct | HistsColumn::TimePct => {
                numbers::percent(v)?;
            }
            HistsColumn::TimeNs => total = Some(numbers::nanos(v)?),
            HistsColumn::MaxNs => max = Some(numbers::nanos(v)?),
            HistsColumn::MinNs => min = Some(numbers::nanos(v)?),
            HistsColumn::MeanNs => mean = Some(numbers::nanos(v)?),
            HistsColumn::Unknown => {}
        }
    }
    let count = count?;
    let mut time = stats(count, min, max, mean, None);
    if total.is_some() {
        time.total_ns = total;
    }
    Some((count, time))
}

/// Stats of a printed row: the total is `count × mean` (exact up to the print's rounding).
fn stats(
    count: u64,
    min: Option<u64>,
    max: Option<u64>,
    mean: Option<u64>,
    spread: Option<f64>,
) -> TimeStats {
    TimeStats {
        total_ns: mean.map(|m| m.saturating_mul(count)),
        min_ns: min,
        max_ns: max,
        m2: match (spread, mean) {
            (Some(rel), Some(m)) => TimeStats::m2_from_rel_stderr(rel, m as f64, count),
            _ => None,
        },
        timed: None,
    }
}

fn starts_numeric(cell: &str) -> bool {
    cell.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+'))
}

pub(super) fn looks_numeric(cell: &str) -> bool {
    cell.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || b == b'.')
}

/// A key is a name or an address: no sentence punctuation, starts with a letter, `0x` or `_`.
pub(super) fn key_shaped(key: &str) -> bool {
    key_ends_shaped(key) && key.bytes().all(key_byte)
}

/// A key's ends as perf prints them: it starts with a letter, `_` or `0x`, and does not end
/// with `:` (a label such as `Analyze events for all VMs:`).
pub(super) fn key_ends_shaped(key: &str) -> bool {
    key.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || key.starts_with("0x"))
        && !key.ends_with(':')
}

/// A byte a key may hold: the names, ports (`0x6e0:W`), addresses and MSRs perf prints.
#[inline]
pub(super) const fn key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b':' | b'.' | b'(' | b')')
}

/// A first cell that names an exit reason, port, address or MSR the way perf prints them
/// (`EPT_MISCONFIG`, `0x6e0:W`, `HLT`, `hlt`), and not a word of prose.
pub(super) fn name_like(key: &str) -> bool {
    key.contains('_')
        || key.starts_with("0x")
        || key.len() >= 3
            && key
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        || crate::decode::exit_reason::lookup_name(None, key).is_some()
}

/// A cell that could be one of a row's values (so a short row is a wrapped row, not prose).
fn value_shaped(cell: &str) -> bool {
    numbers::count(cell).is_some()
        || numbers::percent(cell).is_some()
        || numbers::micros_as_ns(cell).is_some()
}

#[cfg(test)]
#[path = "row_tests.rs"]
mod tests;
