//! Rows read in one step: a row of a stdio table that can be nothing but that row is read
//! before the line driver's splits and the reader's repairs look at it (rows are nearly all of
//! a live transcript, and those searches cost more than reading the row). What it reads is
//! exactly what the full path reads from the line (`plain_tests` holds it to that).

use super::Reader;
use super::layout::{self, Layout, StdioColumn};
use super::pasted;
use super::row::{self, Cell, MAX_CELLS, RawRow, looks_numeric, stdio_cells};
use super::table::pending_code;
use crate::sources::{blanks, numbers};

impl Reader {
    /// With no wrapped row or doubtful line waiting: a blank line (of spaces and tabs, which
    /// then does nothing), or a row of a stdio table being read that [`plain_stdio_row`] finds
    /// can be nothing else and that does not name the table's kind or continue its header
    /// ([`LineFormat::line`] would read it as this row). Read here without the repairs: rows
    /// and blanks are nearly all of a live transcript, and the repairs' searches cost more
    /// than reading them.
    pub(super) fn plain_row(&mut self, n: usize, text: &str) -> bool {
        if self.carry.is_some() || self.pending.is_some() {
            return false;
        }
        if blanks::skip(text.as_bytes(), 0) == text.len() {
            return true;
        }
        let Some(b) = &mut self.table else {
            return false;
        };
        let Layout::Stdio { columns } = &b.layout else {
            return false;
        };
        if b.rows.is_empty()
            && (layout::kind_name(text).is_some()
                || pasted::header_continuation(text.trim_ascii()).is_some())
        {
            return false;
        }
        let Some(r) = plain_stdio_row(
            text,
            columns.as_slice(),
            n,
            self.spare.keys.pop().unwrap_or_default(),
        ) else {
            return false;
        };
        let unknown = pending_code(&r, &mut self.unknown);
        b.push(r, unknown);
        true
    }
}

/// `t` (blanks around it or not) read as a row of a stdio table when it is plainly one and can be nothing
/// else: a name or address (no `-`, no `Sa` in it), then values made only of digits, `.`, `,`,
/// `%` and `us`, then perf's spread as perf prints it (`( +- 3.87% )`) or none. Every line the
/// reader's repairs look for needs more than that: a header (`VM-EXIT`, `Samples`, `Event
/// name`), a scope or totals line (`Analyze events for`, `Total Samples:`), a rule (ten
/// dashes), a box (`|`), a damaged character (non-ASCII or NUL), a fence or a label (`:` at its
/// end). The row is exactly what [`parse`] reads from `t`; `None` leaves the line to it. Its
/// key is written into `key_buf` (a key of a table already summed: no allocation per row).
fn plain_stdio_row(
    t: &str,
    columns: &[StdioColumn],
    line: usize,
    key_buf: String,
) -> Option<RawRow> {
    let mut cells = Cells { text: t, at: 0 };
    let key = cells.next()?;
    if !plain_key(key) {
        return None;
    }
    let bytes = t.as_bytes();
    let mut values = [Cell::Percent; MAX_CELLS - 1];
    let mut n = 0;
    let mut spread = None;
    loop {
        let at = blanks::skip(bytes, cells.at);
        if at == bytes.len() {
            break;
        }
        if bytes[at] != b'(' {
            // A value, read as its end is found.
            let (value, end) = value_at(bytes, at)?;
            if n == values.len() {
                return None;
            }
            values[n] = value;
            n += 1;
            cells.at = end;
            continue;
        }
        if cells.next() == Some("(") {
            // The spread, and nothing after it.
            let (Some("+-"), Some(pct), Some(")"), None) =
                (cells.next(), cells.next(), cells.next(), cells.next())
            else {
                return None;
            };
            if !pct
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'.' || b == b'%')
            {
                return None;
            }
            spread = numbers::percent(pct);
            break;
        }
        return None;
    }
    let (count, time) = stdio_cells(values[..n].iter().map(|&v| Some(v)), columns, spread)?;
    let mut key_buf = key_buf;
    key_buf.clear();
    key_buf.push_str(key);
    Some(RawRow {
        key: key_buf,
        count,
        time,
        line,
    })
}

