//! The IO-path scenario as the lab runs it: every configuration of [`configs`] gets its VM,
//! a probe run (which also checks the counts the design fixes: an interrupt per group, a
//! notify per batch, no VMM return where none is due), a batch count calibrated to the target
//! run time, then interleaved rounds (each round runs every configuration once, starting one
//! later each round) within a time budget; per configuration the counts per IO over all runs
//! and the medians and spread of the times per IO.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use virtlens_core::measure::{BackendLabel, Status};
use virtlens_core::measure::{
    Delivery, ExitsPerIo, IoPathReport, IoPathRow, ReturnsPerIo, TimePerIo,
};

use super::{Config, Live, RunCounts};
use crate::microvm::Error;

/// The queue depths of the table.
pub(crate) const DEPTHS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
/// The coalescing variant: completions per interrupt, and the depths it runs at.
pub(crate) const COALESCE: u32 = 8;
const COALESCE_DEPTHS: [u32; 3] = [8, 32, 128];
/// The x2APIC-EOI variant's depths (irqfd).
const X2APIC_DEPTHS: [u32; 2] = [1, 32];

/// How the device and the driver behave, for the report.
pub(crate) const MODEL: &str = "The driver submits qd requests, notifies once (a port write) and waits until it has \
     reaped every completion: halting until an interrupt whose handler reaps and EOIs, or spinning on \
     the completion tail (poll). The device completes k requests per interrupt (k = 1 unless \
     coalesced), one group after the other, each once the driver has reaped the previous one — a \
     device slower than the guest takes an interrupt, so no interrupt merges with another. \
     vmm-inject: the VMM (this process) is the device and the interrupt controller: the notify \
     and the EOI exit to it, it injects with KVM_INTERRUPT. irqfd: ioeventfd notify, a device \
     thread, an irqfd routed as an MSI to the in-kernel LAPIC. poll: ioeventfd notify, a device \
     thread, no interrupt.";

/// The configurations of a lab run (`quick`: fewer depths).
pub(crate) fn configs(quick: bool) -> Vec<Config> {
    let pick = |all: &[u32]| -> Vec<u32> {
        if quick {
            all.iter()
                .copied()
                .filter(|q| [1, 4, 32, 128].contains(q))
                .collect()
        } else {
            all.to_vec()
        }
    };
    let c = |delivery, qd, coalesce, x2apic_eoi| Config {
        delivery,
        qd,
        coalesce,
        x2apic_eoi,
    };
    let mut out = Vec::new();
    for qd in pick(&DEPTHS) {
        for d in Delivery::ALL {
            out.push(c(d, qd, 1, false));
        }
    }
    for qd in pick(&COALESCE_DEPTHS) {
        out.push(c(Delivery::VmmInject, qd, COALESCE, false));
        out.push(c(Delivery::Irqfd, qd, COALESCE, false));
    }
    for qd in pick(&X2APIC_DEPTHS) {
        out.push(c(Delivery::Irqfd, qd, 1, true));
    }
    out
}

/// How long and how often.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub rounds: usize,
    pub target_run: Duration,
    pub watchdog: Duration,
    pub until: Option<Instant>,
}

/// The groups of `qd` requests at `coalesce` per interrupt.
fn groups(c: &Config) -> u64 {
    u64::from(c.qd.div_ceil(c.coalesce.max(1)))
}

/// Checks the counts the design fixes, on a run of `batches`: they hold on every backend.
pub fn check(c: &Config, batches: u32, r: &RunCounts) -> Result<(), String> {
    let b = u64::from(batches);
    let want_ios = b * u64::from(c.qd);
    let want_irqs = if c.delivery.interrupts() {
        b * groups(c)
    } else {
        0
    };
    let mut wrong = Vec::new();
    if r.ios != want_ios {
        wrong.push(format!("{} IOs, not {want_ios}", r.ios));
    }
    if r.notifies != b {
        wrong.push(format!("{} notifies, not {b}", r.notifies));
    }
    if r.interrupts != want_irqs {
        wrong.push(format!("{} interrupts, not {want_irqs}", r.interrupts));
    }
    match c.delivery {
        Delivery::VmmInject if r.injections != want_irqs || r.eois != want_irqs => {
            wrong.push(format!(
                "{} injections and {} EOIs for {want_irqs} interrupts",
                r.injections, r.eois
            ));
        }
        Delivery::VmmInject => {}
        _ if r.vmm_total != 0 => wrong.push(format!("{} returns to the VMM, not 0", r.vmm_total)),
        _ => {}
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}", c.label(), wrong.join("; ")))
    }
}

