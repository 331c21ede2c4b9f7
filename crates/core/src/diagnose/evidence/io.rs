//! The IO rate (`diagnose --iops N` or `--fio FILE.json`) joined with the input's exits: per
//! IO, how many queue notifications, interrupt-window exits, EOIs, IPIs and halts the guest
//! took, how many returns to the VMM, the exit handling each IO costs and the IOPS one vCPU
//! could sustain at that cost. The row selectors are shared with `hypotheses::iopath`, which
//! claims what they select. Rates come from the input's time base; without one, nothing is
//! per IO (a count cannot be divided by a rate).

use serde::Serialize;

use crate::decode::{ExitClass, mmio};
use crate::diagnose::hypotheses::apic::WINDOW;
use crate::diagnose::hypotheses::cost::{table_class, typical_ns};
use crate::profile::Access;
use crate::sources::fio_json::FioRun;

use super::{EvidenceSet, Item, Part, sat_sum};

/// The IO rate the user gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoRate {
    /// IOs per second over the capture.
    pub iops: f64,
    /// `option` (`--iops`) or `fio` (`--fio`).
    pub basis: &'static str,
    /// The fio run it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fio: Option<FioRun>,
}

/// One kind of event per IO.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PerIo {
    pub count: u64,
    pub per_second: Option<f64>,
    pub per_io: Option<f64>,
    /// Handling time per IO: measured, or the count × the typical cost of the rows' class.
    pub ns_per_io: Option<f64>,
    /// Where the count comes from (`mmio 0xfee000b0 write`, `userspace KVM_EXIT_HLT`, …).
    pub from: Vec<String>,
    /// The handling time is measured (else estimated from typical costs).
    #[serde(skip)]
    measured: bool,
}

/// What one IO costs in exits, by kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoView {
    pub rate: IoRate,
    /// Queue notifications: writes to device doorbells (PCI IO BARs, virtio notify).
    pub notify: PerIo,
    /// Interrupt-window exits (and KVM_EXIT_IRQ_WINDOW_OPEN returns).
    pub window: PerIo,
    /// Interrupts injected (kvm_inj_virq, irq_injections): events, not exits.
    pub injections: PerIo,
    /// Host interrupts that arrived while a vCPU ran (EXTERNAL_INTERRUPT, SVM `intr`): the
    /// device's interrupt or the kick that delivers it, without posted interrupts — and the
    /// host's own timer and IPIs, so they are reported, never counted as delivery alone.
    pub external: PerIo,
    /// EOI writes that exit (xAPIC page, x2APIC and Hyper-V EOI MSRs, EOI-induced exits).
    pub eoi: PerIo,
    /// IPIs sent through the ICR (xAPIC page, x2APIC and Hyper-V ICR MSRs).
    pub ipi: PerIo,
    /// Halts (HLT exits, KVM_EXIT_HLT returns): the guest waiting for a completion.
    pub halt: PerIo,
    /// Returns to the VMM of any reason.
    pub returns: PerIo,
    /// Exit handling per IO (all exits, idle apart), ns.
    pub handling_ns_per_io: Option<f64>,
    /// `measured` (exit durations in the input) or `typical` (counts × the typical cost of each
    /// class of exit on VMX hardware).
    pub handling_basis: &'static str,
    /// 1 s over that: the IOPS one vCPU sustains if exit handling were all it did.
    pub ceiling_iops_per_vcpu: Option<f64>,
    /// Why figures are missing, when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Below this many interrupts or halts per IO, completions are not delivered by interrupt.
pub(crate) const POLLED: f64 = 0.01;

/// Rows of a part, as the selectors return them.
pub(crate) type Rows<'a> = Vec<(&'a Part, Vec<&'a Item>)>;

fn writes(r: &Item) -> bool {
    !matches!(r.key.access(), Some(Access::Read | Access::In))
}

fn named(r: &Item, words: &[&str]) -> bool {
    r.name
        .as_deref()
        .is_some_and(|n| words.iter().any(|w| n.to_ascii_lowercase().contains(w)))
}

fn pick(part: Option<&Part>, pred: impl Fn(&Item) -> bool) -> Option<(&Part, Vec<&Item>)> {
    let p = part?;
    let rows: Vec<&Item> = p.rows.iter().filter(|r| r.count > 0 && pred(r)).collect();
    (!rows.is_empty()).then_some((p, rows))
}

