//! Durations of the events behind one row: total, min, max, mean and spread, mergeable across
//! rows (parallel Welford), with every field unknown (`None`) unless the source carried it.

use serde::{Deserialize, Serialize};

/// What is known about the durations of a row's events. `total_ns` unknown means no time at
/// all; `m2` (sum of squared deviations from the mean, ns²) is known only when the source gave
/// individual events or perf's relative standard error. `timed` is how many events the
/// durations describe when that is fewer than the row's count (a trace that starts or ends
/// between an exit and its entry); `None` means all of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeStats {
    pub total_ns: Option<u64>,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub m2: Option<f64>,
    pub timed: Option<u64>,
}

impl TimeStats {
    /// Stats with nothing known about time.
    pub fn unknown() -> Self {
        Self::default()
    }

    /// The mean duration, when the total is known and there are events.
    pub fn mean_ns(&self, count: u64) -> Option<f64> {
        match (self.total_ns, self.timed.unwrap_or(count)) {
            (Some(total), n) if n > 0 => Some(total as f64 / n as f64),
            _ => None,
        }
    }

    /// perf's `( +-x% )`: the relative standard error of the mean, in percent.
    pub fn rel_stderr_pct(&self, count: u64) -> Option<f64> {
        let m2 = self.m2?;
        let mean = self.mean_ns(count)?;
        let count = self.timed.unwrap_or(count);
        if count < 2 || mean <= 0.0 {
            return None;
        }
        let n = count as f64;
        let variance = m2 / (n - 1.0);
        Some(100.0 * (variance / n).sqrt() / mean)
    }

    /// Recovers `m2` from perf's relative standard error of the mean, so rows read from a
    /// table can still be merged with their spread.
    pub fn m2_from_rel_stderr(rel_pct: f64, mean_ns: f64, count: u64) -> Option<f64> {
        if count < 2 || !rel_pct.is_finite() || rel_pct < 0.0 {
            return None;
        }
        let n = count as f64;
        let stderr = rel_pct / 100.0 * mean_ns;
        Some(stderr * stderr * n * (n - 1.0))
    }

    /// Folds `other` (describing `n_other` events) into `self` (describing `n_self`).
    pub fn merge(&mut self, n_self: u64, other: &TimeStats, n_other: u64) {
        let timed = match (self.timed, other.timed) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(n_self) + b.unwrap_or(n_other)),
        };
        let (n_self, n_other) = (self.timed.unwrap_or(n_self), other.timed.unwrap_or(n_other));
        let m2 = match (
            self.m2,
            other.m2,
            self.mean_ns(n_self),
            other.mean_ns(n_other),
        ) {
            (Some(a), Some(b), Some(ma), Some(mb)) => {
                let (na, nb) = (n_self as f64, n_other as f64);
                let delta = mb - ma;
                Some(a + b + delta * delta * na * nb / (na + nb))
            }
            _ if n_self == 0 => other.m2,
            _ if n_other == 0 => self.m2,
            _ => None,
        };
        let both = |a: Option<u64>, b: Option<u64>, f: fn(u64, u64) -> u64| match (a, b) {
            (Some(a), Some(b)) => Some(f(a, b)),
            (a, None) if n_other == 0 => a,
            (None, b) if n_self == 0 => b,
            _ => None,
        };
        self.total_ns = both(self.total_ns, other.total_ns, u64::saturating_add);
        self.min_ns = both(self.min_ns, other.min_ns, u64::min);
        self.max_ns = both(self.max_ns, other.max_ns, u64::max);
        self.m2 = m2;
        self.timed = timed;
    }
}

/// A running accumulator for individual event durations (Welford's online algorithm).
#[derive(Debug, Clone, Default)]
pub struct Welford {
    count: u64,
    mean: f64,
    m2: f64,
    total: u64,
    min: u64,
    max: u64,
}

impl Welford {
    /// Adds one event of `ns` nanoseconds.
    pub fn push(&mut self, ns: u64) {
        self.count += 1;
        let x = ns as f64;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
        self.total = self.total.saturating_add(ns);
        self.min = if self.count == 1 {
            ns
        } else {
            self.min.min(ns)
        };
        self.max = self.max.max(ns);
    }