struct Slot {
    live: Option<Live>,
    batches: u32,
    ns_per_batch: f64,
    status: Status,
    reason: Option<String>,
    runs: Vec<RunCounts>,
}

fn prepare(c: Config, plan: &Plan) -> Slot {
    let mut slot = Slot {
        live: None,
        batches: 0,
        ns_per_batch: 0.0,
        status: Status::Ok,
        reason: None,
        runs: Vec::new(),
    };
    let probe = |live: &mut Live, batches: u32| -> Result<f64, Error> {
        let r = live.run(batches, plan.watchdog)?;
        check(&c, batches, &r).map_err(|e| Error::UnexpectedExit { exit: e, rip: 0 })?;
        Ok(r.wall_ns as f64 / f64::from(batches))
    };
    let result = Live::new(c).and_then(|mut live| {
        let mut batches = 2u32;
        let mut per = probe(&mut live, batches)?;
        // Grow until a run takes half the target (a few steps), then aim at the target.
        let target = plan.target_run.as_nanos() as f64;
        for _ in 0..4 {
            if per * f64::from(batches) >= target * 0.5 {
                break;
            }
            batches = ((target / per.max(1.0)) as u32).clamp(batches * 2, 100_000);
            per = probe(&mut live, batches)?;
        }
        Ok((live, per))
    });
    match result {
        Ok((live, per)) => {
            slot.ns_per_batch = per;
            slot.batches =
                ((plan.target_run.as_nanos() as f64 / per.max(1.0)) as u32).clamp(2, 100_000);
            slot.live = Some(live);
        }
        Err(e @ Error::Unsupported(_)) => {
            slot.status = Status::Unsupported;
            slot.reason = Some(e.to_string());
        }
        Err(e) => {
            slot.status = Status::Failed;
            slot.reason = Some(e.to_string());
        }
    }
    slot
}

/// Measures `configs`: probe and calibrate each, then interleaved rounds. `tick` is called
/// once per configuration prepared and once per run; `notes` get what the budget changed.
pub fn measure(
    configs: &[Config],
    plan: &Plan,
    tick: &mut dyn FnMut(&str),
    notes: &mut Vec<String>,
) -> Vec<IoPathRow> {
    let mut slots: Vec<(Config, Slot)> = configs
        .iter()
        .map(|c| {
            tick(&format!("io_path/{}", c.label()));
            (*c, prepare(*c, plan))
        })
        .collect();
    if let Some(until) = plan.until {
        let left = until
            .saturating_duration_since(Instant::now())
            .as_secs_f64();
        let per_round: f64 = slots
            .iter()
            .map(|(_, s)| f64::from(s.batches) * s.ns_per_batch / 1e9)
            .sum();
        let estimate = per_round * plan.rounds as f64;
        if estimate > left && per_round > 0.0 {
            let factor = (0.9 * left / estimate).clamp(0.0, 1.0);
            for (_, s) in &mut slots {
                s.batches = ((f64::from(s.batches) * factor) as u32).max(1);
            }
            notes.push(format!(
                "io_path: {} rounds would take about {estimate:.0} s, more than the {left:.0} s of \
                 the budget left: each run makes {:.1}% of its calibrated batches",
                plan.rounds,
                factor * 100.0
            ));
        }
    }
    let n = slots.len();
    for round in 0..plan.rounds {
        if round > 0 && plan.until.is_some_and(|u| Instant::now() >= u) {
            notes.push(format!(
                "io_path: stopped after {round} of {} rounds: the time budget was spent",
                plan.rounds
            ));
            break;
        }
        for k in 0..n {
            let (c, slot) = &mut slots[(k + round) % n];
            tick(&format!("io_path/{}", c.label()));
            let Some(live) = slot.live.as_mut() else {
                continue;
            };
            match live.run(slot.batches, plan.watchdog) {
                Ok(r) => slot.runs.push(r),
                Err(e) => {
                    slot.status = Status::Failed;
                    slot.reason = Some(format!("run {}: {e}", round + 1));
                    slot.live = None;
                }
            }
        }
    }
    slots.into_iter().map(|(c, s)| row(&c, s)).collect()
}

