//! `Lost events: N` lines. perf prints one after each interval of a live session in which it
//! lost events (it counts them afresh every interval), so a long session under load prints
//! thousands: they are summed into one note, which keeps the notes (and memory) bounded
//! whatever the length of the transcript.

use crate::profile::Note;
use crate::sources::repeated_line::RepeatedLine;

/// The `Lost events` lines read: where, and the events they add up to.
#[derive(Debug, Default)]
pub(super) struct Losses {
    lines: RepeatedLine,
    events: u64,
}

impl Losses {
    /// Line `n` said perf lost `events` events.
    pub(super) fn add(&mut self, n: usize, events: u64) {
        self.lines.add(n);
        self.events = self.events.saturating_add(events);
    }

    /// Takes in `later`, the losses of the lines after these.
    pub(super) fn join(&mut self, later: Losses) {
        self.lines.join(later.lines);
        self.events = self.events.saturating_add(later.events);
    }

    /// The note for the user, at the first such line; none if perf lost nothing.
    pub(super) fn note(&self) -> Option<Note> {
        let first = self.lines.first()?;
        let message = match self.lines.span() {
            None => format!(
                "perf lost {} events: the counts are incomplete",
                self.events
            ),
            Some(span) => format!(
                "perf lost {} events in all, said {span}: the counts are incomplete",
                self.events
            ),
        };
        Some(Note {
            line: Some(first),
            message,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Losses;

    #[test]
    fn many_lines_are_one_note_and_join_as_read_in_one_pass() {
        let none = Losses::default();
        assert!(none.note().is_none());
        let mut one = Losses::default();
        one.add(22, 5);
        let note = one.note().map(|n| (n.line, n.message));
        assert_eq!(
            note,
            Some((
                Some(22),
                "perf lost 5 events: the counts are incomplete".to_string()
            ))
        );
        let mut all = Losses::default();
        let (mut front, mut back) = (Losses::default(), Losses::default());
        for (k, n) in (10..40).step_by(3).enumerate() {
            all.add(n, k as u64);
            match n < 25 {
                true => front.add(n, k as u64),
                false => back.add(n, k as u64),
            }
        }
        front.join(back);
        let said = |l: &Losses| l.note().map(|n| (n.line, n.message));
        assert_eq!(said(&front), said(&all));
        assert_eq!(
            said(&all).map(|(_, m)| m),
            Some(
                "perf lost 45 events in all, said on 10 lines, from here to line 37: the counts \
                 are incomplete"
                    .to_string()
            )
        );
    }
}
