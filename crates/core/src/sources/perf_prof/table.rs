//! One perf-prof kvm-exit run summed into a `vmexit` table.
//!
//! - Every interval's table is added in (perf-prof resets its statistics after each print), and
//!   the interval stamps give the window: from one interval before the first stamp to the last
//!   (the `-i` interval when the command line shows it, else the mean gap between stamps).
//! - Rows get count, total, min and max; the mean follows from total/count, and a printed
//!   `avg` that disagrees with it (perf-prof prints `floor(sum/n)` in µs) is noted.
//! - `p99` is a t-digest estimate of one interval: a single percentile is not a latency
//!   histogram, so it is not put in the row (`Row::latency` stays `None`); it is reported in a
//!   note when the run has one interval, and said to be dropped otherwise.
//! - `%gsys` (the share of exit time with the guest in kernel mode) has no place in a row and
//!   is left out.
//! - `--perins` rows of several threads or CPUs are summed per exit reason (a row has no thread
//!   or CPU), and a note names the instances.

use std::collections::BTreeSet;

use super::layout::Instance;
use super::row::RawRow;
use crate::decode::exit_reason;
use crate::profile::{Key, Note, Row, Table, TableKind, TimeStats, Window};

/// A run being summed.
#[derive(Debug, Default)]
pub(super) struct Acc {
    pub line: usize,
    pub label: Option<String>,
    pub interval_ms: Option<u64>,
    rows: Vec<(String, Row)>,
    pending: Option<(String, i64)>,
    counted: bool,
    first: Option<(String, i64)>,
    last: Option<(String, i64)>,
    intervals: u32,
    p99: Vec<(String, u64)>,
    instances: BTreeSet<(Instance, u32)>,
    /// The first row whose printed avg is not total/calls, and how many there are.
    mismatch: Option<(usize, String)>,
    mismatches: usize,
    /// `--tsc`: times in kilocycles.
    pub cycles: bool,
    /// `--than` event lines passed over.
    pub events: usize,
    /// Rows are missing: unreadable, elided, or cut off by the end of the input.
    pub partial: bool,
}

impl Acc {
    /// A run starting at `line`.
    pub(super) fn new(line: usize) -> Self {
        Self {
            line,
            ..Self::default()
        }
    }

    /// Whether any row was read.
    pub(super) fn has_rows(&self) -> bool {
        !self.rows.is_empty()
    }

    /// An interval stamp: the rows that follow belong to a new interval.
    pub(super) fn stamp(&mut self, text: &str, ns: i64) {
        self.pending = Some((text.to_string(), ns));
        self.counted = false;
    }

    /// Adds one row, read on `line`, of `instance` (`--perins`).
    pub(super) fn row(&mut self, line: usize, raw: RawRow, instance: Option<(Instance, u32)>) {
        if !self.counted {
            self.counted = true;
            self.intervals = self.intervals.saturating_add(1);
            self.p99.clear();
            if let Some(p) = self.pending.take() {
                if self.first.is_none() {
                    self.first = Some(p.clone());
                }
                self.last = Some(p);
            }
        }
        if let Some(i) = instance {
            self.instances.insert(i);
        }
        if let (Some(avg), Some(total)) = (raw.avg_ns, raw.total_ns)
            && raw.calls > 0
        {
            let exact = total / raw.calls;
            if avg.abs_diff(exact) > 1 {
                self.mismatches += 1;
                if self.mismatch.is_none() {
                    self.mismatch = Some((line, raw.name.clone()));
                }
            }
        }
        if let Some(p99) = raw.p99_ns {
            self.p99.push((raw.name.clone(), p99));
        }
        let mut row = Row::new(
            Key::Exit {
                name: raw.name.clone(),
                code: None,
            },
            raw.calls,
        );
        if raw.total_ns.is_some() {
            row.time = TimeStats {
                total_ns: raw.total_ns,
                min_ns: raw.min_ns,
                max_ns: raw.max_ns,
                m2: None,
                timed: None,
            };
        } else if raw.cut && !self.cycles {
            // Counted, not timed: the other intervals' times stay the mean of their events.
            row.time.timed = Some(0);
        }
        match self.rows.iter_mut().find(|(n, _)| *n == raw.name) {
            Some((_, existing)) => existing.merge(&row),
            None => self.rows.push((raw.name, row)),
        }
    }

