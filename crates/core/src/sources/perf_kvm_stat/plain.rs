//! Rows read in one step: a row of a stdio table that can be nothing but that row is read
//! before the line driver's splits and the reader's repairs look at it (rows are nearly all of
//! a live transcript, and those searches cost more than reading the row). What it reads is
//! exactly what the full path reads from the line (`plain_tests` holds it to that).

use super::Reader;
use super::layout::{self, Layout, StdioColumns};
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
        let start = blanks::skip(text.as_bytes(), 0);
        if start == text.len() {
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
        let key_buf = self.spare.keys.pop().unwrap_or_default();
        let Some(r) = plain_stdio_row(text, start, columns, n, key_buf) else {
            return false;
        };
        let unknown = pending_code(&r, &mut self.unknown);
        b.push(r, unknown);
        true
    }
}

/// `t` (blanks around it or not; its first other byte at `start`) read as a row of a stdio table
/// when it is plainly one and can be nothing else: a name or address (no `-`, no `Sa` in it), then
/// values made only of digits, `.`, `,`, `%` and `us`, then perf's spread as perf prints it
/// (`( +- 3.87% )`) or none. Every line the reader's repairs look for needs more than that: a header
/// (`VM-EXIT`, `Samples`, `Event name`), a scope or totals line (`Analyze events for`, `Total
/// Samples:`), a rule (ten dashes), a box (`|`), a damaged character (non-ASCII or NUL), a fence or
/// a label (`:` at its end). The row is exactly what [`parse`] reads from `t`; `None` leaves the
/// line to it. Its key is written into `key_buf` (a key of a table already summed: no allocation
/// per row).
fn plain_stdio_row(
    t: &str,
    start: usize,
    columns: &StdioColumns,
    line: usize,
    key_buf: String,
) -> Option<RawRow> {
    let bytes = t.as_bytes();
    let (key, end) = plain_key(t, start)?;
    let mut values = [Cell::Percent; MAX_CELLS - 1];
    let mut n = 0;
    let mut spread = None;
    let mut at = end;
    loop {
        at = blanks::skip(bytes, at);
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
            at = end;
            continue;
        }
        spread = spread_at(bytes, at)?;
        break;
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

/// Where the cell of `t` that starts at `start` ends when it is plainly a row's key, found and
/// checked in one pass: a name or address as `key_shaped` takes it, without the `-` or `Sa` of
/// headers and rules, and not a time (`us` after a leading digit). (`key_shaped` already refuses a
/// count or a percentage.) The key and where it ends; `None` for any other cell.
#[inline]
fn plain_key(t: &str, start: usize) -> Option<(&str, usize)> {
    let b = t.as_bytes();
    let mut before = 0;
    let mut i = start;
    while let Some(&c) = b.get(i) {
        if !PLAIN_KEY_BYTES[usize::from(c)] {
            if blanks::blank(c) {
                break;
            }
            return None;
        }
        if before == b'S' && c == b'a' {
            return None;
        }
        before = c;
        i += 1;
    }
    // Every byte checked is ASCII, so `start` and `i` are char boundaries.
    let key = t.get(start..i)?;
    let plain = row::key_ends_shaped(key) && !(key.ends_with("us") && looks_numeric(key));
    plain.then_some((key, i))
}

/// The bytes a plain key may hold: `row::key_byte`'s but `-`, looked up (a key is a fifth of
/// a row's bytes).
const PLAIN_KEY_BYTES: [bool; 256] = {
    let mut bytes = [false; 256];
    let mut c = 0;
    while c < 256 {
        bytes[c] = row::key_byte(c as u8) && c != b'-' as usize;
        c += 1;
    }
    bytes
};

/// perf's spread as it prints it at the end of a row, `( +- 3.87% )`, read from the `(` at
/// `at`: the cells `(`, `+-`, a percentage and `)`, and nothing after them. `None` when the
/// rest of the line is anything else (the row is then not plain); `Some(None)` for a spread
/// whose percentage does not read as one (the full path keeps the row without it too). Read
/// byte by byte: the cells are a few bytes apart.
fn spread_at(b: &[u8], at: usize) -> Option<Option<f64>> {
    let blank = |i: usize| b.get(i).is_some_and(|&c| blanks::blank(c));
    // `(` and `+-`, each a cell of its own.
    if !blank(at + 1) {
        return None;
    }
    let sign = blanks::skip(b, at + 1);
    if b.get(sign..sign + 2) != Some(b"+-") || !blank(sign + 2) {
        return None;
    }
    // The percentage: a cell of digits, `.` and `%` only.
    let pct = blanks::skip(b, sign + 2);
    let mut end = pct;
    while b
        .get(end)
        .is_some_and(|&c| c.is_ascii_digit() || c == b'.' || c == b'%')
    {
        end += 1;
    }
    if end == pct || !blank(end) {
        return None;
    }
    // `)`, and nothing after it.
    let close = blanks::skip(b, end);
    if b.get(close) != Some(&b')') || blanks::skip(b, close + 1) != b.len() {
        return None;
    }
    Some(numbers::percent_at(b, pct, end))
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
    let ends = |i: usize| b.get(i).is_none_or(|&c| blanks::blank(c));
    match b.get(d.end) {
        Some(b'%') if ends(d.end + 1) => Some((Cell::Percent, d.end + 1)),
        Some(b'u') if b.get(d.end + 1) == Some(&b's') && ends(d.end + 2) => {
            Some((Cell::Micros(d.value), d.end + 2))
        }
        _ if !d.point && ends(d.end) => Some((Cell::Count(d.value / 1000), d.end)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
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
            proptest::prop_assert_eq!(super::plain_key(&key, 0).is_some(), !refused, "{:?}", key);
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
    }

    /// The spread read byte by byte is what splitting the rest of the line into cells finds:
    /// `(`, `+-`, a cell of digits, `.` and `%`, `)`, and no more. Every mix of the blanks
    /// between them and of these cells and their near misses.
    #[test]
    fn spread_as_its_cells() {
        let seps = [" ", "", "\t", "  "];
        let (signs, closes, afters) = (["+-", "+", "-+", "x"], [")", "))", "x"], ["", "x", ")"]);
        let pcts = [
            "3.87%",
            "1",
            "%",
            "1.2.3%",
            "x1",
            "",
            "99999999999999999999.5%",
        ];
        let mut read = 0;
        for s in 0..seps.len().pow(4) {
            let sep = |i: u32| seps[s / seps.len().pow(i) % seps.len()];
            for sign in signs {
                for pct in pcts {
                    for close in closes {
                        for after in afters {
                            let text = format!(
                                "({}{sign}{}{pct}{}{close}{}{after}",
                                sep(0),
                                sep(1),
                                sep(2),
                                sep(3)
                            );
                            let cells: Vec<&str> =
                                text.split([' ', '\t']).filter(|c| !c.is_empty()).collect();
                            let by_cells = match cells.as_slice() {
                                ["(", "+-", pct, ")"]
                                    if pct
                                        .bytes()
                                        .all(|b| b.is_ascii_digit() || b == b'.' || b == b'%') =>
                                {
                                    Some(crate::sources::numbers::percent(pct))
                                }
                                _ => None,
                            };
                            assert_eq!(super::spread_at(text.as_bytes(), 0), by_cells, "{text:?}");
                            read += usize::from(by_cells.is_some());
                        }
                    }
                }
            }
        }
        assert!(read > 100, "only {read} spreads read");
    }
}
