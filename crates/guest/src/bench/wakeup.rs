//! Cross-CPU wake-up latency: two threads pinned to different CPUs hand a token back and forth
//! through a futex, each going to sleep at once (no spinning), so every hand-over is a wake-up
//! of a sleeping CPU: an IPI from the waker and, in a VM, the halt exit and wake-up of the
//! sleeping vCPU — the path halt polling, posted interrupts and IPI virtualization shorten.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use super::Probe;
use crate::schema::{Better, Measure};
use crate::sys;

const IDLE: u32 = 0;
const PING: u32 = 1;
const STOP: u32 = 2;

/// The ping-pong.
pub(super) struct Wakeup {
    round_trips: u32,
    cpus: (usize, usize),
}

impl Wakeup {
    /// An error with one CPU (no other CPU to wake).
    pub(super) fn new(quick: bool, online: usize) -> Result<Self, String> {
        if online < 2 {
            return Err("one CPU: there is no other CPU to wake".into());
        }
        Ok(Wakeup {
            round_trips: if quick { 500 } else { 5_000 },
            cpus: (0, 1),
        })
    }
}

/// The ponging side: answers every ping until STOP. Serves even when pinning failed, so the
/// other side never waits forever; the pinning error is returned at the end.
fn pong(word: &AtomicU32, ready: &Barrier, cpu: usize) -> Result<(), String> {
    let pinned = sys::pin_to_cpu(cpu).map_err(|e| format!("pinning to CPU {cpu}: {e}"));
    ready.wait();
    loop {
        let mut v = word.load(Ordering::Acquire);
        while v == IDLE {
            sys::futex_wait(word, IDLE);
            v = word.load(Ordering::Acquire);
        }
        if v == STOP {
            return pinned;
        }
        word.store(IDLE, Ordering::Release);
        sys::futex_wake(word, 1);
    }
}

/// The pinging side: `n` round trips, then STOP; returns µs per one-way wake-up.
fn ping(word: &AtomicU32, ready: &Barrier, cpu: usize, n: u32) -> Result<f64, String> {
    let pinned = sys::pin_to_cpu(cpu).map_err(|e| format!("pinning to CPU {cpu}: {e}"));
    ready.wait();
    let t = Instant::now();
    for _ in 0..n {
        if pinned.is_err() {
            break;
        }
        word.store(PING, Ordering::Release);
        sys::futex_wake(word, 1);
        while word.load(Ordering::Acquire) == PING {
            sys::futex_wait(word, PING);
        }
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(n.max(1)) / 2.0;
    word.store(STOP, Ordering::Release);
    sys::futex_wake(word, 1);
    pinned.map(|()| us)
}

impl Probe for Wakeup {
    fn measures(&self) -> Vec<Measure> {
        vec![
            Measure::new(
                "wakeup.cross_cpu",
                "one futex wake-up of a sleeping thread on another CPU (half a round trip)",
                "us",
                Better::Lower,
                Vec::new(),
            )
            .with("cpus", format!("{} and {}", self.cpus.0, self.cpus.1)),
        ]
    }

    fn sample(&mut self) -> Result<Vec<f64>, String> {
        let word = AtomicU32::new(IDLE);
        let ready = Barrier::new(2);
        let (n, (cpu_a, cpu_b)) = (self.round_trips, self.cpus);
        // Both sides run in threads of their own, so the caller's CPU affinity is kept.
        std::thread::scope(|s| {
            let b = s.spawn(|| pong(&word, &ready, cpu_b));
            let a = s.spawn(|| ping(&word, &ready, cpu_a, n));
            let lost = |_| "a wake-up thread panicked".to_string();
            let us = a.join().map_err(lost)?;
            b.join().map_err(lost)??;
            Ok(vec![us?])
        })
    }
}
