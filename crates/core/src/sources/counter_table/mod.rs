//! Source for pasted tables of counter values — one sample, as people post them from
//! perfmon's report view, from `Get-Counter`, or on a slide:
//!
//! ```text
//! \\HV-HOST
//! Hyper-V Hypervisor Virtual Processor        _Total
//!     % Guest Run Time                          21.465
//!     Total Intercepts/sec                   9,214,942
//! \\hv01\hyper-v hypervisor logical processor(_total)\% total run time :
//! 37.5
//! ```
//!
//! A line naming an object (optionally followed by instance columns, split by tabs or two or
//! more spaces) starts a block; a counter row is a name followed by one number per instance
//! column; a full counter path carries its value on the same line or the next one (what
//! `Get-Counter` prints). Numbers may use thousands separators; whether `,` or `.` is the
//! decimal mark is decided for the whole table from the numbers that are unambiguous.
//!
//! A counter row that cannot be read (a value that is not a number, no value, or values that do
//! not match the instance columns) is left out and noted with its line ([`LineBook`]); it never
//! starts a block, so the rows after it keep their object and instances.

mod rows;

use std::io::BufRead;

use crate::error::{Error, Result};
use crate::profile::{
    CounterLog, CounterPath, CounterTool, LogHeader, Note, Origin, Profile, Series, Stats,
};
use crate::sources::capped_notes::CappedNotes;
use crate::sources::line_reader::LineBook;
use crate::sources::lines::Lines;
use crate::sources::perfmon_csv::path::{self, is_name_text};
use rows::{counter_like, counter_row, is_number_token, split_cells, tile, unread_row};

/// The name of this format (`--format counter-table`, `origin.format`).
pub(crate) const FORMAT: &str = "counter-table";

/// The most lines a pasted table is read to (they are short; this bounds memory).
const MAX_LINES: usize = 100_000;

/// Whether `head` looks like a pasted counter table: a counter path with a value, or an
/// object line followed by at least two counter rows named like counters (`% …`, `…/sec`,
/// `… Cost`, `… Per Dispatch`).
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut rows = 0;
    let mut object = false;
    let mut path_waiting = false;
    for l in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(200)
    {
        if path_waiting && is_number_token(l) {
            return true;
        }
        path_waiting = false;
        match path_line(l) {
            Some((_, Some(_))) => return true,
            Some((_, None)) => {
                path_waiting = true;
                continue;
            }
            None => {}
        }
        match counter_row(l) {
            Some((name, _)) if object && counter_like(name) => {
                rows += 1;
                if rows >= 2 {
                    return true;
                }
            }
            Some(_) => {}
            None => {
                object = !l.starts_with('\\') && l.chars().any(char::is_alphabetic);
                rows = 0;
            }
        }
    }
    false
}

/// A line holding a counter path (after an optional `Get-Counter` timestamp), with its value
/// when the line has one after the path (`path : value` or `path  value`).
fn path_line(l: &str) -> Option<(CounterPath, Option<&str>)> {
    let at = l.find('\\')?;
    // Only a timestamp may come before the path (`11/24/2026 12:00:00 PM`).
    let stamp = |c: char| c.is_ascii_digit() || " /.:-APM".contains(c);
    if !l[..at].chars().all(stamp) {
        return None;
    }
    let rest = l[at..].trim();
    let (p, v) = match rest.rsplit_once(" :") {
        Some((p, v)) => (p, Some(v.trim()).filter(|v| !v.is_empty())),
        None => match rest.rsplit_once(char::is_whitespace) {
            Some((p, v)) if is_number_token(v) && path::parse(p).is_some() => (p, Some(v)),
            _ => (rest, None),
        },
    };
    Some((path::parse(p)?, v))
}

/// Which character is the decimal mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decimal {
    Point,
    Comma,
}

fn decide_decimal(tokens: &[&str]) -> Decimal {
    let (mut point, mut comma) = (0, 0);
    for t in tokens {
        let t = t.trim_end_matches('%');
        let (p, c) = (t.matches('.').count(), t.matches(',').count());
        match (p, c) {
            (1, c) if c >= 1 && t.rfind('.') > t.rfind(',') => point += 1,
            (p, 1) if p >= 1 && t.rfind(',') > t.rfind('.') => comma += 1,
            (0, c) if c >= 2 => point += 1,
            (p, 0) if p >= 2 => comma += 1,
            (1, 0) if t.rsplit('.').next().is_some_and(|f| f.len() != 3) => point += 1,
            (0, 1) if t.rsplit(',').next().is_some_and(|f| f.len() != 3) => comma += 1,
            _ => {}
        }
    }
    if comma > point {
        Decimal::Comma
    } else {
        Decimal::Point
    }
}

