//! Source for kvm_stat output of every era: curses screens pasted as text (2012 `kvm
//! statistics`, 2017 `Event Total Current`, current `Event Total %Total CurAvg/s` with child
//! rows indented under their parents, `Total` rows, `regex filter:` lines, `pid N (name)`
//! titles), `-1` listings, and `-l` / `-c` logs; several of them in one file, each introduced
//! or not by its command line. A block pasted without its title and header is read (in today's
//! screen columns, or in those of the block above when its counters repeat after a blank line)
//! and noted.
//!
//! `-1` listings printed one after another by a loop (the first row's name again starts the next;
//! `date` lines between them are their stamps) are one run summing their change column
//! (`batch_loop` says why); listings set apart by blank lines stay runs of their own.
//!
//! Each run (screen, listing, loop or log) becomes up to three tables sharing one label: `vmexit`
//! (children of `kvm_exit`, decoded), `KvmStat` (every other counter), and `KvmStatRate` (the
//! per-second rate column of screens and listings; `build` says why rates get a table of
//! their own). Logs sum their intervals and
//! carry the window their timestamps span, so rates follow from counts.
//!
//! A line with a row's shape that cannot be read (a screen row whose numbers are damaged or
//! that is cut after its name, a log line whose values are not integers) is noted with its line
//! and the reason; elisions, a last line the input may have cut off, and rows missing against a
//! printed total mark the tables partial. Two rows on one line (mail quote marks and all) are
//! split by the line driver and both read, with a note.
//!
//! Reading streams line by line; memory grows with the number of runs and fields only.

mod batch_loop;
mod board;
mod build;
pub(crate) mod clock;
mod command;
mod each_line;
mod headerless;
mod joined;
mod log;
mod names;
mod screen;

use std::io::BufRead;

use crate::error::Result;
use crate::profile::{Note, Origin, Profile};
use crate::sources::line_reader::{LineBook, read_lines};
use crate::sources::lines::{self, strip_ctrl_c, unquote};
use batch_loop::Loop;
use board::Board;
use build::{Run, RunKind};
use command::{Hint, command};
use log::Log;
use screen::Columns;

/// The name of this format (`--format kvm-stat`, `origin.format`).
pub(crate) const FORMAT: &str = "kvm-stat";

/// Whether `head` (the first bytes of an input) looks like kvm_stat output: a screen title or
/// column header, a `-c` banner, a `-l` banner followed by a matching line of numbers, or two
/// `-1` rows of known counters in a row (`date` lines between them aside).
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut banner: Option<usize> = None;
    let mut batch_rows = 0;
    for line in text.lines().map(unquote).map(strip_ctrl_c) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if screen::title(t).is_some() || screen::header(line).is_some() {
            return true;
        }
        if log::csv_banner(t).is_some_and(|f| f.iter().any(|f| names::is_known(f))) {
            return true;
        }
        if let Some(n) = banner.take()
            && log::plain_data(t).is_some_and(|s| s.values.len() == n)
        {
            return true;
        }
        if let Some(fields) = log::plain_banner(t) {
            banner = Some(fields.len());
            continue;
        }
        // A loop's `date` lines (`while :; do date; kvm_stat -1; done`) sit between its
        // listings, which may be one row each (`-f exits`).
        if batch_loop::is_date(t) {
            continue;
        }
        let batch = screen::row(line, Columns::TotalRate, false)
            .is_some_and(|r| r.strays.is_empty() && r.rate.is_some() && names::is_known(&r.name))
            || headerless::bare_screen_row(line).is_some();
        batch_rows = if batch { batch_rows + 1 } else { 0 };
        if batch_rows >= 2 {
            return true;
        }
    }
    false
}

/// Reads every run of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

enum Current {
    None,
    Board(Board),
    Log(Log),
}

