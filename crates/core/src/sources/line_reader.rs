//! The skeleton every line-oriented reader shares (perf kvm stat, kvm_stat, bcc kvmexit,
//! perf-prof): the input is read line by line ([`Lines`]: cleaned, numbered, capped), each line
//! goes to the format ([`LineFormat`]), and a [`LineBook`] keeps what every reader must say at
//! the end — each row it could not read (a damaged line costs that line, and is noted), whether
//! the input ended inside the line of its last row, and the first line it did not recognise
//! (named in the error when nothing was found).
//!
//! A line that holds two lines whose newline was lost is split where the format says
//! ([`LineFormat::split`]), else where both halves read ([`split_joined`]); the other repairs
//! are in [`super::line_repairs`]. Each repair is noted ([`LineBook::repaired`]), so a reader
//! never reads a damaged line in silence.

use std::io::BufRead;

use super::capped_notes::CappedNotes;
use super::line_repairs::{MAX_JOINED, MAX_JOINED_READS, split_joined};
use super::lines::Lines;
use super::unread::{self, Unread};
use crate::error::{Error, Result};
use crate::profile::{Note, Profile};

/// A line-oriented format: what it does with each line, and with the end of the input.
pub(super) trait LineFormat {
    /// Line `n` (1-based), cleaned.
    fn line(&mut self, n: usize, text: &str);

    /// The profile, once the input ended; `cut` is the last line when the input ended inside
    /// it (no newline after it).
    fn end(self, cut: Option<usize>) -> Result<Profile>;

    /// Where line `n` holds two lines joined into one (their newline lost): the byte offset
    /// at which the second starts. Both parts are then given to [`LineFormat::line`] as line
    /// `n`, the first part first, after the second part has been offered to `split` in turn (a
    /// few times at most). The format notes the repair. By default no line is split.
    fn split(&mut self, _n: usize, _text: &str) -> Option<usize> {
        None
    }

    /// Whether line `text` would be read whole as it stands (a row under the current header, a
    /// header, a title, …), without reading it. A format that answers (`SPLITS_JOINED`) gets a
    /// line that does not read split into two that do (see [`split_joined`]).
    fn reads(&self, _text: &str) -> bool {
        true
    }

    /// Whether a line that does not read could be two joined lines here: inside a table or
    /// screen, not in the text around one (so that prose is not tried).
    fn inside(&self) -> bool {
        true
    }

    /// Whether [`LineFormat::reads`] is answered, so that joined lines are split.
    const SPLITS_JOINED: bool = false;

    /// Line `n` read in one step when it is plainly the commonest line of the format (a row
    /// under the current header) and nothing else: true when it was read, and then neither
    /// [`LineFormat::split`] nor [`LineFormat::line`] sees it. A format answers only where the
    /// result is exactly what `split` and `line` would have made of the line; by default no
    /// line is read this way.
    fn plain(&mut self, _n: usize, _text: &str) -> bool {
        false
    }

    /// How many lines so far were the format's own (its rows, and where a session prints a
    /// column header without rows, its headers), for a format whose output is mostly such
    /// lines: every [`CHECK_EVERY`] lines, an input of which none was is refused there, and
    /// so is one of which fewer than one line in [`OTHERS_PER_OWN`] + 1 was. An endless
    /// stream of something else, `/dev/urandom` among them, would otherwise be read for as
    /// long as it lasts, also after a row it held by chance or a real table at its start.
    ///
    /// `None` (the default): never checked. A format whose input may hold long stretches of
    /// other text reads on: a kernel log (KVM's lines are few among the rest, and a log
    /// printed without prefixes is lines of any text); a workload's output before `perf
    /// stat`'s counts; xenalyze's record dump before its summary; a D script's own lines
    /// before the aggregations DTrace prints at its exit; a QMP log before a `query-stats`
    /// reply.
    fn own_lines(&self) -> Option<u64> {
        None
    }
}

/// How often (in lines) the share of a format's own lines is checked
/// ([`LineFormat::own_lines`]).
pub(super) const CHECK_EVERY: usize = 100_000;

