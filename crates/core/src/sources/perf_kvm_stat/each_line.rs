//! What the line driver asks of a `perf kvm stat` reader: each line read in turn (rows,
//! headers, labels, wrapped and boxed rows, prose), the lines it splits where two were joined,
//! the plain rows it reads in one step, and the profile at the end.

use super::layout;
use super::live;
use super::pasted;
use super::row::{self, Parsed};
use super::{Reader, damaged};
use crate::error::{Error, Result};
use crate::profile::Profile;
use crate::sources::line_reader::LineFormat;
use crate::sources::line_repairs;
use crate::sources::unread;

impl LineFormat for Reader {
    /// Rows and column headers read: a live session with no VM running prints a header and
    /// no rows every interval, for hours.
    fn own_lines(&self) -> Option<u64> {
        Some(self.own + self.table.as_ref().map_or(0, |b| b.rows_read()))
    }

    fn plain(&mut self, n: usize, text: &str) -> bool {
        self.plain_row(n, text)
    }

    fn split(&mut self, n: usize, text: &str) -> Option<usize> {
        if self
            .last_header
            .as_ref()
            .is_some_and(|(h, _)| h == text.trim_ascii())
        {
            return None;
        }
        let (at, what) = damaged::joined(text)?;
        self.book.repaired(n, what);
        Some(at)
    }

    fn line(&mut self, n: usize, text: &str) {
        let t = text.trim_ascii();
        let unboxed;
        let open_box = t.starts_with('|') && !t.ends_with('|');
        let t = if t.starts_with('|') {
            unboxed = pasted::unbox(t);
            unboxed.trim_ascii()
        } else {
            t
        };
        if open_box && self.carry.is_none() && self.open_boxed_row(n, t) {
            return;
        }
        let filler = line_repairs::damaged_rule(t);
        if let Some(what) = &filler {
            self.book.repaired(n, what);
        }
        let t = if filler.is_some() { "" } else { t };
        if let Some(carry) = self.carry.take() {
            if !t.is_empty() && !structural(t) && self.join_carry(&carry, t) {
                return;
            }
            let rest = !t.is_empty() && damaged::fragment(t);
            if rest && carry.joins < 2 {
                // The rest of the row above, damaged: both lines are that row, noted once.
                let why = format!(
                    "lines {}–{n}: joined, they do not read as a row of the header's columns",
                    carry.line
                );
                self.bad_row(carry.line, &format!("{} {t}", carry.text), &why);
                return;
            }
            self.unfinished(carry, Some(t));
        }
        self.settle_pending(Some(t));
        if t.is_empty() || layout::decoration(t) {
            return;
        }
        // Inside a table most lines are rows, and no structural line reads as a row.
        if self.table_line(n, t) || self.structure(n, t) {
            return;
        }
        if let Some(event) = layout::command_event(t) {
            if event.is_some() {
                self.kind_hint = event;
            }
            return;
        }
        if self.table.is_none()
            && let Some((layout, named)) = pasted::implied(t)
        {
            self.note(
                n,
                format!("rows without a column header above them: read in {named}"),
            );
            // The line just above, damaged, was the first of these rows: read in their layout
            // (a row with a stray cell still reads) or noted.
            let above = self.prose_before.take().filter(|(m, _)| m + 1 == n);
            let first = match &above {
                Some((m, text)) => match row::parse(text, &layout, *m) {
                    Parsed::Row(_) | Parsed::Bad(_) => Some(*m),
                    Parsed::Incomplete => {
                        self.bad_row(*m, text, "a row of that layout cut short");
                        None
                    }
                    Parsed::NotARow => None,
                },
                None => None,
            };
            self.start_table(first.unwrap_or(n), None, layout);
            if let Some(b) = &mut self.table {
                b.header = false;
            }
            if let (Some(m), Some((_, text))) = (first, &above) {
                self.table_line(m, text);
            }
            self.table_line(n, t);
            return;
        }
        self.prose(n, t);
    }

    fn end(mut self, cut: Option<usize>) -> Result<Profile> {
        self.cut = cut;
        if let Some(line) = cut
            && self.carry.is_none()
            && let Some(b) = &mut self.table
        {
            // The input ends inside a line of a table that has no totals line yet: rows after it
            // may be missing, and a row read from that line may be cut short.
            b.partial = true;
            self.started = Some(b.line);
            self.profile.warnings.push(unread::cut_row(line));
        }
        self.finish();
        self.profile.warnings.extend(self.losses.note());
        self.book.note_unread(cut, &mut self.profile.warnings);
        if self.profile.tables.is_empty() {
            let expected = "expected a `perf kvm stat` table: a column header such as \
                            `VM-EXIT  Samples  Samples%  Time%  Min Time  Max Time  Avg time` \
                            followed by rows";
            // A table whose rows were all unreadable or cut off: say that, at that row.
            if let (Some(header), Some(line)) = (self.started, cut) {
                return Err(Error::Parse {
                    path: self.path,
                    line,
                    message: format!(
                        "{expected}; the input ends on this line, before any row of the table \
                         whose header is on line {header} (cut off?)"
                    ),
                });
            }
            if let Some(note) = self
                .profile
                .warnings
                .iter()
                .find(|w| w.line.is_some() && w.message.contains("left out"))
            {
                return Err(Error::Parse {
                    path: self.path,
                    line: note.line.unwrap_or(1),
                    message: format!("{expected}; {}", note.message),
                });
            }
            return Err(self.book.nothing_found(&self.path, expected));
        }
        self.profile.tables.iter_mut().for_each(live::label_live);
        self.profile.settle_isa();
        Ok(self.profile)
    }
}

/// Lines that always stand on their own and so never continue a wrapped row.
fn structural(t: &str) -> bool {
    t.starts_with("Total Samples:")
        || t.starts_with("Analyze events for")
        || t.starts_with("Lost events:")
        || layout::timestamp(t).is_some()
        || layout::header(t).is_some()
}
