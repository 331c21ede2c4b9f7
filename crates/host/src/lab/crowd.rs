//! `virtlens model overcommit --measure`: crowds this host with k busy vCPUs — k micro-VMs,
//! each running the ring-3 queens kernel (native speed on every backend) for the same fixed
//! work in a thread of its own — for k = 1 … K, round after round, and records each vCPU
//! thread's elapsed time and run-queue wait (schedstat), and the host's other load meanwhile.
//! All vCPUs of a run start together at a barrier; all their VMs close before the next run.
//!
//! [`Busy`] crowds the host the same way for as long as it lives, in threads named like QEMU's
//! vCPU threads: what `top`, `record` and `diagnose` see of an over-committed host.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use virtlens_core::model::CrowdRun;
use virtlens_guest::{CpuTicks, SchedStat, procs_running};

use super::Tick;
use super::kernels::{Ending, Kernel, assemble};
use crate::microvm::layout::CODE_ADDR;
use crate::microvm::{Error, MicroVm, Mode};

const QUEENS: u64 = 8;
const SOLUTIONS: u64 = 92;
/// USER_HZ, the unit of /proc/stat (fixed at 100 on x86).
const USER_HZ: f64 = 100.0;

fn vcpu(code: &[u8]) -> Result<MicroVm, Error> {
    let mut vm = MicroVm::new(1 << 20)?;
    vm.load(Mode::User64, code)?;
    Ok(vm)
}

/// One run of `vm` for `reps` solves: (elapsed, schedstat moved).
fn solve(vm: &mut MicroVm, reps: u64) -> Result<(Duration, Option<SchedStat>), Error> {
    vm.restart_with(|r| {
        r.rdi = reps;
        r.rdx = QUEENS;
    })?;
    let before = SchedStat::this_thread();
    let t = Instant::now();
    vm.run(Duration::from_secs(120))?;
    let elapsed = t.elapsed();
    let moved = before
        .zip(SchedStat::this_thread())
        .map(|(a, b)| b.since(&a));
    let rax = vm
        .vcpu_fd()
        .get_regs()
        .map_err(Error::kvm("KVM_GET_REGS"))?
        .rax;
    if rax != reps * SOLUTIONS {
        return Err(Error::UnexpectedExit {
            exit: format!("queens gave {rax}, expected {}", reps * SOLUTIONS),
            rip: 0,
        });
    }
    Ok((elapsed, moved))
}

/// k vCPUs at once, each doing `reps` solves.
fn crowd(code: &[u8], k: u32, reps: u64, round: u32) -> Result<CrowdRun, Error> {
    let start = Barrier::new(k as usize + 1);
    let stop = AtomicBool::new(false);
    let mut ticks0 = None;
    let mut t0 = Instant::now();
    let (results, samples) = std::thread::scope(|s| {
        // Samples how many threads compete for the CPUs while the vCPUs run.
        let sampler = s.spawn(|| {
            let mut seen = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                seen.extend(procs_running());
                std::thread::park_timeout(Duration::from_millis(20));
            }
            seen
        });
        let handles: Vec<_> = (0..k)
            .map(|_| {
                let start = &start;
                // Each thread makes its own VM (a VM stays on the thread that made it), and
                // reaches the barrier even when that failed, so nobody waits forever.
                s.spawn(move || {
                    let vm = vcpu(code);
                    start.wait();
                    solve(&mut vm?, reps)
                })
            })
            .collect();
        ticks0 = CpuTicks::now();
        t0 = Instant::now();
        start.wait();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Watchdog("a vCPU thread panicked".into())))
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        sampler.thread().unpark();
        (results, sampler.join().unwrap_or_default())
    });
    let wall = t0.elapsed().as_secs_f64();
    let ticks1 = CpuTicks::now();
    // Each sample counts the sampler itself and (at most) the k vCPU threads.
    let others: Vec<f64> = samples
        .iter()
        .map(|&n| (n as f64 - 1.0 - f64::from(k)).max(0.0))
        .collect();
    let mut run = CrowdRun {
        round,
        k,
        elapsed_s: Vec::new(),
        ready_pct: Vec::new(),
        background_cpus: 0.0,
        background_runnable: if others.is_empty() {
            0.0
        } else {
            others.iter().sum::<f64>() / others.len() as f64
        },
    };
    let mut own_run_s = 0.0;
    for r in results {
        let (elapsed, sched) = r?;
        let e = elapsed.as_secs_f64();
        run.elapsed_s.push(e);
        if let Some(s) = sched {
            run.ready_pct
                .push(100.0 * s.wait_ns as f64 / 1e9 / e.max(1e-9));
            own_run_s += s.run_ns as f64 / 1e9;
        }
    }
    if let (Some(a), Some(b)) = (ticks0, ticks1) {
        let busy_s = b.busy.saturating_sub(a.busy) as f64 / USER_HZ;
        run.background_cpus = ((busy_s - own_run_s) / wall.max(1e-9)).max(0.0);
    }
    Ok(run)
}

