//! Lines a reader could not use, said with their line and the reason: the one place where the
//! text readers word these notes, so a row that is dropped is never dropped in silence.
//!
//! - A row that cannot be read is noted one by one (the first [`MAX_ROW_NOTES`]; after that
//!   they are counted, with the first line, in one more note).
//! - The last line of an input that ends without a newline may have been cut off: a reader
//!   that took a row from it says so (a count cut short still looks like a count).

use crate::profile::Note;

/// Unreadable rows noted one by one before the rest are only counted.
pub(crate) const MAX_ROW_NOTES: usize = 20;

/// Collects the rows that could not be read: (line, why, excerpt).
#[derive(Debug, Default)]
pub(crate) struct Unread {
    rows: Vec<(usize, String, String)>,
    more: u64,
    first_more: Option<usize>,
}

impl Unread {
    /// Whether no row was left unread.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.more == 0
    }

    /// Row-shaped line `line` could not be read, for reason `why`.
    pub(crate) fn row(&mut self, line: usize, text: &str, why: &str) {
        if self.rows.len() < MAX_ROW_NOTES {
            self.rows.push((line, why.to_string(), excerpt(text)));
        } else {
            self.more += 1;
            self.first_more.get_or_insert(line);
        }
    }

    /// The notes onto `notes`; a row on line `cut` (where the input ends without a newline)
    /// is said to be cut off.
    pub(crate) fn finish(self, cut: Option<usize>, notes: &mut Vec<Note>) {
        for (line, why, text) in self.rows {
            let message = if cut == Some(line) {
                format!(
                    "the input ends inside this row (cut off?; {why}), so it is left out: `{text}`"
                )
            } else {
                format!("could not read this row ({why}), so it is left out: `{text}`")
            };
            notes.push(Note {
                line: Some(line),
                message,
            });
        }
        if self.more > 0 {
            notes.push(Note {
                line: self.first_more,
                message: format!(
                    "and {} more rows that could not be read, from this line on (only the \
                     first {MAX_ROW_NOTES} are listed)",
                    self.more
                ),
            });
        }
    }
}

/// When the input ended inside line `cut` and that line gave the last row (`last_row`): notes
/// it ([`cut_row`]) and says so, so the caller marks its table partial.
pub(crate) fn row_was_cut(
    cut: Option<usize>,
    last_row: Option<usize>,
    notes: &mut Vec<Note>,
) -> bool {
    match cut {
        Some(line) if last_row == Some(line) => {
            notes.push(cut_row(line));
            true
        }
        _ => false,
    }
}

/// The note for a row taken from the last line of an input that has no newline after it.
pub(crate) fn cut_row(line: usize) -> Note {
    Note {
        line: Some(line),
        message: "the input ends inside this line (no newline after it): if it was cut off, the \
                  row read from it may be incomplete (a count cut short still reads as a count)"
            .into(),
    }
}

/// What makes a line unreadable before its cells are looked at: a NUL byte, or bytes that
/// were not UTF-8 (replaced by U+FFFD when the line was read).
pub(crate) fn damage(text: &str) -> Option<&'static str> {
    if text.contains('\0') {
        Some("a NUL byte in it")
    } else if text.contains('\u{fffd}') {
        Some("bytes that are not UTF-8 in it")
    } else {
        None
    }
}

/// Why `cell` is not a count.
pub(crate) fn not_a_count(cell: &str) -> String {
    if !cell.is_empty() && cell.bytes().all(|b| b.is_ascii_digit()) {
        format!("the count `{cell}` is larger than 2^64−1")
    } else {
        format!("`{cell}` is not a count")
    }
}

/// The start of a line for a note (at most 100 characters).
pub(crate) fn excerpt(t: &str) -> String {
    let t = t.trim_ascii();
    let mut s: String = t.chars().take(100).collect();
    if s.len() < t.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_past_the_cap_are_counted() {
        let mut u = Unread::default();
        for line in 1..=25 {
            u.row(line, "HLT x", "`x` is not a count");
        }
        let mut notes = Vec::new();
        u.finish(Some(1), &mut notes);
        assert!(notes[0].message.contains("cut off"));
        assert_eq!(notes.len(), MAX_ROW_NOTES + 1);
        assert_eq!(notes[MAX_ROW_NOTES].line, Some(21));
        assert!(notes[MAX_ROW_NOTES].message.starts_with("and 5 more"));
        assert!(not_a_count("99999999999999999999").contains("2^64"));
        assert_eq!(damage("a\0b"), Some("a NUL byte in it"));
    }
}
