//! Median and spread of repeated samples, and the one number format of text output. The machines this runs on are noisy (steal time,
//! other guests), so every measure is repeated and summarised by its median and quartiles,
//! never by a mean.

use serde::{Deserialize, Serialize};

/// The distribution of one measure's samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub q1: f64,
    pub q3: f64,
    /// How many samples.
    pub n: usize,
}

impl Spread {
    /// The spread of `samples`; `None` when there are none or one is not finite.
    pub fn of(samples: &[f64]) -> Option<Spread> {
        if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        Some(Spread {
            median: quantile(&sorted, 0.5),
            min: sorted[0],
            max: sorted[n - 1],
            q1: quantile(&sorted, 0.25),
            q3: quantile(&sorted, 0.75),
            n,
        })
    }

    /// The band the noise allows: the interquartile range with four or more samples, the whole
    /// range with fewer (two or three samples have no meaningful quartiles).
    pub fn band(&self) -> (f64, f64) {
        if self.n >= 4 {
            (self.q1, self.q3)
        } else {
            (self.min, self.max)
        }
    }

    /// The band's width over the median, in percent (`None` when the median is 0).
    pub fn spread_pct(&self) -> Option<f64> {
        let (lo, hi) = self.band();
        (self.median.abs() > f64::EPSILON).then(|| 100.0 * (hi - lo) / self.median.abs())
    }
}

/// A number with about four significant digits, for text output (`-` when not finite).
pub fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a >= 10_000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The `q`-quantile (0..=1) of sorted, non-empty `sorted`, interpolated between ranks.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (sorted.len().saturating_sub(1)) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let (Some(a), Some(b)) = (sorted.get(lo), sorted.get(hi)) else {
        return f64::NAN;
    };
    a + (b - a) * (pos - lo as f64)
}