/// Solves per run so one vCPU alone takes about `target`.
fn calibrate(code: &[u8], target: Duration) -> Result<u64, Error> {
    let mut vm = vcpu(code)?;
    let mut reps = 64;
    loop {
        let (t, _) = solve(&mut vm, reps)?;
        if t >= target / 4 || reps >= 1 << 24 {
            let per = t.as_secs_f64() / reps as f64;
            return Ok(((target.as_secs_f64() / per.max(1e-12)) as u64).max(1));
        }
        reps *= 4;
    }
}

/// Runs k = 1..=`max_k` busy vCPUs, `rounds` times (the order of k rotates each round).
pub fn run(
    max_k: u32,
    rounds: u32,
    progress: &mut dyn FnMut(Tick<'_>),
) -> Result<Vec<CrowdRun>, Error> {
    let code = assemble(Kernel::Queens, Ending::DonePort, CODE_ADDR)?;
    let reps = calibrate(&code, Duration::from_millis(400))?;
    let total = u64::from(max_k * rounds);
    let mut out = Vec::new();
    let mut done = 0;
    for round in 0..rounds {
        for i in 0..max_k {
            let k = (i + round) % max_k + 1;
            done += 1;
            progress(Tick {
                done,
                total,
                label: "crowding the host",
            });
            out.push(crowd(&code, k, reps, round)?);
        }
    }
    Ok(out)
}

/// Solves per run of a [`Busy`] vCPU: about 20 ms alone, so the run loop (a watchdog thread
/// per run) is a small part of the time and a stop is still heard quickly.
const BUSY_REPS: u64 = 2048;

/// The stop flag of a [`Busy`] crowd, and what idle vCPUs wait on.
type Stop = Arc<(Mutex<bool>, Condvar)>;

fn stopped(stop: &Stop) -> bool {
    *stop.0.lock().unwrap_or_else(|e| e.into_inner())
}

/// k micro-VM vCPUs, each in a thread named `CPU n/KVM` (as QEMU names its vCPU threads),
/// running the ring-3 queens kernel in short runs until [`Busy::stop`] — or, with a run limit,
/// that many runs and then blocked (a halted vCPU) until the stop.
pub struct Busy {
    stop: Stop,
    threads: Vec<JoinHandle<Result<u64, Error>>>,
}

impl Busy {
    /// Starts `k` vCPUs (at most `runs` runs each, when given); returns once every VM exists,
    /// so a capture started afterwards sees all their threads.
    pub fn start(k: u32, runs: Option<u64>) -> Result<Busy, Error> {
        let code = Arc::new(assemble(Kernel::Queens, Ending::DonePort, CODE_ADDR)?);
        let stop: Stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (made, vms) = mpsc::channel();
        let mut busy = Busy {
            stop,
            threads: Vec::new(),
        };
        for n in 0..k {
            let (code, stop, made) = (Arc::clone(&code), Arc::clone(&busy.stop), made.clone());
            let t = std::thread::Builder::new()
                .name(format!("CPU {n}/KVM"))
                .spawn(move || -> Result<u64, Error> {
                    let vm = vcpu(&code);
                    let _ = made.send(());
                    let mut vm = vm?;
                    let mut done = 0;
                    while !stopped(&stop) && runs.is_none_or(|r| done < r) {
                        solve(&mut vm, BUSY_REPS)?;
                        done += 1;
                    }
                    let (lock, halted) = &*stop;
                    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
                    while !*s {
                        s = halted.wait(s).unwrap_or_else(|e| e.into_inner());
                    }
                    Ok(done)
                })
                .map_err(|e| Error::Watchdog(format!("starting a vCPU thread: {e}")))?;
            busy.threads.push(t);
        }
        drop(made);
        // Every thread says when its VM exists (or could not be made: its error comes at stop).
        for _ in 0..k {
            if vms.recv().is_err() {
                break;
            }
        }
        Ok(busy)
    }

    /// Stops every vCPU; the runs each completed.
    pub fn stop(mut self) -> Result<Vec<u64>, Error> {
        self.halt();
        std::mem::take(&mut self.threads)
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(Error::Watchdog("a vCPU thread panicked".into())))
            })
            .collect()
    }

    fn halt(&self) {
        let (lock, halted) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        halted.notify_all();
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.halt();
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
    }
}
