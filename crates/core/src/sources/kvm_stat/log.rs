//! kvm_stat's logging modes, summed into one run per log:
//!
//! - `-l`: a banner of the field names joined by spaces (repeated every 20 lines; before 2017
//!   each name was cut to 9 characters and printed `'%10s'`), then one line per interval of
//!   `' %9d'` deltas, prefixed with `YYYY-MM-DD HH:MM:SS` since timestamps were added;
//! - `-c`: a `timestamp,f1,f2,…` banner, then `YYYY-MM-DD HH:MM:SS,d1,d2,…` lines.
//!
//! The deltas of all intervals are summed into counts, and the timestamps give the window the
//! counts cover (so reports can compute rates): from the first stamp back one interval, to the
//! last. One interval is the `-s` delay when the command line shows it, otherwise the smallest
//! gap between consecutive stamps (lines skipped by `-z` make some gaps longer).

use super::build::{Counter, Run, RunKind};
use super::clock;
use super::names::{EXIT_PARENT, is_field, is_known, split_child};
use crate::profile::{Note, Window};

/// One interval's line.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sample {
    /// The timestamp as printed, and in nanoseconds.
    pub stamp: Option<(String, i64)>,
    pub values: Vec<i64>,
}

/// The fields of a `-c` banner.
pub(super) fn csv_banner(t: &str) -> Option<Vec<String>> {
    let rest = t.trim().strip_prefix("timestamp,")?;
    let fields: Vec<String> = rest.split(',').map(|f| f.trim().to_string()).collect();
    fields
        .iter()
        .all(|f| is_field(f))
        .then_some(fields)
        .filter(|f| !f.is_empty())
}

/// A `-c` data line.
pub(super) fn csv_data(t: &str) -> Option<Sample> {
    let mut cells = t.trim().trim_end_matches(',').split(',');
    let stamp = cells.next()?.trim();
    let (date, time) = stamp.split_once(' ')?;
    let ns = clock::datetime(date, time.trim())?;
    let values = cells
        .map(|c| c.trim().parse::<i64>().ok())
        .collect::<Option<Vec<_>>>()?;
    Some(Sample {
        stamp: Some((stamp.to_string(), ns)),
        values,
    })
}

/// The fields of a `-l` banner: every word a field name, at least one a known KVM counter.
pub(super) fn plain_banner(t: &str) -> Option<Vec<String>> {
    is_banner(t).then(|| t.split_ascii_whitespace().map(str::to_string).collect())
}

/// Whether `t` is a `-l` banner (see [`plain_banner`]), without taking its fields.
pub(super) fn is_banner(t: &str) -> bool {
    let mut known = false;
    t.split_ascii_whitespace().all(|w| {
        known |= is_known(w);
        is_field(w)
    }) && known
}

/// A `-l` data line: optional date and time, then integers.
pub(super) fn plain_data(t: &str) -> Option<Sample> {
    let toks: Vec<&str> = t.split_ascii_whitespace().collect();
    let (stamp, rest) = match toks.as_slice() {
        [date, time, rest @ ..] if date.len() == 10 && date.contains('-') => {
            let ns = clock::datetime(date, time)?;
            (Some((format!("{date} {time}"), ns)), rest)
        }
        all => (None, all),
    };
    let values = rest
        .iter()
        .map(|v| v.parse::<i64>().ok())
        .collect::<Option<Vec<_>>>()?;
    (!values.is_empty()).then_some(Sample { stamp, values })
}

/// Why a line under a log's banner, with numbers in it, is not one of its data lines.
pub(super) fn damage(t: &str, csv: bool, fields: usize) -> Option<String> {
    if !t.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Some(why) = crate::sources::unread::damage(t) {
        return Some(why.into());
    }
    let cells: Vec<&str> = if csv {
        t.trim()
            .trim_end_matches(',')
            .split(',')
            .skip(1)
            .map(str::trim)
            .collect()
    } else {
        let toks: Vec<&str> = t.split_ascii_whitespace().collect();
        let stamped = toks
            .first()
            .is_some_and(|d| d.len() == 10 && d.contains('-'));
        toks.into_iter().skip(if stamped { 2 } else { 0 }).collect()
    };
    if let Some(bad) = cells.iter().find(|c| c.parse::<i64>().is_err()) {
        return Some(format!("`{bad}` is not a whole number of events"));
    }
    Some(format!(
        "expected a timestamp and {fields} values as the banner names"
    ))
}

/// A log being summed.
#[derive(Debug)]
pub(super) struct Log {
    pub csv: bool,
    pub fields: Vec<String>,
    sums: Vec<i64>,
    intervals: u32,
    first: Option<(String, i64)>,
    last: Option<(String, i64)>,
    min_gap: Option<i64>,
    unstamped: u32,
    line: usize,
    /// The `-s` delay from the command line, in nanoseconds.
    delay: Option<i64>,
    /// The command line that started the log.
    pub label: Option<String>,
    /// Lines whose number of values does not match the banner: the first (line, values), and
    /// how many.
    mismatch: Option<(usize, usize)>,
    mismatches: usize,
    /// Intervals are missing: lines skipped, unreadable, elided, or cut off.
    pub partial: bool,
}

