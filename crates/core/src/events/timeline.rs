//! The timeline accumulated while events stream in: exits counted in time buckets per lane
//! (VM, vCPU) and reason, and the lanes' vCPU threads' scheduler states where the trace has
//! `sched_switch` / `sched_wakeup`. Bounded whatever the input: [`BUCKETS`] buckets whose
//! width doubles (neighbours merged) when the trace outgrows them, at most [`HELD_LANES`]
//! lanes (later ones are counted in one folded lane), [`HELD_SERIES`] reasons per lane (later
//! ones in `other`), [`HELD_THREADS`] threads followed.
//!
//! Buckets are aligned to multiples of their width on the trace clock, so the layout depends
//! only on the first and last time seen, not on the order of the stamps in between.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::reasons::{RawReason, Reasons, decode};

/// Buckets per series.
pub(crate) const BUCKETS: usize = 120;
/// The narrowest bucket, in ns; widths are this times a power of two.
const BASE_NS: u64 = 1_000;
/// Lanes held apart; exits of later lanes are counted in the folded lane.
const HELD_LANES: usize = 64;
/// Reasons held apart per lane; later ones are counted in `other`.
const HELD_SERIES: usize = 16;
/// Distinct reasons held; later ones are `other`.
const HELD_REASONS: usize = 256;
/// Lanes folded into the rest that are told apart (to say how many were folded).
const COUNTED_REST: usize = 65_536;
/// vCPU threads whose scheduling is followed.
const HELD_THREADS: usize = 4096;
/// Lanes and reasons drawn; the rest are folded when the timeline is finished.
pub(crate) const SHOWN_LANES: usize = 16;
pub(crate) const SHOWN_REASONS: usize = 8;
/// Ways of the running-thread cache (`TimelineAcc::recent`).
const RECENT: usize = 16;
/// The series index of `other`.
const OTHER: u32 = u32::MAX;

type Buckets = Box<[u64; BUCKETS]>;
type LaneKey = (Option<u32>, Option<u32>);

fn zero() -> Buckets {
    Box::new([0; BUCKETS])
}

/// A vCPU thread's scheduler state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Ready,
    Sleeping,
}

/// What is followed of one vCPU thread.
#[derive(Debug, Clone, Copy)]
struct Thread {
    lane: LaneKey,
    /// Its state and since when, once known.
    state: Option<(State, u64)>,
}

/// One lane's counts.
#[derive(Debug, Clone)]
struct LaneAcc {
    key: LaneKey,
    exits: u64,
    /// Per held reason (index into `TimelineAcc::reasons`, or [`OTHER`]) its buckets.
    series: Vec<(u32, Buckets)>,
    /// Running, ready, sleeping ns per bucket.
    sched: Option<[Buckets; 3]>,
}

impl LaneAcc {
    fn new(key: LaneKey) -> Self {
        Self {
            key,
            exits: 0,
            series: Vec::new(),
            sched: None,
        }
    }

    fn series(&mut self, reason: u32) -> &mut Buckets {
        let reason =
            if self.series.len() >= HELD_SERIES && !self.series.iter().any(|(r, _)| *r == reason) {
                OTHER
            } else {
                reason
            };
        let i = match self.series.iter().position(|(r, _)| *r == reason) {
            Some(i) => i,
            None => {
                self.series.push((reason, zero()));
                self.series.len() - 1
            }
        };
        &mut self.series[i].1
    }

    fn all_buckets(&mut self) -> impl Iterator<Item = &mut Buckets> {
        let sched = self.sched.iter_mut().flat_map(|s| s.iter_mut());
        self.series.iter_mut().map(|(_, b)| b).chain(sched)
    }
}

/// The bucket layout: `shift` doubles the base width; `lo`/`hi` are the first and last time
/// seen in [`BASE_NS`] units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    shift: u32,
    lo: u64,
    hi: u64,
}

impl Layout {
    fn start(&self) -> u64 {
        self.lo >> self.shift
    }

    /// The bucket of base unit `fine` (inside `lo..=hi`).
    fn bucket(&self, fine: u64) -> usize {
        ((fine >> self.shift).saturating_sub(self.start()) as usize).min(BUCKETS - 1)
    }

    /// The narrowest layout at least as wide as `self` that holds `lo..=hi`.
    fn holding(&self, lo: u64, hi: u64) -> Layout {
        let mut shift = self.shift;
        while shift < 63 && (hi >> shift) - (lo >> shift) >= BUCKETS as u64 {
            shift += 1;
        }
        Layout { shift, lo, hi }
    }

