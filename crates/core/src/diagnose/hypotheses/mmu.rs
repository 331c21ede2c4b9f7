//! `mmu.*`: guest memory faults — a storm where one fault is nearly every exit at a rate no
//! working guest sustains (the guest makes no progress), EPT violations / NPFs dominating the
//! cost (memory being faulted in after boot, migration or reclaim), and guest page faults the
//! host intercepts (EXCEPTION_NMI #PF, SVM `PF excp`, kvm_stat's `pf_guest` or
//! `kvm_page_fault` at a high rate), from exits or from counters alone.

use super::effect;
use super::{Ctx, Grading, Hint, Hypothesis, Threshold, cost, rules};
use crate::diagnose::evidence::{Item, ratio, rows};
use crate::diagnose::model::{Confidence, Severity};

/// The fault exits.
const FAULTS: [&str; 6] = [
    "EPT_VIOLATION",
    "npf",
    "EXCEPTION_NMI",
    "PF excp",
    "PF_EXCP",
    "kvm_page_fault",
];

/// A storm: one fault is ≥ 90% of all exits...
pub(crate) const STORM_SHARE: f64 = 0.9;
/// ...at ≥ 100,000/s: a fault every 10 µs, more than a guest faulting in fresh memory sustains
/// (the public storms ran at 330k/s and 526k/s).
pub(crate) const STORM_RATE: f64 = 100_000.0;
/// Fewer exits than this are too short a capture to call a storm certain.
pub(crate) const STORM_SURE: u64 = 1_000;

/// Intercepted guest page faults per second per vCPU: a guest with EPT/NPT takes its own
/// faults without exits, so thousands per second mean shadow paging, an intercept, or a fault
/// that does not resolve: from 1,000/s worth a look, 10,000/s medium, 50,000/s high.
pub(crate) const GUEST_PF_RATE: [f64; 3] = [1_000.0, 10_000.0, 50_000.0];

rules! {
    /// The rules of `mmu.*`.
    pub enum MmuRule in Mmu {
        FaultStorm {
            id: "mmu.fault-storm",
            tag: "mmu.page-fault-storm",
            role: Problem,
            thresholds: &[
                Threshold {
                    name: "one fault's share of all exits",
                    value: STORM_SHARE,
                    unit: "share",
                },
                Threshold {
                    name: "fault rate",
                    value: STORM_RATE,
                    unit: "/s",
                },
                Threshold {
                    name: "exits for a sure storm",
                    value: STORM_SURE as f64,
                    unit: "exits",
                },
            ],
        },
        EptViolation {
            id: "mmu.ept-violation",
            tag: "mmu.ept-violation",
            role: Problem,
            thresholds: &[Threshold {
                name: "share of NPFs left once the MMIO accesses are taken out",
                value: MIN_FAULT_SHARE,
                unit: "share",
            }],
        },
        GuestPageFaults {
            id: "mmu.guest-page-faults",
            tag: "mmu.page-fault-storm",
            role: Problem,
            thresholds: &[
                Threshold {
                    name: "guest page faults per vCPU, low",
                    value: GUEST_PF_RATE[0],
                    unit: "/s per vCPU",
                },
                Threshold {
                    name: "guest page faults per vCPU, medium",
                    value: GUEST_PF_RATE[1],
                    unit: "/s per vCPU",
                },
                Threshold {
                    name: "guest page faults per vCPU, high",
                    value: GUEST_PF_RATE[2],
                    unit: "/s per vCPU",
                },
            ],
        },
    }
}

