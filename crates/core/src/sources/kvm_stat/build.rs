//! Turning one kvm_stat run (a screen, a `-1` listing, or a `-l`/`-c` log) into profile tables:
//!
//! - children of `kvm_exit` (`kvm_exit(HLT)`, or `HLT` indented under `kvm_exit`) → a `vmexit`
//!   table keyed by decoded exit reason, checked against the parent's own count;
//! - every other counter (debugfs `exits`, `io_exits`, …, tracepoints, `kvm_userspace_exit`
//!   children) → a `KvmStat` table keyed by name (`KvmStatGuest` on a by-guest screen);
//! - the rate column of a screen or listing → a `KvmStatRate` table with the same keys whose
//!   counts are events per second (see the note on rates below).

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::names::EXIT_PARENT;
use crate::decode::exit_reason;
use crate::profile::{Key, Note, PrintedTotal, Row, Table, TableKind, Window};
use crate::sources::capped_notes::CappedNotes;

// Why the rate column is a table of its own (`TableKind::KvmStatRate`): kvm_stat's
// `CurAvg/s` (and the older `Current`) is the change of a counter over the last refresh
// divided by the refresh interval, rounded; `-1`'s third column is the change over the one
// second it sleeps. Both are events per second at the time of printing, with no capture window
// behind them, so they cannot be rows of the count tables. They get a table of their own whose
// row `count` is that per-second rate, so reports show them and `compare` sets them side by
// side; the totals stay counts in the other tables.

/// What printed the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunKind {
    Screen,
    Batch,
    Log,
}

impl RunKind {
    /// The word used to label unlabelled runs of a file that holds several.
    pub(super) fn word(self) -> &'static str {
        match self {
            RunKind::Screen => "screen",
            RunKind::Batch => "kvm_stat -1",
            RunKind::Log => "log",
        }
    }
}

/// One counter of a run.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Counter {
    /// The name to show: `halt_exits`, `kvm_userspace_exit(IO)`, `instruction_diag_44`.
    pub name: String,
    /// The exit reason, when the counter is a child of `kvm_exit`.
    pub exit: Option<String>,
    /// Whether the counter is a child (of `kvm_exit` or another parent): kvm_stat's `Total`
    /// sums only the others.
    pub child: bool,
    pub total: u64,
    /// Events per second, when the run shows a rate.
    pub rate: Option<u64>,
    pub line: usize,
}

/// Everything read from one run.
#[derive(Debug, Clone)]
pub(super) struct Run {
    pub kind: RunKind,
    pub line: usize,
    pub label: Option<String>,
    pub scope: Option<String>,
    pub pid: Option<u32>,
    pub by_guest: bool,
    pub counters: Vec<Counter>,
    /// The `Total` row's count and rate.
    pub printed_total: Option<u64>,
    pub printed_rate: Option<u64>,
    pub window: Option<Window>,
    /// What the rate column means, for the rate table's scope.
    pub rate_meaning: &'static str,
    /// Rows or intervals are missing: unreadable, elided, below the screen's edge, cut off.
    pub partial: bool,
}

impl Run {
    /// An empty run starting at `line`.
    pub(super) fn new(kind: RunKind, line: usize) -> Self {
        Self {
            kind,
            line,
            label: None,
            scope: None,
            pid: None,
            by_guest: false,
            counters: Vec::new(),
            printed_total: None,
            printed_rate: None,
            window: None,
            rate_meaning: "",
            partial: false,
        }
    }
}

