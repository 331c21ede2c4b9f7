//! Source for bcc's `kvmexit.py` output in all its modes: all threads (`PID TID
//! KVM_EXIT_REASON COUNT`), `-p PID` (collapsed, sorted by count), `-p -a` (per TID), `-p -v N`
//! (one vCPU's thread), `-t TID`, `-T TIDS`, with or without a duration argument; the 2021
//! `EXIT_REASON_` names and today's plain ones; the `^C` a terminal glues to the first row; and
//! several runs in one file, each introduced by its `# ./kvmexit.py …` command line, which
//! become tables labelled by that command line (so `compare` sets them side by side).
//!
//! A line with a row's shape that cannot be read is noted with its line and the reason (the
//! run goes on), as are elisions and a last row the input may have cut off; rows of known exit
//! reasons pasted without the header (`MSR_WRITE  11416`) are read as the `-p` layout.
//!
//! Reading streams line by line; memory grows with the number of runs and rows only.

mod layout;
mod table;

use std::io::BufRead;

use crate::decode::exit_reason;
use crate::error::Result;
use crate::profile::{Note, Origin, Profile};
use crate::sources::line_reader::{LineBook, LineFormat, read_lines};
use crate::sources::lines::{self, strip_ctrl_c, unquote};
use layout::Layout;
use table::Run;

/// The name of this format (`--format bcc-kvmexit`, `origin.format`).
pub(crate) const FORMAT: &str = "bcc-kvmexit";

/// Whether `head` (the first bytes of an input) looks like kvmexit output: its column header
/// or its `Display kvm exit reasons and statistics for …` line.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let mut bare_rows = 0;
    String::from_utf8_lossy(head)
        .lines()
        .map(unquote)
        .map(|l| strip_ctrl_c(l).trim_start())
        .any(|l| {
            bare_rows = if bare_row(l) { bare_rows + 1 } else { 0 };
            layout::header(l).is_some() || layout::display(l).is_some() || bare_rows >= 2
        })
}

/// `MSR_WRITE  11416`: a `-p` row of a known exit reason, pasted without kvmexit's header.
fn bare_row(t: &str) -> bool {
    layout::guess_layout(t) == Some(Layout::Reason)
        && layout::row(t, Layout::Reason)
            .is_some_and(|r| exit_reason::lookup_name(None, &r.reason).is_some())
}

/// Reads every run of `reader`; `path` names the input in notes and errors.
pub(crate) fn read<R: BufRead>(reader: R, path: &str) -> Result<Profile> {
    read_lines(reader, path, Reader::new(path))
}

struct Reader {
    path: String,
    profile: Profile,
    runs: Vec<Run>,
    current: Option<Run>,
    layout: Option<Layout>,
    book: LineBook,
    /// The last line read as nothing: the first of header-less rows, damaged, may be it.
    before: Option<(usize, String)>,
}

impl Reader {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            profile: Profile::new(Origin::new(FORMAT, Some(path))),
            runs: Vec::new(),
            current: None,
            layout: None,
            book: LineBook::default(),
            before: None,
        }
    }

    /// The run being read, started at `line` if there is none.
    fn run(&mut self, line: usize) -> &mut Run {
        self.current.get_or_insert_with(|| Run::new(line))
    }

    fn finish(&mut self) {
        self.layout = None;
        let Some(run) = self.current.take() else {
            return;
        };
        if run.has_rows() {
            self.runs.push(run);
            return;
        }
        let (line, message) = match &run.failure {
            Some((line, why)) => (*line, format!("kvmexit stopped without counts: {why}")),
            None if run.display.is_some() => (run.line, "a kvmexit run with no rows".into()),
            None => return,
        };
        self.profile.warnings.push(Note {
            line: Some(line),
            message,
        });
    }
}

impl LineFormat for Reader {
    /// The rows read ([`LineFormat::own_lines`]).
    fn own_lines(&self) -> Option<u64> {
        Some(self.book.rows())
    }

    /// kvmexit's header with the first row glued to it (their newline lost, as a terminal's
    /// `^C` often does): the row starts after the header's last column name.
    fn split(&mut self, n: usize, text: &str) -> Option<usize> {
        let at = layout::header_end(text)?;
        self.book.repaired(
            n,
            "the column header and the first row under it on one line (a newline lost)",
        );
        Some(at)
    }

