//! Turning the rows of one printed table into a profile [`Table`]: decoding the keys (exit
//! names of any era under the table's ISA, unknown codes attached from perf's stderr notes,
//! port/MMIO/MSR addresses), checking the rows against the printed totals, and summing each
//! interval of a live session into the session's table (what else is summed: `live`).

use std::borrow::Cow;

use super::interval::Intervals;
use super::layout::{Layout, Scope};
use super::live;
use super::names::NameCache;
use super::row::RawRow;
use crate::decode::{Isa, exit_reason};
use crate::profile::fold::{TABLE_CAP, folded_note, other_key};
use crate::profile::{Key, Note, PrintedTotal, Row, Table, TableKind, TimeStats, Window};

/// An exit code perf could not name, from its stderr note, and the ISA the note names.
pub(super) type UnknownCode = (u64, Option<Isa>);

/// The code perf's stderr note gave an `UNKNOWN` row (taken: each note is for one row).
pub(super) fn pending_code(r: &RawRow, pending: &mut Option<UnknownCode>) -> Option<UnknownCode> {
    if r.key == "UNKNOWN" {
        pending.take()
    } else {
        None
    }
}

/// A table being read.
#[derive(Debug)]
pub(super) struct Building {
    pub kind: TableKind,
    pub layout: Layout,
    pub label: Option<String>,
    pub scope: Option<Scope>,
    /// Live-mode timestamp: the text and seconds since midnight.
    pub timestamp: Option<(String, f64)>,
    pub line: usize,
    /// Started by a column header (not by rows printed without one).
    pub header: bool,
    pub rows: Vec<(RawRow, Option<UnknownCode>)>,
    pub total: Option<PrintedTotal>,
    pub elided: bool,
    /// Rows are missing: elided, unreadable, or cut off by the end of the input.
    pub partial: bool,
    /// Rows folded into the `other` row while reading ([`Building::push`]), and the range of
    /// their addresses.
    pub folded_rows: u64,
    pub folded_range: Option<(u64, u64)>,
}

/// What a finished table leaves for the next one to reuse: the room for its rows and the
/// strings of their keys (the intervals of a live transcript have about the same rows).
#[derive(Debug, Default)]
pub(super) struct Spare {
    pub keys: Vec<String>,
    pub rows: Vec<(RawRow, Option<UnknownCode>)>,
}

/// The most key strings kept for reuse (a live interval has a few dozen rows).
const SPARE_KEYS: usize = 64;

impl Spare {
    /// Keeps the key strings of `rows` (up to [`SPARE_KEYS`]) and, emptied, `rows` itself
    /// unless it is larger than a live interval needs.
    pub(super) fn keep(&mut self, mut rows: Vec<(RawRow, Option<UnknownCode>)>) {
        let room = SPARE_KEYS.saturating_sub(self.keys.len());
        self.keys
            .extend(rows.drain(..).take(room).map(|(r, _)| r.key));
        if rows.capacity() <= SPARE_KEYS {
            self.rows = rows;
        }
    }

    /// The room for a new table's rows.
    pub(super) fn rows(&mut self) -> Vec<(RawRow, Option<UnknownCode>)> {
        std::mem::take(&mut self.rows)
    }
}

/// The key of the row the rarest rows of a long table fold into while it is read.
const OTHER: &str = "other";

impl Building {
    /// Adds a row. A table of more rows than twice [`TABLE_CAP`] folds its rarest into one
    /// `other` row as it is read, so a table of millions of distinct addresses takes bounded
    /// memory; the rows are folded to the cap once read (`checks::settle`).
    /// How many rows were read into the table: those it holds (the `other` row not counted
    /// when rows were folded into it) and those folded.
    pub(super) fn rows_read(&self) -> u64 {
        let held = self.rows.len() as u64;
        self.folded_rows + held.saturating_sub(u64::from(self.folded_rows > 0))
    }

    pub(super) fn push(&mut self, row: RawRow, unknown: Option<UnknownCode>) {
        self.rows.push((row, unknown));
        if self.rows.len() >= 2 * TABLE_CAP {
            self.fold();
        }
    }

