//! The cost of a set of rows, from the input's own numbers: exits × their measured time (or,
//! without durations, × the typical cost of their class), per second where a rate is known,
//! as a share of vCPU time where the time base allows, and as a share of the input's exit
//! handling (idle apart) — against the exit table when the rows come from a breakdown table
//! (ports, addresses, MSRs) of the same capture.

use crate::decode::ExitClass;
use crate::profile::TableKind;

use super::super::evidence::{EvidenceSet, Item, Part, ratio, sat_sum};
use super::super::model::{Cost, CpuBasis, ShareOf};

/// The typical handling time of one exit of `class`, for inputs without durations: the means
/// of the Intel host tables shown at KVM Forum 2021 ("The traps of using Hyper-V features in
/// KVM environment": EPT_MISCONFIG 6.5 µs, IO_INSTRUCTION 6.6–7.9 µs, MSR_WRITE 1.5–1.7 µs,
/// EXTERNAL_INTERRUPT 2.1–4.0 µs, APIC_WRITE 1.4 µs, VMCALL 5.3–5.8 µs, EPT_VIOLATION 4–10 µs,
/// CPUID 1.4–2.4 µs, EXCEPTION_NMI 8–12 µs). Idle has no cost: halted time is the guest waiting.
pub(crate) fn typical_ns(class: Option<ExitClass>) -> u64 {
    match class {
        Some(ExitClass::Io | ExitClass::Mmio) => 6_500,
        Some(ExitClass::Msr) => 1_600,
        Some(ExitClass::Interrupt) => 3_000,
        Some(ExitClass::Apic) => 1_500,
        Some(ExitClass::Mmu) => 5_000,
        Some(ExitClass::Spin) => 1_000,
        Some(ExitClass::Hypercall) => 5_500,
        Some(ExitClass::Cpuid) => 1_500,
        Some(ExitClass::Exception) => 8_000,
        Some(ExitClass::Idle) => 0,
        Some(ExitClass::Other) | None => 1_500,
    }
}

/// The class a breakdown table's rows stand for.
pub(crate) fn table_class(kind: &TableKind) -> Option<ExitClass> {
    match kind {
        TableKind::Ioport => Some(ExitClass::Io),
        TableKind::Mmio => Some(ExitClass::Mmio),
        TableKind::Msr => Some(ExitClass::Msr),
        _ => None,
    }
}

/// The handling time of `rows`. A port, MMIO or MSR table times its accesses from the access
/// (`kvm_pio`, `kvm_mmio`, `kvm_msr`) to the next entry, which leaves out the part of the exit
/// before it; what removing the accesses saves is their whole exits. So when the same input
/// times the exits of that class, each access costs at least their mean — unless exits are
/// reflected to a nested hypervisor, whose handling is then in every exit's time and is the
/// nested finding's cost, not the device's.
fn handled_ns(ev: &EvidenceSet, rows: &[&Item]) -> Option<u64> {
    let reflected = ev.event("kvm_nested_vmexit").unwrap_or(0) > 0;
    let exit_mean = |r: &Item| -> Option<f64> {
        let class = table_class(&r.table).filter(|_| !reflected)?;
        let ex = ev
            .exits
            .as_ref()
            .filter(|ex| ex.timed && !ex.from_counters)?;
        let of_class = ex.class(class);
        let count = sat_sum(of_class.iter().map(|x| x.count));
        let time = sat_sum(of_class.iter().filter_map(|x| x.time_ns));
        (count > 0 && time > 0).then(|| time as f64 / count as f64)
    };
    rows.iter()
        .try_fold(0u64, |a, r| {
            let own = r.time_ns?;
            let whole = exit_mean(r).map_or(0, |m| (m * r.count as f64) as u64);
            Some(a.saturating_add(own.max(whole)))
        })
        .filter(|_| !rows.is_empty())
}