/// Lines of other text per line of the format's own beyond which an input is not the
/// format's output: a paste has a few lines of prose per table, a terminal's session a few
/// lines of its own between intervals; noise reads as a row one line in tens of thousands.
const OTHERS_PER_OWN: u64 = 100;

/// Whether an input of which `own` lines were the format's, and `others` something else, is
/// not the format's output: none of it was, or fewer than one line in [`OTHERS_PER_OWN`] + 1.
/// (The check of the line formats here and of trace text, made every [`CHECK_EVERY`] lines.)
pub(super) fn mostly_something_else(own: u64, others: u64) -> bool {
    own == 0 || others / OTHERS_PER_OWN >= own
}

/// A line is split at most this many times (a few lines joined into one).
const MAX_SPLITS: usize = 4;

/// Reads `reader` with `format`; `path` names the input in errors.
pub(super) fn read_lines<R: BufRead, F: LineFormat>(
    reader: R,
    path: &str,
    mut format: F,
) -> Result<Profile> {
    let mut lines = Lines::new(reader, path);
    let mut driver = Driver::default();
    while let Some((n, text)) = lines.next_line()? {
        driver.line(&mut format, n, &text);
        if n.is_multiple_of(CHECK_EVERY)
            && let Some(own) = format.own_lines()
        {
            if own == 0 {
                return Err(nothing_after(format, path, n));
            }
            if mostly_something_else(own, n as u64 - own.min(n as u64)) {
                return Err(mostly_other(path, n, own));
            }
        }
    }
    let mut profile = format.end(lines.cut_line())?;
    profile.warnings.extend(driver.joined);
    Ok(profile)
}

/// The error for an input of which only `own` of the first `n` lines were the format's.
fn mostly_other(path: &str, n: usize, own: u64) -> Error {
    Error::Parse {
        path: path.to_string(),
        line: n,
        message: format!(
            "only {own} of the first {n} lines are this format's rows or headers (fewer than \
             one in {}): the rest is something else, so reading stopped here",
            OTHERS_PER_OWN + 1
        ),
    }
}

/// The error for an input of which `format` read nothing in its first `n` lines: the one it
/// gives an input that ends there, saying that reading stopped.
fn nothing_after<F: LineFormat>(format: F, path: &str, n: usize) -> Error {
    let why = format!("nothing of it in the first {n} lines, so reading stopped there");
    match format.end(None) {
        Err(Error::Parse {
            path,
            line,
            message,
        }) => Error::Parse {
            path,
            line,
            message: format!("{message}; {why}"),
        },
        Err(Error::Input { path, message }) => Error::Input {
            path,
            message: format!("{message}; {why}"),
        },
        Err(e) => e,
        Ok(_) => Error::Input {
            path: path.to_string(),
            message: why,
        },
    }
}

/// What the driver keeps from line to line: the notes of joined lines it split, and how many
/// halves it has read looking for them.
#[derive(Default)]
pub(super) struct Driver {
    pub(super) joined: Vec<Note>,
    spent: usize,
}

impl Driver {
    /// Gives line `n` to `format`: in one step ([`LineFormat::plain`]), or split where it
    /// holds joined lines, part by part.
    pub(super) fn line<F: LineFormat>(&mut self, format: &mut F, n: usize, text: &str) {
        if format.plain(n, text) {
            return;
        }
        let mut rest: &str = text;
        for _ in 0..MAX_SPLITS {
            match format.split(n, rest) {
                Some(at) if at > 0 && at < rest.len() && rest.is_char_boundary(at) => {
                    format.line(n, &rest[..at]);
                    rest = &rest[at..];
                }
                _ => break,
            }
        }
        if F::SPLITS_JOINED
            && self.spent < MAX_JOINED_READS
            && rest.len() <= MAX_JOINED
            && format.inside()
            && !format.reads(rest)
        {
            let spent = std::cell::Cell::new(self.spent);
            let reads = |t: &str| {
                spent.set(spent.get() + 1);
                format.reads(t)
            };
            let split = split_joined(rest, reads);
            self.spent = spent.get();
            if let Some((left, right)) = split {
                self.joined.push(Note {
                    line: Some(n),
                    message: format!(
                        "two lines joined into one (a lost line break?): read as `{}` and `{}`",
                        unread::excerpt(left),
                        unread::excerpt(&right)
                    ),
                });
                format.line(n, left);
                format.line(n, &right);
                return;
            }
        }
        format.line(n, rest);
    }
}

