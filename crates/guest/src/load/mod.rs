//! `virtlens load`: a parameter-driven load generator. A dispatcher hands a fixed number of
//! tasks (or as many as fit in `--duration`) to worker threads; each task fills a large
//! collection with random data and searches it, iteration after iteration ([`task`]), with
//! dials for memory footprint, lock contention and simulated IO waits. Fixed work makes the
//! elapsed time the measure: run it natively, in a VM and on a crowded host, and the ratio of
//! the elapsed times is the stretch. Alongside, it reports what explains a stretch from inside:
//! per-task latency, CPU time, context switches, the steal time the kernel accounted and the
//! workers' run-queue wait (schedstat).

pub(crate) mod task;

use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::procfs::{CpuTicks, SchedStat};
use crate::schema::{CpuTime, LOAD_SCHEMA, Latency, LoadOptions, LoadReport, RunQueue};
use crate::{fingerprint, sys};

impl LoadOptions {
    /// The defaults: 64 tasks × 4 iterations of a 16 MiB collection on one worker per CPU.
    pub fn defaults(cpus: usize) -> Self {
        LoadOptions {
            tasks: 64,
            iterations: 4,
            workers: cpus.max(1),
            footprint_mb: 16,
            contention: 0.0,
            io_wait_ms: 0.0,
            io_wait_cv: 0.0,
            seed: 1,
            duration_s: None,
        }
    }

    /// Why these options cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.workers == 0 || self.workers > 4096 {
            return Err(format!("--workers {} is not in 1..=4096", self.workers));
        }
        if !(0.0..=1.0).contains(&self.contention) {
            return Err(format!("--contention {} is not in 0..=1", self.contention));
        }
        if self.footprint_mb == 0 || self.footprint_mb > 64 * 1024 {
            return Err(format!(
                "--footprint-mb {} is not in 1..=65536",
                self.footprint_mb
            ));
        }
        if !(self.io_wait_ms >= 0.0 && self.io_wait_cv >= 0.0) {
            return Err("--io-wait-ms and --io-wait-cv must be 0 or more".into());
        }
        if let Some(d) = self.duration_s
            && !(d > 0.0 && d.is_finite())
        {
            return Err(format!(
                "--duration {d} must be a positive number of seconds"
            ));
        }
        if self.duration_s.is_none() && self.tasks == 0 {
            return Err("--tasks must be at least 1".into());
        }
        Ok(())
    }
}

/// What one worker thread did.
struct WorkerResult {
    latencies: Histogram<u64>,
    sched: Option<SchedStat>,
    tasks: u64,
}

/// Runs the load; `Err` says what in the options or the machine stopped it.
pub(crate) fn run(opts: &LoadOptions) -> Result<LoadReport, String> {
    opts.check()?;
    let work = task::Work {
        iterations: opts.iterations,
        elements: (opts.footprint_mb as usize) << 18,
        contention: opts.contention,
        io_wait_ms: opts.io_wait_ms,
        io_wait_cv: opts.io_wait_cv,
    };
    let lock = Arc::new(Mutex::new(()));
    // A rendezvous channel: a task is dispatched the moment a worker takes it.
    let (tx, rx) = sync_channel::<u64>(0);
    let rx = Arc::new(Mutex::new(rx));
    let (ticks0, usage0) = (CpuTicks::now(), sys::usage());
    let start = Instant::now();
    let handles: Vec<_> = (0..opts.workers)
        .map(|i| {
            let (rx, lock, seed) = (Arc::clone(&rx), Arc::clone(&lock), opts.seed);
            let latencies = Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
            std::thread::Builder::new()
                .name(format!("load-worker-{i}"))
                .spawn(move || worker(&rx, &lock, work, seed, latencies))
                .map_err(|e| format!("starting worker {i}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let deadline = opts.duration_s.map(|d| start + Duration::from_secs_f64(d));
    let mut id = 0u64;
    loop {
        let more = match deadline {
            Some(d) => Instant::now() < d,
            None => id < opts.tasks,
        };
        if !more || tx.send(id).is_err() {
            break;
        }
        id += 1;
    }
    drop(tx);
    let mut latencies = Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
    let (mut run_ns, mut wait_ns, mut sched_ok, mut tasks) = (0u64, 0u64, true, 0u64);
    for h in handles {
        let r = h
            .join()
            .map_err(|_| "a worker thread panicked".to_string())?;
        latencies.add(&r.latencies).map_err(|e| e.to_string())?;
        tasks += r.tasks;
        match r.sched {
            Some(s) => (run_ns, wait_ns) = (run_ns + s.run_ns, wait_ns + s.wait_ns),
            None => sched_ok = false,
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let (ticks1, usage1) = (CpuTicks::now(), sys::usage());
    let ms = |v: u64| v as f64 / 1e3;
    let fp = fingerprint::probe();
    Ok(LoadReport {
        schema: LOAD_SCHEMA.to_string(),
        virtlens: crate::VERSION.to_string(),
        options: opts.clone(),
        elapsed_s: elapsed,
        tasks_done: tasks,
        tasks_per_s: tasks as f64 / elapsed.max(1e-9),
        latency_ms: Latency {
            p50: ms(latencies.value_at_quantile(0.5)),
            p90: ms(latencies.value_at_quantile(0.9)),
            p99: ms(latencies.value_at_quantile(0.99)),
            max: ms(latencies.max()),
            mean: latencies.mean() / 1e3,
        },
        cpu: CpuTime {
            user_s: usage1.user_s - usage0.user_s,
            sys_s: usage1.sys_s - usage0.sys_s,
            voluntary_switches: usage1.voluntary.saturating_sub(usage0.voluntary),
            involuntary_switches: usage1.involuntary.saturating_sub(usage0.involuntary),
        },
        steal_pct: ticks0.zip(ticks1).and_then(|(a, b)| a.steal_pct_until(&b)),
        run_queue: sched_ok.then(|| RunQueue {
            run_s: run_ns as f64 / 1e9,
            wait_s: wait_ns as f64 / 1e9,
            ready_pct: 100.0 * wait_ns as f64 / 1e9 / (elapsed * opts.workers as f64).max(1e-9),
        }),
        cpus: fp.cpus,
        hypervisor_vendor: fp.hypervisor_vendor,
    })
}

fn worker(
    rx: &Mutex<std::sync::mpsc::Receiver<u64>>,
    lock: &Mutex<()>,
    work: task::Work,
    seed: u64,
    mut latencies: Histogram<u64>,
) -> WorkerResult {
    let before = SchedStat::this_thread();
    let mut tasks = 0;
    loop {
        // Take the next task; the guard is dropped before the work starts.
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(id) = next else { break };
        let t0 = Instant::now();
        std::hint::black_box(work.run(id, seed, lock));
        let _ = latencies.record(t0.elapsed().as_micros() as u64);
        tasks += 1;
    }
    let sched = before
        .zip(SchedStat::this_thread())
        .map(|(a, b)| b.since(&a));
    WorkerResult {
        latencies,
        sched,
        tasks,
    }
}
