//! Source for event traces as text: `perf script`, `trace-cmd report`, raw ftrace (`trace`,
//! `trace_pipe`) and perf top's "Trace output" view, for every `kvm_*` event text the kernel
//! and libtraceevent have printed since 2010 (the kernel's arch/x86/kvm/trace.h and libtraceevent's kvm plugin).
//!
//! Each event line becomes a borrowed [`Event`] pushed into a [`ProfileBuilder`], which pairs
//! exits with entries per host thread the way `perf kvm stat` does. Lines without a thread id
//! (`perf script -F cpu,time,event,trace`) are paired per host CPU instead, and say so in a
//! warning. Reading streams: one reused line buffer, no allocation per event line, memory that
//! grows with the number of distinct keys, threads and vCPUs, never with the input. A regular
//! file is scanned on every core in blocks and replayed in order (`parallel`), to the same
//! profile; standard input, pipes and compressed input are read line by line here.
//!
//! Lines that are not events (headers, prompts, `^C` echoes, elisions, lost-event markers)
//! are skipped; the noteworthy ones become warnings with their line number. Lines a mailer
//! wrapped are joined back: a line ending with its timestamp takes the event on the next line,
//! an event whose text went to the next line takes that line, and indented continuation lines
//! under an event are passed over (its reason and rip are on the first line). Bare event lines
//! pasted without task, CPU or timestamp are counted (no durations without timestamps). Elided,
//! lost or cut-off events mark the tables partial. Only an input with no event line at all is
//! an error. Files: `line` splits the columns, `kinds` and `exit` read the event texts,
//! `perf_top` the percentage view, `skip` the other lines, `finish` the notes and the end,
//! `parallel` reads a file on every core (`queue` shares its blocks out between the threads,
//! `scan` does the stateless part of each line).

mod exit;
mod fields;
mod finish;
mod kinds;
mod line;
#[cfg(unix)]
mod parallel;
mod perf_top;
#[cfg(unix)]
mod queue;
#[cfg(unix)]
mod scan;
mod sched;
mod skip;

use std::io::BufRead;

use crate::error::{Error, Result};
use crate::events::{Event, EventKind, ProfileBuilder};
use crate::profile::{Note, Origin, Profile};
use crate::sources::line_reader::{CHECK_EVERY, mostly_something_else};
use crate::sources::lines::{Lines, unquote};
use crate::sources::unread::excerpt;
use line::{Dialect, Stamp};
use skip::Skip;

/// The name of this format (`--format trace-text`, `origin.format`).
pub(crate) const FORMAT: &str = "trace-text";

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
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    let mut lines = Lines::new(reader, path);
    let mut state = Reader::new(path);
    while let Some((n, text)) = lines.next_line()? {
        state.line(n, &text);
        // Not a trace (random bytes under `--format trace-text`, an endless stream of something
        // else): say so after a while instead of reading forever (repro C3).
        if state.not_a_trace(n) {
            return state.finish(None);
        }
    }
    state.finish(lines.cut_line())
}

/// Reads a regular file (`path` names it) on every core, with the same profile as [`read`].
#[cfg(unix)]
pub(crate) fn read_file(file: &std::fs::File, path: &str) -> Result<Profile> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    parallel::read_file(file, path, workers, parallel::BLOCK, true)
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

/// A line that needs the next one: an event whose text a mailer moved to the next line, or a
/// line that ends with its timestamp (the event is on the next line).
struct Wrapped {
    line: usize,
    text: String,
    /// The event name is there and only its text is missing.
    event: bool,
}

