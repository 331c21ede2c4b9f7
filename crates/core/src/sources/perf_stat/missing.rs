//! Rows perf stat printed without a count (`<not counted>`, `<not supported>`). With `-I`
//! perf prints such a row for the event in every interval, so they are noted once per event
//! and reason, whatever the length of the output.

use std::collections::HashMap;

use crate::profile::Note;

/// The rows perf printed without a count (`<not counted>` in every interval of `-I` for an
/// event that never ran): one note per event and reason, however many intervals.
#[derive(Default)]
pub(super) struct Missing {
    /// In the order first seen.
    seen: Vec<MissingRows>,
    /// Event and reason → index in `seen`.
    at: HashMap<(String, &'static str), usize>,
}

/// The rows of one event printed without a count for one reason.
struct MissingRows {
    event: String,
    why: &'static str,
    first: usize,
    last: usize,
    lines: u64,
}

impl Missing {
    pub(super) fn add(&mut self, n: usize, event: &str, why: &'static str) {
        let key = (event.to_string(), why);
        match self.at.get(&key) {
            Some(&i) => {
                let rows = &mut self.seen[i];
                rows.last = n;
                rows.lines += 1;
            }
            None => {
                self.at.insert(key, self.seen.len());
                self.seen.push(MissingRows {
                    event: event.to_string(),
                    why,
                    first: n,
                    last: n,
                    lines: 1,
                });
            }
        }
    }

    pub(super) fn notes(self) -> impl Iterator<Item = Note> {
        self.seen.into_iter().map(|r| {
            let (event, why) = (&r.event, r.why);
            Note {
                line: Some(r.first),
                message: match r.lines {
                    1 => {
                        format!("perf printed `{event}` as {why}: it has no count and is left out")
                    }
                    n => format!(
                        "perf printed `{event}` as {why} on {n} lines, from here to line {}: it \
                         has no count there and is left out",
                        r.last
                    ),
                },
            }
        })
    }
}
