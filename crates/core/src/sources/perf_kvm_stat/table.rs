//! Turning the rows of one printed table into a profile [`Table`]: decoding the keys (exit
//! names of any era under the table's ISA, unknown codes attached from perf's stderr notes,
//! port/MMIO/MSR addresses), checking the rows against the printed totals, and summing the
//! intervals of a live session into one table with its window.

use rustc_hash::FxHashMap;

use super::layout::{Layout, Scope};
use super::row::RawRow;
use crate::decode::{Isa, exit_reason};
use crate::profile::fold::{TABLE_CAP, folded_note, other_key};
use crate::profile::{Key, Note, PrintedTotal, Row, Table, TableKind, Window};

/// Exit names already decoded, by ISA: a live session repeats the same dozen names.
#[derive(Debug, Default)]
pub(super) struct NameCache {
    /// (Fx-hashed: looked up once per row, where SipHash was 6% of a transcript's reading.)
    keys: FxHashMap<Option<Isa>, FxHashMap<String, Key>>,
    /// The ISA guessed for a set of names, by a hash of the set (Fx: hashed once per table,
    /// that is once per interval of a live transcript).
    isas: FxHashMap<u64, Option<Isa>>,
}

impl NameCache {
    /// The canonical key of exit name `name` under `isa` (the name itself when unknown).
    fn exit_key(&mut self, isa: Option<Isa>, name: &str) -> Key {
        let names = self.keys.entry(isa).or_default();
        if let Some(k) = names.get(name) {
            return k.clone();
        }
        let key = match exit_reason::lookup_name(isa, name) {
            Some(info) => Key::Exit {
                name: info.name.to_string(),
                code: Some(info.code),
            },
            None => Key::Exit {
                name: name.to_string(),
                code: None,
            },
        };
        names.insert(name.to_string(), key.clone());
        key
    }

    /// The ISA the names of a table most likely come from.
    fn guess_isa<'a>(&mut self, names: impl Iterator<Item = &'a str> + Clone) -> Option<Isa> {
        use std::hash::BuildHasher;
        // Order-independent: live intervals list the same names in a different order.
        let hasher = rustc_hash::FxBuildHasher;
        let set = names
            .clone()
            .fold(0u64, |acc, n| acc.wrapping_add(hasher.hash_one(n)));
        *self
            .isas
            .entry(set)
            .or_insert_with(|| exit_reason::guess_isa(names))
    }
}

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

/// Key strings kept for reuse between tables (a live interval has a few dozen rows).
pub(super) const SPARE_KEYS: usize = 64;

/// The key of the row the rarest rows of a long table fold into while it is read.
const OTHER: &str = "other";

impl Building {
    /// Adds a row. A table of more rows than twice [`TABLE_CAP`] folds its rarest into one
    /// `other` row as it is read, so a table of millions of distinct addresses takes bounded
    /// memory; the rows are folded to the cap once read (`checks::settle`).
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

    /// Decodes and checks the table; notes go to `notes`.
    /// The rows' keys go to `spare` (up to [`SPARE_KEYS`]), for the rows of the next table.
    pub(super) fn finish(
        mut self,
        notes: &mut Vec<Note>,
        names: &mut NameCache,
        spare: &mut Vec<String>,
    ) -> Table {
        if self.folded_rows > 0 && self.rows.len() > TABLE_CAP {
            self.fold();
        }
        let mut table = Table::new(self.kind.clone());
        table.rows.reserve_exact(self.rows.len());
        table.line = Some(self.line);
        table.label = self.label.clone();
        table.scope = self.scope.as_ref().map(|s| s.text.clone());
        table.isa = self.isa(names);
        let (pid, vcpu) = self
            .scope
            .as_ref()
            .map_or((None, None), |s| (s.pid, s.vcpu));
        let mut unknown_rows = 0;
        let mut zero_min = false;
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
        for (raw, unknown) in &self.rows {
            let key = match &folded_key {
                Some(folded) if raw.key == OTHER => folded.clone(),
                _ => self.decode_key(raw, *unknown, table.isa, &mut unknown_rows, names),
            };
            let mut row = Row::new(key, raw.count);
            row.time = raw.time.clone();
            if vcpu.is_some() && row.time.min_ns == Some(0) {
                // perf zero-fills per-vCPU stats, so `--vcpu` tables print `Min Time 0.00us`.
                row.time.min_ns = None;
                zero_min = true;
            }
            row.pid = pid;
            row.vcpu = vcpu;
            table.rows.push(row);
        }
        if zero_min {
            notes.push(Note {
                line: Some(self.line),
                message: "min times of 0.00us in a --vcpu table are a perf artefact (zero-filled per-vCPU stats); shown as unknown".into(),
            });
        }
        table.partial = self.partial | self.check_totals(&table, notes);
        table.printed_total = self.total;
        if let Some((text, _)) = &self.timestamp {
            table.window = Some(Window {
                start: Some(text.clone()),
                end: Some(text.clone()),
                duration_ns: None,
                intervals: 1,
            });
        }
        let room = SPARE_KEYS.saturating_sub(spare.len());
        spare.extend(self.rows.into_iter().take(room).map(|(r, _)| r.key));
        table
    }

