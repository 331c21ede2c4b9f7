//! `mmio.*`: guest accesses to emulated MMIO that are neither the HPET (`timer.*`) nor the local
//! APIC (`apic.*`): a device region named from the address, or — from EPT_MISCONFIG exits or
//! kvm_stat's `mmio_exits` alone — emulated MMIO as such. On a Windows guest without Hyper-V
//! timers those exits are most likely the HPET; both readings are proposed, with the MMIO
//! report that tells them apart.

use super::TimerRule;
use super::effect;
use super::{Ctx, Hint, Hypothesis, rules, timer};
use crate::config::HvFlag;
use crate::decode::{ExitClass, mmio};
use crate::diagnose::evidence::Item;
use crate::diagnose::model::{Confidence, Fact, Severity};
use crate::profile::Key;

rules! {
    /// The rules of `mmio.*`.
    pub enum MmioRule in Mmio {
        EmulatedDevice {
            id: "mmio.emulated-device",
            tag: "mmio.emulated-device",
            role: Problem,
            thresholds: &[],
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    if let Some(m) = &ev.mmio {
        let mut rows: Vec<&Item> = ctx.free_rows(m.rows.iter().collect());
        rows.sort_by_key(|r| std::cmp::Reverse(r.time_ns.unwrap_or(r.count)));
        // One hypothesis per device region.
        let mut groups: Vec<(String, Vec<&Item>)> = Vec::new();
        for r in rows {
            let dev = device(r);
            match groups.iter_mut().find(|(d, _)| *d == dev) {
                Some((_, v)) => v.push(r),
                None => groups.push((dev, vec![r])),
            }
        }
        for (_, rows) in groups {
            let h = Hypothesis::new(MmioRule::EmulatedDevice, ev, m, &rows).max(Severity::High);
            ctx.push(h.removes(effect::REPLACED));
        }
        return;
    }
    aggregate(ctx);
}

/// The device an address belongs to, from its decoded name (the part before the register).
fn device(r: &Item) -> String {
    match (&r.name, &r.key) {
        (Some(n), _) => n.split([' ', ':']).next().unwrap_or(n).to_string(),
        (None, Key::Mmio { gpa, .. }) if mmio::is_ioapic(*gpa) => "ioapic".to_string(),
        (None, Key::Mmio { gpa, .. }) => format!("{:#x}", gpa & !0xfff),
        _ => "mmio".to_string(),
    }
}

/// MMIO exits without addresses.
fn aggregate(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let mut rows: Vec<&Item> = ctx
        .free_rows(ex.class(ExitClass::Mmio))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    // On SVM the MMIO accesses are among the NPFs: as many as the counters say reached the VMM.
    let of_faults = npfs_that_are_mmio(ctx, ex);
    if rows.is_empty() {
        rows.extend(of_faults.iter());
    }
    if rows.is_empty() {
        return;
    }
    let enlightened = ev.enlightened();
    let stimer = ev.flag(HvFlag::Stimer);
    let hpet = ev.windows() && enlightened != Some(true) && stimer != Some(true);
    let mut absent: Vec<Fact> = Vec::new();
    if enlightened == Some(false) && ev.config.is_none() && !ex.from_counters {
        absent.push(ex.absent("VMCALL", "absent: no Hyper-V hypercalls"));
        absent.push(ex.absent("MSR_WRITE", "absent: no synthetic-MSR or x2APIC writes"));
    }
    let h = if hpet {
        timer::hpet(ctx, ex, &rows)
            .confidence(if enlightened == Some(false) {
                Confidence::Likely
            } else {
                Confidence::Possible
            })
            .support(absent)
            .rival(MmioRule::EmulatedDevice, Confidence::Possible)
    } else {
        let mut h = Hypothesis::new(MmioRule::EmulatedDevice, ev, ex, &rows)
            .confidence(Confidence::Possible)
            .removes(effect::REPLACED);
        if !ev.linux() && stimer != Some(true) {
            h = h.rival(TimerRule::HpetMmio, Confidence::Possible);
        }
        h
    };
    ctx.push(
        h.hint(Hint::Aggregate)
            .hint_if(enlightened == Some(false), Hint::NoEnlightenment),
    );
}

/// The NPF rows, cut to the MMIO accesses the input's counters count (kvm_stat's
/// `kvm_userspace_exit(MMIO)`, debugfs's `mmio_exits`): an SVM host reports each emulated MMIO
/// access as a nested page fault, and without an MMIO table these counters are what tell them
/// from memory being faulted in (`mmu::ept`, which leaves them to this finding).
fn npfs_that_are_mmio(ctx: &Ctx<'_>, ex: &crate::diagnose::evidence::Part) -> Vec<Item> {
    let faults = ctx.free_rows(ex.named(&["npf", "kvm_page_fault"]));
    super::mmu::mmio_in_faults(ctx.ev, faults)
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| Item {
            class: Some(ExitClass::Mmio),
            ..r.scaled(n)
        })
        .collect()
}