impl Log {
    /// A log whose banner at `line` names `fields`.
    pub(super) fn new(csv: bool, fields: Vec<String>, line: usize, delay_s: Option<f64>) -> Self {
        Self {
            csv,
            sums: vec![0; fields.len()],
            fields,
            intervals: 0,
            first: None,
            last: None,
            min_gap: None,
            unstamped: 0,
            line,
            delay: delay_s
                .filter(|d| d.is_finite() && *d > 0.0)
                .map(|d| (d * 1e9).round() as i64),
            label: None,
            mismatch: None,
            mismatches: 0,
            partial: false,
        }
    }

    /// Adds the interval read on `line`; one whose values do not match the banner is counted
    /// as skipped.
    pub(super) fn add(&mut self, line: usize, s: Sample) {
        if s.values.len() != self.fields.len() {
            self.partial = true;
            self.mismatches += 1;
            self.mismatch.get_or_insert((line, s.values.len()));
            return;
        }
        for (sum, v) in self.sums.iter_mut().zip(&s.values) {
            *sum = sum.saturating_add(*v);
        }
        self.intervals = self.intervals.saturating_add(1);
        match s.stamp {
            Some((text, ns)) => {
                if let Some((_, prev)) = &self.last {
                    let gap = ns.saturating_sub(*prev);
                    if gap > 0 && self.min_gap.is_none_or(|g| gap < g) {
                        self.min_gap = Some(gap);
                    }
                }
                if self.first.is_none() {
                    self.first = Some((text.clone(), ns));
                }
                self.last = Some((text, ns));
            }
            None => self.unstamped = self.unstamped.saturating_add(1),
        }
    }

    /// The run: counts summed over the intervals, with their window.
    pub(super) fn finish(self, notes: &mut Vec<Note>) -> Run {
        let mut run = Run::new(RunKind::Log, self.line);
        run.partial = self.partial;
        run.label = self.label;
        run.scope = Some(format!(
            "{} intervals of kvm_stat {}",
            self.intervals,
            if self.csv { "-c" } else { "-l" }
        ));
        if let Some((line, got)) = self.mismatch {
            let more = match self.mismatches {
                1 => String::new(),
                n => format!(" ({n} lines in all)"),
            };
            notes.push(Note {
                line: Some(line),
                message: format!(
                    "expected {} values as the banner names, found {got}; line skipped{more}",
                    self.fields.len()
                ),
            });
        }
        if self.fields.iter().all(|f| f.len() <= 9) && self.fields.iter().any(|f| f.ends_with('('))
        {
            notes.push(Note {
                line: Some(self.line),
                message: "this banner cuts field names to 9 characters (kvm_stat before 2017): \
                          children of kvm_exit cannot be told apart"
                    .into(),
            });
        }
        for (field, sum) in self.fields.iter().zip(&self.sums) {
            if *sum < 0 {
                notes.push(Note {
                    line: Some(self.line),
                    message: format!(
                        "`{field}` went down by {} over the log (a guest went away); counted as 0",
                        sum.unsigned_abs()
                    ),
                });
            }
            let (exit, child) = match split_child(field) {
                Some((parent, reason)) => ((parent == EXIT_PARENT).then(|| reason.into()), true),
                None => (None, false),
            };
            run.counters.push(Counter {
                name: field.clone(),
                exit,
                child,
                total: u64::try_from(*sum).unwrap_or(0),
                rate: None,
                line: self.line,
            });
        }
        let gap = self.delay.or(self.min_gap);
        let duration = match (&self.first, &self.last) {
            (Some((_, a)), Some((_, b))) if self.unstamped == 0 => {
                gap.map(|g| b.saturating_sub(*a).saturating_add(g))
            }
            _ => self
                .delay
                .map(|d| d.saturating_mul(i64::from(self.intervals))),
        };
        if self.first.is_none() && self.delay.is_none() {
            notes.push(Note {
                line: Some(self.line),
                message: format!(
                    "this log prints no timestamps, so its {} intervals have no known length \
                     (kvm_stat versions without timestamps slept 1 s between lines)",
                    self.intervals
                ),
            });
        }
        run.window = Some(Window {
            start: self.first.map(|f| f.0),
            end: self.last.map(|l| l.0),
            duration_ns: duration
                .and_then(|d| u64::try_from(d).ok())
                .filter(|d| *d > 0),
            intervals: self.intervals,
        });
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(
            csv_banner("timestamp,exits,kvm_exit(HLT)").map(|f| f.len()),
            Some(2)
        );
        assert!(csv_banner("timestamp,").is_none());
        let s = csv_data("2024-03-01 10:00:03,5,-6");
        assert_eq!(s.map(|s| s.values), Some(vec![5, -6]));
        assert!(plain_banner("exits halt_exits io_exits ").is_some());
        assert!(plain_banner("hello world").is_none());
        let s = plain_data("2024-03-01 10:00:03      5      6");
        assert_eq!(
            s.as_ref()
                .and_then(|s| s.stamp.as_ref().map(|t| t.0.clone())),
            Some("2024-03-01 10:00:03".into())
        );
        assert_eq!(plain_data("   1   2 ").map(|s| s.values), Some(vec![1, 2]));
        assert!(plain_data("a 1").is_none());
    }
}
