//! The skeleton every line-oriented reader shares (perf kvm stat, kvm_stat, bcc kvmexit,
//! perf-prof): the input is read line by line ([`Lines`]: cleaned, numbered, capped), each line
//! goes to the format ([`LineFormat`]), and a [`LineBook`] keeps what every reader must say at
//! the end — each row it could not read (a damaged line costs that line, and is noted), whether
//! the input ended inside the line of its last row, and the first line it did not recognise
//! (named in the error when nothing was found).

use std::io::BufRead;

use super::lines::Lines;
use super::unread::{self, Unread};
use crate::error::{Error, Result};
use crate::profile::{Note, Profile};

/// A line-oriented format: what it does with each line, and with the end of the input.
pub trait LineFormat {
    /// Line `n` (1-based), cleaned.
    fn line(&mut self, n: usize, text: &str);

    /// The profile, once the input ended; `cut` is the last line when the input ended inside
    /// it (no newline after it).
    fn end(self, cut: Option<usize>) -> Result<Profile>;

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
}

/// The longest line tried as two joined lines (two rows of any of the table formats fit).
pub const MAX_JOINED: usize = 320;

/// How many halves of lines one input may have read while looking for joined lines (a try
/// reads the halves at every split point of a line): past this, no more lines are tried, so an
/// input of many unreadable lines costs at most this many short reads more.
pub const MAX_JOINED_READS: usize = 40_000;

/// Where `text`, a line that does not read whole, splits into two lines that both read by
/// `reads` (the first such point): the two halves, the second cleaned as a line is (it may
/// start with mail quote marks). Never splits inside a number (between two digits or at its
/// decimal point), so no number is made up; `None` when no split reads.
pub fn split_joined(text: &str, reads: impl Fn(&str) -> bool) -> Option<(&str, String)> {
    if text.len() > MAX_JOINED {
        return None;
    }
    let bytes = text.as_bytes();
    let numeric = |b: u8| b.is_ascii_digit() || b == b'.' || b == b',';
    let first = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    (first + 1..bytes.len()).find_map(|at| {
        let (before, after) = (bytes[at - 1], bytes[at]);
        if !text.is_char_boundary(at)
            || before.is_ascii_whitespace()
            || (numeric(before) && numeric(after))
        {
            return None;
        }
        let (left, right) = text.split_at(at);
        // Inside a word (`100.00MSR_WRITE`, `187> >>>>`, `%gsys-----`), the part after the
        // split must be a name (a letter first, three letters at least, more letters than
        // digits), a rule or a mail quote mark: `2047x9` is a damaged count, not `2047` and a
        // row named `x9`.
        let word = right
            .split(|c: char| c.is_ascii_whitespace())
            .next()
            .unwrap_or("");
        if !(after.is_ascii_whitespace() || after == b'>' || name_like(word)) {
            return None;
        }
        if right.trim_ascii().is_empty() || !reads(left) {
            return None;
        }
        let right = super::lines::clean(std::borrow::Cow::Borrowed(right)).into_owned();
        reads(&right).then_some((left, right))
    })
}

/// Whether `word` can start a line: a name (a letter first, at least three letters, and more
/// letters than digits: `MSR_WRITE`, `kvm_exit(SYS64)`; not `x9`, `x789`) or a table's rule
/// (`-----`).
fn name_like(word: &str) -> bool {
    let letters = word.bytes().filter(u8::is_ascii_alphabetic).count();
    let digits = word.bytes().filter(u8::is_ascii_digit).count();
    let rule = word.len() >= 3 && word.bytes().all(|b| b == b'-' || b == b'=');
    rule || (word.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && letters >= 3
        && letters > digits)
}

