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
}

/// Reads `reader` with `format`; `path` names the input in errors.
pub fn read_lines<R: BufRead, F: LineFormat>(
    reader: R,
    path: &str,
    mut format: F,
) -> Result<Profile> {
    let mut lines = Lines::new(reader, path);
    while let Some((n, text)) = lines.next_line()? {
        format.line(n, &text);
    }
    format.end(lines.cut_line())
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

    /// Row-shaped line `n` could not be read, for reason `why`: it is left out, and noted.
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