    fn bucket_ns(&self) -> u64 {
        BASE_NS << self.shift
    }

    fn start_ns(&self) -> u64 {
        (self.start() << self.shift).saturating_mul(BASE_NS)
    }
}

/// `from`'s buckets (laid out as `was`) added into `into` (laid out as `now`, as wide or
/// wider, covering them): an old bucket lies whole inside one new bucket.
fn add_rebinned(into: &mut [u64; BUCKETS], from: &[u64; BUCKETS], was: Layout, now: Layout) {
    for (i, &c) in from.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let fine = (was.start() + i as u64) << was.shift;
        if let Some(slot) = into.get_mut(now.bucket(fine.max(now.lo))) {
            *slot = slot.saturating_add(c);
        }
    }
}

/// Exits per lane and reason over time while a trace is read; see the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct TimelineAcc {
    layout: Option<Layout>,
    /// First and last exit time, ns.
    exits_at: Option<(u64, u64)>,
    reasons: Vec<RawReason>,
    reason_ids: HashMap<RawReason, u32>,
    /// The builder's reason id → index into `reasons` (this builder's ids only).
    by_builder: Vec<Option<u32>>,
    lanes: Vec<LaneAcc>,
    lane_ids: HashMap<LaneKey, usize>,
    /// Lanes beyond [`HELD_LANES`], folded.
    rest: Option<LaneAcc>,
    rest_keys: HashSet<LaneKey>,
    threads: HashMap<u32, Thread>,
    /// Direct-mapped by thread: a thread followed and running in a held lane (its index).
    recent: [Option<(u32, LaneKey, usize)>; RECENT],
}

impl TimelineAcc {
    /// One exit at `ts` of thread `tid` in lane (`pid`, `vcpu`), reason id `reason` of
    /// `reasons` (the builder's).
    pub(super) fn exit(
        &mut self,
        ts: u64,
        tid: Option<u32>,
        lane: LaneKey,
        reason: u32,
        reasons: &Reasons,
    ) {
        let r = self.reason_index(reason, reasons);
        self.cover(ts);
        self.exits_at = Some(
            self.exits_at
                .map_or((ts, ts), |(a, b)| (a.min(ts), b.max(ts))),
        );
        let Some(layout) = self.layout else { return };
        let b = layout.bucket(ts / BASE_NS);
        // A running thread seen exiting in the same lane before: no hash map.
        let way = tid.map(|t| t as usize % RECENT);
        let cached = match (tid, way.and_then(|w| self.recent.get(w).copied().flatten())) {
            (Some(t), Some((ct, key, i))) if ct == t && key == lane => Some(i),
            _ => None,
        };
        let l = match cached.and_then(|i| self.lanes.get_mut(i)) {
            Some(l) => l,
            None => self.lane(lane),
        };
        l.exits += 1;
        if let Some(c) = l.series(r).get_mut(b) {
            *c += 1;
        }
        if let (Some(tid), None, Some(w)) = (tid, cached, way) {
            self.follow(tid, lane, ts);
            let running = self
                .threads
                .get(&tid)
                .is_some_and(|t| t.lane == lane && matches!(t.state, Some((State::Running, _))));
            let held = self.lane_ids.get(&lane).copied();
            if let (true, Some(i), Some(slot)) = (running, held, self.recent.get_mut(w)) {
                *slot = Some((tid, lane, i));
            }
        }
    }

    /// `sched_switch` at `ts`: `prev` left the CPU (still runnable, or blocked), `next` got it.
    pub(super) fn switch(&mut self, ts: u64, prev: u32, prev_runnable: bool, next: u32) {
        let left = if prev_runnable {
            State::Ready
        } else {
            State::Sleeping
        };
        self.change(prev, ts, left, |_| true);
        self.change(next, ts, State::Running, |_| true);
    }

    /// `sched_wakeup` at `ts`: `tid` became runnable (a wakeup of a runnable thread is none).
    pub(super) fn wakeup(&mut self, ts: u64, tid: u32) {
        self.change(tid, ts, State::Ready, |s| s != Some(State::Running));
    }

    /// A followed thread's state becomes `to` at `ts` when `when` its current state.
    fn change(&mut self, tid: u32, ts: u64, to: State, when: impl Fn(Option<State>) -> bool) {
        if let Some(slot) = self.recent.get_mut(tid as usize % RECENT)
            && slot.is_some_and(|(t, _, _)| t == tid)
        {
            *slot = None;
        }
        let Some(t) = self.threads.get(&tid).copied() else {
            return;
        };
        if !when(t.state.map(|s| s.0)) {
            return;
        }
        if let Some((state, since)) = t.state {
            self.spend(t.lane, state, since, ts);
        }
        if let Some(t) = self.threads.get_mut(&tid) {
            t.state = Some((to, ts));
        }
    }

