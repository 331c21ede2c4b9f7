//! Source for `perf stat` tracepoint counts (`perf stat -e 'kvm:*' -a sleep 10`, `-p PID`,
//! `-I MS` intervals, `-x,` separated values): each `Performance counter stats for …` block
//! becomes an `events` table of the tracepoints it counted, keyed by event name (`kvm_exit`,
//! `kvm_pio`, …; tracepoints of other groups keep their `group:` prefix), with the elapsed
//! time (the footer, else the last interval's timestamp) as its window, so the counters'
//! rules read the exit rate and the IO, MMIO, MSR and interrupt counts from it.
//!
//! Rows pasted without their header are read too (the paste is one block), and so is output an
//! author kept behind `#` in a script. `<not counted>` and `<not supported>` rows carry no
//! count: they are left out and noted; rows of other events (`task-clock`, `cycles`) and
//! row-shaped lines that cannot be read are left out and noted with their line ([`LineBook`]).

mod missing;
mod row;

use std::io::BufRead;

use crate::error::Result;
use crate::profile::{Key, Note, Origin, Profile, Row as ProfileRow, Table, TableKind, Window};
use crate::sources::line_reader::{LineBook, LineFormat, read_lines};
use crate::sources::lines::{self, strip_ctrl_c};
use row::{Row, Value};

/// The name of this format (`--format perf-stat`, `origin.format`).
pub(crate) const FORMAT: &str = "perf-stat";

/// Tracepoint groups whose events are known by their name alone (`kvm_exit`).
const BARE_GROUPS: [&str; 2] = ["kvm", "kvmmmu"];

/// Whether `head` looks like `perf stat` counts of KVM tracepoints: the `Performance counter
/// stats` header with a `kvm…:` row under it, or (a paste of the rows alone) two such rows.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut header = false;
    let mut rows = 0;
    for line in text.lines().map(lines::unquote).map(strip_ctrl_c) {
        let t = uncomment(line.trim());
        if row::header(t).is_some() {
            header = true;
            continue;
        }
        let kvm = read_row(t).is_some_and(|r| {
            r.tracepoint()
                .is_some_and(|(group, _)| group.starts_with("kvm"))
        });
        if kvm {
            rows += 1;
            if header || rows >= 2 {
                return true;
            }
        }
    }
    false
}

/// A row in either layout.
fn read_row(t: &str) -> Option<Row> {
    row::plain(t).or_else(|| row::separator(t).and_then(|sep| row::separated(t, sep)))
}

/// The line without a `#` an author put in front of perf's output (the output kept as a
/// comment in a script); the line itself when what follows the `#` is not perf stat's.
fn uncomment(t: &str) -> &str {
    match t.strip_prefix('#').map(str::trim) {
        Some(rest)
            if row::header(rest).is_some()
                || row::elapsed(rest).is_some()
                || read_row(rest).is_some() =>
        {
            rest
        }
        _ => t,
    }
}

/// Whether `t` names a KVM tracepoint somewhere (`kvm:kvm_exit`, `kvmmmu:…`), even run into
/// other characters: a row damaged around its event still says it was one.
fn names_kvm_event(t: &str) -> bool {
    let b = t.as_bytes();
    let mut from = 0;
    while let Some(at) = t.get(from..).and_then(|r| r.find("kvm")) {
        let mut i = from + at + 3;
        while b.get(i).is_some_and(u8::is_ascii_lowercase) {
            i += 1;
        }
        if b.get(i) == Some(&b':')
            && b.get(i + 1)
                .is_some_and(|c| c.is_ascii_lowercase() || *c == b'_')
        {
            return true;
        }
        from = i;
    }
    false
}

