//! `msr.*` and the reading of MSR_WRITE exits without MSR rows: the same writes are a timer
//! re-arming through TSC_DEADLINE (halts paired with the writes, preemption-timer exits) or IPIs
//! through the x2APIC ICR (interrupt exits on the receiving side) — both are
//! proposed, the likelier one leading, with the MSR report that tells them apart. MSR rows no
//! earlier family explained are named: Hyper-V synthetic MSRs, and any other hot MSR.

use super::effect;
use super::rules;
use super::{ApicRule, TimerRule};
use super::{Ctx, Hint, Hypothesis, Threshold, apic_ipi as ipi, timer_tick as tick};
use crate::diagnose::evidence::sat_sum;
use crate::diagnose::evidence::{Item, is_hyperv_msr};
use crate::diagnose::model::{Confidence, Fact, Severity};

/// An MSR row is named on its own from this share of the MSR accesses up.
pub(crate) const HOT_MSR_SHARE: f64 = 0.03;

rules! {
    /// The rules of `msr.*`.
    pub enum MsrRule in Msr {
        HypervSynthetic {
            id: "msr.hyperv-synthetic",
            tag: "msr.hyperv-synthetic",
            role: Problem,
            thresholds: &[],
        },
        HotMsr {
            id: "msr.hot-msr",
            tag: "msr.other",
            role: Problem,
            thresholds: &[Threshold {
                name: "share of MSR accesses to be named",
                value: HOT_MSR_SHARE,
                unit: "share",
            }],
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    aggregate(ctx);
    hot(ctx);
}

/// MSR_WRITE exits (or kvm_msr counts standing in for them) without MSR rows.
fn aggregate(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    if ev.msrs.is_some() {
        return;
    }
    let Some(ex) = ctx.exits() else {
        return;
    };
    let writes: Vec<&Item> = ctx
        .free_rows(ex.named(&["MSR_WRITE", "msr", "kvm_msr"]))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if writes.is_empty() {
        return;
    }
    let n = sat_sum(writes.iter().map(|r| r.count));
    let count = |names: &[&str]| ex.count_of(names);
    let halts = count(&["HLT", "hlt", "halt_exits"]);
    let preemption = count(&["PREEMPTION_TIMER"]);
    let kicks = count(&["EXTERNAL_INTERRUPT", "interrupt", "irq_exits"]);
    let paired = halts > 0 && halts.saturating_mul(3) >= n;
    // What speaks for each reading: re-arms pair with halts and fire through the preemption
    // timer; IPIs kick the receiving vCPUs (and wake halted ones). A tie leads with the timer.
    let deadline = u8::from(paired) + u8::from(preemption > 0);
    let icr = u8::from(kicks.saturating_mul(2) >= n) + u8::from(paired);
    let facts = |names: &[&str], note: &str| -> Vec<Fact> {
        ex.named(names)
            .into_iter()
            .filter(|r| r.count > 0)
            .map(|r| ex.fact(r).note(note))
            .collect()
    };
    let lead_deadline = deadline >= icr;
    let sure = if deadline.abs_diff(icr) >= 2 {
        Confidence::Likely
    } else {
        Confidence::Possible
    };
    let h = if lead_deadline {
        Hypothesis::new(TimerRule::TscDeadlineRearm, ev, ex, &writes)
            .grading(tick::rearm_grading())
            .support(facts(
                &["HLT", "hlt", "halt_exits"],
                "halts around the writes: re-arming on idle entry and exit",
            ))
            .support(facts(
                &["PREEMPTION_TIMER"],
                "the deadline firing through the VMX preemption timer",
            ))
            .rival(ApicRule::IpiStorm, Confidence::Possible)
    } else {
        Hypothesis::new(ApicRule::IpiStorm, ev, ex, &writes)
            .grading(ipi::ipi_grading(Severity::Medium))
            .support(facts(
                &["EXTERNAL_INTERRUPT", "interrupt", "irq_exits"],
                "the receiving side: IPIs kick running vCPUs",
            ))
            .rival(TimerRule::TscDeadlineRearm, Confidence::Possible)
    };
    let mut h = h
        .confidence(sure)
        .hint(Hint::Aggregate)
        .hint_if(paired, Hint::HaltsPaired)
        .removes(effect::LARGELY);
    if ev.windows() {
        h = h.rival(ApicRule::ApicvInhibitedSynic, Confidence::Possible);
    }
    ctx.push(h);
}

/// MSR rows no earlier rule explained: Hyper-V synthetic MSRs together, others one by one.
fn hot(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(m) = &ev.msrs else {
        return;
    };
    let free = ctx.free_rows(m.rows.iter().collect());
    let hv: Vec<&Item> = free
        .iter()
        .copied()
        .filter(|r| r.code().is_some_and(is_hyperv_msr))
        .collect();
    if !hv.is_empty() && m.share_of(&hv).0 >= HOT_MSR_SHARE {
        let h = Hypothesis::new(MsrRule::HypervSynthetic, ev, m, &hv)
            .max(Severity::Medium)
            .hint(Hint::HypervMsr)
            .removes(effect::HALF);
        ctx.push(h);
    }
    let mut rest: Vec<&Item> = free
        .into_iter()
        .filter(|r| !r.code().is_some_and(is_hyperv_msr))
        .filter(|r| m.share_of(&[r]).0 >= HOT_MSR_SHARE)
        .collect();
    rest.sort_by_key(|r| std::cmp::Reverse(r.time_ns.unwrap_or(r.count)));
    for r in rest {
        let h = Hypothesis::new(MsrRule::HotMsr, ev, m, &[r])
            .max(Severity::Medium)
            .removes(effect::HALF);
        ctx.push(h);
    }
}