    /// The ISA: from perf's stderr notes if any, otherwise inferred from the names.
    fn isa(&self, names: &mut NameCache) -> Option<Isa> {
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
        names.guess_isa(self.rows.iter().map(|(r, _)| r.key.as_str()))
    }

    fn decode_key(
        &self,
        raw: &RawRow,
        unknown: Option<(u64, Option<Isa>)>,
        isa: Option<Isa>,
        unknown_rows: &mut usize,
        names: &mut NameCache,
    ) -> Key {
        match self.kind {
            TableKind::Vmexit => {
                if raw.key == "UNKNOWN" {
                    return match unknown {
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
                    };
                }
                names.exit_key(isa, &raw.key)
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
        }
    }

    /// Checks the rows against the printed total; true when rows are missing (or events
    /// were lost).
    fn check_totals(&self, table: &Table, notes: &mut Vec<Note>) -> bool {
        let Some(total) = &self.total else {
            return false;
        };
        let rows = table.count();
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
                    table.kind, total.count
                ),
            });
        }
        rows < total.count || lost
    }
}

/// Adds the rows of `next` (one more interval of a live session) into `into`.
pub(super) fn sum_interval(into: &mut Table, next: Table, seconds: (f64, f64)) {
    for row in next.rows {
        match into
            .rows
            .iter_mut()
            .find(|r| r.key == row.key && r.pid == row.pid && r.vcpu == row.vcpu)
        {
            Some(existing) => existing.merge(&row),
            None => into.rows.push(row),
        }
    }
    into.partial |= next.partial;
    if let (Some(a), Some(b)) = (&mut into.printed_total, next.printed_total) {
        a.count = a.count.saturating_add(b.count);
        a.time_ns = a.time_ns.zip(b.time_ns).map(|(x, y)| x.saturating_add(y));
        a.lost_events = match (a.lost_events, b.lost_events) {
            (None, None) => None,
            (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
        };
    }
    if let (Some(w), Some(nw)) = (&mut into.window, next.window) {
        w.intervals += nw.intervals;
        w.end = nw.end;
        let (first, last) = seconds;
        let span = if last >= first {
            last - first
        } else {
            last + 86_400.0 - first
        };
        // n displays at equal intervals cover n × (span / (n − 1)).
        let n = f64::from(w.intervals);
        w.duration_ns = (n > 1.0 && span > 0.0).then(|| (span * n / (n - 1.0) * 1e9) as u64);
    }
}

/// The label of a live table summed from intervals ([`sum_interval`]): its window. Set once
/// all are read (formatting it at every interval cost more than summing it).
pub(super) fn label_live(table: &mut Table) {
    if let Some(w) = table.window.as_ref().filter(|w| w.intervals > 1) {
        table.label = Some(format!(
            "live {}–{} ({} intervals)",
            w.start.as_deref().unwrap_or("?"),
            w.end.as_deref().unwrap_or("?"),
            w.intervals
        ));
    }
}
