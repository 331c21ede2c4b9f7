//! The IO path, with the IO rate given (`--iops`, `--fio`): what each IO costs in exits.
//!
//! - `irq.delivery-exits`: completions reach the guest through interrupts whose delivery exits —
//!   EOIs that exit and interrupt-window exits (APICv / posted interrupts off or inhibited, AVIC
//!   off, or the local APIC emulated in the VMM) — at a measurable count per IO;
//! - `io.notify-exits`: a queue notification (doorbell write) per IO or nearly, the exit that
//!   EVENT_IDX, iothread polling or vhost avoid;
//! - `io.polling` (context): IO goes on while no interrupt is delivered and the guest never
//!   halts — completions are polled, which costs a spinning vCPU at low queue depth.
//!
//! The family runs before `apic` and `io`, which would read the same rows without the IO
//! rate, and claims what it explains.

use super::cost::of;
use super::effect;
use super::{ApicRule, IoRule, IrqRule};
use super::{Ctx, Grading, Hint, Hypothesis, Threshold};
use crate::diagnose::evidence::EvidenceSet;
use crate::diagnose::evidence::io::{Rows, eoi_rows, notify_rows, window_rows};
use crate::diagnose::model::{Confidence, Cost, Fact, Severity};

/// Interrupt-delivery exits per IO from which they are a finding whatever they cost: one IO in
/// four pays one — no longer the odd interrupt of a device the guest barely uses.
pub(crate) const DELIVERY_PER_IO: f64 = 0.25;
/// Notifications per IO from which every other IO or more kicks the device (queue depth ≤ 2,
/// or no notification suppression at all).
pub(crate) const NOTIFY_PER_IO: f64 = 0.5;
pub(crate) use crate::diagnose::evidence::io::POLLED;

pub(crate) const DELIVERY_EXITS_THRESHOLDS: &[Threshold] = &[Threshold {
    name: "interrupt-delivery exits per IO, for low whatever they cost",
    value: DELIVERY_PER_IO,
    unit: "per IO",
}];

pub(crate) const NOTIFY_EXITS_THRESHOLDS: &[Threshold] = &[Threshold {
    name: "notifications per IO, for low whatever they cost",
    value: NOTIFY_PER_IO,
    unit: "per IO",
}];

pub(crate) const POLLING_THRESHOLDS: &[Threshold] = &[Threshold {
    name: "interrupts and halts per IO below which completions are polled",
    value: POLLED,
    unit: "per IO",
}];

/// The cost of rows from several parts, added up (the share only when all are of one kind).
fn cost_of(ev: &EvidenceSet, rows: &Rows<'_>) -> Cost {
    let mut total = Cost::default();
    let costs: Vec<Cost> = rows.iter().map(|(p, r)| of(ev, p, r)).collect();
    let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    let addu = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    };
    for c in &costs {
        total.exits = total.exits.saturating_add(c.exits);
        total.time_ns = addu(total.time_ns, c.time_ns);
        total.estimated_ns = addu(total.estimated_ns, c.estimated_ns);
        total.per_second = add(total.per_second, c.per_second);
        total.per_vcpu_second = add(total.per_vcpu_second, c.per_vcpu_second);
        total.cpu_share = add(total.cpu_share, c.cpu_share);
        total.cpu_basis = total.cpu_basis.or(c.cpu_basis);
        total.share_of = total.share_of.or(c.share_of);
        if costs.iter().all(|x| x.share_of == c.share_of) {
            total.share = add(total.share, c.share);
        }
    }
    if costs.len() == 1 {
        total.typical_ns = costs[0].typical_ns;
    }
    // A measured time for some rows and an estimate for others: report the estimate whole.
    if total.time_ns.is_some() && total.estimated_ns.is_some() {
        total.estimated_ns = addu(total.time_ns, total.estimated_ns);
        total.time_ns = None;
    }
    total
}

fn facts(rows: &Rows<'_>, iops: f64) -> Vec<Fact> {
    rows.iter()
        .flat_map(|(p, r)| {
            r.iter()
                .map(|r| p.fact(r).per_io(r.per_second.map(|x| x / iops)))
        })
        .collect()
}

fn free<'a>(ctx: &Ctx<'_>, rows: Rows<'a>) -> Rows<'a> {
    rows.into_iter()
        .map(|(p, r)| (p, ctx.free_rows(r)))
        .filter(|(_, r)| !r.is_empty())
        .collect()
}

