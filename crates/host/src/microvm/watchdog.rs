//! The `KVM_RUN` watchdog. On the PVM development machines a VMCALL in a kernel-mode guest
//! spins inside `KVM_RUN` forever, so every `KVM_RUN` is watched: the vCPU thread *arms* the
//! watchdog before the ioctl and disarms it after; a helper thread that wakes every tick sends
//! the vCPU thread a signal (whose handler has no `SA_RESTART`) while one `KVM_RUN` has been
//! armed longer than the limit. It repeats the signal every tick, so a signal that lands just
//! before the ioctl is entered is not lost. `KVM_RUN` then returns `EINTR`, and the token
//! tells a watchdog `EINTR` apart from any other signal.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::sys::ThreadHandle;

/// State shared by the vCPU thread and the watchdog thread.
#[derive(Debug)]
pub(super) struct Watchdog {
    limit: Duration,
    start: Instant,
    /// The token of the `KVM_RUN` in progress (ns since `start`, plus 1), or 0.
    armed: AtomicU64,
    /// The token of the last `KVM_RUN` the watchdog interrupted.
    fired: AtomicU64,
    stop: AtomicBool,
    target: ThreadHandle,
    signal: libc::c_int,
}

impl Watchdog {
    /// A watchdog for the calling thread: each `KVM_RUN` may take at most `limit`.
    pub(super) fn for_current_thread(limit: Duration, signal: libc::c_int) -> Self {
        Self {
            limit: limit.max(Duration::from_millis(1)),
            start: Instant::now(),
            armed: AtomicU64::new(0),
            fired: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            target: ThreadHandle::current(),
            signal,
        }
    }

    /// The per-`KVM_RUN` limit.
    pub(super) fn limit(&self) -> Duration {
        self.limit
    }

    fn now_token(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1)
    }

    /// Called right before `KVM_RUN`; returns the token of this run.
    pub(super) fn arm(&self) -> u64 {
        let token = self.now_token();
        self.armed.store(token, Ordering::SeqCst);
        token
    }

    /// Called right after `KVM_RUN` returned.
    pub(super) fn disarm(&self) {
        self.armed.store(0, Ordering::SeqCst);
    }

    /// Whether the watchdog interrupted the run of `token`.
    pub(super) fn fired_for(&self, token: u64) -> bool {
        self.fired.load(Ordering::SeqCst) == token
    }

    /// The watchdog thread's body: returns once [`Watchdog::stop`] was called.
    pub(super) fn watch(&self) {
        let tick = (self.limit / 10).clamp(Duration::from_millis(1), Duration::from_millis(50));
        let limit_ns = u64::try_from(self.limit.as_nanos()).unwrap_or(u64::MAX);
        while !self.stop.load(Ordering::SeqCst) {
            std::thread::park_timeout(tick);
            let token = self.armed.load(Ordering::SeqCst);
            if token != 0 && self.now_token().saturating_sub(token) >= limit_ns {
                self.fired.store(token, Ordering::SeqCst);
                // ESRCH cannot happen (the vCPU thread is inside `run`); nothing else to do.
                let _ = self.target.kick(self.signal);
            }
        }
    }

    /// Asks the watchdog thread to return.
    pub(super) fn stop(&self, thread: &Thread) {
        self.stop.store(true, Ordering::SeqCst);
        thread.unpark();
    }
}

/// Stops the watchdog thread when dropped, so that every way out of a run (`?` included)
/// lets the scoped thread be joined.
pub(super) struct StopOnDrop<'a> {
    pub watchdog: &'a Watchdog,
    pub thread: Thread,
}

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.watchdog.stop(&self.thread);
    }
}