    /// The run's table (`None` without rows); remarks go to `notes`.
    pub(super) fn finish(self, notes: &mut Vec<Note>) -> Option<Table> {
        if self.rows.is_empty() {
            return None;
        }
        let mut table = Table::new(TableKind::Vmexit);
        table.partial = self.partial;
        table.label.clone_from(&self.label);
        table.line = Some(self.line);
        table.isa = exit_reason::guess_isa(self.rows.iter().map(|(n, _)| n.as_str()));
        for (name, mut row) in self.rows.iter().cloned() {
            row.key = match exit_reason::lookup_name(table.isa, &name) {
                Some(info) => Key::Exit {
                    name: info.name.to_string(),
                    code: Some(info.code),
                },
                None => Key::Exit { name, code: None },
            };
            match table.rows.iter_mut().find(|r| r.key == row.key) {
                Some(existing) => existing.merge(&row),
                None => table.rows.push(row),
            }
        }
        table.window = Some(self.window());
        let mut note = |message: String| {
            notes.push(Note {
                line: Some(self.line),
                message,
            });
        };
        if !self.instances.is_empty() {
            let mut list: Vec<String> = self
                .instances
                .iter()
                .take(8)
                .map(|(kind, n)| format!("{} {n}", kind.word()))
                .collect();
            if self.instances.len() > 8 {
                list.push(format!("… ({} instances)", self.instances.len()));
            }
            note(format!(
                "--perins rows summed per exit reason (a profile row has no thread or CPU): {}",
                list.join(", ")
            ));
        }
        if !self.p99.is_empty() && self.intervals == 1 {
            let list: Vec<String> = self
                .p99
                .iter()
                .map(|(n, ns)| format!("{n} {}.{:03}us", ns / 1000, ns % 1000))
                .collect();
            note(format!(
                "p99 per exit reason (perf-prof's t-digest estimate; not a histogram, so kept \
                 out of the rows): {}",
                list.join(", ")
            ));
        } else if !self.p99.is_empty() {
            note(format!(
                "the p99 column of {} intervals cannot be combined into one value; left out",
                self.intervals
            ));
        }
        if self.cycles {
            note("times are in kilocycles (--tsc), not convertible to ns: only counts kept".into());
        }
        if self.events > 0 {
            note(format!(
                "{} slow-exit event lines (--than) passed over",
                self.events
            ));
        }
        if let Some((line, name)) = &self.mismatch {
            let more = match self.mismatches {
                1 => String::new(),
                n => format!(" (and {} more rows)", n - 1),
            };
            notes.push(Note {
                line: Some(*line),
                message: format!(
                    "`{name}`: the printed avg disagrees with total/calls{more}; the mean shown \
                     is total/calls"
                ),
            });
        }
        Some(table)
    }

    fn window(&self) -> Window {
        let span = match (&self.first, &self.last) {
            (Some((_, a)), Some((_, b))) => u64::try_from(b.saturating_sub(*a)).ok(),
            _ => None,
        };
        let n = u64::from(self.intervals);
        let interval = self.interval_ms.map(|ms| ms.saturating_mul(1_000_000));
        let duration = match (span, interval) {
            (Some(span), Some(i)) if n > 1 => Some(span.saturating_add(i)),
            // n stamps at equal spacing cover n × (span / (n − 1)).
            (Some(span), None) if n > 1 => Some(span.saturating_add(span / (n - 1))),
            (_, Some(i)) => Some(i.saturating_mul(n)),
            _ => None,
        };
        Window {
            start: self.first.as_ref().map(|f| f.0.clone()),
            end: self.last.as_ref().map(|l| l.0.clone()),
            duration_ns: duration.filter(|d| *d > 0),
            intervals: self.intervals,
        }
    }
}
