//! Source for `perf kvm stat report` and `perf kvm stat live` text, in every layout perf has
//! printed since 2012 and in the shapes people paste it: e-mail quoting and wrapping (rows and
//! headers), Markdown indentation and fences, tab-separated slide transcriptions, columns an
//! author trimmed, interleaved stderr notes, elisions, several tables in one file each named by
//! the label line above it (`baseline:`, `with the patch:`), and live screens of many intervals
//! (summed into one table with its window).
//!
//! No row is lost without a word: a line that has a row's shape but cannot be read is noted
//! with its line and the reason, and the table goes on with the rows after it; elided rows,
//! a row cut off by the end of the input, and rows that add up to less than the printed total
//! mark the table `partial`.
//!
//! Reading streams line by line: memory grows with the number of distinct tables and keys,
//! not with the length of the input.

mod carry;
mod damaged;
mod each_line;
mod interval;
mod layout;
mod live;
mod lost;
mod names;
mod parallel;
#[cfg(test)]
mod parallel_tests;
mod pasted;
mod plain;
#[cfg(test)]
mod plain_tests;
mod repair;
mod row;
mod stdio_columns;
mod table;

use std::io::BufRead;

use crate::error::Result;
use crate::profile::{Note, Origin, PrintedTotal, Profile, TableKind, TimeStats};
use crate::sources::line_reader::{LineBook, read_lines};
use crate::sources::line_repairs;
use crate::sources::lines::{self};
use layout::Scope;
use row::Parsed;
use table::{Building, pending_code};

pub(crate) use parallel::read_mapped;

/// The name of this format (`--format perf-kvm-stat`, `origin.format`).
pub(crate) const FORMAT: &str = "perf-kvm-stat";

/// Whether `head` (the start of an input) looks like `perf kvm stat` output.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut bare_rows = 0;
    text.lines().map(super::lines::unquote).any(|l| {
        let l = pasted::unbox(l);
        bare_rows = if pasted::implied(&l).is_some() {
            bare_rows + 1
        } else {
            0
        };
        l.trim_start().starts_with("Analyze events for")
            || layout::header(&l).is_some()
            || bare_rows >= 2
    })
}

/// Reads every table of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

/// A row that a mailer wrapped: its text so far, where it started, and how many lines joined.
struct Carry {
    text: String,
    line: usize,
    joins: u8,
}

struct Reader {
    path: String,
    profile: Profile,
    table: Option<Building>,
    label: Option<String>,
    scope: Option<Scope>,
    timestamp: Option<(String, f64)>,
    kind_hint: Option<TableKind>,
    unknown: Option<table::UnknownCode>,
    carry: Option<Carry>,
    live_first: f64,
    names: names::NameCache,
    /// The row names of live intervals, numbered.
    intervals: interval::Intervals,
    /// The last line, when the input ends inside it (set once the input has been read).
    cut: Option<usize>,
    book: LineBook,
    /// The header line of a table the input ended in, for the error when it had no rows.
    started: Option<usize>,
    /// The last line read as prose: the first of header-less rows, damaged, is one.
    prose_before: Option<(usize, String)>,
    last_header: Option<(String, layout::Header)>,
    /// Column headers read, and rows of the tables finished ([`Reader::own_lines`]).
    own: u64,
    /// A line between rows that is neither a row nor a label, until the next line tells.
    pending: Option<(usize, String)>,
    /// What tables already read leave for the next to reuse.
    spare: table::Spare,
    /// A `Lost events` line came before any table, or after the first table ended when that
    /// table has no printed total: a reader of the lines before would have charged the loss
    /// to its own last table (into which it may have summed that first table, and which may
    /// have a printed total), not to what this reader charged it to.
    lost_looks_back: bool,
    /// The `Lost events` lines, noted once at the end.
    losses: lost::Losses,
    /// The line of the first `--vcpu` table with zero-filled min times, noted there.
    zero_min_noted: Option<usize>,
}

