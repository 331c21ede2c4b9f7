//! What the maps held at one moment, and the increments between two such moments: counts and
//! latency histograms are cumulative in the kernel, so an interval is the difference of two
//! snapshots (keys that appeared count from zero; keys pruned meanwhile are gone from both).

use std::collections::HashMap;
use std::time::Instant;

use super::maps::{HIST_FULL_SLOT, Hist, Key};
use super::plan::EVENTS;

/// The maps' contents at `at`.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    pub counts: Vec<(Key, u64)>,
    pub hists: Vec<(Key, Hist)>,
    /// Per event (by index), events counted while the counts map was full; the last slot is
    /// latency samples dropped while the histogram map was full.
    pub overflow: Vec<u64>,
}

impl Snapshot {
    /// The increments from `before` to `self` (everything, without `before`); keys that did
    /// not move are left out.
    pub fn since(&self, before: Option<&Snapshot>) -> Snapshot {
        let Some(before) = before else {
            return self.clone();
        };
        let old_counts: HashMap<Key, u64> = before.counts.iter().copied().collect();
        let counts = self
            .counts
            .iter()
            .filter_map(|(k, n)| {
                let d = n.saturating_sub(old_counts.get(k).copied().unwrap_or(0));
                (d > 0).then_some((*k, d))
            })
            .collect();
        let old_hists: HashMap<Key, &Hist> = before.hists.iter().map(|(k, h)| (*k, h)).collect();
        let hists = self
            .hists
            .iter()
            .filter_map(|(k, h)| {
                let d = match old_hists.get(k) {
                    Some(old) => Hist {
                        buckets: std::array::from_fn(|i| {
                            h.buckets[i].saturating_sub(old.buckets[i])
                        }),
                        sum_ns: h.sum_ns.saturating_sub(old.sum_ns),
                    },
                    None => h.clone(),
                };
                (d.count() > 0).then_some((*k, d))
            })
            .collect();
        let overflow = self
            .overflow
            .iter()
            .enumerate()
            .map(|(i, n)| n.saturating_sub(before.overflow.get(i).copied().unwrap_or(0)))
            .collect();
        Snapshot {
            at: self.at,
            counts,
            hists,
            overflow,
        }
    }

    /// Events counted in the `other` bucket (the counts map was full), by event name.
    pub fn other(&self) -> Vec<(&'static str, u64)> {
        EVENTS
            .iter()
            .zip(&self.overflow)
            .filter(|(_, n)| **n > 0)
            .map(|(e, n)| (*e, *n))
            .collect()
    }

    /// Latency samples dropped because the histogram map was full.
    pub fn dropped_latencies(&self) -> u64 {
        self.overflow
            .get(HIST_FULL_SLOT as usize)
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(detail: u64) -> Key {
        Key {
            tgid: 1,
            tid: 2,
            event: 2,
            sub: 1,
            detail,
        }
    }

    #[test]
    fn increments_between_snapshots() {
        let mut h = Hist {
            buckets: [0; 64],
            sum_ns: 100,
        };
        h.buckets[6] = 1;
        let a = Snapshot {
            at: Instant::now(),
            counts: vec![(key(1), 5), (key(2), 7)],
            hists: vec![(key(0), h.clone())],
            overflow: vec![0; 16],
        };
        let mut h2 = h.clone();
        h2.buckets[6] = 3;
        h2.sum_ns = 300;
        let mut overflow = vec![0; 16];
        overflow[2] = 4;
        let b = Snapshot {
            at: Instant::now(),
            counts: vec![(key(1), 9), (key(2), 7), (key(3), 1)],
            hists: vec![(key(0), h2)],
            overflow,
        };
        let d = b.since(Some(&a));
        assert_eq!(d.counts, vec![(key(1), 4), (key(3), 1)]);
        assert_eq!(d.hists[0].1.buckets[6], 2);
        assert_eq!(d.hists[0].1.sum_ns, 200);
        assert_eq!(d.other(), vec![("kvm_pio", 4)]);
        assert_eq!(b.since(None).counts.len(), 3);
    }
}
