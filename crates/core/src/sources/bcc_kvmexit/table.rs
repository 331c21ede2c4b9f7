//! One kvmexit run turned into a `vmexit` table: names decoded under the ISA they suggest
//! (`EXIT_REASON_HLT` of the 2021 Intel-only tool, plain `HLT`, SVM names of the AMD-capable
//! versions), rows keyed by reason with the VM's pid (the TGID column, or `-p`) and, with
//! `-p -v N`, vCPU N; the run's duration as its window.
//!
//! A profile row has a pid and a vCPU index but no thread id, and a vCPU thread's index is not
//! printed (except with `-v`). So rows of several threads of one VM are summed per exit reason
//! as they are read (memory grows with VMs × reasons, not with threads), and a note names the
//! threads whose counts were summed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::layout::{Context, RawRow};
use crate::decode::exit_reason;
use crate::profile::{Key, Note, Row, Table, TableKind, Window};

/// A row as printed: its reason and its pid column.
type RowKey = (String, Option<u32>);

/// The exits of a row: their count and, when the tool printed it, their total time (ns).
type Tally = (u64, Option<u64>);

/// A run being read: where it starts, its command line, what it counts, and its counts.
#[derive(Debug, Default)]
pub(super) struct Run {
    pub line: usize,
    pub label: Option<String>,
    /// From the command line.
    pub command: Context,
    /// From the `Display …` line.
    pub display: Option<Context>,
    /// Why kvmexit stopped without output (`Exception: …`).
    pub failure: Option<(usize, String)>,
    /// Counts and total times (when printed) by (reason as printed, pid column).
    counts: Vec<(RowKey, Tally)>,
    index: HashMap<RowKey, usize>,
    /// Thread ids seen, by pid column.
    threads: BTreeMap<Option<u32>, BTreeSet<u32>>,
    notes: Vec<Note>,
    /// Rows are missing: unreadable, elided, or cut off by the end of the input.
    pub partial: bool,
}

impl Run {
    /// A run starting at `line`.
    pub(super) fn new(line: usize) -> Self {
        Self {
            line,
            ..Self::default()
        }
    }

    /// Whether any row was read.
    pub(super) fn has_rows(&self) -> bool {
        !self.counts.is_empty()
    }

    /// Adds the row read on `line`.
    pub(super) fn add(&mut self, line: usize, raw: RawRow) {
        if !raw.strays.is_empty() {
            self.notes.push(Note {
                line: Some(line),
                message: format!(
                    "ignored stray text `{}` in the row of `{}`",
                    raw.strays.join(" "),
                    raw.reason
                ),
            });
        }
        if let Some(tid) = raw.tid {
            self.threads.entry(raw.pid).or_default().insert(tid);
        }
        let key = (raw.reason, raw.pid);
        match self.index.get(&key) {
            Some(&i) => {
                if let Some((_, (n, t))) = self.counts.get_mut(i) {
                    *n = n.saturating_add(raw.count);
                    *t = t.zip(raw.total_ns).map(|(a, b)| a.saturating_add(b));
                }
            }
            None => {
                self.index.insert(key.clone(), self.counts.len());
                self.counts.push((key, (raw.count, raw.total_ns)));
            }
        }
    }

    /// The `Display …` line when there is one, else what the command line says.
    fn context(&self) -> Context {
        let mut ctx = self.display.clone().unwrap_or_else(|| self.command.clone());
        ctx.pid = ctx.pid.or(self.command.pid);
        ctx.vcpu = ctx.vcpu.or(self.command.vcpu);
        if !ctx.until_ctrl_c {
            ctx.duration_s = ctx.duration_s.or(self.command.duration_s);
        }
        if ctx.tids.is_empty() {
            ctx.tids.clone_from(&self.command.tids);
        }
        ctx
    }

    /// The run's table; remarks go to `notes`.
    pub(super) fn table(self, notes: &mut Vec<Note>) -> Table {
        let ctx = self.context();
        notes.extend(self.notes);
        let mut table = Table::new(TableKind::Vmexit);
        table.partial = self.partial;
        table.label = self.label;
        table.scope = ctx.text.clone();
        table.line = Some(self.line);
        table.isa = exit_reason::guess_isa(self.counts.iter().map(|((r, _), _)| r.as_str()));
        table.window = ctx.duration_s.map(|s| Window {
            start: None,
            end: None,
            duration_ns: Some(s.saturating_mul(1_000_000_000)),
            intervals: 1,
        });
        let mut unnamed = 0u64;
        let mut at: HashMap<(Key, Option<u32>), usize> = HashMap::new();
        for ((reason, pid), (count, total_ns)) in self.counts {
            let key = match exit_reason::lookup_name(table.isa, &reason) {
                Some(info) => Key::Exit {
                    name: info.name.to_string(),
                    code: Some(info.code),
                },
                None => {
                    if reason == "N/A" {
                        unnamed = unnamed.saturating_add(count);
                    }
                    Key::Exit {
                        name: reason,
                        code: None,
                    }
                }
            };
            let mut row = Row::new(key, count);
            if total_ns.is_some() {
                row.time.total_ns = total_ns;
                row.time.timed = Some(count);
            }
            row.pid = pid.or(ctx.pid);
            row.vcpu = ctx.vcpu;
            match at.get(&(row.key.clone(), row.pid)) {
                Some(&i) => {
                    if let Some(existing) = table.rows.get_mut(i) {
                        existing.merge(&row);
                    }
                }
                None => {
                    at.insert((row.key.clone(), row.pid), table.rows.len());
                    table.rows.push(row);
                }
            }
        }
        let mut note = |message: String| {
            notes.push(Note {
                line: Some(self.line),
                message,
            });
        };
        if unnamed > 0 {
            note(format!(
                "{unnamed} exits are named `N/A`: bcc prints that for codes missing from its \
                 table, so their numbers are lost"
            ));
        }
        let mut threads = self.threads;
        if threads.is_empty() && ctx.tids.len() > 1 {
            threads.insert(None, ctx.tids.iter().copied().collect());
        }
        let several: Vec<(Option<u32>, &BTreeSet<u32>)> = threads
            .iter()
            .filter(|(_, tids)| tids.len() > 1)
            .map(|(pid, tids)| (pid.or(ctx.pid), tids))
            .collect();
        if !several.is_empty() {
            let total: usize = several.iter().map(|(_, t)| t.len()).sum();
            let shown: Vec<String> = several
                .iter()
                .take(3)
                .map(|(pid, tids)| {
                    let mut list: Vec<String> = tids.iter().take(8).map(u32::to_string).collect();
                    if tids.len() > 8 {
                        list.push(format!("… ({} threads)", tids.len()));
                    }
                    match pid {
                        Some(p) => format!("pid {p}: threads {}", list.join(", ")),
                        None => format!("threads {}", list.join(", ")),
                    }
                })
                .collect();
            let more = match several.len() {
                n if n > 3 => format!("; and {} more VMs", n - 3),
                _ => String::new(),
            };
            note(format!(
                "per-thread counts of {total} threads summed per VM and exit reason (a profile \
                 row has no thread id): {}{more}",
                shown.join("; ")
            ));
        }
        table
    }
}
