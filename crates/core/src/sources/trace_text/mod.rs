//! Source for event traces as text: `perf script`, `trace-cmd report`, raw ftrace (`trace`,
//! `trace_pipe`) and perf top's "Trace output" view, for every `kvm_*` event text the kernel
//! and libtraceevent have printed since 2010 (see reference/exit-tools.md §1.1 and §2.4).
//!
//! Each event line becomes a borrowed [`Event`] pushed into a [`ProfileBuilder`], which pairs
//! exits with entries per host thread the way `perf kvm stat` does. Lines without a thread id
//! (`perf script -F cpu,time,event,trace`) are paired per host CPU instead, and say so in a
//! warning. Reading streams: one reused line buffer, no allocation per event line, memory that
//! grows with the number of distinct keys, threads and vCPUs, never with the input.
//!
//! Lines that are not events (headers, prompts, `^C` echoes, elisions, lost-event markers)
//! are skipped; the noteworthy ones become warnings with their line number. Only an input
//! with no event line at all is an error. Files: `line` splits the columns, `kinds` and
//! `exit` read the event texts, `perf_top` the percentage view, `skip` the other lines.

mod exit;
mod fields;
mod kinds;
mod line;
mod perf_top;
mod skip;

use std::io::BufRead;

use crate::error::{Error, Result};
use crate::events::{Event, EventKind, ProfileBuilder};
use crate::profile::{Note, Origin, Profile};
use crate::sources::lines::{Lines, unquote};
use line::{Dialect, Stamp};
use skip::Skip;

/// The name of this format (`--format trace-text`, `origin.format`).
pub const FORMAT: &str = "trace-text";

/// Whether `head` (the first bytes of an input) holds a kvm event line of one of the dialects,
/// or perf top's trace-output view of a kvm event.
pub fn looks_like(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .lines()
        .map(|l| unquote(l).trim())
        .any(|l| match line::split(l) {
            Some(e) => {
                e.subsystem.is_some_and(|s| s.starts_with("kvm")) || e.event.starts_with("kvm_")
            }
            None => perf_top::is_header(l),
        })
}

/// Reads the whole input into a profile; `path` names it in notes and errors.
pub fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    let mut lines = Lines::new(reader, path);
    let mut state = Reader::new(path);
    while let Some((n, text)) = lines.next_line()? {
        state.line(n, &text);
    }
    state.finish()
}

/// Lines noted one by one before the rest of their kind is only counted.
const MAX_LINE_NOTES: usize = 20;

/// Pseudo thread ids for lines that show a CPU but no thread: `CPU_THREAD - cpu`, far above
/// any real tid (`pid_max` is at most 2^22).
const CPU_THREAD: u32 = u32::MAX;

/// How often something happened and where first.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    count: u64,
    first: usize,
    sum: u64,
}

impl Tally {
    fn add(&mut self, line: usize) {
        if self.count == 0 {
            self.first = line;
        }
        self.count += 1;
    }
}