/// The row of `c` from its runs.
fn row(c: &Config, s: Slot) -> IoPathRow {
    let ios: u64 = s.runs.iter().map(|r| r.ios).sum();
    let per = |f: fn(&RunCounts) -> u64| -> f64 {
        s.runs.iter().map(f).sum::<u64>() as f64 / ios.max(1) as f64
    };
    let time = |f: fn(&RunCounts) -> u64| -> Option<TimePerIo> {
        let v: Vec<f64> = s
            .runs
            .iter()
            .filter(|r| r.ios > 0)
            .map(|r| f(r) as f64 / r.ios as f64)
            .collect();
        TimePerIo::of(&v)
    };
    let measured = ios > 0;
    let exits = measured.then(|| {
        let mut e = ExitsPerIo {
            notify: per(|r| r.notifies),
            interrupts: per(|r| r.interrupts),
            eoi: per(|r| r.eois),
            halt: per(|r| r.halts),
            window: per(|r| r.vmm_window),
            total: 0.0,
        };
        e.total = e.notify + e.eoi + e.halt + e.window;
        e
    });
    let returns = measured.then(|| ReturnsPerIo {
        notify: per(|r| r.vmm_notify),
        eoi: per(|r| r.vmm_eoi),
        halt: per(|r| r.vmm_halt),
        window: per(|r| r.vmm_window),
        total: per(|r| r.vmm_total),
    });
    let mut kvm: BTreeMap<String, f64> = BTreeMap::new();
    for r in &s.runs {
        for (k, v) in &r.kvm {
            *kvm.entry(k.clone()).or_default() += *v as f64;
        }
    }
    for v in kvm.values_mut() {
        *v /= ios.max(1) as f64;
    }
    let vcpu = time(|r| r.vcpu_cpu_ns);
    let device = (c.delivery != Delivery::VmmInject)
        .then(|| time(|r| r.device_cpu_ns))
        .flatten();
    let note = (measured && c.delivery == Delivery::VmmInject)
        .then(|| window_note(returns.as_ref()))
        .flatten();
    IoPathRow {
        delivery: c.delivery,
        qd: c.qd,
        coalesce: c.coalesce,
        eoi: c.eoi(),
        status: if measured {
            s.status
        } else {
            fail_status(s.status)
        },
        reason: s.reason,
        ios_per_run: u64::from(s.batches) * u64::from(c.qd),
        runs: s.runs.len(),
        exits_per_io: exits,
        vmm_returns_per_io: returns,
        injections_per_io: (c.delivery == Delivery::VmmInject && measured)
            .then(|| per(|r| r.injections)),
        kvm_per_io: kvm,
        ns_per_io: time(|r| r.wall_ns),
        ceiling_iops_per_vcpu: vcpu
            .filter(|t| t.median_ns > 0.0)
            .map(|t| 1e9 / t.median_ns),
        vcpu_cpu_ns_per_io: vcpu,
        device_cpu_ns_per_io: device,
        note,
    }
}

fn fail_status(s: Status) -> Status {
    if s == Status::Ok { Status::Failed } else { s }
}

/// vmm-inject at more than one interrupt per batch needs, after each EOI exit, the next
/// injection as soon as the guest re-enables interrupts: VMX/SVM give an interrupt-window
/// exit; a backend that does not return it to userspace lets the driver reach its HLT, whose
/// exit stands in for the window exit — the same count, later.
fn window_note(returns: Option<&ReturnsPerIo>) -> Option<String> {
    let r = returns?;
    (r.halt > 0.0 && r.window == 0.0).then(|| {
        "no interrupt-window exit reached the VMM: the next interrupt of a batch waited for the \
         driver's HLT exit instead, which stands in for the window exit (the same count of \
         returns to the VMM; the interrupt arrives later than on VMX/SVM)"
            .to_string()
    })
}

/// The scenario's report from its rows, with what the backend changes in the reading.
pub(crate) fn report(rows: Vec<IoPathRow>, backend: &BackendLabel) -> IoPathReport {
    let mut notes = Vec::new();
    if !backend.hardware {
        notes.push(format!(
            "backend {}: {}. The counts per IO are the design's and hold on any backend; the times \
             and the ceilings are this backend's",
            backend.name, backend.caveat
        ));
    }
    if rows.iter().any(|r| r.note.is_some()) {
        notes.push(
            "vmm-inject: KVM never returned KVM_EXIT_IRQ_WINDOW_OPEN to the VMM (its \
             irq_window_exits statistic moves in the kernel), so an interrupt queued while the \
             guest had interrupts off waited for the driver's HLT exit: counted as a halt \
             where VMX/SVM would count a window exit — the same returns to the VMM per IO"
                .into(),
        );
    }
    IoPathReport {
        model: MODEL.to_string(),
        rows,
        notes,
    }
}
