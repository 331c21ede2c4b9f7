//! Latency histograms for rows whose individual events are known (traces, live capture):
//! an HDR histogram of durations in ns (2 significant digits, 1 ns to 100 s, about 30 KB a
//! row), mergeable, serialised sparsely as `[value_ns, count]`.

use hdrhistogram::Histogram;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Durations in nanoseconds; longer than 100 s counts as 100 s.
#[derive(Debug, Clone)]
pub struct Latency {
    /// Always `Some` in practice: the bounds are valid constants. Kept optional so a future
    /// change of hdrhistogram's limits degrades to "no percentiles" instead of a panic.
    hist: Option<Histogram<u64>>,
}

const SIGFIG: u8 = 2;
const MAX_NS: u64 = 100_000_000_000;

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Latency {
    fn eq(&self, other: &Self) -> bool {
        self.buckets() == other.buckets()
    }
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Self {
        Self {
            hist: Histogram::new_with_bounds(1, MAX_NS, SIGFIG).ok(),
        }
    }

    /// Records one event of `ns` (clamped into the histogram's range).
    pub fn record(&mut self, ns: u64) {
        if let Some(h) = &mut self.hist {
            let _ = h.record(ns.clamp(1, MAX_NS));
        }
    }

    /// Records `count` events of `ns`.
    pub fn record_n(&mut self, ns: u64, count: u64) {
        if let Some(h) = &mut self.hist {
            let _ = h.record_n(ns.clamp(1, MAX_NS), count);
        }
    }

    /// Adds every event of `other`.
    pub fn merge(&mut self, other: &Latency) {
        for (v, n) in other.buckets() {
            self.record_n(v, n);
        }
    }

    /// The number of events recorded.
    pub fn len(&self) -> u64 {
        self.hist.as_ref().map_or(0, Histogram::len)
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The duration at quantile `q` (0.0–1.0).
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        let h = self.hist.as_ref()?;
        (!h.is_empty()).then(|| h.value_at_quantile(q))
    }

    /// The recorded buckets as `(value_ns, count)`, lowest first.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.hist.as_ref().map_or_else(Vec::new, |h| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        })
    }
}

impl Serialize for Latency {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.buckets().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let buckets = Vec::<(u64, u64)>::deserialize(d)?;
        let mut l = Latency::new();
        for (v, n) in buckets {
            l.record_n(v, n);
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_round_trip() {
        let mut l = Latency::new();
        for i in 1..=1000 {
            l.record(i * 1000);
        }
        let p50 = l.quantile_ns(0.5).unwrap_or(0);
        assert!((495_000..=505_000).contains(&p50), "{p50}");
        let json = serde_json::to_string(&l).unwrap_or_default();
        let back: Latency = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, l);
        assert_eq!(back.len(), 1000);
    }

    #[test]
    fn empty_has_no_quantile() {
        assert_eq!(Latency::new().quantile_ns(0.99), None);
    }
}
