//! Source for QEMU's `query-stats` reply (QMP, QEMU ≥ 7.1; qapi/stats.json): a list of
//! results, each with its `provider` (`kvm`), the `qom-path` of its vCPU (absent for the VM's
//! own statistics) and its `stats`, `{"name": …, "value": …}` pairs — KVM's binary statistics
//! as the VMM read them. The counts become a `kvm_stats` table, as a live capture's binary
//! statistics do, so the counters' rules read `exits`, `io_exits`, `halt_exits`, … from it.
//!
//! The reply is scanned key by key, line by line, rather than parsed as one JSON document: a
//! paste cut short or damaged in one place keeps every statistic elsewhere, and a line that
//! names a statistic but yields none is noted ([`LineBook`]). Values are totals since the VM
//! started; histograms (list values), times (`…_ns`) and instant or peak values are left out
//! and noted, being no counts of events.
//!
//! A result of a provider and vCPU seen before is a later poll (replies logged by a loop): the
//! table then holds the change from each result's first poll to its last, and the polls
//! between are not kept, so memory is two polls however long the loop ran.

mod scan;

use std::collections::HashMap;
use std::io::BufRead;

use crate::error::Result;
use crate::profile::{Key, Note, Origin, Profile, Row, Table, TableKind};
use crate::sources::line_reader::{LineBook, LineFormat, read_lines};
use scan::{Token, tokens};

/// The name of this format (`--format qmp-stats`, `origin.format`).
pub(crate) const FORMAT: &str = "qmp-stats";

/// KVM statistics that are instant or peak values, not counts (KVM's stats descriptors).
const NOT_COUNTS: [&str; 9] = [
    "guest_mode",
    "blocking",
    "pages_4k",
    "pages_2m",
    "pages_1g",
    "nx_lpage_splits",
    "max_mmu_page_hash_collisions",
    "max_mmu_rmap_size",
    "mmu_unsync",
];

/// Whether `head` looks like a `query-stats` reply: a `provider` key and `name` / `value`
/// pairs of statistics, one of them a KVM exit counter.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    (t.starts_with('{') || t.starts_with('['))
        && text.contains("\"provider\"")
        && text.contains("\"stats\"")
        && text.contains("\"value\"")
        && [
            "\"exits\"",
            "\"halt_exits\"",
            "\"io_exits\"",
            "\"remote_tlb_flush\"",
        ]
        .iter()
        .any(|n| text.contains(n))
}

/// Reads every result of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

/// One result: a provider's statistics of the VM or of one vCPU.
#[derive(Debug)]
struct Result1 {
    provider: String,
    vcpu: Option<u32>,
    line: usize,
    /// Its first row in `Reader::rows`: QEMU writes `qom-path` after `stats`, so a result's
    /// rows are known to be a vCPU's only at its end.
    first_row: usize,
    /// Its vCPU's QOM path.
    path: Option<String>,
    /// How many of its values are no counts: added to the input's only for a first poll.
    left_out: usize,
}

/// What tells the results of one poll apart: the provider and the vCPU's QOM path.
type Identity = (String, Option<String>);

/// The later polls of the results seen again.
#[derive(Default)]
struct Polls {
    /// Results whose first poll is in `Reader::rows`, and how many polls each had.
    seen: HashMap<Identity, u32>,
    /// The latest poll's rows of each result polled again.
    latest: HashMap<Identity, Vec<Row>>,
    /// The line of the first result seen again, and of the last.
    again: Option<(usize, usize)>,
}