/// Queue notifications: port writes to PCI IO BARs (0xc000 and up, where firmware puts them)
/// or to ports named virtio; MMIO writes to the PCI hole that are no platform device's (LAPIC,
/// IOAPIC, HPET), or to addresses named virtio/nvme.
pub(crate) fn notify_rows(ev: &EvidenceSet) -> Rows<'_> {
    let port = |r: &Item| {
        writes(r)
            && (r.code().is_some_and(|p| (0xc000..=0xffff).contains(&p)) || named(r, &["virtio"]))
    };
    let addr = |r: &Item| {
        let a = r.code().unwrap_or(0);
        writes(r)
            && (named(r, &["virtio", "nvme", "notify", "doorbell"])
                || (a >= 0xc000_0000
                    && !mmio::is_lapic(a)
                    && !mmio::is_ioapic(a)
                    && !mmio::is_hpet(a)))
    };
    [pick(ev.ports.as_ref(), port), pick(ev.mmio.as_ref(), addr)]
        .into_iter()
        .flatten()
        .collect()
}

/// EOIs that exit: the xAPIC EOI register, the x2APIC (0x80b) and Hyper-V (0x40000070) EOI
/// MSRs, EOI-induced exits.
pub(crate) fn eoi_rows(ev: &EvidenceSet) -> Rows<'_> {
    let page = |r: &Item| {
        writes(r)
            && r.code()
                .is_some_and(|a| mmio::is_lapic(a) && a & 0xfff == 0xb0)
    };
    let msr = |r: &Item| writes(r) && matches!(r.code(), Some(0x80b | 0x4000_0070));
    let exit = |r: &Item| r.is(&["EOI_INDUCED", "EOI_INDUCED_EXIT"]);
    [
        pick(ev.mmio.as_ref(), page),
        pick(ev.msrs.as_ref(), msr),
        pick(ev.exits.as_ref(), exit),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// IPIs: writes to the interrupt command register (xAPIC +0x300, x2APIC 0x830, Hyper-V
/// 0x40000071).
pub(crate) fn ipi_rows(ev: &EvidenceSet) -> Rows<'_> {
    let page = |r: &Item| {
        writes(r)
            && r.code()
                .is_some_and(|a| mmio::is_lapic(a) && a & 0xfff == 0x300)
    };
    let msr = |r: &Item| writes(r) && matches!(r.code(), Some(0x830 | 0x4000_0071));
    [pick(ev.mmio.as_ref(), page), pick(ev.msrs.as_ref(), msr)]
        .into_iter()
        .flatten()
        .collect()
}

/// Interrupt-window exits (VMX INTERRUPT_WINDOW, SVM `vintr`, TPR/CR8, kvm_stat's counters).
pub(crate) fn window_rows(ev: &EvidenceSet) -> Rows<'_> {
    pick(ev.exits.as_ref(), |r| r.is(&WINDOW))
        .into_iter()
        .collect()
}

/// Host interrupts while a vCPU ran.
pub(crate) fn external_rows(ev: &EvidenceSet) -> Rows<'_> {
    pick(ev.exits.as_ref(), |r| {
        r.is(&["EXTERNAL_INTERRUPT", "interrupt", "irq_exits"])
    })
    .into_iter()
    .collect()
}

/// Halt exits.
pub(crate) fn halt_rows(ev: &EvidenceSet) -> Rows<'_> {
    pick(ev.exits.as_ref(), |r| r.class == Some(ExitClass::Idle))
        .into_iter()
        .collect()
}

