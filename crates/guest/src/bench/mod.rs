//! `virtlens bench`: the guest-side suite. Run it natively, in a VM and in a nested VM; each
//! run writes one JSON document ([`BenchReport`]) and `virtlens stretch` compares them.
//!
//! Every probe is sampled `runs` times, round-robin over the probes (starting one probe later
//! each round), so a slow drift of a noisy host touches every measure alike; each measure keeps
//! its samples and their median and spread. The default run takes well under a minute; `quick`
//! shrinks the loop counts (not the kernels, so quick and full results compare) for slow
//! layers such as software emulation.

mod cpu;
mod external;
mod memory;
mod timing;
mod wakeup;

pub use cpu::{SOLUTIONS as QUEENS_SOLUTIONS, queens};
pub use external::{fio_figures, iperf3_figures};
pub(crate) use timing::TRAPPING_CLOCKSOURCES;

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::fingerprint;
use crate::schema::{BENCH_SCHEMA, BenchReport, Check, Finding, Measure, Recorded, Skipped};
use crate::stats::Spread;
use crate::sys::Pages;

/// A source of samples for one or more measures.
pub(crate) trait Probe {
    /// The measures this probe fills, with their details and no samples yet.
    fn measures(&self) -> Vec<Measure>;
    /// One sample of each measure, in the order of [`Probe::measures`].
    fn sample(&mut self) -> Result<Vec<f64>, String>;
    /// The checked answer of a deterministic kernel.
    fn check(&self) -> Option<Check> {
        None
    }
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Repetitions of every measure (at least 1).
    pub runs: usize,
    pub quick: bool,
    /// The layer's name in the report (default: from the fingerprint).
    pub layer: Option<String>,
    /// fio arguments (a job), when storage is to be measured.
    pub fio: Option<String>,
    /// An iperf3 server, when the network is to be measured.
    pub iperf3: Option<String>,
}

/// Progress: `done` of `total` samples, now at `label`.
pub(crate) type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

struct Slot {
    probe: Box<dyn Probe>,
    measures: Vec<Measure>,
    failed: Option<String>,
}

/// Builds the probes; what cannot run here goes to `skipped`.
fn probes(opts: &Options, cpus: usize, skipped: &mut Vec<Skipped>) -> Vec<Slot> {
    let mut out: Vec<Box<dyn Probe>> = vec![
        Box::new(cpu::Search::new(opts.quick)),
        Box::new(timing::ClockRead::new(opts.quick)),
        Box::new(timing::Syscall::new(opts.quick)),
        Box::new(memory::Bandwidth::new(opts.quick)),
    ];
    let mut skip = |name: &str, why: String| {
        skipped.push(Skipped {
            name: name.to_string(),
            why,
        })
    };
    match wakeup::Wakeup::new(opts.quick, cpus) {
        Ok(p) => out.push(Box::new(p)),
        Err(why) => skip("wakeup.cross_cpu", why),
    }
    for (pages, name) in [
        (Pages::Small, "tlb.random_4k"),
        (Pages::Huge, "tlb.random_2m"),
    ] {
        match memory::Tlb::new(pages, opts.quick, 42) {
            Ok(p) => out.push(Box::new(p)),
            Err(why) => skip(name, why),
        }
    }
    let mut first_samples = Vec::new();
    match &opts.fio {
        Some(args) if external::installed("fio") => match external::Fio::new(args) {
            Ok((p, first)) => {
                first_samples.push((out.len(), first));
                out.push(Box::new(p));
            }
            Err(why) => skip("fio", why),
        },
        Some(_) => skip("fio", "fio is not installed".into()),
        None => skip("fio", "not asked for (--fio ARGS)".into()),
    }
    match &opts.iperf3 {
        Some(host) if external::installed("iperf3") => {
            out.push(Box::new(external::Iperf3::new(host, opts.quick)));
        }
        Some(_) => skip("net.iperf3", "iperf3 is not installed".into()),
        None => skip("net.iperf3", "not asked for (--iperf3 HOST)".into()),
    }
    let mut slots: Vec<Slot> = out
        .into_iter()
        .map(|probe| Slot {
            measures: probe.measures(),
            probe,
            failed: None,
        })
        .collect();
    // fio's first run (which found the job names) counts as its first sample.
    for (i, first) in first_samples {
        if let Some(slot) = slots.get_mut(i) {
            for (m, v) in slot.measures.iter_mut().zip(first) {
                m.samples.push(v);
            }
        }
    }
    slots
}

/// Runs the suite.
pub(crate) fn run(opts: &Options, progress: Progress<'_>) -> BenchReport {
    let start = Instant::now();
    let fp = fingerprint::probe();
    let runs = opts.runs.max(1);
    let mut skipped = Vec::new();
    let mut slots = probes(opts, fp.cpus, &mut skipped);
    let n = slots.len();
    let total = runs * n;
    for round in 0..runs {
        for k in 0..n {
            let slot = &mut slots[(k + round) % n];
            let label = slot.measures.first().map_or("", |m| m.name.as_str());
            progress(round * n + k + 1, total, label);
            if slot.failed.is_some()
                || slot
                    .measures
                    .first()
                    .is_some_and(|m| m.samples.len() > round)
            {
                continue;
            }
            match slot.probe.sample() {
                Ok(values) => {
                    for (m, v) in slot.measures.iter_mut().zip(values) {
                        m.samples.push(v);
                    }
                }
                Err(why) => slot.failed = Some(why),
            }
        }
    }
    let mut measures = Vec::new();
    for slot in slots {
        let check = slot.probe.check();
        for mut m in slot.measures {
            if let Some(why) = &slot.failed {
                skipped.push(Skipped {
                    name: m.name.clone(),
                    why: why.clone(),
                });
                continue;
            }
            m.spread = Spread::of(&m.samples);
            m.check = check;
            measures.push(m);
        }
    }
    let mut findings = Vec::new();
    if let Some(cs) = &fp.clocksource
        && TRAPPING_CLOCKSOURCES.contains(&cs.as_str())
    {
        findings.push(Finding {
            id: "clock.trapping_clocksource".into(),
            text: format!(
                "the kernel reads time from {cs}, which the vDSO cannot read: every clock read is \
                 a system call, and in a VM a read of an emulated device (a VM exit). Use tsc or \
                 kvm-clock (KVM: no `clocksource=` override, kvmclock on), or Hyper-V's reference \
                 TSC page (hv-time) for Windows guests; available here: {}",
                fp.clocksources_available.join(", ")
            ),
        });
    }
    BenchReport {
        schema: BENCH_SCHEMA.to_string(),
        layer: opts
            .layer
            .clone()
            .unwrap_or_else(|| fingerprint::default_layer(&fp)),
        recorded: Recorded {
            unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            virtlens: crate::VERSION.to_string(),
            wall_s: start.elapsed().as_secs_f64(),
            runs,
            quick: opts.quick,
        },
        fingerprint: fp,
        measures,
        skipped,
        findings,
    }
}
