//! What the line driver asks of the kvm_stat reader: each line read in turn (command lines,
//! titles, headers, rows, log banners and lines, the `date` lines of a `-1` loop), whether a
//! line would be read whole (for lines joined by a lost newline), and the profile at the end.

use super::build::{self, RunKind};
use super::log::{self, Log};
use super::screen::{self, Columns};
use super::{Board, Current, Reader, batch_loop, command};
use crate::error::{Error, Result};
use crate::profile::Profile;
use crate::sources::line_reader::LineFormat;
use crate::sources::lines::strip_ctrl_c;

impl LineFormat for Reader {
    /// The rows read ([`LineFormat::own_lines`]).
    fn own_lines(&self) -> Option<u64> {
        Some(self.book.rows())
    }

    const SPLITS_JOINED: bool = true;

    fn inside(&self) -> bool {
        self.in_run()
    }

    fn reads(&self, text: &str) -> bool {
        self.reads_whole(text)
    }

    fn line(&mut self, n: usize, text: &str) {
        let raw = strip_ctrl_c(text);
        let t = raw.trim();
        if t.is_empty() {
            self.blank_before = true;
            return;
        }
        let after_blank = std::mem::take(&mut self.blank_before);
        if let Some((at, fields)) = self.pending.take() {
            match log::plain_data(t) {
                Some(sample) if sample.values.len() == fields.len() => {
                    self.finish();
                    let mut log = Log::new(false, fields, at, self.delay);
                    log.add(n, sample);
                    self.start(Current::Log(log));
                    return;
                }
                _ => self.unrecognised(at, &fields.join(" ")),
            }
        }
        if let Some(hint) = command(t) {
            self.finish();
            self.delay = hint.delay;
            self.hint = Some(hint);
            return;
        }
        if batch_loop::is_date(t) {
            match &self.current {
                Current::Board(b) if b.run.kind == RunKind::Batch => {}
                Current::None => self.unrecognised(n, t),
                _ => return self.line_otherwise(n, raw, t, after_blank),
            }
            self.stamp = Some(t.to_string());
            return;
        }
        self.line_otherwise(n, raw, t, after_blank);
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        if !matches!(self.current, Current::None)
            && self.book.last_row_cut(cut, &mut self.profile.warnings)
        {
            self.mark_partial();
        }
        self.finish();
        self.book.note_unread(cut, &mut self.profile.warnings);
        if let Some((at, fields)) = self.pending.take() {
            self.unrecognised(at, &fields.join(" "));
        }
        if self.runs.is_empty() {
            let expected = "expected kvm_stat output: a `kvm statistics` screen with \
                            `Event  Total …` rows, `-1` rows (`name total delta`), or a \
                            `-l`/`-c` log (a banner of field names, then lines of numbers)";
            let remark = self
                .profile
                .warnings
                .iter()
                .find_map(|w| Some((w.line?, &w.message)));
            return Err(match (self.book.first_unrecognised(), remark) {
                (Some((line, text)), _) => Error::Parse {
                    path: self.path,
                    line,
                    message: format!("{expected}; found `{text}`"),
                },
                (None, Some((line, why))) => Error::Parse {
                    path: self.path,
                    line,
                    message: format!("{expected}; found no counts ({why})"),
                },
                (None, None) => Error::Input {
                    path: self.path,
                    message: format!("nothing readable ({expected})"),
                },
            });
        }
        self.label_runs();
        self.note_refreshes();
        for run in &self.runs {
            let tables = build::tables(run, &mut self.profile.warnings);
            self.profile.tables.extend(tables);
        }
        // Only exit-reason tables carry an ISA.
        self.profile.settle_isa();
        Ok(self.profile)
    }
}

impl Reader {
    /// Line `n` (`raw`, trimmed `t`) when it is neither a command line nor a `date` line of a
    /// `-1` loop.
    fn line_otherwise(&mut self, n: usize, raw: &str, t: &str, after_blank: bool) {
        if let Some(title) = screen::title(t) {
            self.finish();
            if title.dead {
                self.note(
                    n,
                    "the guest exited while this screen was shown (`Guest is DEAD`)".into(),
                );
            }
            self.start(Current::Board(Board::screen(Some(title), n)));
            return;
        }
        if let Some(fields) = log::csv_banner(t) {
            if !matches!(&self.current, Current::Log(l) if l.csv && l.fields == fields) {
                self.finish();
                self.start(Current::Log(Log::new(true, fields, n, self.delay)));
            }
            return;
        }
        if self.log_line(n, t) {
            self.book.row(n);
            return;
        }
        if self.header(n, raw) {
            return;
        }
        let above = n.saturating_sub(1);
        let after_row =
            (self.book.last_row() == Some(above) || self.header_line == above) && !after_blank;
        if let (Current::Board(_), Some(why)) = (&self.current, screen::cut_row(t, after_row)) {
            self.mark_partial();
            self.book.unreadable(n, t, why);
            return;
        }
        if let Some(fields) = log::plain_banner(t) {
            if !matches!(&self.current, Current::Log(l) if !l.csv && l.fields == fields) {
                self.pending = Some((n, fields));
            }
            return;
        }
        if self.headerless_block(n, raw, after_blank) {
            return;
        }
        if matches!(&self.current, Current::Board(b) if b.repeats(raw)) {
            self.next_listing(n);
        }
        if let Current::Board(b) = &mut self.current {
            if b.line(n, raw, t, &mut self.profile.warnings) {
                self.book.row(n);
                return;
            }
        } else if screen::row(raw, Columns::TotalRate, false).is_some() {
            self.finish();
            let mut b = Board::batch(n);
            b.stamp = self.stamp.take();
            if b.line(n, raw, t, &mut self.profile.warnings) {
                self.book.row(n);
                self.start(Current::Board(b));
                return;
            }
        }
        if !self.damaged(n, raw, t) {
            self.unrecognised(n, t);
            self.unrecognised_before = Some((n, raw.to_string()));
        }
    }
}
