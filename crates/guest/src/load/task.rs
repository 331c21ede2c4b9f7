//! One task of the load generator, after the classic thread-contention generator: allocate a
//! large collection, then for each iteration fill it with random data and search it, a share
//! of the search under the one lock all workers share, then wait for a simulated IO (a timer
//! sleep whose length varies around its mean); finally drop the collection.

use std::sync::Mutex;
use std::time::Duration;

/// Searches per iteration (each a full scan of the collection).
const SEARCHES: usize = 4;

/// What a task does, the same for every task.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    pub iterations: u64,
    /// 32-bit elements in the collection.
    pub elements: usize,
    /// Share (0..=1) of each iteration's search done holding the shared lock.
    pub contention: f64,
    pub io_wait_ms: f64,
    pub io_wait_cv: f64,
}

impl Work {
    /// Runs task `id`; returns a checksum of the searches (so the work cannot be optimised away).
    pub fn run(&self, id: u64, seed: u64, lock: &Mutex<()>) -> u64 {
        let mut rng = fastrand::Rng::with_seed(seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut data = vec![0u32; self.elements];
        let split = ((1.0 - self.contention.clamp(0.0, 1.0)) * self.elements as f64) as usize;
        let mut sum = 0u64;
        for _ in 0..self.iterations {
            data.iter_mut().for_each(|x| *x = rng.u32(..));
            for _ in 0..SEARCHES {
                let key = rng.u32(..);
                let (free, locked) = data.split_at(split.min(data.len()));
                sum += count_below(free, key);
                if !locked.is_empty() {
                    // A poisoned lock only means another worker panicked; the data is `()`.
                    let _guard = lock.lock().unwrap_or_else(|p| p.into_inner());
                    sum += count_below(locked, key);
                }
            }
            if self.io_wait_ms > 0.0 {
                std::thread::sleep(io_wait(&mut rng, self.io_wait_ms, self.io_wait_cv));
            }
        }
        sum
    }
}

fn count_below(data: &[u32], key: u32) -> u64 {
    std::hint::black_box(data.iter().filter(|&&x| x < key).count() as u64)
}

/// A simulated IO wait: log-normal with mean `mean_ms` and coefficient of variation `cv`
/// (cv 0 is a fixed wait).
pub fn io_wait(rng: &mut fastrand::Rng, mean_ms: f64, cv: f64) -> Duration {
    if cv <= 0.0 {
        return Duration::from_secs_f64(mean_ms / 1e3);
    }
    let sigma2 = (1.0 + cv * cv).ln();
    let mu = mean_ms.ln() - sigma2 / 2.0;
    // Box–Muller: one standard normal from two uniforms in (0, 1].
    let (u1, u2) = (1.0 - rng.f64(), rng.f64());
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    let ms = (mu + sigma2.sqrt() * z).exp();
    Duration::from_secs_f64(ms.min(mean_ms * 100.0) / 1e3)
}