/// Reads `reader` with `format`; `path` names the input in errors.
pub fn read_lines<R: BufRead, F: LineFormat>(
    reader: R,
    path: &str,
    mut format: F,
) -> Result<Profile> {
    let mut lines = Lines::new(reader, path);
    let mut joined: Vec<Note> = Vec::new();
    let spent = std::cell::Cell::new(0usize);
    while let Some((n, text)) = lines.next_line()? {
        if F::SPLITS_JOINED
            && spent.get() < MAX_JOINED_READS
            && text.len() <= MAX_JOINED
            && format.inside()
            && !format.reads(&text)
        {
            let reads = |t: &str| {
                spent.set(spent.get() + 1);
                format.reads(t)
            };
            if let Some((left, right)) = split_joined(&text, reads) {
                joined.push(Note {
                    line: Some(n),
                    message: format!(
                        "two lines joined into one (a lost line break?): read as `{}` and `{}`",
                        unread::excerpt(left),
                        unread::excerpt(&right)
                    ),
                });
                format.line(n, left);
                format.line(n, &right);
                continue;
            }
        }
        format.line(n, &text);
    }
    let mut profile = format.end(lines.cut_line())?;
    profile.warnings.extend(joined);
    Ok(profile)
}

/// What a reader must account for by the end of the input.
#[derive(Debug, Default)]
pub struct LineBook {
    first_unrecognised: Option<(usize, String)>,
    unread: Unread,
    last_row: Option<usize>,
}

impl LineBook {
    /// A row was read from line `n`.
    pub fn row(&mut self, n: usize) {
        self.last_row = Some(n);
    }

    /// The line of the last row read.
    pub fn last_row(&self) -> Option<usize> {
        self.last_row
    }

    /// Row-shaped line `n` could not be read, for reason `why`: it is left out, and noted.
    /// (A row that is only partly there, as a name with no numbers, is one too.)
    pub fn unreadable(&mut self, n: usize, text: &str, why: &str) {
        self.unread.row(n, text, why);
    }

    /// Line `n` is not of the format: the first such line is named if nothing is found.
    pub fn unrecognised(&mut self, n: usize, text: &str) {
        if self.first_unrecognised.is_none() {
            self.first_unrecognised = Some((n, text.chars().take(80).collect()));
        }
    }

    /// Whether the input ended inside the line of the last row read: then that is noted, and
    /// the caller marks the row's table partial.
    pub fn last_row_cut(&self, cut: Option<usize>, notes: &mut Vec<Note>) -> bool {
        unread::row_was_cut(cut, self.last_row, notes)
    }

    /// The notes of the rows that could not be read, onto `notes`.
    pub fn note_unread(&mut self, cut: Option<usize>, notes: &mut Vec<Note>) {
        std::mem::take(&mut self.unread).finish(cut, notes);
    }

    /// The first line not recognised: its number and its start.
    pub fn first_unrecognised(self) -> Option<(usize, String)> {
        self.first_unrecognised
    }

    /// The error for an input of `path` in which nothing of the format was found: the first
    /// line not recognised, and what was `expected`.
    pub fn nothing_found(self, path: &str, expected: &str) -> Error {
        Error::nothing_found(path, self.first_unrecognised, expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row: a name, then two whole numbers.
    fn row(t: &str) -> bool {
        let w: Vec<&str> = t.split_ascii_whitespace().collect();
        w.len() == 3
            && w[0].bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
            && w[1..].iter().all(|n| n.parse::<u64>().is_ok())
    }

    #[test]
    fn joined_rows_split_where_both_halves_read() {
        let got = split_joined("HLT 12 34MSR_WRITE 5 6", row);
        assert_eq!(got, Some(("HLT 12 34", "MSR_WRITE 5 6".to_string())));
        // Mail quote marks in front of the second half are cleaned off.
        let got = split_joined("exits 1 2> >>>>   irq_exits 3 4", row);
        assert_eq!(
            got.map(|g| g.1.trim().to_string()),
            Some("irq_exits 3 4".into())
        );
        // Never inside a number, never before a word that is no name: no number made up.
        assert_eq!(split_joined("exits 2047x9 0", row), None);
        assert_eq!(split_joined("exits 20 47 0", row), None);
        assert_eq!(split_joined(&"x ".repeat(200), row), None);
    }
}