    /// Folds all but the `TABLE_CAP − 1` largest rows into one `other` row (the first `other`
    /// row is kept and grows), leaving [`TABLE_CAP`] rows.
    fn fold(&mut self) {
        let other_at = self.rows.iter().position(|(r, _)| r.key.starts_with(OTHER));
        let mut other = other_at.map(|i| self.rows.swap_remove(i).0);
        let keep = TABLE_CAP - 1;
        if self.rows.len() > keep {
            self.rows
                .select_nth_unstable_by(keep, |a, b| b.0.count.cmp(&a.0.count));
        }
        let rest = self.rows.split_off(keep.min(self.rows.len()));
        let (mut range, mut n) = (self.folded_range, 0u64);
        for (r, _) in rest {
            n += 1;
            if let Some((a, _)) = Key::parse_perf_address(&r.key) {
                range = Some(range.map_or((a, a), |(l, h): (u64, u64)| (l.min(a), h.max(a))));
            }
            match &mut other {
                Some(o) => {
                    o.time.merge(o.count, &r.time, r.count);
                    o.count = o.count.saturating_add(r.count);
                }
                None => {
                    other = Some(RawRow {
                        key: OTHER.to_string(),
                        ..r
                    })
                }
            }
        }
        self.folded_range = range;
        self.folded_rows += n;
        if let Some(o) = other {
            self.rows.push((o, None));
        }
    }

    /// Decodes and checks the table, settled, whose rows are of ISA `isa` ([`Building::settle`]); notes
    /// go to `notes`, and the rows to `spare` for the next table.
    pub(super) fn finish(
        mut self,
        isa: Option<Isa>,
        notes: &mut Vec<Note>,
        names: &mut NameCache,
        spare: &mut Spare,
    ) -> Table {
        let mut table = Table::new(self.kind.clone());
        table.rows.reserve_exact(self.rows.len());
        table.line = Some(self.line);
        table.label = self.label.clone();
        table.scope = self.scope.as_ref().map(|s| s.text.clone());
        table.isa = isa;
        let (pid, vcpu) = self.ids();
        let count = self.decode(isa, notes, names, |key, count, time| {
            table.rows.push(row(key, (pid, vcpu), count, time));
        });
        table.partial = self.partial | self.check_totals(count, notes);
        table.printed_total = self.total;
        table.window = self.timestamp.take().map(|(text, _)| Window {
            start: Some(text.clone()),
            end: Some(text),
            duration_ns: None,
            intervals: 1,
        });
        spare.keep(self.rows);
        table
    }

    /// Sums the table, one more interval of the live session `into` sums and read at
    /// `seconds` (its first interval's and this one's), into it: what [`live::sum_interval`] does
    /// with the table [`Building::finish`] makes, without making it (a table per interval,
    /// its keys copied then dropped, cost more than reading its rows). The rows of `into`
    /// each name's row sums into are found through `intervals`, made ready for `into` and
    /// numbered for this table ([`Intervals::sum_into`], [`Building::settle`]). Gives back
    /// the room of the table's rows.
    pub(super) fn sum_into(
        mut self,
        into: &mut Table,
        seconds: (f64, f64),
        isa: Option<Isa>,
        notes: &mut Vec<Note>,
        names: &mut NameCache,
        intervals: &mut Intervals,
    ) -> Vec<(RawRow, Option<UnknownCode>)> {
        // Where every row's key is its name's decoded (no row folded, no `UNKNOWN` numbered),
        // the row it sums into is its name's.
        let by_name = self.folded_rows == 0 && !self.rows.iter().any(|(r, _)| r.key == "UNKNOWN");
        let count = if by_name {
            self.sum_by_name(&mut into.rows, isa, names, intervals)
        } else {
            let (ids, rows) = (self.ids(), &mut into.rows);
            self.decode(isa, notes, names, |key, count, time| {
                add_row(rows, key, ids, count, time);
            })
        };
        let partial = self.partial | self.check_totals(count, notes);
        let window = self.timestamp.take().map(|(text, _)| Window {
            start: None,
            end: Some(text),
            duration_ns: None,
            intervals: 1,
        });
        live::sum_totals(into, partial, self.total, window, seconds);
        self.rows
    }

