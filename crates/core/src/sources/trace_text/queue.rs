//! The blocks of a file shared out between the thread that replays them and its helpers.
//!
//! Every thread scans blocks, the replaying one included: it replays block `i` as soon as it is
//! scanned, and while it waits for it, it scans the next unclaimed block itself instead of
//! sleeping. So the file is read by as many threads as there are cores, never more (a
//! dedicated replay thread beside one scanner per core left a core's worth of threads
//! fighting for the CPUs), and neither the replay nor the scanning waits while the other has
//! work it could take.
//!
//! Blocks are claimed in file order and at most `window` ahead of the replay, so memory is
//! bounded by the window, never by the file; scanned blocks wait in a ring of that size, and
//! replayed ones come back as spares so their buffers are filled again.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// The queue of one file's blocks; `R` is a scanned block (or its error), `S` a spare.
pub(super) struct Queue<R, S> {
    state: Mutex<State<R, S>>,
    changed: Condvar,
    blocks: usize,
    window: usize,
}

struct State<R, S> {
    /// The next block to claim.
    next: usize,
    /// The blocks the replay has taken (0..taken).
    taken: usize,
    /// Scanned blocks waiting for the replay: block `i` at `i % window`.
    ring: Vec<Option<R>>,
    spares: Vec<S>,
    /// The replay stopped (it has its answer, or an error): claim nothing more.
    stopped: bool,
    /// A helper died (it panicked): the block it held will never come.
    lost: bool,
}

/// What the replaying thread is to do next.
pub(super) enum Step<R, S> {
    /// The block it asked for, scanned.
    Ready(R),
    /// It is not scanned yet: scan block `i` meanwhile (with this spare, if any) and
    /// [`Queue::put`] it.
    Scan(usize, Option<S>),
    /// A helper died before putting the block it had claimed: the blocks cannot all come.
    Lost,
}

impl<R, S> Queue<R, S> {
    /// A queue of `blocks` blocks that lets claims run at most `window` blocks ahead of the
    /// replay.
    pub(super) fn new(blocks: usize, window: usize) -> Self {
        let window = window.max(1);
        Self {
            state: Mutex::new(State {
                next: 0,
                taken: 0,
                ring: (0..window).map(|_| None).collect(),
                spares: Vec::new(),
                stopped: false,
                lost: false,
            }),
            changed: Condvar::new(),
            blocks,
            window,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<R, S>> {
        // A thread that panicked while holding the lock left consistent state (every update
        // is a single assignment): go on with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, g: MutexGuard<'a, State<R, S>>) -> MutexGuard<'a, State<R, S>> {
        self.changed.wait(g).unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims the next block when the window allows it.
    fn claim(&self, s: &mut State<R, S>) -> Option<(usize, Option<S>)> {
        (s.next < self.blocks && s.next < s.taken + self.window).then(|| {
            let i = s.next;
            s.next += 1;
            (i, s.spares.pop())
        })
    }

    /// A helper's next block to scan (waiting until the window lets it claim one); `None`
    /// when every block is claimed or the replay stopped.
    pub(super) fn next_for_helper(&self) -> Option<(usize, Option<S>)> {
        let mut g = self.lock();
        loop {
            if g.stopped || g.next >= self.blocks {
                return None;
            }
            if let Some(c) = self.claim(&mut g) {
                return Some(c);
            }
            g = self.wait(g);
        }
    }

    /// Block `i`, scanned: it waits for the replay.
    pub(super) fn put(&self, i: usize, r: R) {
        let mut g = self.lock();
        if let Some(slot) = g.ring.get_mut(i % self.window) {
            *slot = Some(r);
        }
        drop(g);
        self.changed.notify_all();
    }

    /// For the replay, which wants block `i` (the blocks before it taken): the block when it
    /// is scanned, else one to scan meanwhile, else it waits.
    pub(super) fn take(&self, i: usize) -> Step<R, S> {
        let mut g = self.lock();
        loop {
            let ready = g.ring.get_mut(i % self.window).and_then(Option::take);
            if let Some(r) = ready {
                g.taken = i + 1;
                drop(g);
                // The window moved: a helper may claim again.
                self.changed.notify_all();
                return Step::Ready(r);
            }
            if let Some((j, spare)) = self.claim(&mut g) {
                return Step::Scan(j, spare);
            }
            if g.lost {
                return Step::Lost;
            }
            g = self.wait(g);
        }
    }

    /// A replayed block's buffers, to be filled again.
    pub(super) fn give_back(&self, spare: S) {
        self.lock().spares.push(spare);
    }

    /// The replay ends (its answer found, an error, or the end): helpers stop claiming.
    pub(super) fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_all();
    }

    /// A guard for a helper's thread: should the helper panic, the replay hears of it (as
    /// [`Step::Lost`]) instead of waiting for its block forever.
    pub(super) fn helper_guard(&self) -> HelperGuard<'_, R, S> {
        HelperGuard(self)
    }

    /// A guard that calls [`Queue::stop`] when dropped, however the replay ends.
    pub(super) fn stop_on_drop(&self) -> StopOnDrop<'_, R, S> {
        StopOnDrop(self)
    }
}