/// The note on `Min Time 0.00us` in a `--vcpu` table.
const ZERO_MIN_NOTE: &str = "min times of 0.00us in a --vcpu table are a perf artefact \
                             (zero-filled per-vCPU stats); shown as unknown";

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            table: None,
            label: None,
            scope: None,
            timestamp: None,
            kind_hint: None,
            unknown: None,
            carry: None,
            live_first: 0.0,
            names: names::NameCache::default(),
            intervals: interval::Intervals::default(),
            cut: None,
            book: LineBook::default(),
            started: None,
            prose_before: None,
            last_header: None,
            own: 0,
            pending: None,
            spare: table::Spare::default(),
            lost_looks_back: false,
            losses: lost::Losses::default(),
            zero_min_noted: None,
        }
    }

    fn note(&mut self, line: usize, message: String) {
        self.profile.warnings.push(Note {
            line: Some(line),
            message,
        });
    }

    /// Prose ends a table with rows, and may label the next one.
    ///
    /// Inside a table, a line that is not a label (no `:` at its end) waits for the
    /// line after it: when that is a row of the table, it was a damaged line inside the table
    /// (noted, and the table goes on); otherwise it was prose.
    fn prose(&mut self, n: usize, t: &str) {
        if self.table.is_some() && self.pending.is_none() && !t.trim_ascii_end().ends_with(':') {
            self.pending = Some((n, t.to_string()));
            return;
        }
        self.prose_now(n, t);
    }

    /// Prose: it ends a table with rows, and may label the next one.
    fn prose_now(&mut self, n: usize, t: &str) {
        if self.table.as_ref().is_some_and(|b| !b.rows.is_empty()) {
            self.finish();
        }
        if self.profile.tables.is_empty() && self.table.is_none() {
            self.book.unrecognised(n, t);
        }
        self.label = match line_repairs::without_damage(t) {
            Some((clean, why)) => {
                let label = pasted::label(&clean);
                if let Some(l) = &label {
                    self.book.repaired(
                        n,
                        &format!("the label `{l}` with {why} in it, read without it"),
                    );
                }
                label
            }
            None => pasted::label(t),
        };
        self.prose_before = Some((n, t.to_string()));
    }

    /// A row that cannot be read: noted, the table marked partial, the table going on.
    fn bad_row(&mut self, n: usize, t: &str, why: &str) {
        if let Some(b) = &mut self.table {
            b.partial = true;
        }
        self.book.unreadable(n, t, why);
    }

    /// Lines that shape tables: timestamps, scopes, totals, stderr notes, headers.
    fn structure(&mut self, n: usize, t: &str) -> bool {
        if let Some(seconds) = layout::timestamp(t) {
            self.finish();
            self.timestamp = Some((t.to_string(), seconds));
        } else if let Some(scope) = layout::scope(t) {
            self.finish();
            self.scope = Some(self.checked_scope(n, t, scope));
        } else if let Some((count, time_ns)) = layout::total(t) {
            let total = PrintedTotal {
                count,
                time_ns,
                lost_events: None,
            };
            match &mut self.table {
                Some(b) => {
                    b.total = Some(total);
                    self.finish();
                }
                None => self.note(n, "a totals line with no table above it".into()),
            }
        } else if let Some(lost) = layout::lost(t) {
            let total = match &mut self.table {
                Some(b) => {
                    b.partial = true;
                    b.total.as_mut()
                }
                None if self.profile.tables.is_empty() => {
                    self.lost_looks_back = true;
                    None
                }
                None => {
                    // Charged to the part's first table: one reader charges it to the table
                    // that table was summed into, the same where both have a printed total
                    // (the sums then add up alike) or the one before has none (then neither
                    // keeps it); not where only the one before has one.
                    self.lost_looks_back |= self.profile.tables.len() == 1
                        && self.profile.tables[0].printed_total.is_none();
                    self.profile.tables.last_mut().and_then(|t| {
                        t.partial = true;
                        t.printed_total.as_mut()
                    })
                }
            };
            if let Some(total) = total {
                total.lost_events = Some(total.lost_events.unwrap_or(0).saturating_add(lost));
            }
            self.losses.add(n, lost);
        } else if let Some(unknown) = layout::unknown_exit_code(t) {
            self.unknown = Some(unknown);
        } else if lines::elision(t) {
            let message = match &mut self.table {
                Some(b) => {
                    b.elided = true;
                    b.partial = true;
                    "the author elided rows here (`{t}`): the table is partial"
                }
                None => "the author elided lines here (`{t}`)",
            };
            self.note(n, message.replace("{t}", t));
        } else if let Some(header) = self.header(t) {
            self.start_table(n, header.kind, header.layout);
        } else {
            return self.damaged_structure(n, t);
        }
        true
    }

    /// The header `t` is, if it is one; a live session repeats one header every interval, so
    /// the last one is kept and reused when the line is the same.
    fn header(&mut self, t: &str) -> Option<layout::Header> {
        if let Some((text, header)) = &self.last_header
            && text == t
        {
            self.own += 1;
            return Some(header.clone());
        }
        let header = layout::header(t)?;
        self.own += 1;
        self.last_header = Some((t.to_string(), header.clone()));
        Some(header)
    }

    /// Starts the table whose header (or first row) is on line `n`.
    fn start_table(&mut self, n: usize, kind: Option<TableKind>, layout: layout::Layout) {
        self.finish();
        self.table = Some(Building {
            kind: kind
                .or_else(|| self.kind_hint.clone())
                .unwrap_or(TableKind::Vmexit),
            layout,
            label: self.label.take(),
            scope: self.scope.take(),
            timestamp: self.timestamp.take(),
            line: n,
            header: true,
            rows: self.spare.rows(),
            total: None,
            elided: false,
            partial: false,
            folded_rows: 0,
            folded_range: None,
        });
    }

    /// Lines inside a table: a kind line, a wrapped spread, a row, or a wrapped row's start.
    fn table_line(&mut self, n: usize, t: &str) -> bool {
        let Some(b) = &mut self.table else {
            return false;
        };
        // The next interval's timestamp ends a table that has no totals line (a transcript
        // pasted without them); its digits must not start a wrapped row.
        if t.as_bytes().get(2) == Some(&b':') && layout::timestamp(t).is_some() {
            return false;
        }
        if b.rows.is_empty()
            && let Some(kind) = layout::kind_name(t)
        {
            b.kind = kind;
            return true;
        }
        if b.rows.is_empty()
            && let layout::Layout::Stdio { columns } = &mut b.layout
            && let Some(more) = pasted::header_continuation(t)
        {
            for &c in more.as_slice() {
                columns.push(c);
            }
            return true;
        }
        match row::parse(t, &b.layout, n) {
            Parsed::Row(r) => {
                let unknown = pending_code(&r, &mut self.unknown);
                b.push(r, unknown);
                true
            }
            Parsed::Incomplete => {
                self.carry = Some(Carry {
                    text: t.to_string(),
                    line: n,
                    joins: 0,
                });
                true
            }
            Parsed::Bad(why) => {
                match row::two_rows(t, &b.layout, n) {
                    Some((first, second)) => {
                        b.push(first, None);
                        b.push(second, None);
                        self.book
                            .repaired(n, "two rows on one line (a newline lost), read as both");
                    }
                    None => self.bad_row(n, t, &why),
                }
                true
            }
            Parsed::NotARow => match (row::spread_only(t), b.rows.last_mut()) {
                (Some(spread), Some((last, _))) => {
                    if let Some(mean) = last.time.mean_ns(last.count) {
                        last.time.m2 = TimeStats::m2_from_rel_stderr(spread, mean, last.count);
                    }
                    true
                }
                _ if damaged::fragment(t) => {
                    self.bad_row(
                        n,
                        t,
                        "the rest of a wrapped row whose start could not be read, or a row \
                         without its name",
                    );
                    true
                }
                _ => false,
            },
        }
    }

    /// A row of a boxed table without its closing `|`: cut short, so its last cell may be
    /// too. Noted, never read.
    fn open_boxed_row(&mut self, n: usize, t: &str) -> bool {
        let Some(b) = &self.table else {
            return false;
        };
        if matches!(row::parse(t, &b.layout, n), Parsed::NotARow) {
            return false;
        }
        self.bad_row(n, t, "a boxed row without its closing `|` (cut short?)");
        true
    }

    fn finish(&mut self) {
        if let Some(carry) = self.carry.take() {
            self.unfinished(carry, None);
        }
        self.settle_pending(None);
        let Some(mut b) = self.table.take() else {
            return;
        };
        self.unknown = None;
        if b.rows.is_empty() {
            if b.total.is_some_and(|t| t.count > 0) {
                self.note(
                    b.line,
                    "a table header and total with no rows between them".into(),
                );
            }
            return;
        }
        self.own += b.rows_read();
        let isa = b.settle(&mut self.names, &mut self.intervals);
        let (line, zero_mins) = (b.line, b.zero_mins());
        let notes = &mut self.profile.warnings;
        let (names, spare, intervals) = (&mut self.names, &mut self.spare, &mut self.intervals);
        let last_at = self.profile.tables.len().wrapping_sub(1);
        match (&b.timestamp, self.profile.tables.last_mut()) {
            // One more interval of a live session.
            (Some((_, s)), Some(last))
                if live::continues_live(
                    last,
                    &b.kind,
                    b.scope.as_ref().map(|s| s.text.as_str()),
                    isa,
                ) =>
            {
                let seconds = (self.live_first, *s);
                intervals.sum_into(last_at, isa);
                spare.keep(b.sum_into(last, seconds, isa, notes, names, intervals));
            }
            _ => {
                if let Some((_, s)) = b.timestamp {
                    self.live_first = s;
                }
                let table = b.finish(isa, notes, names, spare);
                self.profile.tables.push(table);
            }
        }
        // Once per input: `perf kvm stat live --vcpu` prints such a table every interval.
        if zero_mins && self.zero_min_noted.is_none() {
            self.zero_min_noted = Some(line);
            self.note(line, ZERO_MIN_NOTE.into());
        }
    }
}
