//! Statistics over the interleaved runs of one lab test: median, min, max and quartiles of
//! the per-operation times, and the run-to-run spread. The lab's machines are noisy (±30%
//! between invocations), so medians over many interleaved runs, never means.
//!
//! *Spread* here is the interquartile range divided by the median, in percent: robust to the
//! occasional run that a host interrupt or steal time stretched, unlike (max − min) / median,
//! which the min and max fields still let a reader compute.

use serde::{Deserialize, Serialize};

/// The distribution of one test's per-operation times over its runs (ns per operation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub q1: f64,
    pub q3: f64,
    /// How many runs.
    pub n: usize,
}

impl Summary {
    /// The summary of `samples`; `None` when there are none (or one is not finite).
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let s = virtlens_guest::stats::Spread::of(samples)?;
        Some(Summary {
            median: s.median,
            min: s.min,
            max: s.max,
            q1: s.q1,
            q3: s.q3,
            n: s.n,
        })
    }

    /// The interquartile range over the median, in percent (`None` when the median is 0).
    pub fn spread_pct(&self) -> Option<f64> {
        (self.median.abs() > f64::EPSILON).then(|| 100.0 * (self.q3 - self.q1) / self.median.abs())
    }
}

/// Per-run differences `test[i] - baseline[i]` of runs made in the same round (paired, so
/// drift over the session cancels). Extra runs on either side are ignored.
pub fn paired_differences(test: &[f64], baseline: &[f64]) -> Vec<f64> {
    test.iter().zip(baseline).map(|(t, b)| t - b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap_or_else(|| unreachable!());
        assert_eq!((s.min, s.median, s.max, s.n), (1.0, 3.0, 5.0, 5));
        assert_eq!((s.q1, s.q3), (2.0, 4.0));
        assert_eq!(s.spread_pct(), Some(100.0 * 2.0 / 3.0));
        let even = Summary::of(&[1.0, 2.0, 3.0, 4.0]).unwrap_or_else(|| unreachable!());
        assert_eq!(even.median, 2.5);
    }

    #[test]
    fn empty_or_broken_samples_have_no_summary() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        let zero = Summary::of(&[0.0, 0.0]).unwrap_or_else(|| unreachable!());
        assert_eq!(zero.spread_pct(), None);
    }

    #[test]
    fn differences_are_paired_by_round() {
        assert_eq!(
            paired_differences(&[10.0, 12.0, 11.0], &[1.0, 2.0]),
            vec![9.0, 10.0]
        );
    }
}
