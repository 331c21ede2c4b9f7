//! Rows perf stat printed without a count (`<not counted>`, `<not supported>`). With `-I`
//! perf prints such a row for the event in every interval, so they are noted once per event
//! and reason, whatever the length of the output.

use std::collections::HashMap;

use crate::profile::Note;
use crate::sources::repeated_line::RepeatedLine;

/// The rows perf printed without a count (`<not counted>` in every interval of `-I` for an
/// event that never ran): one note per event and reason, however many intervals.
#[derive(Default)]
pub(super) struct Missing {
    /// Event, reason and where, in the order first seen.
    seen: Vec<(String, &'static str, RepeatedLine)>,
    /// Event → its reasons (one or two) and their indices in `seen`.
    at: HashMap<String, Vec<(&'static str, usize)>>,
}

impl Missing {
    /// Line `n` printed `event` without a count, for reason `why`.
    pub(super) fn add(&mut self, n: usize, event: &str, why: &'static str) {
        let found = self
            .at
            .get(event)
            .and_then(|whys| whys.iter().find(|(w, _)| *w == why))
            .map(|&(_, i)| i);
        let i = match found {
            Some(i) => i,
            None => {
                let i = self.seen.len();
                self.seen
                    .push((event.to_string(), why, RepeatedLine::default()));
                self.at.entry(event.to_string()).or_default().push((why, i));
                i
            }
        };
        if let Some((_, _, lines)) = self.seen.get_mut(i) {
            lines.add(n);
        }
    }

    pub(super) fn notes(self) -> impl Iterator<Item = Note> {
        self.seen.into_iter().map(|(event, why, lines)| Note {
            line: lines.first(),
            message: match lines.span() {
                None => format!("perf printed `{event}` as {why}: it has no count and is left out"),
                Some(span) => format!(
                    "perf printed `{event}` as {why} {span}: it has no count there and is left out"
                ),
            },
        })
    }
}
