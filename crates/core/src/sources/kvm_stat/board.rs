//! One kvm_stat screen (a TUI refresh pasted as text) or one `-1` listing, read row by row into
//! a [`Run`]: which rows are children of which parent (by the `parent(child)` spelling or by
//! indentation), the `Total` row, the filter and status lines, and remarks about pasted junk.

use super::build::{Counter, Run, RunKind};
use super::names::{EXIT_PARENT, is_event, split_child};
use super::screen::{self, Columns, Header, Title};
use crate::profile::Note;

/// A screen or listing being read.
#[derive(Debug)]
pub(super) struct Board {
    pub run: Run,
    header: Option<Header>,
    base_indent: Option<usize>,
    last_parent: Option<String>,
    filter: Option<String>,
    /// The VM the title names, for the profile's VM names.
    pub guest: Option<(u32, String)>,
    /// Rows read with their total only where the columns hold two numbers: (line, text).
    blank_rate: Vec<(usize, String)>,
    /// The name and total of a listing's first row: listings print their rows sorted by name,
    /// so a loop's next listing starts with that name again.
    first_row: Option<(String, u64)>,
    /// The `date` line printed just before a listing, as printed.
    pub stamp: Option<String>,
}

impl Board {
    /// A screen starting with `title` (or with a bare header when `None`) at `line`.
    pub(super) fn screen(title: Option<Title>, line: usize) -> Self {
        let mut run = Run::new(RunKind::Screen, line);
        let mut guest = None;
        if let Some(t) = title {
            run.scope = t.scope;
            run.pid = t.pid;
            if let (Some(pid), Some(name)) = (t.pid, t.guest) {
                guest = Some((pid, name.trim_end_matches("...").to_string()));
            }
        }
        Self::with(run, guest)
    }

    /// A `-1` listing starting at `line`.
    pub(super) fn batch(line: usize) -> Self {
        let mut run = Run::new(RunKind::Batch, line);
        run.rate_meaning = "change over the 1 s before printing (events per second)";
        Self::with(run, None)
    }

    fn with(run: Run, guest: Option<(u32, String)>) -> Self {
        Self {
            run,
            header: None,
            base_indent: None,
            last_parent: None,
            filter: None,
            guest,
            blank_rate: Vec::new(),
            first_row: None,
            stamp: None,
        }
    }

    /// A board for the next block of the same kind, pasted without its title and header
    /// (`line` is its first row): the columns, scope and pid of this one.
    pub(super) fn again(&self, line: usize) -> Self {
        let mut b = match self.run.kind {
            RunKind::Batch => Self::batch(line),
            _ => Self::screen(None, line),
        };
        if let Some(h) = self.header {
            b.set_header(h);
        }
        b.run.scope = self.run.scope.clone();
        b.run.pid = self.run.pid;
        b
    }

    /// Whether `raw` is the first row of the next listing of a loop: a clean row (no stray
    /// text) with both numbers, of the name this listing's first row has, under a listing
    /// whose rows have their change column. A row damaged into that name (stray text left in
    /// it) is not taken for one, nor are rows of one number (no `-1` listing prints those).
    ///
    /// A counter of KVM's own statistics (`exits`, not a `kvm_` tracepoint or its child)
    /// counts from the VM's start, so its total in the next listing is never below this one's:
    /// a lower total is a row damaged into the first row's name (`halt_exits` cut to `exits`),
    /// read as a row. Tracepoints count from each listing's start, so their totals say nothing.
    pub(super) fn repeats(&self, raw: &str) -> bool {
        let Some((first, first_total)) = &self.first_row else {
            return false;
        };
        self.run.kind == RunKind::Batch
            && self.run.counters.iter().any(|c| c.rate.is_some())
            && screen::row(raw, self.columns(), self.run.by_guest).is_some_and(|r| {
                r.strays.is_empty()
                    && r.rate.is_some()
                    && *first == r.name
                    && (first.starts_with("kvm_") || r.total >= *first_total)
            })
    }

    /// Whether a top-level row named `name` was read.
    pub(super) fn has_counter(&self, name: &str) -> bool {
        self.run.counters.iter().any(|c| c.name == name && !c.child)
    }

    /// The columns rows are read in (a `-1` listing's, until a header says otherwise).
    pub(super) fn columns(&self) -> Columns {
        self.header.map_or(Columns::TotalRate, |h| h.columns)
    }