/// `mmu.fault-storm`; runs before the other families so its rows stay its own.
pub(crate) fn storm(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    for r in ex.named(&FAULTS) {
        let share = ratio(r.count, ex.totals.count);
        // Without a rate a fault-heavy capture (early boot) cannot be told from a storm. The same
        // fault back to back is a storm even in a short excerpt: its own window says how dense.
        let rate = r.per_second.or_else(|| rows::rate(r.count, ex.window_ns));
        if share < STORM_SHARE || r.count < 10 || !rate.is_some_and(|x| x >= STORM_RATE) {
            continue;
        }
        let sure = r.count >= STORM_SURE;
        let mut h = Hypothesis::new(MmuRule::FaultStorm, ev, ex, &[r])
            .grading(Grading::Fixed(if sure {
                Severity::Critical
            } else {
                Severity::High
            }))
            .hint_if(r.is(&["npf"]), Hint::Sev)
            .removes(effect::REMOVED);
        if !sure {
            h = h.confidence(Confidence::Likely);
        }
        return ctx.push(h);
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    ept(ctx);
    guest_faults(ctx);
}

/// `mmu.ept-violation`: EPT violations / NPFs (or `pf_fixed`) as a cost — those that are not
/// emulated MMIO accesses.
fn ept(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let mut support = Vec::new();
    let faults = ctx.free_rows(ex.named(&["EPT_VIOLATION", "npf", "kvm_page_fault"]));
    let rows: Vec<Item> = mmio_in_faults(ev, faults)
        .into_iter()
        .filter(|(r, _)| r.count > 0)
        .filter_map(|(r, mmio)| {
            if mmio == 0 {
                return Some(r.clone());
            }
            support.push(ex.fact(r).context().note(format!(
                "{mmio} of these {} are emulated MMIO accesses (an MMIO access reaches KVM as \
                 a nested page fault on SVM)",
                r.count
            )));
            beyond(r, mmio)
        })
        .collect();
    let rows: Vec<&Item> = rows.iter().collect();
    if rows.is_empty() {
        return;
    }
    let h = Hypothesis::new(MmuRule::EptViolation, ev, ex, &rows)
        .max(Severity::High)
        .support(support)
        .hint_if(rows.iter().any(|r| r.is(&["npf"])), Hint::Amd)
        .removes(effect::LARGELY);
    ctx.push(h);
}

/// What is left of a fault row once MMIO accesses are taken out counts as memory being faulted
/// in only from this share of the row on: less is a remainder (a page or two touched for the
/// first time, MMIO accesses the MMIO table missed at its window's edges).
pub(crate) const MIN_FAULT_SHARE: f64 = 0.1;

/// Whether the row counts emulated MMIO accesses among its faults: SVM reports an MMIO access as
/// a nested page fault (`npf`, and the `kvm_page_fault` tracepoint fires for it); VMX has an exit
/// of its own for it (EPT_MISCONFIG), so its EPT violations are faults.
fn reports_mmio(r: &Item, isa: Option<crate::decode::Isa>) -> bool {
    r.is(&["npf"]) || (r.is(&["kvm_page_fault"]) && isa != Some(crate::decode::Isa::Vmx))
}

/// Each fault row with the emulated MMIO accesses among its events: the input's MMIO accesses
/// handed out over the rows that report MMIO as faults, in order (0 for the others).
pub(super) fn mmio_in_faults<'a>(
    ev: &crate::diagnose::evidence::EvidenceSet,
    rows: Vec<&'a Item>,
) -> Vec<(&'a Item, u64)> {
    let mut left = mmio_accesses(ev);
    rows.into_iter()
        .map(|r| {
            let n = if reports_mmio(r, ev.isa()) {
                left.min(r.count)
            } else {
                0
            };
            left -= n;
            (r, n)
        })
        .collect()
}

/// The emulated MMIO accesses the input counts: its MMIO table, else kvm_stat's counters —
/// `mmio_exits` (debugfs) or the MMIO returns to the VMM (`kvm_userspace_exit(MMIO)`; not
/// `kvm_mmio`, which fires twice for a read the VMM completes).
fn mmio_accesses(ev: &crate::diagnose::evidence::EvidenceSet) -> u64 {
    match &ev.mmio {
        Some(m) => m.totals.count,
        None => ["mmio_exits", "kvm_userspace_exit(MMIO)"]
            .iter()
            .filter_map(|n| ev.counters.get(n))
            .map(|c| c.total)
            .max()
            .unwrap_or(0),
    }
}

/// The row without `mmio` of its events; `None` when MMIO accounts for all of it but a
/// remainder ([`MIN_FAULT_SHARE`]).
fn beyond(r: &Item, mmio: u64) -> Option<Item> {
    let left = r.count.saturating_sub(mmio);
    (left as f64 >= MIN_FAULT_SHARE * r.count as f64).then(|| r.scaled(left))
}

/// `mmu.guest-page-faults`: intercepted guest #PF — exits, or kvm_stat's `pf_guest`.
fn guest_faults(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let grading = Grading::Rate {
        thresholds: GUEST_PF_RATE,
        per_vcpu: true,
        max: Severity::High,
        without_rate: Severity::Medium,
    };
    if let Some(ex) = ctx.exits().filter(|p| !p.from_counters) {
        let rows: Vec<_> = ctx
            .free_rows(ex.named(&["EXCEPTION_NMI", "PF excp", "PF_EXCP"]))
            .into_iter()
            .filter(|r| r.count > 0)
            .collect();
        if !rows.is_empty() {
            return ctx.push(
                Hypothesis::new(MmuRule::GuestPageFaults, ev, ex, &rows)
                    .grading(grading)
                    .removes(effect::REPLACED),
            );
        }
    }
    if let Some(c) = ev.counters.get("pf_guest").filter(|c| c.total > 0) {
        let facts: Vec<_> = ["pf_guest", "pf_fixed", "exits"]
            .iter()
            .filter_map(|n| ev.counters.fact(n))
            .collect();
        let h = Hypothesis::with_cost(
            MmuRule::GuestPageFaults,
            cost::of_rate(
                ev,
                c.total,
                c.rate,
                cost::typical_ns(Some(crate::decode::ExitClass::Exception)),
            ),
            facts,
        )
        .grading(grading)
        .hint(Hint::Aggregate)
        .removes(effect::REPLACED);
        ctx.push(h);
    }
}