/// The tables of `run`; remarks go to `notes`.
pub(super) fn tables(run: &Run, notes: &mut Vec<Note>) -> Vec<Table> {
    let isa = exit_reason::guess_isa(run.counters.iter().filter_map(|c| c.exit.as_deref()));
    let mut exits = new_table(run, TableKind::Vmexit, run.scope.clone());
    exits.isa = isa;
    let counter_kind = if run.by_guest {
        TableKind::KvmStatGuest
    } else {
        TableKind::KvmStat
    };
    let mut counters = new_table(run, counter_kind, run.scope.clone());
    counters.printed_total = run.printed_total.map(printed);
    counters.overlapping = true;
    let rate_scope = match &run.scope {
        Some(s) => format!("{s}; {}", run.rate_meaning),
        None => run.rate_meaning.to_string(),
    };
    let mut rates = new_table(run, TableKind::KvmStatRate, Some(rate_scope));
    rates.window = None;
    rates.overlapping = true;
    rates.per_second = true;
    rates.printed_total = run.printed_rate.map(printed);
    let mut seen: HashMap<(bool, Key), usize> = HashMap::new();
    // How many counter keys are a name or that name with a `#` suffix: the number a name
    // seen again is kept apart with (a map, since a loop of `kvm_stat -1` listings printed
    // back to back repeats every name once per listing).
    let mut bases: HashMap<String, usize> = HashMap::new();
    let mut repeats = CappedNotes::default();
    let (mut exit_rows, mut counter_rows, mut rate_rows) =
        (HashMap::new(), HashMap::new(), HashMap::new());
    for c in &run.counters {
        let (key, is_exit) = match &c.exit {
            Some(reason) => (Key::exit_named(isa, reason), true),
            None => (
                Key::Event {
                    name: c.name.clone(),
                },
                false,
            ),
        };
        let key = match seen.get(&(is_exit, key.clone())).copied() {
            None => key,
            Some(first) if is_exit => {
                repeats.note(notes, c.line, || {
                    format!(
                        "`{}` repeats the exit reason of line {first}; their counts are summed",
                        c.name
                    )
                });
                key
            }
            Some(first) => {
                let n = bases.get(&c.name).copied().unwrap_or(0) + 1;
                repeats.note(notes, c.line, || {
                    format!(
                        "`{}` appears again (first on line {first}); kept apart as `{}#{n}`",
                        c.name, c.name
                    )
                });
                Key::Event {
                    name: format!("{}#{n}", c.name),
                }
            }
        };
        if let Entry::Vacant(first) = seen.entry((is_exit, key.clone())) {
            if !is_exit {
                count_bases(&mut bases, &key.key_text());
            }
            first.insert(c.line);
        }
        let (table, index) = if is_exit {
            (&mut exits, &mut exit_rows)
        } else {
            (&mut counters, &mut counter_rows)
        };
        add(table, index, row(run, key.clone(), c.total));
        if let Some(rate) = c.rate {
            add(&mut rates, &mut rate_rows, row(run, key, rate));
        }
    }
    repeats.finish(notes, |more| {
        format!(
            "{more} more counters repeat one above, from here on (summed where they are an \
             exit reason, kept apart as `NAME#N` otherwise; only the first {} are listed)",
            CappedNotes::MAX
        )
    });
    exits.partial = run.partial | check_children(run, &mut exits, notes);
    counters.partial = run.partial | check_total(run, &counters, notes);
    rates.partial = counters.partial;
    [exits, counters, rates]
        .into_iter()
        .filter(|t| !t.rows.is_empty())
        .collect()
}

/// Counts counter key `text` for every name it is, or is with a `#` suffix, of.
fn count_bases(bases: &mut HashMap<String, usize>, text: &str) {
    *bases.entry(text.to_string()).or_default() += 1;
    for (at, _) in text.match_indices('#') {
        *bases.entry(text[..at].to_string()).or_default() += 1;
    }
}

fn printed(count: u64) -> PrintedTotal {
    PrintedTotal {
        count,
        time_ns: None,
        lost_events: None,
    }
}

fn new_table(run: &Run, kind: TableKind, scope: Option<String>) -> Table {
    let mut t = Table::new(kind);
    t.label = run.label.clone();
    t.scope = scope;
    t.window = run.window.clone();
    t.line = Some(run.line);
    t
}

fn row(run: &Run, key: Key, count: u64) -> Row {
    let mut r = Row::new(key, count);
    r.pid = run.pid;
    r
}

/// Adds `row` to `table`, summed into the row of its key if there is one (`index`: key → row).
fn add(table: &mut Table, index: &mut HashMap<Key, usize>, row: Row) {
    match index.get(&row.key).and_then(|&i| table.rows.get_mut(i)) {
        Some(existing) => existing.merge(&row),
        None => {
            index.insert(row.key.clone(), table.rows.len());
            table.rows.push(row);
        }
    }
}

/// The children of `kvm_exit` against `kvm_exit`'s own count; true when rows are missing.
fn check_children(run: &Run, exits: &mut Table, notes: &mut Vec<Note>) -> bool {
    let parent = run
        .counters
        .iter()
        .find(|c| c.exit.is_none() && c.name == EXIT_PARENT);
    let Some(parent) = parent else {
        return false;
    };
    if exits.rows.is_empty() {
        return false;
    }
    exits.printed_total = Some(printed(parent.total));
    let sum = exits.count();
    if sum != parent.total {
        let why = if sum > parent.total {
            "the reasons count more than their parent"
        } else if run.kind == RunKind::Screen {
            "rows below the edge of the screen, filtered out, or reasons kvm_stat's table lacks"
        } else {
            "reasons kvm_stat's table lacks, or fields filtered out"
        };
        notes.push(Note {
            line: Some(parent.line),
            message: format!(
                "kvm_exit counts {} but its exit-reason rows add up to {sum} ({why})",
                parent.total
            ),
        });
    }
    sum < parent.total
}

/// The `Total` row against the top-level rows; true when rows are missing.
fn check_total(run: &Run, counters: &Table, notes: &mut Vec<Note>) -> bool {
    let Some(total) = &counters.printed_total else {
        return false;
    };
    let top = run
        .counters
        .iter()
        .filter(|c| !c.child)
        .fold(0u64, |acc, c| acc.saturating_add(c.total));
    if top != total.count {
        notes.push(Note {
            line: counters.line,
            message: format!(
                "the Total row says {} but the event rows add up to {top} (rows below the edge of the screen?)",
                total.count
            ),
        });
    }
    top < total.count
}