impl IoView {
    /// The per-IO view of `ev` at `rate`.
    pub fn of(ev: &EvidenceSet, rate: &IoRate) -> IoView {
        let window_s = ev.rate.window_ns.filter(|&w| w > 0).map(|w| w as f64 / 1e9);
        let iops = rate.iops;
        let of_rows = |rows: Rows<'_>| -> PerIo {
            let mut k = PerIo::default();
            let mut ns = 0.0;
            let mut timed = true;
            k.measured = true;
            for (_, items) in &rows {
                for r in items {
                    k.count = k.count.saturating_add(r.count);
                    k.from
                        .push(format!("{} {}", r.table.as_str(), r.key.key_text()));
                    ns += match r.time_ns {
                        Some(t) => t as f64,
                        None => {
                            k.measured = false;
                            r.count as f64
                                * typical_ns(r.class.or_else(|| table_class(&r.table))) as f64
                        }
                    };
                    timed &= r.per_second.is_some();
                }
            }
            if k.count > 0 && timed {
                let per_s: f64 = rows
                    .iter()
                    .flat_map(|(_, i)| i)
                    .filter_map(|r| r.per_second)
                    .sum();
                k.per_second = Some(per_s);
                k.per_io = Some(per_s / iops);
                k.ns_per_io = Some(ns * per_s / k.count as f64 / iops);
            }
            k
        };
        let of_counts = |names: &[(&str, u64)], from: &str| -> PerIo {
            let count = sat_sum(names.iter().map(|(_, n)| *n));
            let per_second = window_s.filter(|_| count > 0).map(|w| count as f64 / w);
            PerIo {
                count,
                per_second,
                per_io: per_second.map(|p| p / iops),
                ns_per_io: None,
                measured: true,
                from: names
                    .iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(k, _)| format!("{from} {k}"))
                    .collect(),
            }
        };
        let userspace = |reason: &str| ev.userspace.get(reason).copied().unwrap_or(0);
        let mut window = of_rows(window_rows(ev));
        let mut halt = of_rows(halt_rows(ev));
        // Returns to the VMM for a window or a halt count as those exits when no exit table has
        // them (an emulating backend's capture, a VMM-side count).
        if window.count == 0 {
            window = of_counts(
                &[(
                    "KVM_EXIT_IRQ_WINDOW_OPEN",
                    userspace("KVM_EXIT_IRQ_WINDOW_OPEN"),
                )],
                "userspace",
            );
        }
        if halt.count == 0 {
            halt = of_counts(&[("KVM_EXIT_HLT", userspace("KVM_EXIT_HLT"))], "userspace");
        }
        let injected: Vec<(&str, u64)> = ["kvm_inj_virq", "irq_injections"]
            .iter()
            .filter_map(|n| Some((*n, ev.event(n)?)))
            .take(1)
            .collect();
        let mut injections = of_counts(&injected, "event");
        if let Some((n, _)) = injected.first()
            && let Some(r) = ev.event_rate(n)
        {
            injections.per_second = Some(r);
            injections.per_io = Some(r / iops);
        }
        let returns: Vec<(&str, u64)> =
            ev.userspace.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let returns = of_counts(&returns, "userspace");
        let notify = of_rows(notify_rows(ev));
        let eoi = of_rows(eoi_rows(ev));
        let ipi = of_rows(ipi_rows(ev));
        let external = of_rows(external_rows(ev));
        // All exit handling: the exit table's (idle apart) when there is one, else what the
        // kinds above cost.
        let handling = match &ev.exits {
            Some(ex) if !ex.from_counters && window_s.is_some() => {
                let t = ex
                    .totals
                    .overhead_time_ns
                    .map(|t| t as f64)
                    .unwrap_or_else(|| {
                        ex.rows
                            .iter()
                            .filter(|r| !r.idle)
                            .map(|r| r.count as f64 * typical_ns(r.class) as f64)
                            .sum()
                    });
                window_s.map(|w| t / w / iops)
            }
            _ => {
                let kinds = [&notify, &window, &eoi, &ipi];
                kinds
                    .iter()
                    .any(|k| k.ns_per_io.is_some())
                    .then(|| kinds.iter().filter_map(|k| k.ns_per_io).sum())
            }
        };
        let measured = match &ev.exits {
            Some(ex) if !ex.from_counters && window_s.is_some() => ex.timed,
            _ => [&notify, &window, &eoi, &ipi].iter().all(|k| k.measured),
        };
        let exits =
            ev.exits.is_some() || ev.ports.is_some() || ev.mmio.is_some() || ev.msrs.is_some();
        let note = (exits && window_s.is_none() && !ev.rate.printed_rates).then(|| {
            "the input shows no capture window and no rates: pass --window SECONDS to put its \
             counts per IO"
                .to_string()
        });
        IoView {
            rate: rate.clone(),
            notify,
            window,
            injections,
            external,
            eoi,
            ipi,
            halt,
            returns,
            ceiling_iops_per_vcpu: handling.filter(|h| *h > 0.0).map(|h| 1e9 / h),
            handling_ns_per_io: handling,
            handling_basis: if measured { "measured" } else { "typical" },
            note,
        }
    }

    /// Interrupts and halts per IO: the most of injections, delivery exits and halts (0 when
    /// none is counted).
    pub fn interrupts_per_io(&self) -> f64 {
        [
            self.injections.per_io,
            self.delivery_per_io(),
            self.halt.per_io,
        ]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max)
    }

    /// IO goes on (notifications per IO are known) while no interrupt is delivered and the
    /// guest never halts: completions are polled.
    pub fn polled(&self) -> bool {
        self.notify.count > 0 && self.notify.per_io.is_some() && self.interrupts_per_io() < POLLED
    }

    /// Interrupt delivery exits per IO: window exits and EOIs that exit.
    pub fn delivery_per_io(&self) -> Option<f64> {
        match (self.window.per_io, self.eoi.per_io) {
            (None, None) => None,
            (w, e) => Some(w.unwrap_or(0.0) + e.unwrap_or(0.0)),
        }
    }
}
