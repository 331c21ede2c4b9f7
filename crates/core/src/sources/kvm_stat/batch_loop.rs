//! `kvm_stat -1` listings printed one after another, as a shell loop prints them
//! (`while :; do kvm_stat -1; done`, or with `date` before each): one run whose counts are the
//! sum of every listing's last column.
//!
//! Each `-1` listing samples for one second: its first column counts from that listing's own
//! start (or from the VM's, with `-i`), its second is the change over the second it slept. So
//! only the second column adds up across listings, and the sum covers one second per listing:
//! the run's window is that many seconds sampled, whatever the loop slept between them.
//! Memory stays that of one listing however long the loop ran.

use std::collections::HashMap;

use super::build::{Counter, Run};
use super::clock::digits;
use crate::profile::{Note, Window};

/// The listings of a loop read so far, folded into one run.
#[derive(Debug)]
pub(super) struct Loop {
    /// The first listing's run, with its counters replaced by the sums.
    run: Run,
    /// Counter name → index in `run.counters`.
    index: HashMap<String, usize>,
    listings: u32,
    /// The `date` lines before the first listing and the last one, as printed.
    first_stamp: Option<String>,
    last_stamp: Option<String>,
    /// The line of the last listing's first row.
    last_line: usize,
    /// Rows without a change column (gone down, or cut): their second is unknown.
    unknown: usize,
}

impl Loop {
    /// A loop starting with `first`, a whole listing, printed after `stamp`.
    pub(super) fn new(mut first: Run, stamp: Option<String>) -> Self {
        let counters = std::mem::take(&mut first.counters);
        let listing = Run {
            counters,
            ..first.clone()
        };
        let mut me = Self {
            last_line: first.line,
            run: first,
            index: HashMap::new(),
            listings: 0,
            first_stamp: stamp.clone(),
            last_stamp: None,
            unknown: 0,
        };
        me.add(listing, stamp);
        me
    }

    /// Folds the next listing, printed after `stamp`, into the sums.
    pub(super) fn add(&mut self, listing: Run, stamp: Option<String>) {
        self.listings += 1;
        self.last_line = listing.line;
        self.run.partial |= listing.partial;
        if stamp.is_some() {
            self.last_stamp = stamp;
        }
        for c in listing.counters {
            let Some(change) = c.rate else {
                self.unknown += 1;
                self.run.partial = true;
                continue;
            };
            match self.index.get(&c.name) {
                Some(&i) => {
                    if let Some(sum) = self.run.counters.get_mut(i) {
                        sum.total = sum.total.saturating_add(change);
                    }
                }
                None => {
                    self.index.insert(c.name.clone(), self.run.counters.len());
                    self.run.counters.push(Counter {
                        total: change,
                        rate: None,
                        ..c
                    });
                }
            }
        }
    }

    /// The run of the whole loop, its reading noted on `notes`.
    pub(super) fn finish(mut self, notes: &mut Vec<Note>) -> Run {
        let n = u64::from(self.listings.max(1));
        for c in &mut self.run.counters {
            c.rate = Some((c.total + n / 2) / n);
        }
        let stamps = match (&self.first_stamp, &self.last_stamp) {
            (Some(a), Some(b)) => format!(", stamped from `{a}` to `{b}`"),
            _ => String::new(),
        };
        notes.push(Note {
            line: Some(self.run.line),
            message: format!(
                "{n} `kvm_stat -1` listings printed one after another{stamps} (a loop; the last \
                 starts on line {}), read as one run: each count is the sum of the listings' \
                 second column, the change over the second each slept, so the counts cover {n} \
                 seconds sampled; the first column is not summed, since it counts from each \
                 listing's start (tracepoints) or the VM's (KVM's own counters)",
                self.last_line
            ),
        });
        if self.unknown > 0 {
            notes.push(Note {
                line: Some(self.run.line),
                message: format!(
                    "{} rows of this loop have no change column (the counter went down, or the \
                     row was cut), so their second is missing from the sums",
                    self.unknown
                ),
            });
        }
        self.run.rate_meaning = "mean change per second over the seconds the listings sampled";
        self.run.window = Some(Window {
            start: self.first_stamp,
            end: self.last_stamp,
            duration_ns: Some(n.saturating_mul(1_000_000_000)),
            intervals: self.listings,
        });
        self.run
    }
}

/// Whether `t` is a line printed by `date`: `Fri Feb 14 23:00:00 UTC 2025` (the C locale's
/// format, with or without a zone, and with `AM`/`PM` in English locales) or
/// `2025-02-14 23:00:00` (`date '+%F %T'`).
pub(super) fn is_date(t: &str) -> bool {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let cells: Vec<&str> = t.split_ascii_whitespace().collect();
    if let [date, time] = cells.as_slice() {
        return super::clock::datetime(date, time).is_some();
    }
    let [day, month, mday, time, rest @ ..] = cells.as_slice() else {
        return false;
    };
    let clock = time.split(':').collect::<Vec<_>>();
    DAYS.contains(day)
        && MONTHS.contains(month)
        && (1..=2).contains(&mday.len())
        && mday.bytes().all(|b| b.is_ascii_digit())
        && clock.len() == 3
        && clock.iter().all(|c| digits::<u32>(c, 2).is_some())
        && (1..=3).contains(&rest.len())
        && rest.last().is_some_and(|y| digits::<u32>(y, 4).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_lines_of_both_formats_are_told_from_rows() {
        assert!(is_date("Fri Feb 14 23:00:00 UTC 2025"));
        assert!(is_date("Fri Feb  7 11:00:00 PM UTC 2025"));
        assert!(is_date("Fri Feb 14 23:00:00 2025"));
        assert!(is_date("2025-02-14 23:00:00"));
        assert!(!is_date("kvm_exit                 100        10"));
        assert!(!is_date("Fri Feb 14 23:00:00"));
        assert!(!is_date("Fri Feb 14 23:00 UTC 2025"));
        assert!(!is_date("2025-02-14 25:00:00"));
        assert!(!is_date(""));
    }
}