/// Whether `t` has the fields of a `-x` row (at least five, a count or `<not …>` first, or
/// second after an interval stamp), whatever its event became.
fn separated_shape(t: &str) -> bool {
    [',', ';'].into_iter().any(|sep| {
        let fields: Vec<&str> = t.split(sep).collect();
        let countish = |f: &&str| {
            let f = f.trim();
            f.starts_with('<')
                || (!f.is_empty() && f.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        };
        fields.len() >= 5
            && (fields.first().is_some_and(countish) || fields.get(1).is_some_and(countish))
    })
}

/// Reads every block of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

/// One `Performance counter stats` block.
#[derive(Debug, Default)]
struct Block {
    line: usize,
    scope: Option<String>,
    /// Counts by event key, in the order first seen.
    counts: Vec<(String, u64)>,
    elapsed_ns: Option<u64>,
    last_stamp_ns: Option<u64>,
    intervals: u32,
    averaged: bool,
    partial: bool,
    /// The footer was read: a row after it starts a new block.
    closed: bool,
}

impl Block {
    fn add(&mut self, key: &str, n: u64) {
        match self.counts.iter_mut().find(|(k, _)| k == key) {
            Some((_, c)) => *c = c.saturating_add(n),
            None => self.counts.push((key.to_string(), n)),
        }
    }

    fn table(self, notes: &mut Vec<Note>) -> Option<Table> {
        if self.counts.is_empty() {
            return None;
        }
        if self.averaged {
            notes.push(Note {
                line: Some(self.line),
                message: "perf stat ran the command several times (-r): the counts are the \
                          means of the runs, and the elapsed time is the mean run's"
                    .to_string(),
            });
        }
        let duration_ns = self.elapsed_ns.or(self.last_stamp_ns);
        let mut table = Table::new(TableKind::Events);
        table.scope = self.scope;
        table.line = Some(self.line);
        table.partial = self.partial;
        table.window = duration_ns.map(|d| Window {
            start: None,
            end: None,
            duration_ns: Some(d),
            intervals: self.intervals,
        });
        table.rows = self
            .counts
            .into_iter()
            .map(|(name, n)| ProfileRow::new(Key::Event { name }, n))
            .collect();
        Some(table)
    }
}

struct Reader {
    path: String,
    profile: Profile,
    book: LineBook,
    current: Option<Block>,
    blocks: Vec<Block>,
    missing: missing::Missing,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            book: LineBook::default(),
            current: None,
            blocks: Vec::new(),
            missing: missing::Missing::default(),
        }
    }

    fn block(&mut self, n: usize) -> &mut Block {
        if self.current.as_ref().is_some_and(|b| b.closed) {
            self.close();
        }
        self.current.get_or_insert_with(|| Block {
            line: n,
            ..Block::default()
        })
    }

    fn close(&mut self) {
        if let Some(b) = self.current.take() {
            self.blocks.push(b);
        }
    }

    fn row(&mut self, n: usize, t: &str, r: Row) {
        let block = self.block(n);
        if let Some(ns) = r.stamp_ns
            && block.last_stamp_ns != Some(ns)
        {
            block.intervals = block.intervals.saturating_add(1);
            block.last_stamp_ns = Some(block.last_stamp_ns.map_or(ns, |l| l.max(ns)));
        }
        block.averaged |= r.averaged;
        let Some((group, name)) = r.tracepoint() else {
            let why = format!(
                "`{}` is not a tracepoint: only tracepoint counts are read",
                r.event
            );
            self.book.unreadable(n, t, &why);
            return;
        };
        let key = if BARE_GROUPS.contains(&group) {
            name.to_string()
        } else {
            r.event.clone()
        };
        match r.value {
            Value::Count(c) => {
                block.add(&key, c);
                self.book.row(n);
            }
            Value::Missing(why) => self.missing.add(n, &r.event, why),
        }
    }
}

impl LineFormat for Reader {
    fn line(&mut self, n: usize, text: &str) {
        let line = strip_ctrl_c(text);
        let t = line.trim();
        if t.is_empty() || row::chatter(t) {
            return;
        }
        let t = uncomment(t);
        if let Some(scope) = row::header(t) {
            self.close();
            self.current = Some(Block {
                line: n,
                scope: Some(scope),
                ..Block::default()
            });
            return;
        }
        if let Some(ns) = row::elapsed(t) {
            let block = self.block(n);
            block.elapsed_ns = Some(ns);
            block.closed = true;
            return;
        }
        if let Some(r) = read_row(t) {
            self.row(n, t, r);
            return;
        }
        if lines::elision(t) {
            if let Some(b) = self.current.as_mut() {
                b.partial = true;
                self.profile.warnings.push(Note {
                    line: Some(n),
                    message: "rows were left out here (elided by the author)".to_string(),
                });
            }
            return;
        }
        let names_tracepoint = t
            .split(|c: char| c.is_ascii_whitespace() || matches!(c, ',' | ';' | '|'))
            .any(|w| row::tracepoint(w).is_some());
        let row_shaped = names_tracepoint
            || names_kvm_event(t)
            || t.contains(":kvm_")
            || separated_shape(t)
            || self.current.is_some() && t.starts_with(|c: char| c.is_ascii_digit() || c == '<');
        if row_shaped {
            self.book
                .unreadable(n, t, "expected `COUNT  group:event` (or its -I / -x form)");
            if let Some(b) = self.current.as_mut() {
                b.partial = true;
            }
        } else {
            self.book.unrecognised(n, t);
        }
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        if let Some(b) = self.current.as_mut()
            && self.book.last_row_cut(cut, &mut self.profile.warnings)
        {
            b.partial = true;
        }
        self.close();
        let missing = std::mem::take(&mut self.missing);
        self.profile.warnings.extend(missing.notes());
        self.book.note_unread(cut, &mut self.profile.warnings);
        for block in std::mem::take(&mut self.blocks) {
            if let Some(t) = block.table(&mut self.profile.warnings) {
                self.profile.tables.push(t);
            }
        }
        if self.profile.tables.is_empty() {
            let expected = "expected perf stat counts of tracepoints: rows of `COUNT  \
                            kvm:EVENT` under `Performance counter stats for …`";
            return Err(self.book.nothing_found(&self.path, expected));
        }
        self.profile.distinct_labels();
        Ok(self.profile)
    }
}
