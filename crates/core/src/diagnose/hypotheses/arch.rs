//! `arch.*`: the exits of KVM on arm64 and RISC-V, whose causes and fixes are not x86's —
//! guest data and instruction aborts (emulated MMIO or stage-2 faults), trapped system registers,
//! and firmware calls (PSCI/SMCCC hypercalls on arm64, SBI calls on RISC-V). On these
//! architectures the x86 families (ports, MSRs, APIC, Hyper-V, x86 timers) do not run
//! ([`Family::x86_only`](crate::diagnose::rules::Family::x86_only)); halts, idle, interrupts and
//! scheduling are shared.

use super::effect;
use super::{Ctx, Hint, Hypothesis, Threshold, rules};
use crate::decode::ExitClass;
use crate::diagnose::evidence::Item;
use crate::diagnose::model::Severity;

/// The share of the exit handling (idle apart) a kind of exit must take to be a cause: the
/// same bar as an x86 exit kind that dominates ([`super::hypercall::DOMINANT`]).
pub(crate) const DOMINANT: f64 = super::hypercall::DOMINANT;

const SHARE: &[Threshold] = &[Threshold {
    name: "share of exit handling",
    value: DOMINANT,
    unit: "share",
}];

rules! {
    /// The rules of `arch.*`.
    pub enum ArchRule in Arch {
        GuestAbort {
            id: "arch.guest-abort",
            tag: "mmio.emulated-device",
            role: Problem,
            thresholds: SHARE,
        },
        SystemRegister {
            id: "arch.system-register",
            tag: "msr.trapped-register",
            role: Problem,
            thresholds: SHARE,
        },
        FirmwareCall {
            id: "arch.firmware-call",
            tag: "hypercall.storm",
            role: Problem,
            thresholds: SHARE,
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    if ctx.ev.isa().is_none_or(|isa| isa.is_x86()) {
        return;
    }
    aborts(ctx);
    dominating(
        ctx,
        ArchRule::SystemRegister,
        &[ExitClass::Msr],
        Severity::Medium,
    );
    dominating(
        ctx,
        ArchRule::FirmwareCall,
        &[ExitClass::Hypercall],
        Severity::Medium,
    );
}

/// Data and instruction aborts from the guest: emulated MMIO when the MMIO events say so,
/// stage-2 faults on memory otherwise.
fn aborts(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<&Item> = ctx
        .free_rows([ex.class(ExitClass::Mmio), ex.class(ExitClass::Mmu)].concat())
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if rows.is_empty() || ex.share_of(&rows).0 < DOMINANT {
        return;
    }
    let aborts: u64 = rows.iter().map(|r| r.count).sum();
    // KVM traces every guest abort (kvm_guest_fault on arm64, at the start of its handling) but
    // each emulated MMIO access as well (kvm_mmio: once per write, up to twice per read). When
    // kvm_mmio is under half the aborts, most aborts were faults on memory, not device accesses.
    let mostly_mmio = ev.event("kvm_mmio").map(|m| m.saturating_mul(2) >= aborts);
    ctx.push(
        Hypothesis::new(ArchRule::GuestAbort, ev, ex, &rows)
            .max(Severity::High)
            .removes(effect::LARGELY)
            .hint_if(mostly_mmio.is_none(), Hint::Aggregate)
            .hint_if(mostly_mmio == Some(false), Hint::StageTwoFaults),
    );
}

/// `id` when the exits of `classes` lead the exit handling.
fn dominating(ctx: &mut Ctx<'_>, id: ArchRule, classes: &[ExitClass], max: Severity) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<&Item> = ctx
        .free_rows(classes.iter().flat_map(|c| ex.class(*c)).collect())
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if !rows.is_empty() && ex.share_of(&rows).0 >= DOMINANT {
        ctx.push(
            Hypothesis::new(id, ev, ex, &rows)
                .max(max)
                .removes(effect::HALF),
        );
    }
}