/// Whether `key` is plainly a row's key, in one pass: a name or address as `key_shaped`
/// takes it, without the `-` or `Sa` of headers and rules, and not a time (`us` after a
/// leading digit). (`key_shaped` already refuses a count or a percentage.)
fn plain_key(key: &str) -> bool {
    if !row::key_ends_shaped(key) {
        return false;
    }
    let mut before = 0;
    for c in key.bytes() {
        if !row::key_byte(c) || c == b'-' || (before == b'S' && c == b'a') {
            return false;
        }
        before = c;
    }
    !(key.ends_with("us") && looks_numeric(key))
}

/// The value cell that starts at `at` (not a blank), read in the pass that finds its end:
/// digits with at most one `.`, then `%`, `us` or nothing, then a blank or the end of the
/// line; with where it ends. `Some` only where `row::stdio_cell` reads the cell the same;
/// `None` for any cell it would not read, and for any this pass is unsure of (a number too
/// large for the checks here), which the full path then reads.
#[inline]
fn value_at(b: &[u8], at: usize) -> Option<(Cell, usize)> {
    // Read as microseconds: a percentage or count that fits so fits as what it is.
    let d = numbers::decimal_at(b, at, 3)?;
    if d.digits == 0 {
        return None;
    }
    let ends = |i: usize| b.get(i).is_none_or(|&c| c == b' ' || c == b'\t');
    match b.get(d.end) {
        Some(b'%') if ends(d.end + 1) => Some((Cell::Percent, d.end + 1)),
        Some(b'u') if b.get(d.end + 1) == Some(&b's') && ends(d.end + 2) => {
            Some((Cell::Micros(d.value), d.end + 2))
        }
        _ if !d.point && ends(d.end) => Some((Cell::Count(d.value / 1000), d.end)),
        _ => None,
    }
}

/// The cells of a line split at blanks (` `, tab), found eight bytes at a time: `str::split`
/// with a set of chars decodes every char.
struct Cells<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Cells<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let start = blanks::skip(bytes, self.at);
        let end = blanks::find(bytes, start);
        self.at = end;
        // Blanks are ASCII, so `start` and `end` are char boundaries.
        (end > start).then(|| self.text.get(start..end)).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::Cells;

    proptest::proptest! {
        /// The one-pass key check is the checks it replaced.
        #[test]
        fn plain_keys_as_the_separate_checks(picks in proptest::collection::vec(0usize..16, 0..12)) {
            use super::super::row::{key_shaped, looks_numeric};
            let key: String = picks.iter().map(|&i| ["a", "S", "Sa", "_", "-", ":", ".", "(", ")", "0", "x", "0x", "us", "%", "9", "é"][i]).collect();
            let kb = key.as_bytes();
            let refused = !key_shaped(&key)
                || crate::sources::numbers::count(&key).is_some()
                || key.ends_with('%')
                || key.ends_with("us") && looks_numeric(&key)
                || kb.contains(&b'-')
                || kb.windows(2).any(|w| w == b"Sa");
            proptest::prop_assert_eq!(super::plain_key(&key), !refused, "{:?}", key);
        }

        /// A value read in one pass is what `stdio_cell` reads from the cell it spans, and the
        /// cells perf prints all take this pass.
        #[test]
        fn values_read_as_stdio_reads_them(picks in proptest::collection::vec(0usize..9, 1..24), tail in 0usize..3) {
            let cell: String = picks.iter().map(|&i| ["1", "9", "0", "5", ".", "%", "us", "x", ","][i]).collect();
            let line = format!("{cell}{}", ["", " ", "\t7"][tail]);
            let read = super::value_at(line.as_bytes(), 0);
            let stdio = super::super::row::stdio_cell(&cell);
            if let Some((value, end)) = read {
                proptest::prop_assert_eq!(end, cell.len(), "{:?}", line);
                proptest::prop_assert_eq!(Some(value), stdio, "{:?}", line);
            } else if cell.bytes().filter(u8::is_ascii_digit).count() <= 15 {
                proptest::prop_assert_eq!(stdio, None, "{:?}", line);
            }
        }

        /// The cells are those `str::split` finds, whatever the blanks and where they fall
        /// against the eight-byte words.
        #[test]
        fn cells_split_as_str_split(picks in proptest::collection::vec(0usize..7, 0..70)) {
            let text: String = picks.iter().map(|&i| [" ", "\t", "a", "1", "%", "é", "    "][i]).collect();
            let ours: Vec<&str> = Cells { text: &text, at: 0 }.collect();
            let std: Vec<&str> = text.split([' ', '\t']).filter(|c| !c.is_empty()).collect();
            proptest::prop_assert_eq!(ours, std);
        }
    }
}