    fn line(&mut self, n: usize, text: &str) {
        let t = strip_ctrl_c(text).trim();
        if t.is_empty() {
            return;
        }
        if let Some((label, command)) = layout::command(t) {
            self.finish();
            let mut run = Run::new(n);
            run.label = Some(label);
            run.command = command;
            self.current = Some(run);
            return;
        }
        if let Some(ctx) = layout::display(t) {
            if self
                .current
                .as_ref()
                .is_some_and(|r| r.display.is_some() || r.has_rows())
            {
                self.finish();
            }
            self.run(n).display = Some(ctx);
            self.layout = None;
            return;
        }
        if let Some(layout) = layout::header(t) {
            if self.current.as_ref().is_some_and(Run::has_rows) {
                self.finish();
            }
            self.run(n);
            self.layout = Some(layout);
            return;
        }
        if self.current.is_none() && bare_row(t) {
            self.profile.warnings.push(Note {
                line: Some(n),
                message: "rows without kvmexit's header: read as `KVM_EXIT_REASON  COUNT` (the \
                          `-p` layout)"
                    .into(),
            });
            // The line just above, damaged, was the first of these rows: read (a stray
            // character in it aside) or noted.
            let above = self.before.take().filter(|(m, _)| m + 1 == n);
            // (A name cut or garbled is no longer a known one, but is still written as one.)
            let first = above.as_ref().and_then(|(m, text)| {
                layout::row(text, Layout::Reason)
                    .filter(|r| {
                        r.reason
                            .bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                    })
                    .map(|r| (*m, r))
            });
            match (first, above) {
                (Some((m, row)), _) => {
                    self.book.row(m);
                    self.run(m).add(m, row);
                }
                (None, Some((m, text))) => {
                    let why = layout::damage(&text, Layout::Reason).or_else(|| {
                        let named = text
                            .split_ascii_whitespace()
                            .any(|w| exit_reason::lookup_name(None, w).is_some());
                        (named || layout::row(&text, Layout::Reason).is_some())
                            .then(|| "not a row of that layout, though shaped like one".to_string())
                    });
                    if let Some(why) = why {
                        self.book.unreadable(m, &text, &why);
                    }
                    self.run(n);
                }
                (None, None) => {
                    self.run(n);
                }
            }
        }
        if let Some(current) = &mut self.current {
            if let Some((_, why)) = t.split_once("Exception: ") {
                current.failure = Some((n, why.trim().to_string()));
                return;
            }
            let layout = self.layout.or_else(|| layout::guess_layout(t));
            if let Some(row) = layout.and_then(|l| layout::row(t, l)) {
                self.layout = layout;
                self.book.row(n);
                current.add(n, row);
                return;
            }
            if lines::elision(t) {
                current.partial = true;
                self.profile.warnings.push(Note {
                    line: Some(n),
                    message: format!("the author elided rows here (`{t}`): the run is partial"),
                });
                return;
            }
            if let Some(why) = self.layout.and_then(|l| layout::damage(t, l)) {
                current.partial = true;
                self.book.unreadable(n, t, &why);
                return;
            }
        }
        if self.runs.is_empty() && self.current.as_ref().is_none_or(|r| !r.has_rows()) {
            self.book.unrecognised(n, t);
        }
        self.before = Some((n, t.to_string()));
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        if let Some(run) = &mut self.current
            && self.book.last_row_cut(cut, &mut self.profile.warnings)
        {
            run.partial = true;
        }
        self.finish();
        self.book.note_unread(cut, &mut self.profile.warnings);
        if self.runs.is_empty() {
            let expected = "expected bcc kvmexit output: a `KVM_EXIT_REASON  COUNT` header \
                            (after `PID TID`, `TID` or `TIDS` columns) followed by rows";
            return Err(self.book.nothing_found(&self.path, expected));
        }
        for run in std::mem::take(&mut self.runs) {
            let table = run.table(&mut self.profile.warnings);
            self.profile.tables.push(table);
        }
        self.profile.distinct_labels();
        self.profile.settle_isa();
        Ok(self.profile)
    }
}
