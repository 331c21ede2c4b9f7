//! Workloads of the CPUs: plain arithmetic, a contended spin lock, and a cross-CPU ping-pong.

use std::hint::spin_loop;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::Deadline;
use crate::sys;

/// Arithmetic on `threads` threads, no system calls in the loop.
pub(super) fn compute(threads: usize, deadline: Deadline, announce: &mut dyn FnMut(&str)) -> u64 {
    let total = AtomicU64::new(0);
    let ready = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (total, ready) = (&total, &ready);
            s.spawn(move || {
                ready.wait();
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ t as u64;
                let mut n = 0u64;
                loop {
                    for _ in 0..4096 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                    }
                    n += 4096;
                    if deadline.passed(n, 1 << 16) {
                        break;
                    }
                }
                std::hint::black_box(x);
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
        announce(&format!("{threads} threads"));
        ready.wait();
    });
    total.into_inner()
}

/// `threads` threads take one test-and-set lock in turn, spinning with PAUSE while it is held,
/// and do a little work inside and outside it.
pub(super) fn spin_lock(threads: usize, deadline: Deadline, announce: &mut dyn FnMut(&str)) -> u64 {
    let lock = AtomicBool::new(false);
    let total = AtomicU64::new(0);
    let ready = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (lock, total, ready) = (&lock, &total, &ready);
            s.spawn(move || {
                ready.wait();
                let mut x = t as u64 + 1;
                let mut n = 0u64;
                loop {
                    while lock
                        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                        .is_err()
                    {
                        while lock.load(Ordering::Relaxed) {
                            spin_loop();
                        }
                    }
                    for _ in 0..2000 {
                        x = std::hint::black_box(x)
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1);
                    }
                    lock.store(false, Ordering::Release);
                    for _ in 0..2000 {
                        x = std::hint::black_box(x)
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1);
                    }
                    n += 1;
                    if deadline.passed(n, 16) {
                        break;
                    }
                }
                std::hint::black_box(x);
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
        announce(&format!("{threads} threads, one lock"));
        ready.wait();
    });
    total.into_inner()
}

const IDLE: u32 = 0;
const PING: u32 = 1;
const STOP: u32 = 2;

/// Two threads pinned to CPUs 0 and 1 hand a token back and forth through a futex, each
/// sleeping as soon as it has passed it on: every hand-over wakes a sleeping CPU.
pub(super) fn ping_pong(deadline: Deadline, announce: &mut dyn FnMut(&str)) -> Result<u64, String> {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        return Err("ping-pong needs two CPUs".into());
    }
    let word = AtomicU32::new(IDLE);
    let ready = Barrier::new(2);
    std::thread::scope(|s| {
        let pong = s.spawn(|| -> Result<(), String> {
            sys::pin_to_cpu(1).map_err(|e| format!("pinning to CPU 1: {e}"))?;
            ready.wait();
            loop {
                let mut v = word.load(Ordering::Acquire);
                while v == IDLE {
                    sys::futex_wait(&word, IDLE);
                    v = word.load(Ordering::Acquire);
                }
                if v == STOP {
                    return Ok(());
                }
                word.store(IDLE, Ordering::Release);
                sys::futex_wake(&word, 1);
            }
        });
        let pinned = sys::pin_to_cpu(0).map_err(|e| format!("pinning to CPU 0: {e}"));
        ready.wait();
        announce("CPUs 0 and 1");
        let mut n = 0u64;
        while pinned.is_ok() {
            word.store(PING, Ordering::Release);
            sys::futex_wake(&word, 1);
            while word.load(Ordering::Acquire) == PING {
                sys::futex_wait(&word, PING);
            }
            n += 1;
            if deadline.passed(n, 1) {
                break;
            }
        }
        word.store(STOP, Ordering::Release);
        sys::futex_wake(&word, 1);
        let ponged = pong
            .join()
            .unwrap_or_else(|_| Err("the pong thread panicked".into()));
        pinned.and(ponged).map(|()| n)
    })
}
