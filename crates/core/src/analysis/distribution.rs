//! Latency distributions for showing: a row's HDR histogram folded into 1-2-5 buckets
//! (100 ns, 200 ns, 500 ns, 1 µs, …), few enough to draw and read, with each bucket's share.

use crate::profile::Latency;

/// One bucket: events that took at least `lo_ns` and less than `hi_ns`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    pub lo_ns: u64,
    pub hi_ns: u64,
    pub count: u64,
    /// Share of the row's events (0–1).
    pub share: f64,
}

/// The 1-2-5 buckets of `latency` from the first to the last non-empty one (empty between
/// them kept, so gaps show); empty when nothing was recorded.
pub(crate) fn buckets(latency: &Latency) -> Vec<Bucket> {
    let recorded = latency.buckets();
    let total: u64 = recorded.iter().map(|&(_, n)| n).sum();
    if total == 0 {
        return Vec::new();
    }
    // 1, 2, 5, 10, 20, 50, … ns up to 500 s (the histogram stops at 100 s).
    let mut edges = Vec::new();
    let mut decade = 1u64;
    for _ in 0..12 {
        edges.extend([decade, decade * 2, decade * 5]);
        decade *= 10;
    }
    edges.push(decade);
    let mut out: Vec<Bucket> = Vec::new();
    for w in edges.windows(2) {
        out.push(Bucket {
            lo_ns: w[0],
            hi_ns: w[1],
            count: 0,
            share: 0.0,
        });
    }
    for (value, n) in recorded {
        if let Some(b) = out.iter_mut().find(|b| value >= b.lo_ns && value < b.hi_ns) {
            b.count = b.count.saturating_add(n);
        }
    }
    let first = out.iter().position(|b| b.count > 0).unwrap_or(0);
    let last = out.iter().rposition(|b| b.count > 0).unwrap_or(0);
    let mut kept: Vec<Bucket> = out.drain(first..=last).collect();
    for b in &mut kept {
        b.share = b.count as f64 / total as f64;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_1_2_5_and_keep_every_event() {
        let mut l = Latency::new();
        l.record_n(150, 3);
        l.record_n(900, 1);
        l.record_n(4_000, 6);
        let b = buckets(&l);
        let edges: Vec<u64> = b.iter().map(|b| b.lo_ns).collect();
        assert_eq!(edges, vec![100, 200, 500, 1000, 2000]);
        assert_eq!(b.last().map(|b| b.hi_ns), Some(5000));
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), 10);
        assert_eq!(b[0].count, 3);
        assert_eq!(b[1].count, 0, "a gap stays a gap");
        assert!((b[4].share - 0.6).abs() < 1e-9);
        assert!(buckets(&Latency::new()).is_empty());
    }
}