    /// Whether a column header was read.
    pub(super) fn has_header(&self) -> bool {
        self.header.is_some()
    }

    /// Whether any row was read.
    pub(super) fn has_rows(&self) -> bool {
        !self.run.counters.is_empty() || self.run.printed_total.is_some()
    }

    /// Takes the column header.
    pub(super) fn set_header(&mut self, h: Header) {
        self.run.by_guest = h.by_guest;
        self.run.rate_meaning = match h.columns {
            Columns::TotalPercentRate => "CurAvg/s: events per second over the last refresh",
            Columns::TotalRate => "Current: events per second over the last refresh",
        };
        self.base_indent = Some(h.indent);
        self.header = Some(h);
    }

    /// Reads line `n` (`raw` as printed, `t` trimmed); false when it is not part of a board.
    pub(super) fn line(&mut self, n: usize, raw: &str, t: &str, notes: &mut Vec<Note>) -> bool {
        if let Some(f) = screen::filter(t) {
            self.filter = Some(f.to_string());
            return true;
        }
        if let Some(message) = screen::status(t) {
            notes.push(Note {
                line: Some(n),
                message: message.to_string(),
            });
            return true;
        }
        let columns = self.header.map_or(Columns::TotalRate, |h| h.columns);
        let Some(row) = screen::row(raw, columns, self.run.by_guest) else {
            return false;
        };
        if self.run.kind == RunKind::Screen && self.run.rate_meaning.is_empty() {
            self.run.rate_meaning = "Current: events per second over the last refresh";
        }
        if row.name == "Total" {
            self.run.printed_total = Some(row.total);
            self.run.printed_rate = row.rate;
            return true;
        }
        if !row.strays.is_empty() {
            notes.push(Note {
                line: Some(n),
                message: format!(
                    "ignored stray text `{}` in the row of `{}`",
                    row.strays.join(" "),
                    row.name
                ),
            });
        }
        if row.negative {
            notes.push(Note {
                line: Some(n),
                message: format!(
                    "`{}` went down since the previous refresh (a guest went away); its rate is left out",
                    row.name
                ),
            });
        }
        if columns == Columns::TotalRate && row.rate.is_none() && !row.negative {
            self.blank_rate.push((n, t.to_string()));
        }
        if self.run.kind == RunKind::Batch && self.first_row.is_none() {
            self.first_row = Some((row.name.clone(), row.total));
        }
        let base = *self.base_indent.get_or_insert(row.indent);
        let (name, exit, child) = match split_child(&row.name) {
            Some((parent, reason)) => (
                row.name.clone(),
                (parent == EXIT_PARENT).then(|| reason.to_string()),
                true,
            ),
            None => match &self.last_parent {
                Some(parent)
                    if row.indent >= base + 2 && !self.run.by_guest && !is_event(&row.name) =>
                {
                    let exit = (parent == EXIT_PARENT).then(|| row.name.clone());
                    let name = if parent.starts_with("kvm_") {
                        format!("{parent}({})", row.name)
                    } else {
                        row.name.clone()
                    };
                    (name, exit, true)
                }
                _ => {
                    self.last_parent = Some(row.name.clone());
                    (row.name.clone(), None, false)
                }
            },
        };
        self.run.counters.push(Counter {
            name,
            exit,
            child,
            total: row.total,
            rate: row.rate,
            line: n,
        });
        true
    }

    /// Rows with a total and no rate, where other rows have both, taken out of the run (marked
    /// partial): a row cut short keeps a count that may be cut too, and no number is guessed.
    /// When no row has a rate (the first refresh of a 2012 screen), they are all kept.
    pub(super) fn take_cut_rows(&mut self) -> Vec<(usize, String)> {
        if self.blank_rate.is_empty() || self.run.counters.iter().all(|c| c.rate.is_none()) {
            return Vec::new();
        }
        let cut = std::mem::take(&mut self.blank_rate);
        self.run
            .counters
            .retain(|c| !cut.iter().any(|(line, _)| *line == c.line));
        self.run.partial = true;
        cut
    }

    /// The run, with the filter folded into its scope.
    pub(super) fn finish(mut self) -> Run {
        if let Some(f) = self.filter.take() {
            let base = self.run.scope.take().unwrap_or_else(|| "summary".into());
            self.run.scope = Some(format!("{base}, fields matching `{f}`"));
        }
        self.run
    }
}