    /// Sums each row into the row of `rows` its name's rows were summed into before, or, the
    /// first time, into the one [`Building::decode`] would (found by its decoded key, or
    /// added). Returns the sum of the counts.
    fn sum_by_name(
        &self,
        rows: &mut Vec<Row>,
        isa: Option<Isa>,
        names: &mut NameCache,
        intervals: &mut Intervals,
    ) -> u64 {
        let ids = self.ids();
        let mut count = 0u64;
        for (i, (raw, unknown)) in self.rows.iter().enumerate() {
            let time = row_time(raw, ids.1);
            count = count.saturating_add(raw.count);
            if let Some(r) = intervals.row(i).and_then(|at| rows.get_mut(at)) {
                r.add(raw.count, &time);
                r.latency = None;
                continue;
            }
            let key = self.decode_key(raw, *unknown, isa, &mut 0, names);
            intervals.found(i, add_row(rows, key, ids, raw.count, time));
        }
        count
    }

    /// The VMM process and vCPU the table's scope names.
    fn ids(&self) -> (Option<u32>, Option<u32>) {
        self.scope
            .as_ref()
            .map_or((None, None), |s| (s.pid, s.vcpu))
    }

    /// Gives `each` every row decoded under `isa`: its key, count and times (notes go to
    /// `notes`). Returns the sum of the counts.
    fn decode(
        &mut self,
        isa: Option<Isa>,
        notes: &mut Vec<Note>,
        names: &mut NameCache,
        mut each: impl FnMut(Cow<'_, Key>, u64, TimeStats),
    ) -> u64 {
        let vcpu = self.ids().1;
        let mut unknown_rows = 0;
        // Only a table that folded rows has an `other` row (made once per table, not per
        // interval of a live transcript).
        let folded_key = (self.folded_rows > 0).then(|| other_key(&self.kind, self.folded_range));
        if let Some(folded_key) = &folded_key {
            let events = self
                .rows
                .iter()
                .find(|(r, _)| r.key == OTHER)
                .map_or(0, |(r, _)| r.count);
            let mut note = folded_note(&self.kind, TABLE_CAP, folded_key, self.folded_rows, events);
            note.line = Some(self.line);
            notes.push(note);
        }
        let mut count = 0u64;
        for (raw, unknown) in &self.rows {
            let key = match &folded_key {
                Some(folded) if raw.key == OTHER => Cow::Borrowed(folded),
                _ => self.decode_key(raw, *unknown, isa, &mut unknown_rows, names),
            };
            count = count.saturating_add(raw.count);
            each(key, raw.count, row_time(raw, vcpu));
        }
        count
    }

    /// Whether the table is a vCPU's with a row of `Min Time 0.00us`, which perf's
    /// zero-filled per-vCPU stats print and which is read as an unknown minimum.
    pub(super) fn zero_mins(&self) -> bool {
        self.ids().1.is_some() && self.rows.iter().any(|(r, _)| r.time.min_ns == Some(0))
    }

    /// Folds the rows still to fold, numbers their names in `intervals`, then gives the ISA
    /// of the rows kept: from perf's stderr notes if any, otherwise inferred from the names.
    /// [`Building::finish`] and [`Building::sum_into`] take the table this leaves.
    pub(super) fn settle(
        &mut self,
        names: &mut NameCache,
        intervals: &mut Intervals,
    ) -> Option<Isa> {
        if self.folded_rows > 0 && self.rows.len() > TABLE_CAP {
            self.fold();
        }
        intervals.number(&self.rows);
        if self.kind != TableKind::Vmexit {
            return None;
        }
        if let Some(isa) = self
            .rows
            .iter()
            .find_map(|(_, u)| u.and_then(|(_, isa)| isa))
        {
            return Some(isa);
        }
        let rows = &self.rows;
        intervals.guess(|| names.guess_isa(rows.iter().map(|(r, _)| r.key.as_str())))
    }

    fn decode_key<'n>(
        &self,
        raw: &RawRow,
        unknown: Option<(u64, Option<Isa>)>,
        isa: Option<Isa>,
        unknown_rows: &mut usize,
        names: &'n mut NameCache,
    ) -> Cow<'n, Key> {
        Cow::Owned(match self.kind {
            TableKind::Vmexit => {
                if raw.key == "UNKNOWN" {
                    return Cow::Owned(match unknown {
                        Some((code, code_isa)) => {
                            let isa = code_isa.or(isa);
                            match isa.and_then(|i| exit_reason::lookup_code(i, code)) {
                                Some(info) => Key::Exit {
                                    name: info.name.to_string(),
                                    code: Some(info.code),
                                },
                                None => Key::Exit {
                                    name: exit_reason::unknown_key(isa, code),
                                    code: Some(code),
                                },
                            }
                        }
                        None => {
                            *unknown_rows += 1;
                            let name = match *unknown_rows {
                                1 => "UNKNOWN".to_string(),
                                n => format!("UNKNOWN#{n}"),
                            };
                            Key::Exit { name, code: None }
                        }
                    });
                }
                return Cow::Borrowed(names.exit_key(isa, &raw.key));
            }
            TableKind::Ioport | TableKind::Mmio | TableKind::Msr => {
                match Key::parse_perf_address(&raw.key) {
                    Some((n, access)) => match self.kind {
                        TableKind::Ioport => Key::Port { port: n, access },
                        TableKind::Mmio => Key::Mmio { gpa: n, access },
                        _ => Key::Msr { index: n, access },
                    },
                    None => Key::Event {
                        name: raw.key.clone(),
                    },
                }
            }
            _ => Key::Event {
                name: raw.key.clone(),
            },
        })
    }

    /// Checks the rows against the printed total; true when rows are missing (or events
    /// were lost).
    fn check_totals(&self, rows: u64, notes: &mut Vec<Note>) -> bool {
        let Some(total) = &self.total else {
            return false;
        };
        let lost = total.lost_events.is_some_and(|l| l > 0);
        if rows != total.count {
            let why = if self.elided {
                "the author elided rows"
            } else if rows < total.count {
                "rows are missing (elided or cut off?)"
            } else {
                "the rows count more than the total"
            };
            notes.push(Note {
                line: Some(self.line),
                message: format!(
                    "{} table: rows add up to {rows} samples but the total line says {}; {why}",
                    self.kind, total.count
                ),
            });
        }
        rows < total.count || lost
    }
}