/// What a reader must account for by the end of the input.
#[derive(Debug, Default)]
pub(super) struct LineBook {
    first_unrecognised: Option<(usize, String)>,
    /// The last line not recognised before the first row: if it is right above that row and
    /// shaped like one, it is that table's first row, damaged (noted when the row comes).
    last_unrecognised: Option<(usize, String)>,
    unread: Unread,
    last_row: Option<usize>,
    /// Rows read.
    rows: u64,
    repairs: Vec<Note>,
    /// The repairs past the first few, counted in one more note.
    repairs_capped: CappedNotes,
}

/// How every note of a repair starts: the line was damaged, and read anyway (tests tell these
/// notes from notes of a loss by it).
pub const REPAIR_NOTE: &str = "a damaged line, read anyway:";

impl LineBook {
    /// A row was read from line `n`.
    pub(super) fn row(&mut self, n: usize) {
        if self.last_row.is_none()
            && let Some((m, text)) = self.last_unrecognised.take()
            && m < n
            && n - m <= 2
            && row_shaped(&text)
        {
            self.unread.row(
                m,
                &text,
                "the line above the first row is shaped like a row but cannot be read",
            );
        }
        self.last_row = Some(n);
        self.rows += 1;
    }

    /// Whether nothing was left unread or repaired (the notes that only this book holds).
    pub(super) fn is_quiet(&self) -> bool {
        self.unread.is_empty() && self.repairs.is_empty()
    }

    /// Takes over from `later`, the book of the lines after this one's, which is quiet
    /// ([`LineBook::is_quiet`]): its last row, and its first unrecognised line if this book
    /// has none.
    pub(super) fn absorb(&mut self, later: LineBook) {
        self.rows += later.rows;
        if later.last_row.is_some() {
            self.last_row = later.last_row;
            self.last_unrecognised = None;
        }
        if self.first_unrecognised.is_none() {
            self.first_unrecognised = later.first_unrecognised;
        }
    }

    /// How many rows were read ([`LineFormat::own_lines`] of most formats).
    pub(super) fn rows(&self) -> u64 {
        self.rows
    }

    /// The line of the last row read.
    pub(super) fn last_row(&self) -> Option<usize> {
        self.last_row
    }

    /// Row-shaped line `n` could not be read, for reason `why`: it is left out, and noted.
    /// (A row that is only partly there, as a name with no numbers, is one too.)
    pub(super) fn unreadable(&mut self, n: usize, text: &str, why: &str) {
        self.unread.row(n, text, why);
    }

    /// Damaged line `n` was still read: `how` says what it was read as (`the column header
    /// and the rule under it, joined`). Noted with the line.
    pub(super) fn repaired(&mut self, n: usize, how: &str) {
        self.repairs_capped
            .note(&mut self.repairs, n, || format!("{REPAIR_NOTE} {how}"));
    }

    /// Line `n` is not of the format: the first such line is named if nothing is found.
    pub(super) fn unrecognised(&mut self, n: usize, text: &str) {
        if self.last_row.is_none() {
            self.last_unrecognised = Some((n, text.chars().take(200).collect()));
        }
        if self.first_unrecognised.is_none() {
            self.first_unrecognised = Some((n, text.chars().take(80).collect()));
        }
    }

    /// Whether the input ended inside the line of the last row read: then that is noted, and
    /// the caller marks the row's table partial.
    pub(super) fn last_row_cut(&self, cut: Option<usize>, notes: &mut Vec<Note>) -> bool {
        unread::row_was_cut(cut, self.last_row, notes)
    }

