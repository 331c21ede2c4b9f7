//! One row of a perf-prof kvm-exit table, read against its header: the `[instance]` cell of
//! `--perins` output, the exit-reason name, and the numbers, taken from the right so that a
//! name with spaces or a squeezed column does not shift them. Times in microseconds with three
//! decimals become exact integer nanoseconds.

use super::layout::{Column, Header};
use crate::sources::numbers;

/// A row as printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct RawRow {
    pub instance: Option<u32>,
    pub name: String,
    pub calls: u64,
    pub total_ns: Option<u64>,
    pub min_ns: Option<u64>,
    pub avg_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// The row was cut short: only its count was read, none of its times.
    pub cut: bool,
}

/// Reads a row of the table under `header`.
pub(super) fn row(t: &str, header: &Header) -> Option<RawRow> {
    let mut out = RawRow::default();
    let rest = if header.instance.is_some() {
        let inner = t.strip_prefix('[')?;
        let (id, rest) = inner.split_once(']')?;
        out.instance = Some(id.trim().parse().ok()?);
        rest
    } else {
        t
    };
    let words: Vec<&str> = rest.split_ascii_whitespace().collect();
    let n = header.columns.len();
    if words.len() <= n {
        return None;
    }
    let (name, cells) = words.split_at(words.len() - n);
    out.name = name.join(" ");
    // A number in the name is a cell: two rows on one line, or cells shifted by a damaged one.
    if name.iter().any(|w| is_number(w) || !name_word(w)) {
        return None;
    }
    for (col, cell) in header.columns.iter().zip(cells) {
        if matches!(col, Column::Gsys | Column::Other) {
            // `%gsys` is `nan` when every exit took 0 ns.
            if !is_number(cell) && !is_nan(cell) {
                return None;
            }
            continue;
        }
        let value = numbers::decimal_scaled(cell, 3)?;
        let time = header.micros.then_some(value);
        match col {
            Column::Calls => out.calls = numbers::count(cell)?,
            Column::Total => out.total_ns = time,
            Column::Min => out.min_ns = time,
            Column::Avg => out.avg_ns = time,
            Column::P99 => out.p99_ns = time,
            Column::Max => out.max_ns = time,
            Column::Gsys | Column::Other => {}
        }
    }
    Some(out)
}

/// A row cut short (`HLT   20747   530044`: fewer cells than the header has columns): its name
/// and its count, when the count is there whole (another cell follows it) and is a whole
/// number. Times are never taken from it: the cell the line was cut in may be any of them, and
/// a missing cell in the middle would shift the others.
pub(super) fn cut_short(t: &str, header: &Header) -> Option<RawRow> {
    let (instance, rest) = if header.instance.is_some() {
        let inner = t.strip_prefix('[')?;
        let (id, rest) = inner.split_once(']')?;
        (Some(id.trim().parse().ok()?), rest)
    } else {
        (None, t)
    };
    let words: Vec<&str> = rest.split_ascii_whitespace().collect();
    let (name, cells) = words.split_first()?;
    let whole = cells.len() >= 2 && cells.len() < header.columns.len();
    if !whole
        || header.columns.first() != Some(&Column::Calls)
        || !name_word(name)
        || is_number(name)
        || !cells.iter().all(|c| is_number(c))
    {
        return None;
    }
    Some(RawRow {
        instance,
        name: (*name).to_string(),
        calls: numbers::count(cells.first()?)?,
        cut: true,
        ..RawRow::default()
    })
}

/// A cell that is a number as perf-prof prints them (`20747`, `0.734`, `-1.5`).
fn is_number(w: &str) -> bool {
    let digits = w.strip_prefix('-').unwrap_or(w);
    digits.bytes().next().is_some_and(|b| b.is_ascii_digit())
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && digits.bytes().filter(|b| *b == b'.').count() <= 1
}

/// A word of an exit reason's name as perf-prof prints them (`HLT`, `EXIT_NPF`, `0x4b`,
/// `unknown(77)`): letters, digits and `_().:/-`, starting with a letter or a digit.
pub(super) fn name_word(w: &str) -> bool {
    w.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && w.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'(' | b')' | b'.' | b':' | b'/' | b'-')
        })
}

/// Why `t`, the line after a row, is a row cut short after its name: one word that can be an
/// exit reason's name and nothing else.
pub(super) fn cut_after_name(t: &str) -> Option<&'static str> {
    let mut words = t.split_ascii_whitespace();
    let name = words.next()?;
    (words.next().is_none() && name_word(name) && !is_number(name))
        .then_some("an exit reason's name without its numbers (the row cut short?)")
}

/// Whether `t` has a row's shape whatever the header: a name, then two or more numbers.
pub(super) fn row_shaped(t: &str) -> bool {
    let words: Vec<&str> = t.split_ascii_whitespace().collect();
    let numbers = words.iter().filter(|w| is_number(w)).count();
    words.first().is_some_and(|w| name_word(w) && !is_number(w))
        && numbers >= 2
        && numbers + 1 >= words.len()
}