struct Reader {
    path: String,
    builder: ProfileBuilder,
    top: perf_top::View,
    dialects: [Tally; 4],
    first_line: Option<(usize, String)>,
    line_notes: Vec<Note>,
    unknown: Tally,
    /// Lines with `^C` in them (noted one by one up to [`MAX_LINE_NOTES`]).
    interrupted: Tally,
    /// The line at which reading stopped because the input is not a trace.
    stopped: Option<usize>,
    unread: Tally,
    elided: Tally,
    lost: Tally,
    failed_entry: Tally,
    noise: Tally,
    raw_stamps: Tally,
    per_cpu: Tally,
    unthreaded: Tally,
    joined: Tally,
    continued: Tally,
    annotated: Tally,
    wrapped: Option<Wrapped>,
    /// The line of the last event read, while the lines after it may continue it.
    last_event: Option<usize>,
    memo: line::PrefixMemo,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            builder: ProfileBuilder::new(Origin::new(FORMAT, Some(path))),
            top: perf_top::View::default(),
            dialects: [Tally::default(); 4],
            first_line: None,
            line_notes: Vec::new(),
            unknown: Tally::default(),
            interrupted: Tally::default(),
            stopped: None,
            unread: Tally::default(),
            elided: Tally::default(),
            lost: Tally::default(),
            failed_entry: Tally::default(),
            noise: Tally::default(),
            raw_stamps: Tally::default(),
            per_cpu: Tally::default(),
            unthreaded: Tally::default(),
            joined: Tally::default(),
            continued: Tally::default(),
            annotated: Tally::default(),
            wrapped: None,
            last_event: None,
            memo: line::PrefixMemo::default(),
        }
    }

    fn line(&mut self, n: usize, text: &str) {
        let t = text.trim_ascii();
        if t.is_empty() {
            self.last_event = None;
            return;
        }
        if self.first_line.is_none() {
            self.first_line = Some((n, excerpt(t)));
        }
        if let Some(w) = self.wrapped.take()
            && self.join(w, t)
        {
            return;
        }
        if !t.starts_with('#')
            && let Some(l) = line::split_with(t, &mut self.memo)
        {
            if l.text.is_empty() && l.dialect != line::Dialect::Bare {
                self.wrapped = Some(Wrapped {
                    line: n,
                    text: t.to_string(),
                    event: true,
                });
            } else {
                self.event(n, l);
            }
            return;
        }
        self.not_an_event(n, text, t);
    }

    /// Joins a wrapped line with the line after it; false when `t` does not continue it (the
    /// wrapped line is then dealt with on its own).
    fn join(&mut self, w: Wrapped, t: &str) -> bool {
        let next_is_event = line::split(t).is_some_and(|l| l.dialect != line::Dialect::Bare);
        if !next_is_event {
            let joined = format!("{} {t}", w.text);
            if let Some(l) = line::split(&joined).filter(|l| !l.text.is_empty()) {
                self.joined.add(w.line);
                self.event(w.line, l);
                return true;
            }
        }
        match line::split(&w.text) {
            Some(l) if w.event => self.event(w.line, l),
            _ => self.unknown_line(w.line, &w.text),
        }
        false
    }

    /// A line that does not split as an event: perf top's view, one of the lines `skip`
    /// knows, the first half of a wrapped line, the continuation of the event above, or an
    /// event behind an author's `A:` mark.
    fn not_an_event(&mut self, n: usize, text: &str, t: &str) {
        if self.top.line(n, t) {
            self.last_event = None;
            return;
        }
        match skip::classify(t) {
            Skip::Quiet => {}
            Skip::Elision => self.elided.add(n),
            Skip::Interrupted => {
                self.interrupted.add(n);
                if self.interrupted.count <= MAX_LINE_NOTES as u64 {
                    self.line_notes.push(Note {
                        line: Some(n),
                        message: format!(
                            "the capture was interrupted here (`^C`); this line is cut short and \
                             was not counted: `{}`",
                            excerpt(t)
                        ),
                    });
                }
            }
            Skip::Lost(k) => {
                self.lost.add(n);
                self.lost.sum = self.lost.sum.saturating_add(k.unwrap_or(0));
            }
            Skip::Unknown => {
                if line::prefix_only(t) {
                    self.wrapped = Some(Wrapped {
                        line: n,
                        text: t.to_string(),
                        event: false,
                    });
                } else if self.last_event.is_some() && continuation(text, t) {
                    self.continued.add(n);
                    return;
                } else if let Some(rest) = annotation(t)
                    && let Some(l) = line::split(rest).filter(|l| l.dialect != line::Dialect::Bare)
                {
                    self.annotated.add(n);
                    self.event(n, l);
                    return;
                } else {
                    self.unknown_line(n, t);
                }
            }
        }
        self.last_event = None;
    }

    /// Whether to stop reading at line `n`, the input being no trace: checked every
    /// [`CHECK_EVERY`] lines (a trace's header, trace-cmd's or perf script's comments, is tens
    /// of lines), it is none when it has no event line (nor perf top's view), or when
    /// [`mostly_something_else`]: its lines that are not blank, comments or continuations
    /// count as something else. Random bytes make an event line now and then (`D:b: …` reads
    /// as perf script's `D:b`). [`Reader::finish`] then refuses it.
    fn not_a_trace(&mut self, n: usize) -> bool {
        if !n.is_multiple_of(CHECK_EVERY) || self.top.has_rows() {
            return false;
        }
        let events = self.event_lines();
        let others = self.unknown.count.saturating_add(self.interrupted.count);
        if mostly_something_else(events, others) {
            self.stopped = Some(n);
            return true;
        }
        false
    }

    /// How many lines were read as events.
    fn event_lines(&self) -> u64 {
        self.dialects.iter().map(|t| t.count).sum()
    }

    fn unknown_line(&mut self, n: usize, t: &str) {
        self.unknown.add(n);
        if self.unknown.count <= MAX_LINE_NOTES as u64 {
            self.line_notes.push(Note {
                line: Some(n),
                message: format!("not an event line, skipped: `{}`", excerpt(t)),
            });
        }
    }

    fn event(&mut self, n: usize, l: line::Line<'_>) {
        if l.event.starts_with("PERF_RECORD_") {
            return; // perf's side-band records (`--show-task-events`), not trace events
        }
        if l.dialect == line::Dialect::Bare && !bare_event(&l) {
            self.unknown_line(n, l.text);
            return;
        }
        let decoded = kinds::decode(l.event, l.text).map(|d| {
            let (failed, noise) = d.exit.map_or((false, false), |e| (e.failed_entry, e.noise));
            (d.kind, failed, noise)
        });
        self.decoded(n, &l, decoded);
    }

    /// An event line once its text was decoded (`None`: none of the known shapes), with the
    /// exit's `FAILED_VMENTRY` and `CAN'T FIND FIELD` marks.
    fn decoded(&mut self, n: usize, l: &line::Line<'_>, d: Option<(EventKind<'_>, bool, bool)>) {
        self.last_event = Some(n);
        self.dialects[l.dialect.index()].add(n);
        let kind = match d {
            Some((kind, failed_entry, noise)) => {
                if failed_entry {
                    self.failed_entry.add(n);
                }
                if noise {
                    self.noise.add(n);
                }
                kind
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
                if l.dialect != line::Dialect::Bare {
                    self.unthreaded.add(n);
                }
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
}

/// A line continuing the event line above it: indented (mail and ftrace wrap with an
/// indent), or starting with a number (`200000006 1ab000`).
fn continuation(raw: &str, t: &str) -> bool {
    raw.starts_with([' ', '\t']) && !t.starts_with('#')
        || t.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

/// The rest of a line after an author's short mark (`A:`, `B:`, `1:`), when it has one.
fn annotation(t: &str) -> Option<&str> {
    let (mark, rest) = t.split_once(':')?;
    (!mark.is_empty() && mark.len() <= 3 && mark.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| rest.trim_ascii_start())
}

/// Whether a bare `kvm_*:` line is an event and not prose that starts with an event's name:
/// its text reads as that event's, and for events virtlens only counts by name, has a number
/// in it or is one word (`kvm_fpu: load`).
fn bare_event(l: &line::Line<'_>) -> bool {
    match kinds::decode(l.event, l.text).map(|d| d.kind) {
        None => false,
        Some(EventKind::Other { .. }) => {
            l.text.bytes().any(|b| b.is_ascii_digit()) || !l.text.contains(' ')
        }
        Some(_) => true,
    }
}