    /// Follows `tid`, seen exiting (so running) at `ts` in `lane`.
    fn follow(&mut self, tid: u32, lane: LaneKey, ts: u64) {
        let full = self.threads.len() >= HELD_THREADS;
        match self.threads.get_mut(&tid) {
            Some(t) if t.lane == lane && matches!(t.state, Some((State::Running, _))) => {}
            Some(t) => {
                let was = (t.lane, t.state);
                t.lane = lane;
                t.state = Some((State::Running, ts));
                if let (l, Some((state, since))) = was {
                    self.spend(l, state, since, ts);
                }
            }
            None if !full => {
                self.threads.insert(
                    tid,
                    Thread {
                        lane,
                        state: Some((State::Running, ts)),
                    },
                );
            }
            None => {}
        }
    }

    /// `lane`'s thread was in `state` from `from` to `to` (ns): spread over the buckets.
    fn spend(&mut self, lane: LaneKey, state: State, from: u64, to: u64) {
        if to <= from {
            return;
        }
        self.cover(from);
        self.cover(to);
        let Some(layout) = self.layout else { return };
        let (width, origin) = (layout.bucket_ns(), layout.start_ns());
        let l = self.lane(lane);
        let s = l.sched.get_or_insert_with(|| [zero(), zero(), zero()]);
        let row = &mut s[state as usize];
        let mut at = from;
        while at < to {
            let b = (at.saturating_sub(origin) / width) as usize;
            let end = origin
                .saturating_add(width.saturating_mul(b as u64 + 1))
                .min(to);
            if let Some(c) = row.get_mut(b.min(BUCKETS - 1)) {
                *c = c.saturating_add(end - at);
            }
            if end <= at {
                break;
            }
            at = end;
        }
    }

    fn reason_index(&mut self, id: u32, reasons: &Reasons) -> u32 {
        if let Some(Some(r)) = self.by_builder.get(id as usize) {
            return *r;
        }
        let r = reasons
            .raw(id)
            .map_or(OTHER, |raw| self.intern(raw.clone()));
        let i = id as usize;
        if self.by_builder.len() <= i {
            self.by_builder.resize(i + 1, None);
        }
        self.by_builder[i] = Some(r);
        r
    }

    fn intern(&mut self, raw: RawReason) -> u32 {
        if let Some(&r) = self.reason_ids.get(&raw) {
            return r;
        }
        if self.reasons.len() >= HELD_REASONS {
            return OTHER;
        }
        let r = self.reasons.len() as u32;
        self.reasons.push(raw.clone());
        self.reason_ids.insert(raw, r);
        r
    }

    fn lane(&mut self, key: LaneKey) -> &mut LaneAcc {
        let i = match self.lane_ids.get(&key) {
            Some(&i) => Some(i),
            None if self.lanes.len() < HELD_LANES => {
                self.lanes.push(LaneAcc::new(key));
                self.lane_ids.insert(key, self.lanes.len() - 1);
                Some(self.lanes.len() - 1)
            }
            None => {
                if self.rest_keys.len() < COUNTED_REST {
                    self.rest_keys.insert(key);
                }
                None
            }
        };
        match i.and_then(|i| self.lanes.get_mut(i)) {
            Some(l) => l,
            None => self.rest.get_or_insert_with(|| LaneAcc::new((None, None))),
        }
    }

    /// Makes the layout hold `ts`, merging neighbouring buckets as often as needed.
    fn cover(&mut self, ts: u64) {
        let fine = ts / BASE_NS;
        let now = match self.layout {
            None => Layout {
                shift: 0,
                lo: fine,
                hi: fine,
            },
            Some(l) if (l.lo..=l.hi).contains(&fine) => return,
            Some(l) => l.holding(l.lo.min(fine), l.hi.max(fine)),
        };
        self.relayout(now);
    }

    fn relayout(&mut self, now: Layout) {
        let was = self.layout.replace(now);
        let Some(was) = was else { return };
        if was.shift == now.shift && was.start() == now.start() {
            return;
        }
        let lanes = self.lanes.iter_mut().chain(self.rest.as_mut());
        for b in lanes.flat_map(LaneAcc::all_buckets) {
            let old = std::mem::replace(b, zero());
            add_rebinned(b, &old, was, now);
        }
    }
}

#[path = "timeline_finish.rs"]
mod finish;

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