    /// The notes of the rows that could not be read and of the lines repaired, onto `notes`.
    pub(super) fn note_unread(&mut self, cut: Option<usize>, notes: &mut Vec<Note>) {
        std::mem::take(&mut self.unread).finish(cut, notes);
        std::mem::take(&mut self.repairs_capped).finish(&mut self.repairs, |more| {
            format!(
                "{REPAIR_NOTE} {more} more damaged lines from this one on (only the first {} \
                 are listed)",
                CappedNotes::MAX
            )
        });
        notes.append(&mut self.repairs);
    }

    /// The first line not recognised: its number and its start.
    pub(super) fn first_unrecognised(self) -> Option<(usize, String)> {
        self.first_unrecognised
    }

    /// The error for an input of `path` in which nothing of the format was found: the first
    /// line not recognised, and what was `expected`.
    pub(super) fn nothing_found(self, path: &str, expected: &str) -> Error {
        Error::nothing_found(path, self.first_unrecognised, expected)
    }
}

/// Whether `text` is shaped like a table row: it starts with a counter's or an exit's name
/// (`kvm_exit`, `halt_exits`, `MSR_WRITE`, `HLT`: a letter first, then an `_` or capitals
/// only), whatever follows. Prose starts with a word of lower case and no `_`.
fn row_shaped(text: &str) -> bool {
    let Some(word) = text.split_whitespace().next() else {
        return false;
    };
    let letters = word.chars().filter(char::is_ascii_alphabetic).count();
    word.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && (word.contains('_') || (letters >= 2 && !word.chars().any(|c| c.is_ascii_lowercase())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::line_repairs::tests::row;

    #[test]
    fn repairs_past_the_first_twenty_are_counted_in_one_note() {
        let mut book = LineBook::default();
        for n in 1..=25 {
            book.repaired(n, "two rows on one line");
        }
        assert!(!book.is_quiet());
        let mut notes = Vec::new();
        book.note_unread(None, &mut notes);
        assert_eq!(notes.len(), CappedNotes::MAX + 1);
        assert!(notes.iter().all(|n| n.message.starts_with(REPAIR_NOTE)));
        let last = notes
            .last()
            .map(|n| (n.line, n.message.contains(" 5 more damaged lines")));
        assert_eq!(last, Some((Some(21), true)));
    }

    /// A format whose rows are [`row`]s and whose other lines are anything.
    struct Rows {
        book: LineBook,
    }

    impl LineFormat for Rows {
        fn line(&mut self, n: usize, text: &str) {
            if row(text) {
                self.book.row(n);
            }
        }
        fn end(self, _cut: Option<usize>) -> Result<Profile> {
            Ok(Profile::new(crate::profile::Origin::new("rows", None)))
        }
        fn own_lines(&self) -> Option<u64> {
            Some(self.book.rows())
        }
    }

    /// The error reading `lines` lines gives, where line `n` is a row when `is_row(n)`; `None`
    /// when they are read to the end.
    fn refusal(lines: usize, is_row: impl Fn(usize) -> bool) -> Option<String> {
        let text: String = (1..=lines)
            .map(|n| {
                if is_row(n) {
                    "HLT 1 2\n"
                } else {
                    "other text\n"
                }
            })
            .collect();
        let rows = Rows {
            book: LineBook::default(),
        };
        read_lines(text.as_bytes(), "t", rows)
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn an_input_of_too_few_own_lines_is_refused_at_each_check() {
        // One line in 101 is the least an input may hold of its own lines: one in 100 is
        // read, one in 102 is not.
        assert_eq!(refusal(2 * CHECK_EVERY, |n| n % 100 == 0), None);
        let err = refusal(2 * CHECK_EVERY, |n| n % 102 == 0);
        assert!(
            err.as_ref()
                .is_some_and(|e| e.contains(":100000: only 980 of the first 100000")),
            "{err:?}"
        );
        // Checked again at every CHECK_EVERY lines: good enough at the first check, not at
        // the second.
        let err = refusal(2 * CHECK_EVERY, |n| n <= 1000);
        assert!(
            err.as_ref()
                .is_some_and(|e| e.contains(":200000: only 1000 ")),
            "{err:?}"
        );
        // Shorter inputs are never checked.
        assert_eq!(refusal(CHECK_EVERY - 1, |n| n % 1000 == 0), None);
    }
}
