//! Putting the per-CPU event streams back into one time order: each CPU's pages are in order
//! and so are the events in a page, so a k-way merge on the next event's time of every CPU
//! orders them all (per-thread pairing of exits and entries needs this when a vCPU thread
//! moves between CPUs). Damaged pages are skipped with a note; pages that follow lost events
//! are counted.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use virtlens_core::decode::{Missed, PageLayout};

use super::error::CaptureError;

/// Where pages of one CPU come from (a spool file, or pages held in memory).
pub(crate) trait PageSource {
    /// Fills `buf` with the next page; false at the end.
    fn next_page(&mut self, buf: &mut Vec<u8>) -> Result<bool, CaptureError>;
}

impl PageSource for std::collections::VecDeque<Vec<u8>> {
    fn next_page(&mut self, buf: &mut Vec<u8>) -> Result<bool, CaptureError> {
        match self.pop_front() {
            Some(p) => {
                *buf = p;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// What the merge met besides events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MergeStats {
    pub pages: u64,
    pub events: u64,
    /// Pages that said events were lost before them, and the lost events they counted.
    pub pages_after_loss: u64,
    pub lost_counted: u64,
    /// One line per damaged page.
    pub damage: Vec<String>,
}

struct Cursor<S> {
    src: S,
    cpu: u32,
    page: Vec<u8>,
    /// (time, payload start, payload length) of the current page's events.
    events: Vec<(u64, usize, usize)>,
    next: usize,
}

impl<S: PageSource> Cursor<S> {
    /// Loads pages until one has events; false at the end of the source.
    fn refill(
        &mut self,
        layout: &PageLayout,
        stats: &mut MergeStats,
    ) -> Result<bool, CaptureError> {
        loop {
            self.events.clear();
            self.next = 0;
            if !self.src.next_page(&mut self.page)? {
                return Ok(false);
            }
            stats.pages += 1;
            let page = match layout.page(&self.page) {
                Ok(p) => p,
                Err(e) => {
                    stats
                        .damage
                        .push(format!("cpu {}: page {}: {e}", self.cpu, stats.pages));
                    continue;
                }
            };
            if let Missed::Some(n) = page.missed {
                stats.pages_after_loss += 1;
                stats.lost_counted += n.unwrap_or(0);
            }
            let base = self.page.as_ptr() as usize;
            let mut it = page.events();
            for e in it.by_ref() {
                let start = e.payload.as_ptr() as usize - base;
                self.events.push((e.ts, start, e.payload.len()));
            }
            if let Some(d) = it.damage() {
                stats
                    .damage
                    .push(format!("cpu {}: page {}: {d}", self.cpu, stats.pages));
            }
            if !self.events.is_empty() {
                return Ok(true);
            }
        }
    }
}

/// Calls `f(ts, cpu, payload)` for every event of `sources` (`(cpu, source)`), in time order.
pub(crate) fn merge<S: PageSource>(
    sources: Vec<(u32, S)>,
    layout: &PageLayout,
    mut f: impl FnMut(u64, u32, &[u8]),
) -> Result<MergeStats, CaptureError> {
    let mut stats = MergeStats::default();
    let mut cursors: Vec<Cursor<S>> = sources
        .into_iter()
        .map(|(cpu, src)| Cursor {
            src,
            cpu,
            page: Vec::new(),
            events: Vec::new(),
            next: 0,
        })
        .collect();
    let mut heap = BinaryHeap::with_capacity(cursors.len());
    for (i, c) in cursors.iter_mut().enumerate() {
        if c.refill(layout, &mut stats)? {
            heap.push(Reverse((c.events[0].0, i)));
        }
    }
    while let Some(Reverse((_, i))) = heap.pop() {
        let Some(c) = cursors.get_mut(i) else {
            continue;
        };
        // Emit this CPU's events while they are not later than the next CPU's.
        let limit = heap.peek().map_or(u64::MAX, |Reverse((ts, _))| *ts);
        loop {
            let Some(&(ts, start, len)) = c.events.get(c.next) else {
                if c.refill(layout, &mut stats)? {
                    continue;
                }
                break;
            };
            if ts > limit {
                heap.push(Reverse((ts, i)));
                break;
            }
            c.next += 1;
            stats.events += 1;
            if let Some(payload) = c.page.get(start..start + len) {
                f(ts, c.cpu, payload);
            }
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use virtlens_core::decode::PageBuilder;

    use super::*;

    fn page(times: &[u64]) -> Vec<u8> {
        let mut b = PageBuilder::new(PageLayout::default(), times[0]);
        for &t in times {
            b.event(t, &(t as u32).to_ne_bytes());
        }
        b.finish()
    }

    #[test]
    fn events_of_all_cpus_come_in_time_order() {
        let cpu0: VecDeque<Vec<u8>> = [page(&[1, 5, 9]), page(&[20, 30])].into();
        let mut lost = PageBuilder::new(PageLayout::default(), 2);
        lost.event(2, &2u32.to_ne_bytes());
        lost.event(25, &25u32.to_ne_bytes());
        lost.missed(Some(4));
        let cpu1: VecDeque<Vec<u8>> = [lost.finish(), vec![1, 2, 3], page(&[26])].into();
        let mut got = Vec::new();
        let stats = merge(
            vec![(0, cpu0), (1, cpu1)],
            &PageLayout::default(),
            |ts, cpu, p| {
                assert_eq!(p, &(ts as u32).to_ne_bytes());
                got.push((ts, cpu));
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            got,
            vec![
                (1, 0),
                (2, 1),
                (5, 0),
                (9, 0),
                (20, 0),
                (25, 1),
                (26, 1),
                (30, 0)
            ]
        );
        assert_eq!((stats.events, stats.pages), (8, 5));
        assert_eq!((stats.pages_after_loss, stats.lost_counted), (1, 4));
        assert_eq!(stats.damage.len(), 1, "{:?}", stats.damage);
    }
}