struct Reader {
    path: String,
    builder: ProfileBuilder,
    top: perf_top::View,
    dialects: [Tally; 3],
    first_line: Option<(usize, String)>,
    line_notes: Vec<Note>,
    unknown: Tally,
    unread: Tally,
    elided: Tally,
    lost: Tally,
    failed_entry: Tally,
    noise: Tally,
    raw_stamps: Tally,
    per_cpu: Tally,
    unthreaded: Tally,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            builder: ProfileBuilder::new(Origin::new(FORMAT, Some(path))),
            top: perf_top::View::default(),
            dialects: [Tally::default(); 3],
            first_line: None,
            line_notes: Vec::new(),
            unknown: Tally::default(),
            unread: Tally::default(),
            elided: Tally::default(),
            lost: Tally::default(),
            failed_entry: Tally::default(),
            noise: Tally::default(),
            raw_stamps: Tally::default(),
            per_cpu: Tally::default(),
            unthreaded: Tally::default(),
        }
    }

    fn line(&mut self, n: usize, text: &str) {
        let t = text.trim_ascii();
        if t.is_empty() {
            return;
        }
        if self.first_line.is_none() {
            self.first_line = Some((n, excerpt(t)));
        }
        if !t.starts_with('#')
            && let Some(l) = line::split(t)
        {
            self.event(n, l);
            return;
        }
        if self.top.line(n, t) {
            return;
        }
        match skip::classify(t) {
            Skip::Quiet => {}
            Skip::Elision => self.elided.add(n),
            Skip::Interrupted => self.line_notes.push(Note {
                line: Some(n),
                message: format!(
                    "the capture was interrupted here (`^C`); this line is cut short and was \
                     not counted: `{}`",
                    excerpt(t)
                ),
            }),
            Skip::Lost(k) => {
                self.lost.add(n);
                self.lost.sum = self.lost.sum.saturating_add(k.unwrap_or(0));
            }
            Skip::Unknown => {
                self.unknown.add(n);
                if self.unknown.count <= MAX_LINE_NOTES as u64 {
                    self.line_notes.push(Note {
                        line: Some(n),
                        message: format!("not an event line, skipped: `{}`", excerpt(t)),
                    });
                }
            }
        }
    }

    fn event(&mut self, n: usize, l: line::Line<'_>) {
        if l.event.starts_with("PERF_RECORD_") {
            return; // perf's side-band records (`--show-task-events`), not trace events
        }
        self.dialects[l.dialect.index()].add(n);
        let kind = match kinds::decode(l.event, l.text) {
            Some(d) => {
                if let Some(e) = d.exit {
                    if e.failed_entry {
                        self.failed_entry.add(n);
                    }
                    if e.noise {
                        self.noise.add(n);
                    }
                }
                d.kind
            }
            None => {
                self.unread.add(n);
                if self.unread.count <= MAX_LINE_NOTES as u64 {
                    self.line_notes.push(Note {
                        line: Some(n),
                        message: format!(
                            "a `{}` event whose text has none of the known shapes was counted \
                             by name only: `{}`",
                            l.event,
                            excerpt(l.text)
                        ),
                    });
                }
                EventKind::Other { name: l.event }
            }
        };
        let ts_ns = match l.stamp {
            Stamp::Ns(ns) => Some(ns),
            Stamp::Raw => {
                self.raw_stamps.add(n);
                None
            }
            Stamp::Missing => None,
        };
        let tid = match (l.tid, l.cpu) {
            (Some(t), _) => Some(t),
            (None, Some(cpu)) => {
                self.per_cpu.add(n);
                Some(CPU_THREAD - cpu)
            }
            (None, None) => {
                self.unthreaded.add(n);
                None
            }
        };
        self.builder.push(&Event {
            ts_ns,
            tid,
            pid: l.pid,
            cpu: l.cpu,
            comm: l.comm,
            kind,
        });
    }

    fn finish(self) -> Result<Profile> {
        if self.builder.events() == 0 && !self.top.has_rows() {
            let expected = "expected trace event lines such as `qemu-system-x86 1234 [002] \
                            770.850287: kvm:kvm_exit: …` (perf script), `CPU 0/KVM-1234 [002] \
                            770.850287: kvm_exit: …` (trace-cmd report, ftrace) or perf top's \
                            `Overhead  Trace output` rows";
            return Err(match self.first_line {
                Some((line, text)) => Error::Parse {
                    path: self.path,
                    line,
                    message: format!("{expected}; found `{text}` and no event line after it"),
                },
                None => Error::Input {
                    path: self.path,
                    message: format!("the input is empty ({expected})"),
                },
            });
        }
        let mut notes = Vec::new();
        for d in Dialect::ALL {
            let t = self.dialects[d.index()];
            if t.count > 0 {
                notes.push(Note {
                    line: Some(t.first),
                    message: format!("read {} event lines as {}", t.count, d.describe()),
                });
            }
        }
        let mut profile = if self.builder.events() > 0 {
            self.builder.finish()
        } else {
            Profile::new(Origin::new(FORMAT, Some(&self.path)))
        };
        let (tables, isa) = self.top.finish(&mut notes);
        profile.tables.extend(tables);
        profile.origin.isa = profile.origin.isa.or(isa);
        let tallies = [
            (self.failed_entry, Self::FAILED_ENTRY),
            (self.noise, Self::NOISE),
            (self.raw_stamps, Self::RAW_STAMPS),
            (self.per_cpu, Self::PER_CPU),
            (self.unthreaded, Self::UNTHREADED),
            (self.elided, Self::ELIDED),
        ];
        for (t, message) in tallies {
            if t.count > 0 {
                notes.push(Note {
                    line: Some(t.first),
                    message: format!("{} line(s): {message}", t.count),
                });
            }
        }
        if self.lost.count > 0 {
            notes.push(Note {
                line: Some(self.lost.first),
                message: format!(
                    "the tracer reported lost events ({} marker line(s), {} lost in all): the \
                     counts are incomplete",
                    self.lost.count, self.lost.sum
                ),
            });
        }
        let mut line_notes = self.line_notes;
        for (t, what) in [
            (self.unknown, "lines that were not events"),
            (self.unread, "events with unreadable text"),
        ] {
            if t.count > MAX_LINE_NOTES as u64 {
                line_notes.push(Note {
                    line: None,
                    message: format!(
                        "and {} more {what} (only the first {MAX_LINE_NOTES} are listed)",
                        t.count - MAX_LINE_NOTES as u64
                    ),
                });
            }
        }
        line_notes.sort_by_key(|n| n.line.unwrap_or(usize::MAX));
        notes.extend(line_notes);
        profile.warnings = notes;
        Ok(profile)
    }

    const FAILED_ENTRY: &'static str = "exits with the VMX `FAILED_VMENTRY` flag (the guest \
        could not be entered), first at this line; they are kept with their raw exit reason";
    const NOISE: &'static str = "libtraceevent printed `CAN'T FIND FIELD` (its kvm plugin does \
        not know this kernel's fields); the kernel's own text after it was read";
    const RAW_STAMPS: &'static str = "integer timestamps (a raw trace clock such as `counter` \
        or `x86-tsc`, unit unknown): no durations were computed from these lines";
    const PER_CPU: &'static str = "no thread id, only a CPU: exits were paired with entries \
        per host CPU (a vCPU thread seldom changes CPU between an exit and its entry)";
    const UNTHREADED: &'static str =
        "neither thread id nor CPU: events counted, no durations computed for them";
    const ELIDED: &'static str =
        "elided (`...`), first at this line: the counts cover only the lines shown";
}

/// The start of a line for a note (at most 100 characters).
fn excerpt(t: &str) -> String {
    let mut s: String = t.chars().take(100).collect();
    if s.len() < t.len() {
        s.push('…');
    }
    s
}