/// The cost of `rows` of `part`.
pub(crate) fn of(ev: &EvidenceSet, part: &Part, rows: &[&Item]) -> Cost {
    let exits = sat_sum(rows.iter().map(|r| r.count));
    let time_ns = handled_ns(ev, rows);
    let class = |r: &Item| r.class.or_else(|| table_class(&r.table));
    let estimated_ns = time_ns.is_none().then(|| {
        sat_sum(
            rows.iter()
                .map(|r| r.count.saturating_mul(typical_ns(class(r)))),
        )
    });
    let typical = match rows.first() {
        Some(r) if time_ns.is_none() && rows.iter().all(|x| class(x) == class(r)) => {
            Some(typical_ns(class(r)))
        }
        _ => None,
    };
    let per_second: Option<f64> = if rows.is_empty() {
        None
    } else {
        rows.iter().map(|r| r.per_second).sum()
    };
    let rate = &ev.rate;
    let per_vcpu_second = rate
        .per_vcpu()
        .then(|| rate.per_vcpu_second(exits, per_second))
        .flatten();
    let spent = time_ns.or(estimated_ns);
    let cpu_share = match (rate.cpu_basis, rate.window_ns, rate.vcpu_seconds) {
        (Some(CpuBasis::HandledWithHalts), _, Some(s)) if s > 0.0 => {
            spent.map(|t| t as f64 / 1e9 / s)
        }
        (Some(_), Some(w), _) if w > 0 => spent.map(|t| t as f64 / w as f64 / rate.divisor()),
        (Some(_), None, _) => {
            // Printed rates only: each row's rate times its mean (or typical) cost.
            let per_s: Option<f64> = rows
                .iter()
                .map(|r| {
                    let each = r.mean_ns().unwrap_or(typical_ns(class(r)) as f64);
                    r.per_second.map(|p| p * each / 1e9)
                })
                .sum();
            per_s.map(|x| x / rate.divisor())
        }
        _ => None,
    };
    let (share, share_of) = share(ev, part, rows);
    Cost {
        exits,
        time_ns,
        estimated_ns,
        typical_ns: typical,
        per_second,
        per_vcpu_second,
        cpu_share: cpu_share.filter(|x| x.is_finite()),
        cpu_basis: cpu_share.and(rate.cpu_basis),
        share: Some(share),
        share_of: Some(share_of),
    }
}

/// The cost of events no exit row counts (tracepoint counters, halt/wake cycles): `events`
/// at `per_second` (when known), each costing `each_ns`.
pub(crate) fn of_rate(
    ev: &EvidenceSet,
    events: u64,
    per_second: Option<f64>,
    each_ns: u64,
) -> Cost {
    let rate = &ev.rate;
    let spent = events.saturating_mul(each_ns);
    let cpu_share = match (per_second, rate.cpu_basis, rate.vcpu_seconds) {
        (Some(p), _, _) => Some(p * each_ns as f64 / 1e9 / rate.divisor()),
        (None, Some(CpuBasis::HandledWithHalts), Some(s)) if s > 0.0 => {
            Some(spent as f64 / 1e9 / s)
        }
        _ => None,
    };
    Cost {
        exits: events,
        time_ns: None,
        estimated_ns: Some(spent),
        typical_ns: Some(each_ns),
        per_second,
        per_vcpu_second: rate
            .per_vcpu()
            .then(|| rate.per_vcpu_second(events, per_second))
            .flatten(),
        cpu_share,
        cpu_basis: cpu_share.and(rate.cpu_basis),
        share: None,
        share_of: None,
    }
}

/// The share of the input's exit handling `rows` explain: against the exit table when they come
/// from a breakdown table of the same input, else against their own part.
fn share(ev: &EvidenceSet, part: &Part, rows: &[&Item]) -> (f64, ShareOf) {
    if part.kind != TableKind::Vmexit
        && !part.from_counters
        && let Some(ex) = &ev.exits
    {
        let (num, whole, of) = if ex.timed && part.timed {
            let t = handled_ns(ev, rows).unwrap_or(0);
            (
                t,
                ex.totals.overhead_time_ns.unwrap_or(0),
                ShareOf::OverheadTime,
            )
        } else {
            let c = sat_sum(rows.iter().map(|r| r.count));
            (c, ex.totals.overhead_count, ShareOf::OverheadExits)
        };
        if whole > 0 {
            return (ratio(num, whole).min(1.0), of);
        }
    }
    part.share_of(rows)
}
