//! Time order, as perf itself restores it. perf record writes each CPU's buffer in turn, so
//! the file is sorted only within one CPU's stretch; a `FINISHED_ROUND` record promises that
//! nothing later in the file is older than what came before the *previous* round marker.
//! Events are held until then, sorted by time (stably, so ties keep file order), and
//! released: memory is bounded by two rounds, not by the file. Files without round markers
//! are released in windows of [`MAX_HELD`] events (reported by the caller).

/// Held events beyond which a window is released even without a round marker.
pub(super) const MAX_HELD: usize = 1 << 20;

/// Something with a timestamp.
pub(super) trait Stamped {
    fn ts(&self) -> u64;
}

impl Stamped for (u64, char) {
    fn ts(&self) -> u64 {
        self.0
    }
}

impl Stamped for u64 {
    fn ts(&self) -> u64 {
        *self
    }
}

/// Events waiting for their turn.
#[derive(Debug)]
pub(super) struct Order<T> {
    held: Vec<T>,
    /// The newest time of the round before the current one: everything up to it may go.
    prev_max: u64,
    cur_max: u64,
    /// How often [`MAX_HELD`] forced a release.
    pub forced: u64,
}

impl<T> Default for Order<T> {
    fn default() -> Self {
        Self {
            held: Vec::new(),
            prev_max: 0,
            cur_max: 0,
            forced: 0,
        }
    }
}

impl<T: Stamped> Order<T> {
    /// Holds `item`; releases a window into `out` if too many are held.
    #[inline(always)]
    pub(super) fn push(&mut self, item: T, out: impl FnMut(T)) {
        self.cur_max = self.cur_max.max(item.ts());
        self.held.push(item);
        if self.held.len() >= MAX_HELD {
            self.forced += 1;
            self.prev_max = self.cur_max;
            self.release(out);
        }
    }

    /// A round marker: releases everything not newer than the previous round's newest event.
    pub(super) fn round(&mut self, out: impl FnMut(T)) {
        self.release(out);
        self.prev_max = self.cur_max;
    }

    /// The end: releases everything.
    pub(super) fn finish(&mut self, out: impl FnMut(T)) {
        self.prev_max = u64::MAX;
        self.release(out);
    }

    fn release(&mut self, mut out: impl FnMut(T)) {
        if self.held.is_empty() {
            return;
        }
        // Mostly sorted runs (one per CPU stretch): the stable sort merges them cheaply.
        self.held.sort_by_key(T::ts);
        let n = self.held.partition_point(|i| i.ts() <= self.prev_max);
        for item in self.held.drain(..n) {
            out(item);
        }
    }

    /// Events held now.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_release_in_time_order_and_keep_ties_in_file_order() {
        let mut o = Order::default();
        let mut out = Vec::new();
        // round 1: cpu0 then cpu1 stretches
        for item in [(10, 'a'), (30, 'b'), (20, 'c'), (30, 'd')] {
            o.push(item, |t: (u64, char)| out.push(t.1));
        }
        o.round(|t| out.push(t.1));
        assert!(
            out.is_empty(),
            "nothing is older than the previous round yet"
        );
        // round 2 may still hold events older than round 1's newest
        for item in [(25, 'e'), (40, 'f')] {
            o.push(item, |t| out.push(t.1));
        }
        o.round(|t| out.push(t.1));
        assert_eq!(out, ['a', 'c', 'e', 'b', 'd']);
        o.finish(|t| out.push(t.1));
        assert_eq!(out.last(), Some(&'f'));
        assert_eq!(o.held(), 0);
    }

    #[test]
    fn without_round_markers_memory_stays_bounded() {
        let mut o = Order::default();
        let mut n = 0usize;
        for i in 0..(MAX_HELD as u64 + 10) {
            o.push(i, |_| n += 1);
        }
        assert!(o.held() < MAX_HELD);
        assert_eq!(o.forced, 1);
        o.finish(|_| n += 1);
        assert_eq!(n, MAX_HELD + 10);
    }
}