/// See [`Queue::helper_guard`].
pub(super) struct HelperGuard<'a, R, S>(&'a Queue<R, S>);

impl<R, S> Drop for HelperGuard<'_, R, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().lost = true;
            self.0.changed.notify_all();
        }
    }
}

/// See [`Queue::stop_on_drop`].
pub(super) struct StopOnDrop<'a, R, S>(&'a Queue<R, S>);

impl<R, S> Drop for StopOnDrop<'_, R, S> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_gets_every_block_in_order_and_scans_what_is_not_ready() {
        let q: Queue<usize, ()> = Queue::new(5, 2);
        let mut by_replay = Vec::new();
        let mut got = Vec::new();
        for i in 0..5 {
            loop {
                match q.take(i) {
                    Step::Ready(r) => {
                        got.push(r);
                        break;
                    }
                    Step::Scan(j, _) => {
                        by_replay.push(j);
                        q.put(j, j * 10);
                    }
                    Step::Lost => panic!("no helper, none lost"),
                }
            }
        }
        assert_eq!(got, [0, 10, 20, 30, 40]);
        assert_eq!(by_replay, [0, 1, 2, 3, 4]);
        assert!(q.next_for_helper().is_none());
    }

    #[test]
    fn a_helper_claims_no_further_than_the_window_and_nothing_after_a_stop() {
        let q: Queue<usize, u8> = Queue::new(10, 2);
        q.give_back(7);
        assert_eq!(q.next_for_helper(), Some((0, Some(7))));
        assert_eq!(q.next_for_helper(), Some((1, None)));
        // Two ahead of the replay: the next claim would wait. The replay takes block 0.
        q.put(0, 0);
        assert!(matches!(q.take(0), Step::Ready(0)));
        assert_eq!(q.next_for_helper(), Some((2, None)));
        q.stop();
        assert_eq!(q.next_for_helper(), None);
    }

    #[test]
    fn a_helper_that_panics_is_reported_to_the_replay() {
        let q: Queue<usize, ()> = Queue::new(3, 2);
        std::thread::scope(|s| {
            let helper = s.spawn(|| {
                let _guard = q.helper_guard();
                let claimed = q.next_for_helper();
                assert_eq!(claimed, Some((0, None)));
                // The helper dies holding block 0.
                std::panic::resume_unwind(Box::new("scan failed"));
            });
            assert!(helper.join().is_err());
        });
        // Block 1 is claimable, so the replay scans it first; then it learns block 0 is lost.
        assert!(matches!(q.take(0), Step::Scan(1, None)));
        q.put(1, 1);
        assert!(matches!(q.take(0), Step::Lost));
    }
}
