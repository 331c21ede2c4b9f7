//! Notes of one kind that an input can repeat on every line or snapshot (a counter seen
//! again): the first few are noted one by one, the rest counted in one more note, so the notes
//! (and memory) stay bounded however long the input.

use crate::profile::Note;

/// Notes of one kind, the first [`CappedNotes::MAX`] listed.
#[derive(Debug, Default)]
pub(crate) struct CappedNotes {
    listed: usize,
    more: usize,
    first_more: Option<usize>,
}

impl CappedNotes {
    /// Notes listed one by one.
    pub(crate) const MAX: usize = 20;

    /// A note at `line`: listed in `notes` while fewer than [`CappedNotes::MAX`] are,
    /// otherwise counted (`message` is then not made).
    pub(crate) fn note(
        &mut self,
        notes: &mut Vec<Note>,
        line: usize,
        message: impl FnOnce() -> String,
    ) {
        if self.listed < Self::MAX {
            self.listed += 1;
            notes.push(Note {
                line: Some(line),
                message: message(),
            });
        } else {
            self.more += 1;
            self.first_more.get_or_insert(line);
        }
    }

    /// The note on those not listed, at the first of them, if there were any: `summary` is
    /// given their number.
    pub(crate) fn finish(self, notes: &mut Vec<Note>, summary: impl FnOnce(usize) -> String) {
        if self.more > 0 {
            notes.push(Note {
                line: self.first_more,
                message: summary(self.more),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CappedNotes;

    #[test]
    fn lists_the_first_and_counts_the_rest_at_the_first_not_listed() {
        let mut notes = Vec::new();
        let mut capped = CappedNotes::default();
        for line in 1..=25 {
            capped.note(&mut notes, line, || format!("line {line}"));
        }
        capped.finish(&mut notes, |n| format!("{n} more"));
        assert_eq!(notes.len(), CappedNotes::MAX + 1);
        assert_eq!(notes[19].message, "line 20");
        let last = notes.last().map(|n| (n.line, n.message.as_str()));
        assert_eq!(last, Some((Some(21), "5 more")));
        let mut none = Vec::new();
        CappedNotes::default().finish(&mut none, |n| format!("{n} more"));
        assert!(none.is_empty());
    }
}