struct Reader {
    path: String,
    profile: Profile,
    runs: Vec<Run>,
    current: Current,
    /// The listings of a `-1` loop before the current one, folded.
    looping: Option<Loop>,
    /// The last `date` line, for the listing that follows it.
    stamp: Option<String>,
    /// A `-l` banner waiting for its first line of numbers.
    pending: Option<(usize, Vec<String>)>,
    hint: Option<Hint>,
    delay: Option<f64>,
    /// Rows and log lines not read, the last read, the first line not recognised.
    book: LineBook,
    /// The line before this one was blank: a row here may start a new block.
    blank_before: bool,
    /// The last line not recognised: the first row of a header-less block, when damaged.
    unrecognised_before: Option<(usize, String)>,
    /// The line of the last column header: a name alone right under it is a row cut short.
    header_line: usize,
    /// The header line already noted as not fitting its rows.
    header_noted: usize,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            runs: Vec::new(),
            current: Current::None,
            looping: None,
            stamp: None,
            pending: None,
            hint: None,
            delay: None,
            book: LineBook::default(),
            blank_before: false,
            unrecognised_before: None,
            header_line: 0,
            header_noted: 0,
        }
    }

    fn note(&mut self, line: usize, message: String) {
        self.profile.warnings.push(Note {
            line: Some(line),
            message,
        });
    }

    /// An elision or a damaged row inside a screen or log: noted, the run marked partial.
    fn damaged(&mut self, n: usize, raw: &str, t: &str) -> bool {
        let why = match &self.current {
            Current::None => return false,
            _ if lines::elision(t) => None,
            Current::Board(_) => screen::damage(raw),
            Current::Log(l) => log::damage(t, l.csv, l.fields.len()),
        };
        if why.is_none() && !lines::elision(t) {
            return false;
        }
        self.mark_partial();
        let under_header = self.header_line > 0
            && self.book.last_row().is_none_or(|r| r < self.header_line)
            && self.header_noted != self.header_line;
        if under_header
            && why
                .as_deref()
                .is_some_and(|w| w.contains("do not fit the columns"))
        {
            // No row fits the header: the header is what is damaged (cut short?).
            self.header_noted = self.header_line;
            self.note(
                self.header_line,
                "the rows below this header do not fit its columns: the header is damaged or \
                 cut short, so they are left out"
                    .into(),
            );
        }
        match why {
            Some(why) => self.book.unreadable(n, t, &why),
            None => self.note(
                n,
                format!("the author elided rows here (`{t}`): the run is partial"),
            ),
        }
        true
    }

    fn mark_partial(&mut self) {
        match &mut self.current {
            Current::Board(b) => b.run.partial = true,
            Current::Log(l) => l.partial = true,
            Current::None => {}
        }
    }

    /// Remembers the first line that is not kvm_stat output, for the error when nothing is.
    fn unrecognised(&mut self, n: usize, t: &str) {
        // Until the first run is done: a screen whose header is damaged may yield nothing,
        // and the error then names the damaged line, not a row below it.
        if self.runs.is_empty() && self.book.last_row().is_none() {
            self.book.unrecognised(n, t);
        }
    }

    /// A data line of the current log.
    fn log_line(&mut self, n: usize, t: &str) -> bool {
        let Current::Log(log) = &mut self.current else {
            return false;
        };
        let sample = if log.csv {
            log::csv_data(t)
        } else {
            log::plain_data(t)
        };
        let Some(sample) = sample else {
            return false;
        };
        log.add(n, sample);
        true
    }

    /// A column header: it belongs to the screen whose title is just above, or starts one.
    fn header(&mut self, n: usize, raw: &str) -> bool {
        let Some(h) = screen::header(raw) else {
            return false;
        };
        self.header_line = n;
        match &mut self.current {
            Current::Board(b)
                if b.run.kind == RunKind::Screen && !b.has_header() && !b.has_rows() =>
            {
                b.set_header(h);
            }
            _ => {
                self.finish();
                let mut b = Board::screen(None, n);
                b.set_header(h);
                self.start(Current::Board(b));
            }
        }
        true
    }

    /// Makes `current` the run being read, labelled by the command line above it.
    fn start(&mut self, mut current: Current) {
        if let Some(hint) = self.hint.take() {
            match &mut current {
                Current::Board(b) => {
                    b.run.label = Some(hint.label);
                    if b.run.pid.is_none() && hint.pid.is_some() {
                        b.run.pid = hint.pid;
                        b.run.scope = hint.pid.map(|p| format!("pid {p}"));
                    }
                }
                Current::Log(log) => log.label = Some(hint.label),
                Current::None => self.hint = Some(hint),
            }
        }
        self.current = current;
    }

    fn finish(&mut self) {
        let run = match std::mem::replace(&mut self.current, Current::None) {
            Current::None => None,
            Current::Board(mut b) => {
                let stamp = b.stamp.take();
                self.close_board(b).map(|run| (run, stamp))
            }
            Current::Log(log) => Some((log.finish(&mut self.profile.warnings), None)),
        };
        match (self.looping.take(), run) {
            (Some(mut listings), Some((run, stamp))) if run.kind == RunKind::Batch => {
                listings.add(run, stamp);
                self.runs.push(listings.finish(&mut self.profile.warnings));
            }
            (Some(listings), run) => {
                self.runs.push(listings.finish(&mut self.profile.warnings));
                self.runs.extend(run.map(|(run, _)| run));
            }
            (None, run) => self.runs.extend(run.map(|(run, _)| run)),
        }
    }

    /// The run of a board that ends, when it has counters: its rows cut short noted, its
    /// guest's name kept.
    fn close_board(&mut self, mut b: Board) -> Option<Run> {
        for (line, text) in b.take_cut_rows() {
            self.book.unreadable(
                line,
                &text,
                "one number where the other rows have two (the row cut short?)",
            );
        }
        if let Some((pid, name)) = &b.guest {
            self.profile.origin.vm_names.insert(*pid, name.clone());
        }
        if b.run.counters.is_empty() {
            if b.run.kind == RunKind::Screen && !b.has_rows() {
                let line = b.run.line;
                self.note(line, "a kvm_stat screen with no rows".into());
            }
            return None;
        }
        Some(b.finish())
    }

    /// Line `n` starts the next `-1` listing of a loop: the one read so far is folded into
    /// the loop's sums, and a listing like it starts here.
    fn next_listing(&mut self, n: usize) {
        let Current::Board(mut b) = std::mem::replace(&mut self.current, Current::None) else {
            return;
        };
        let mut next = b.again(n);
        next.stamp = self.stamp.take();
        let stamp = b.stamp.take();
        if let Some(run) = self.close_board(b) {
            match &mut self.looping {
                Some(listings) => listings.add(run, stamp),
                None => self.looping = Some(Loop::new(run, stamp)),
            }
        }
        self.current = Current::Board(next);
    }

    /// Labels runs of a file that holds several, keeping every label unique (so `compare` sets
    /// them side by side instead of adding them up).
    fn label_runs(&mut self) {
        let several = self.runs.len() > 1;
        let mut used: Vec<String> = Vec::new();
        for (i, run) in self.runs.iter_mut().enumerate() {
            if run.label.is_none() && several {
                run.label = Some(format!("{} {}", run.kind.word(), i + 1));
            }
            if let Some(label) = &mut run.label {
                let base = label.clone();
                let mut k = 1;
                while used.contains(label) {
                    k += 1;
                    *label = format!("{base} ({k})");
                }
                used.push(label.clone());
            }
        }
    }

    /// Screens of one session pasted one after the other: every total grew.
    fn note_refreshes(&mut self) {
        let mut notes = Vec::new();
        for pair in self.runs.windows(2) {
            let [a, b] = pair else { continue };
            if a.kind != RunKind::Screen || b.kind != RunKind::Screen || a.scope != b.scope {
                continue;
            }
            let mut common = 0;
            let grew =
                b.counters
                    .iter()
                    .all(|c| match a.counters.iter().find(|p| p.name == c.name) {
                        Some(p) => {
                            common += 1;
                            c.total >= p.total
                        }
                        None => true,
                    });
            if grew && common > 0 {
                notes.push(Note {
                    line: Some(b.line),
                    message: format!(
                        "this screen looks like a later refresh of the screen on line {} (no \
                         total went down): its totals include that screen's",
                        a.line
                    ),
                });
            }
        }
        self.profile.warnings.extend(notes);
    }
}