/// The times of `raw`, a row of a table of vCPU `vcpu`: perf zero-fills per-vCPU stats, so
/// `--vcpu` tables print `Min Time 0.00us`, read as unknown (noted by the reader, once: see
/// [`Building::zero_mins`]).
fn row_time(raw: &RawRow, vcpu: Option<u32>) -> TimeStats {
    let mut time = raw.time.clone();
    if vcpu.is_some() && time.min_ns == Some(0) {
        time.min_ns = None;
    }
    time
}

/// Adds `count` events of `key` with durations `time`, of the VMM process and vCPU `ids`, to
/// the first row of `rows` with that key and ids, or as a row of its own; returns where.
fn add_row(
    rows: &mut Vec<Row>,
    key: Cow<'_, Key>,
    ids: (Option<u32>, Option<u32>),
    count: u64,
    time: TimeStats,
) -> usize {
    let same = |r: &Row| r.key == *key && (r.pid, r.vcpu) == ids;
    match rows.iter().position(same) {
        Some(at) => {
            rows[at].add(count, &time);
            rows[at].latency = None;
            at
        }
        None => {
            rows.push(row(key, ids, count, time));
            rows.len() - 1
        }
    }
}

/// A row of a table read: `count` events of `key` with durations `time`, of the VMM process
/// and vCPU `ids`.
fn row(key: Cow<'_, Key>, ids: (Option<u32>, Option<u32>), count: u64, time: TimeStats) -> Row {
    Row {
        key: key.into_owned(),
        pid: ids.0,
        vcpu: ids.1,
        count,
        time,
        latency: None,
    }
}