struct Reader {
    path: String,
    profile: Profile,
    book: LineBook,
    current: Option<Result1>,
    /// A statistic's name waiting for its value: (line, name).
    pending: Option<(usize, String)>,
    /// Inside a list value (a histogram) spread over lines: where it began, and its name.
    list: Option<(usize, String)>,
    /// The vCPUs' QOM paths, in the order QEMU listed them: their indices.
    vcpus: HashMap<String, u32>,
    polls: Polls,
    rows: Vec<Row>,
    first_line: Option<usize>,
    left_out: Vec<String>,
    left_out_count: usize,
    other_providers: Vec<String>,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            book: LineBook::default(),
            current: None,
            pending: None,
            list: None,
            vcpus: HashMap::new(),
            polls: Polls::default(),
            rows: Vec::new(),
            first_line: None,
            left_out: Vec::new(),
            left_out_count: 0,
            other_providers: Vec::new(),
        }
    }

    /// The current result ends: when a result like it was read before, its rows are the
    /// latest poll of that one.
    fn end_result(&mut self) {
        let Some(r) = self.current.take() else {
            return;
        };
        let identity = (r.provider, r.path);
        let polls = self.polls.seen.entry(identity.clone()).or_insert(0);
        *polls += 1;
        if *polls == 1 {
            self.left_out_count += r.left_out;
        } else {
            let rows: Vec<Row> = self
                .rows
                .drain(r.first_row.min(self.rows.len())..)
                .collect();
            self.polls.latest.insert(identity, rows);
            let again = self.polls.again.get_or_insert((r.line, r.line));
            again.1 = r.line;
        }
    }

    /// The first poll's rows turned into the change to the latest poll, for every result
    /// polled again; values that went down are left out and counted.
    fn changes(&mut self) -> usize {
        let mut latest = std::mem::take(&mut self.polls.latest);
        if latest.is_empty() {
            return 0;
        }
        // The first poll's rows of each result, by key and vCPU.
        let mut went_down = 0;
        let mut later: HashMap<(Key, Option<u32>), u64> = HashMap::new();
        for rows in latest.values_mut() {
            for r in rows.drain(..) {
                later.insert((r.key, r.vcpu), r.count);
            }
        }
        self.rows.retain_mut(|r| {
            let Some(now) = later.remove(&(r.key.clone(), r.vcpu)) else {
                return true;
            };
            match now.checked_sub(r.count) {
                Some(change) => {
                    r.count = change;
                    true
                }
                None => {
                    went_down += 1;
                    false
                }
            }
        });
        for ((key, vcpu), count) in later {
            let mut row = Row::new(key, count);
            row.vcpu = vcpu;
            self.rows.push(row);
        }
        went_down
    }

    fn leave_out(&mut self, name: &str) {
        match &mut self.current {
            Some(r) => r.left_out += 1,
            None => self.left_out_count += 1,
        }
        if self.left_out.len() < 4 && !self.left_out.iter().any(|n| n == name) {
            self.left_out.push(name.to_string());
        }
    }

    fn unpaired(&mut self) {
        if let Some((line, name)) = self.pending.take() {
            self.book.unreadable(
                line,
                &format!("\"name\": \"{name}\""),
                "a statistic without a value after it",
            );
        }
    }

    fn value(&mut self, n: usize, text: &str, value: u64) {
        let Some((_, name)) = self.pending.take() else {
            self.book
                .unreadable(n, text.trim(), "a value without the name of its statistic");
            return;
        };
        let Some(result) = &self.current else {
            return;
        };
        if result.provider != "kvm" {
            return;
        }
        if name.ends_with("_ns") || NOT_COUNTS.contains(&name.as_str()) {
            self.leave_out(&name);
            return;
        }
        let mut row = Row::new(Key::Event { name }, value);
        row.vcpu = result.vcpu;
        self.rows.push(row);
        self.first_line.get_or_insert(result.line);
        self.book.row(n);
    }
}