fn number(t: &str, decimal: Decimal) -> Option<f64> {
    let t = t.trim_end_matches('%');
    let (group, mark) = match decimal {
        Decimal::Point => (',', '.'),
        Decimal::Comma => ('.', ','),
    };
    // Thousands groups of three digits, none after the decimal mark: `9,21` is a number cut
    // short (`9,214,942`), not 921.
    let (whole, fraction) = t.split_once(mark).unwrap_or((t, ""));
    if fraction.contains(group) {
        return None;
    }
    if whole.contains(group) {
        let mut groups = whole.trim_start_matches('-').split(group);
        let first = groups.next().is_some_and(|g| (1..=3).contains(&g.len()));
        if !first || groups.any(|g| g.len() != 3) {
            return None;
        }
    }
    let clean: String = t
        .chars()
        .filter(|&c| c != group)
        .map(|c| if c == mark { '.' } else { c })
        .collect();
    clean.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// One value read from the table, before numbers are decided.
struct Cell {
    path: CounterPath,
    text: String,
    line: usize,
}

/// Reads a pasted counter table; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, name: &str) -> Result<Profile> {
    let mut lines = Lines::new(reader, name);
    let mut cells: Vec<Cell> = Vec::new();
    let mut host: Option<String> = None;
    let mut block: Option<(String, Vec<String>)> = None;
    // The indentation of the object line: rows sit deeper.
    let mut block_indent = 0;
    let mut book = LineBook::default();
    let mut pending: Option<CounterPath> = None;
    let mut first_other: Option<(usize, String)> = None;
    let mut notes = Vec::new();
    while let Some((n, raw)) = lines.next_line()? {
        if n > MAX_LINES {
            notes.push(Note {
                line: Some(n),
                message: format!("stopped reading after {MAX_LINES} lines"),
            });
            break;
        }
        let l = raw.trim();
        if l.is_empty() || l.chars().all(|c| c == '-' || c.is_whitespace()) {
            continue;
        }
        if let Some(p) = pending.take() {
            if is_number_token(l) {
                cells.push(Cell {
                    path: p,
                    text: l.to_string(),
                    line: n,
                });
                continue;
            }
            notes.push(Note {
                line: Some(n),
                message: format!("`{}` has no value under it", p.display()),
            });
        }
        if let Some(h) = l
            .strip_prefix("\\\\")
            .filter(|h| !h.contains('\\') && !h.contains(' '))
        {
            host = Some(h.to_string());
            continue;
        }
        if let Some((p, v)) = path_line(l) {
            match v {
                Some(v) => cells.push(Cell {
                    path: p,
                    text: v.to_string(),
                    line: n,
                }),
                None => pending = Some(p),
            }
            continue;
        }
        if let Some((counter, values)) = counter_row(l).filter(|(c, _)| is_name_text(c)) {
            let Some((object, instances)) = &block else {
                first_other.get_or_insert((n, l.chars().take(80).collect()));
                continue;
            };
            let joined = tile(l, instances.len().max(1)).filter(|rows| rows.len() > 1);
            let rows = if let Some(rows) = joined {
                notes.push(Note {
                    line: Some(n),
                    message: format!(
                        "{} counter rows joined into one line (a lost line break?): read as {}",
                        rows.len(),
                        rows.iter()
                            .map(|(c, _)| format!("`{c}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
                rows
            } else if let Some(cell) = counter.split_whitespace().find(|c| is_number_token(c)) {
                // A number among the name's cells: a cell of another row, or a damaged one.
                let why = format!("`{cell}` is a number inside the counter's name");
                book.unreadable(n, l, &why);
                continue;
            } else if !instances.is_empty() && values.len() != instances.len() {
                // Which value belongs to which instance is not known: never guessed.
                let why = match split_cells(counter)
                    .iter()
                    .skip(1)
                    .find(|c| !is_number_token(c))
                {
                    Some(bad) => format!("`{bad}` is not a number"),
                    None => format!(
                        "{} value(s) for {} instance column(s)",
                        values.len(),
                        instances.len()
                    ),
                };
                book.unreadable(n, l, &why);
                continue;
            } else {
                vec![(counter, values)]
            };
            book.row(n);
            for (counter, values) in rows {
                for (i, v) in values.iter().enumerate() {
                    cells.push(Cell {
                        path: CounterPath {
                            host: host.clone(),
                            object: object.clone(),
                            instance: instances.get(i).cloned(),
                            counter: counter.to_string(),
                        },
                        text: (*v).to_string(),
                        line: n,
                    });
                }
            }
            continue;
        }
        let indent = raw.len() - raw.trim_start().len();
        if block.is_some()
            && let Some(why) = unread_row(l, indent > block_indent)
        {
            book.unreadable(n, l, &why);
            continue;
        }
        if !is_name_text(l) {
            // Not text (random bytes under a forced format): no object starts here.
            if block.is_some() {
                book.unreadable(n, l, "bytes that are not text in the line");
            } else {
                first_other.get_or_insert((n, l.chars().take(80).collect()));
            }
            continue;
        }
        let parts: Vec<String> = split_cells(l).into_iter().map(str::to_string).collect();
        if let Some((object, instances)) = parts.split_first() {
            block = Some((object.clone(), instances.to_vec()));
            block_indent = indent;
        }
    }
    // Noted; a table of one sample has no partial mark.
    book.last_row_cut(lines.cut_line(), &mut notes);
    book.note_unread(lines.cut_line(), &mut notes);
    if cells.is_empty() {
        return Err(Error::nothing_found(
            name,
            first_other,
            "expected counter values: an object line (`Hyper-V Hypervisor Virtual Processor  _Total`) \
             with counter rows under it (`% Guest Run Time  21.465`), or counter paths with values \
             (`\\\\HOST\\Object(Instance)\\Counter : 21.465`)",
        ));
    }
    let tokens: Vec<&str> = cells.iter().map(|c| c.text.as_str()).collect();
    let decimal = decide_decimal(&tokens);
    let mut series: Vec<Series> = Vec::new();
    let mut again = CappedNotes::default();
    for c in &cells {
        let Some(v) = number(&c.text, decimal) else {
            notes.push(Note {
                line: Some(c.line),
                message: format!(
                    "`{}` is not a number; `{}` left out",
                    c.text,
                    c.path.display()
                ),
            });
            continue;
        };
        let mut stats = Stats::EMPTY;
        stats.add(v);
        match series.iter_mut().find(|s| s.path == c.path) {
            Some(s) => {
                again.note(&mut notes, c.line, || {
                    format!(
                        "`{}` appears again; both values are kept in its statistics",
                        c.path.display()
                    )
                });
                if let Some(st) = s.stats.as_mut() {
                    st.add(v);
                }
            }
            None => series.push(Series {
                path: c.path.clone(),
                column: 0,
                stats: Some(stats),
                blank: 0,
                unreadable: 0,
                slices: Vec::new(),
            }),
        }
    }
    again.finish(&mut notes, |more| {
        format!(
            "{more} more counter values appear again, from here on (all kept in their \
             counters' statistics; only the first {} are listed)",
            CappedNotes::MAX
        )
    });
    if decimal == Decimal::Comma {
        notes.push(Note {
            line: None,
            message: "numbers read with `,` as the decimal mark (as the table's unambiguous numbers use it)".into(),
        });
    }
    let mut profile = Profile::new(Origin::new(FORMAT, Some(name)));
    profile.warnings = notes;
    profile.counters = Some(CounterLog {
        header: LogHeader {
            tool: CounterTool::Table,
            time_zone: None,
            bias_minutes: None,
            first: None,
            last: None,
            duration_s: None,
            samples: 1,
            interval_s: None,
            slice_s: None,
        },
        series,
    });
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_marks() {
        assert_eq!(
            decide_decimal(&["9,214,942", "21.465", "83"]),
            Decimal::Point
        );
        assert_eq!(decide_decimal(&["9.214.942", "21,465"]), Decimal::Comma);
        assert_eq!(number("9,214,942", Decimal::Point), Some(9_214_942.0));
        assert_eq!(number("21,465", Decimal::Comma), Some(21.465));
        assert_eq!(number("21.5%", Decimal::Point), Some(21.5));
    }

    /// What the fuzzers found: a multi-byte space before the numbers, and a backslash inside
    /// another format's line taken for a counter path.
    #[test]
    fn other_formats_lines_are_not_counters() {
        assert_eq!(
            counter_row("qemu-kvm 1234 [000]\u{a0} 3.0000"),
            Some(("qemu-kvm 1234 [000]", vec!["3.0000"]))
        );
        assert!(path_line("STORE_GUEST_PAGE_FAULT \\M\\ 1496461 53.00% 889612544").is_none());
        assert!(
            path_line(r"11/24/2026 12:00:00 PM  \\hv01\processor(_total)\% processor time :")
                .is_some()
        );
    }

    #[test]
    fn rows_and_paths() {
        assert_eq!(
            counter_row("% Guest Run Time     21.465  3.0"),
            Some(("% Guest Run Time", vec!["21.465", "3.0"]))
        );
        assert_eq!(
            counter_row("Hyper-V Hypervisor Virtual Processor _Total"),
            None
        );
        let (p, v) =
            path_line(r"\\hv01\hyper-v hypervisor logical processor(_total)\% total run time :")
                .unwrap_or_else(|| {
                    (
                        CounterPath {
                            host: None,
                            object: String::new(),
                            instance: None,
                            counter: String::new(),
                        },
                        Some("x"),
                    )
                });
        assert_eq!(p.counter, "% total run time");
        assert_eq!(v, None);
    }
}