    /// How many events were pushed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds every event `other` holds (Chan et al.'s pairwise update of mean and M2).
    pub fn merge(&mut self, other: &Welford) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        let n = self.count + other.count;
        let delta = other.mean - self.mean;
        self.m2 += other.m2 + delta * delta * (self.count as f64 * other.count as f64 / n as f64);
        self.mean += delta * other.count as f64 / n as f64;
        self.count = n;
        self.total = self.total.saturating_add(other.total);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The stats of the events pushed so far.
    pub fn stats(&self) -> TimeStats {
        if self.count == 0 {
            return TimeStats::unknown();
        }
        TimeStats {
            total_ns: Some(self.total),
            min_ns: Some(self.min),
            max_ns: Some(self.max),
            m2: Some(self.m2),
            timed: Some(self.count),
        }
    }
}

/// The JSON shape of [`TimeStats`] inside a row.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TimeStatsJson {
    pub time_ns: Option<u64>,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub mean_ns: Option<f64>,
    pub rel_stderr_pct: Option<f64>,
    /// How many events the times describe, when fewer than `count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_count: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn welford_matches_direct_formula() {
        let xs = [590u64, 900, 10_690, 700, 820];
        let mut w = Welford::default();
        xs.iter().for_each(|&x| w.push(x));
        let s = w.stats();
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<u64>() as f64 / n;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let rel = 100.0 * (var / n).sqrt() / mean;
        assert_eq!(s.total_ns, Some(13_700));
        assert_eq!((s.min_ns, s.max_ns), (Some(590), Some(10_690)));
        assert!(close(s.rel_stderr_pct(5).unwrap_or(f64::NAN), rel));
    }

    #[test]
    fn welford_merge_equals_pushing_everything() {
        let xs: Vec<u64> = (1..=50).map(|i| i * 37 % 400 + 3).collect();
        let (mut a, mut b, mut all) = (Welford::default(), Welford::default(), Welford::default());
        for (i, &x) in xs.iter().enumerate() {
            if i % 3 == 0 {
                a.push(x)
            } else {
                b.push(x)
            }
            all.push(x);
        }
        a.merge(&b);
        let (m, w) = (a.stats(), all.stats());
        assert_eq!(
            (m.total_ns, m.min_ns, m.max_ns, m.timed),
            (w.total_ns, w.min_ns, w.max_ns, w.timed)
        );
        assert!(close(m.m2.unwrap_or(f64::NAN), w.m2.unwrap_or(0.0)));
        let mut empty = Welford::default();
        empty.merge(&all);
        assert_eq!(empty.stats().total_ns, w.total_ns);
    }

    #[test]
    fn merging_halves_equals_whole() {
        let xs: Vec<u64> = (1..=100).map(|i| i * i * 7 % 1000 + 1).collect();
        let (mut a, mut b, mut all) = (Welford::default(), Welford::default(), Welford::default());
        for (i, &x) in xs.iter().enumerate() {
            all.push(x);
            if i < 37 { a.push(x) } else { b.push(x) }
        }
        let mut merged = a.stats();
        merged.merge(a.count(), &b.stats(), b.count());
        let whole = all.stats();
        assert_eq!(merged.total_ns, whole.total_ns);
        assert_eq!(merged.min_ns, whole.min_ns);
        assert_eq!(merged.max_ns, whole.max_ns);
        assert!(close(
            merged.m2.unwrap_or(f64::NAN),
            whole.m2.unwrap_or(0.0)
        ));
    }

    #[test]
    fn rel_stderr_round_trips_through_m2() {
        let m2 = TimeStats::m2_from_rel_stderr(0.48, 1710.0, 42_521);
        let s = TimeStats {
            total_ns: Some(1710 * 42_521),
            m2,
            ..TimeStats::default()
        };
        assert!(close(s.rel_stderr_pct(42_521).unwrap_or(f64::NAN), 0.48));
    }

    #[test]
    fn unknown_time_stays_unknown_when_merged() {
        let mut a = TimeStats {
            total_ns: Some(10),
            ..TimeStats::default()
        };
        a.merge(1, &TimeStats::unknown(), 5);
        assert_eq!(a.total_ns, None);
        assert_eq!(a.mean_ns(6), None);
    }
}