/// `nan`, `-nan`, `inf` as printf writes them.
fn is_nan(w: &str) -> bool {
    let w = w.trim_start_matches(['-', '+']).to_ascii_lowercase();
    w == "nan" || w == "inf"
}

/// Why a line with a row's shape (a name, then about as many numbers as the header has
/// columns) cannot be read as a row under `header`; `None` when it is not row-shaped.
pub(super) fn damage(t: &str, header: &Header) -> Option<String> {
    let words: Vec<&str> = t.split_ascii_whitespace().collect();
    let n = header.columns.len();
    let numeric = |w: &&str| w.bytes().next().is_some_and(|b| b.is_ascii_digit());
    let digits = words.iter().filter(|w| numeric(w)).count();
    // A row cut short: a name, then numbers only, fewer than the header's columns.
    let cut = words.len() >= 2
        && words.len() <= n
        && !words.first().is_some_and(numeric)
        && words.iter().skip(1).all(numeric);
    if !cut && (digits < 2 || digits + 2 < n || words.len() > 2 * n + 3) {
        return None;
    }
    if let Some(why) = crate::sources::unread::damage(t) {
        return Some(why.into());
    }
    if words.len() <= n {
        return Some(format!(
            "{} cells where the header names an exit reason and {n} columns (cut short?)",
            words.len()
        ));
    }
    let cells = &words[words.len() - n..];
    let name = &words[..words.len() - n];
    if let Some(cell) = name.iter().find(|w| is_number(w)) {
        return Some(format!(
            "`{cell}` is a number where the exit reason's name should be (two rows on one \
             line, or a cell missing or damaged)"
        ));
    }
    if let Some(word) = name.iter().find(|w| !name_word(w)) {
        return Some(format!("`{word}` is not part of an exit reason's name"));
    }
    if let Some(cell) = name.iter().skip(1).find(|w| numeric(w)) {
        return Some(format!(
            "`{cell}` is not a number of the row, nor part of an exit reason's name"
        ));
    }
    for (col, cell) in header.columns.iter().zip(cells) {
        if matches!(col, Column::Gsys | Column::Other) {
            if !is_number(cell) && !is_nan(cell) {
                return Some(format!("`{cell}` is not a number"));
            }
            continue;
        }
        if *col == Column::Calls && numbers::count(cell).is_none() {
            return Some(crate::sources::unread::not_a_count(cell));
        }
        if numbers::decimal_scaled(cell, 3).is_none() {
            return Some(format!("`{cell}` is not a number of µs"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::perf_prof::layout::header;

    #[test]
    fn rows() {
        let h = header("exit_reason calls total(us) min(us) avg(us) p99(us) max(us) %gsys");
        let h = h.unwrap_or(Header {
            instance: None,
            columns: Vec::new(),
            micros: false,
        });
        let r = row(
            "EXIT_HLT                              911      3916645.237        0.620     4299.281    20121.135    38825.427 100.00",
            &h,
        );
        assert_eq!(
            r.map(|r| (r.calls, r.total_ns, r.min_ns, r.p99_ns)),
            Some((911, Some(3_916_645_237), Some(620), Some(20_121_135)))
        );
        let h = header("[CPU] exit_reason calls total(us) min(us) avg(us) max(us) %gsys");
        let h = h.unwrap_or(Header {
            instance: None,
            columns: Vec::new(),
            micros: false,
        });
        let r = row("[  3] HLT  5  10.000  1.000  2.000  4.000 100.00", &h);
        assert_eq!(
            r.map(|r| (r.instance, r.name)),
            Some((Some(3), "HLT".into()))
        );
        assert!(row("HLT 5 x 1 2 4 100", &h).is_none());
        assert_eq!(
            damage("HLT 5 x 1 2 4 100", &h).as_deref(),
            Some("`x` is not a number of µs")
        );
        assert!(damage("HLT 5x 1.0 1 2 4 100", &h).is_some_and(|w| w.contains("not a count")));
        assert_eq!(damage("see the 2 tables below", &h), None);
        // Cut short: the count is taken only when a cell follows it, times never.
        let h = header("exit_reason calls total(us) min(us) avg(us) max(us) %gsys");
        let h = h.unwrap_or(Header {
            instance: None,
            columns: Vec::new(),
            micros: false,
        });
        let r = cut_short("HLT                     20747     530044", &h);
        assert_eq!(
            r.map(|r| (r.calls, r.total_ns, r.cut)),
            Some((20_747, None, true))
        );
        assert!(cut_short("HLT   2074", &h).is_none());
        assert!(cut_short("HLT   20747   x#!", &h).is_none());
        assert!(row("x#! 5 1.000 1.000 1.000 1.000 100.00", &h).is_none());
    }
}