impl LineFormat for Reader {
    fn line(&mut self, n: usize, text: &str) {
        if let Some((at, name)) = self.list.take() {
            let t = text.trim();
            if t.starts_with(']') {
                self.leave_out(&name);
                return;
            }
            if scan::numbers_only(t.as_bytes()) {
                self.list = Some((at, name));
                return;
            }
            self.book.unreadable(
                at,
                &format!("\"name\": \"{name}\", \"value\": ["),
                "a list value broken before its end",
            );
        }
        let mut used = false;
        let mut named = false;
        for token in tokens(text) {
            match token {
                Token::Key("provider", Some(p)) => {
                    self.unpaired();
                    self.end_result();
                    if p != "kvm" && !self.other_providers.contains(&p) {
                        self.other_providers.push(p.clone());
                    }
                    self.current = Some(Result1 {
                        provider: p,
                        vcpu: None,
                        line: n,
                        first_row: self.rows.len(),
                        path: None,
                        left_out: 0,
                    });
                    used = true;
                }
                Token::Key("qom-path", Some(path)) => {
                    if let Some(r) = self.current.as_mut()
                        && r.vcpu.is_none()
                    {
                        let next = u32::try_from(self.vcpus.len()).unwrap_or(u32::MAX);
                        r.vcpu = Some(*self.vcpus.entry(path.clone()).or_insert(next));
                        r.path = Some(path);
                        for row in self.rows.iter_mut().skip(r.first_row) {
                            row.vcpu = r.vcpu;
                        }
                    }
                    used = true;
                }
                Token::Key("name", Some(name)) => {
                    self.unpaired();
                    self.pending = Some((n, name));
                    named = true;
                }
                Token::Number("value", v) => {
                    self.value(n, text, v);
                    used = true;
                }
                // A boolean is an instant state (in vCPU mode, blocked), never a count.
                Token::Bool("value") => {
                    match self.pending.take() {
                        Some((_, name)) => self.leave_out(&name),
                        None => self.book.unreadable(
                            n,
                            text.trim(),
                            "a value without the name of its statistic",
                        ),
                    }
                    used = true;
                }
                Token::List { closed, valid } => {
                    let name = self.pending.take().map(|(_, name)| name);
                    match (name, closed, valid) {
                        (Some(name), true, true) => self.leave_out(&name),
                        (Some(name), false, true) => self.list = Some((n, name)),
                        _ => self.book.unreadable(
                            n,
                            text.trim(),
                            "a list value that is not a list of numbers, or not a statistic's",
                        ),
                    }
                    used = true;
                }
                Token::Key("provider" | "qom-path", None) => used = true,
                // A name that is no string, a value that is no number: a damaged statistic.
                Token::Key(_, _) | Token::Number(_, _) | Token::Bool(_) => {
                    self.unpaired();
                    self.book.unreadable(
                        n,
                        text.trim(),
                        "a statistic whose name or value cannot be read",
                    );
                    used = true;
                }
            }
        }
        let mentions = text.contains("\"name\"") || text.contains("\"value\"");
        if !used && !named {
            if mentions && self.current.is_some() {
                self.book.unreadable(
                    n,
                    text.trim(),
                    "a statistic whose name or value cannot be read",
                );
            } else if !text.trim().is_empty() {
                self.book.unrecognised(n, text.trim());
            }
        }
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        self.unpaired();
        self.end_result();
        let went_down = self.changes();
        if let Some((at, name)) = self.list.take() {
            self.book.unreadable(
                at,
                &format!("\"name\": \"{name}\", \"value\": ["),
                "the input ends inside this list value",
            );
        }
        let mut partial = self.book.last_row_cut(cut, &mut self.profile.warnings);
        self.book.note_unread(cut, &mut self.profile.warnings);
        if self
            .profile
            .warnings
            .iter()
            .any(|w| w.message.contains("left out"))
        {
            partial = true;
        }
        if self.rows.is_empty() {
            let expected = "expected a QMP `query-stats` reply: results with a `provider` \
                            (`kvm`) and `stats` of `{\"name\": …, \"value\": …}`";
            return Err(self.book.nothing_found(&self.path, expected));
        }
        let line = self.first_line.unwrap_or(1);
        let notes = &mut self.profile.warnings;
        let polled = self.polls.again.map(|(first, last)| {
            let most = self.polls.seen.values().max().copied().unwrap_or(1);
            notes.push(Note {
                line: Some(first),
                message: format!(
                    "the results were printed again from here on (a loop of replies, up to \
                     {most} polls, the last result on line {last}): the table is the change \
                     from each result's first poll to its last; rates need the time between \
                     them (give --window SECONDS), and vCPUs are numbered in the order QEMU \
                     first listed them"
                ),
            });
            most
        });
        if polled.is_none() {
            notes.push(Note {
                line: Some(line),
                message: "query-stats values are totals since the VM started: rates need its \
                          uptime (give --window SECONDS), and vCPUs are numbered in the order \
                          QEMU listed them"
                    .into(),
            });
        }
        if went_down > 0 {
            partial = true;
            notes.push(Note {
                line: polled.and(self.polls.again.map(|a| a.1)),
                message: format!(
                    "{went_down} values went down between their first poll and their last (the \
                     VM restarted?): left out"
                ),
            });
        }
        if self.left_out_count > 0 {
            notes.push(Note {
                line: Some(line),
                message: format!(
                    "{} values that are not counts of events are not read (histograms, times in \
                     ns, instant or peak values: {})",
                    self.left_out_count,
                    self.left_out.join(", ")
                ),
            });
        }
        if !self.other_providers.is_empty() {
            notes.push(Note {
                line: Some(line),
                message: format!(
                    "statistics of other providers are not read ({})",
                    self.other_providers.join(", ")
                ),
            });
        }
        let mut table = Table::new(TableKind::KvmStats);
        table.label = Some(match polled {
            Some(most) => {
                format!("KVM binary statistics (QMP query-stats), change over {most} polls")
            }
            None => "KVM binary statistics (QMP query-stats), totals".into(),
        });
        table.overlapping = true;
        table.line = Some(line);
        table.partial = partial;
        table.rows = self.rows;
        self.profile.tables.push(table);
        Ok(self.profile)
    }
}