/// A fact stating a per-IO figure.
fn per_io(key: &str, v: f64, note: &str) -> Fact {
    Fact::said("io", key, note).per_io(Some(v))
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(io) = &ev.io else {
        return;
    };
    let userspace = |r: &str| ev.userspace.get(r).copied().unwrap_or(0);
    // Interrupt delivery: EOIs and window exits.
    let delivery = {
        let mut rows = free(ctx, eoi_rows(ev));
        rows.extend(free(ctx, window_rows(ev)));
        rows
    };
    let per = io.delivery_per_io();
    if !delivery.is_empty() && per.is_some_and(|p| p > 0.0) {
        let halts_to_vmm = userspace("KVM_EXIT_HLT") > 0;
        let eoi_to_vmm = userspace("KVM_EXIT_MMIO") > 0 && io.eoi.count > 0;
        let mut support = vec![per_io(
            "interrupt-delivery exits per IO",
            per.unwrap_or(0.0),
            "EOIs that exit and interrupt-window exits, per IO",
        )];
        if let Some(x) = io.external.per_io.filter(|x| *x > 0.0) {
            support.push(per_io(
                "external interrupts per IO",
                x,
                "host interrupts while a vCPU ran: the device's interrupts or the kicks that deliver \
                 them, without posted interrupts (and the host's own timer)",
            ));
        }
        if let Some(h) = io.halt.per_io.filter(|h| *h > 0.0) {
            support.push(per_io(
                "halts per IO",
                h,
                if halts_to_vmm {
                    "each returns to the VMM: the local APIC is emulated there"
                } else {
                    "the guest waits for completions halted"
                },
            ));
        }
        let h = Hypothesis::with_cost(
            IrqRule::DeliveryExits,
            cost_of(ev, &delivery),
            facts(&delivery, io.rate.iops),
        )
        .support(support)
        .max(Severity::High)
        .floor_if(per.is_some_and(|p| p >= DELIVERY_PER_IO), Severity::Low)
        .hint_if(halts_to_vmm || eoi_to_vmm, Hint::UserspaceIrqchip)
        .hint_if(ev.host.apic_virt() == Some(false), Hint::ApicvOff)
        .hint_if(ev.host.amd(), Hint::Amd)
        .hint_if(ev.host.emulated(), Hint::PvmBackend)
        .rival(ApicRule::ApicvOff, Confidence::Possible)
        .rival(ApicRule::ApicvInhibited, Confidence::Possible)
        .removes(effect::REPLACED);
        ctx.push(h);
    }
    // Notifications.
    let notify = free(ctx, notify_rows(ev));
    if let Some(n) = io.notify.per_io.filter(|_| !notify.is_empty()) {
        let to_vmm = userspace("KVM_EXIT_IO") + userspace("KVM_EXIT_MMIO") > 0
            && notify
                .iter()
                .flat_map(|(_, r)| r)
                .any(|r| r.mean_ns().is_none_or(|m| m >= 20_000.0));
        let h = Hypothesis::with_cost(
            IoRule::NotifyExits,
            cost_of(ev, &notify),
            facts(&notify, io.rate.iops),
        )
        .support([per_io("notifications per IO", n, "doorbell writes per IO")])
        .max(Severity::High)
        .floor_if(n >= NOTIFY_PER_IO, Severity::Low)
        .hint_if(to_vmm && ev.host.emulated(), Hint::Userspace)
        .hint_if(ev.host.emulated(), Hint::PvmBackend)
        .removes(if n >= NOTIFY_PER_IO {
            effect::MOSTLY
        } else {
            effect::HALF
        });
        ctx.push(h);
    }
    // Polling: IO (notifications) with neither interrupts nor halts.
    if io.polled() {
        // What polling costs: a vCPU that spins throughout spends all its time, 1 s over the
        // IO rate per IO; at low queue depth that is the device's whole latency per IO.
        let mut spin = Fact::said(
            "io",
            "a polling vCPU's time per IO",
            "if one vCPU spins throughout: 1 s over the IO rate",
        );
        spin.mean_ns = Some(1e9 / io.rate.iops);
        let mut support = vec![
            per_io(
                "interrupts and halts per IO",
                io.interrupts_per_io(),
                "no interrupt delivery and no halt while IO goes on",
            ),
            spin,
        ];
        if let Some(qd) = io.rate.fio.as_ref().and_then(|f| f.iodepth) {
            let mut f = Fact::said("io", "queue depth (fio iodepth)", "");
            f.note = None;
            f.count = u64::from(qd);
            support.push(f);
        }
        let h = Hypothesis::with_cost(IoRule::Polling, Cost::default(), Vec::new())
            .support(support)
            .grading(Grading::Context(Severity::Info))
            .removes(effect::NOTHING);
        ctx.push(h);
    }
}
