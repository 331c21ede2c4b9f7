//! `unknown.*`: exits virtlens cannot name — codes no exit table knows, rows the tool itself
//! printed as `UNKNOWN`, names of another architecture — kept and shown, with what they may be;
//! and a guest that triple-faulted (a crash whose cause the exits cannot tell).

use super::effect;
use super::{Ctx, Grading, Hint, Hypothesis, rules};
use crate::decode::Isa;
use crate::diagnose::evidence::{Item, known_exit};
use crate::diagnose::model::{Confidence, Severity};
use crate::profile::Key;

rules! {
    /// The rules of `unknown.*`.
    pub enum UnknownRule in Unknown {
        ExitCodes {
            id: "unknown.exit-codes",
            tag: "unknown-exit",
            role: Problem,
            thresholds: &[],
        },
        TripleFault {
            id: "unknown.triple-fault",
            tag: "guest.crash",
            role: Problem,
            thresholds: &[],
        },
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    triple(ctx);
    let ev = ctx.ev;
    let Some(ex) = ctx.exits().filter(|p| !p.from_counters) else {
        return;
    };
    let foreign: Vec<&Item> = ex
        .rows
        .iter()
        .filter(|r| matches!(r.key, Key::Exit { .. }) && !known_exit(&r.key, ev.isa()))
        .collect();
    let unnamed: Vec<&Item> = foreign
        .iter()
        .copied()
        .filter(|r| r.exit_name().is_some_and(|n| n.starts_with("UNKNOWN")))
        .collect();
    let is_riscv = ev.isa() == Some(Isa::Riscv);
    let rows = if unnamed.is_empty() {
        &foreign
    } else {
        &unnamed
    };
    if rows.is_empty() {
        return;
    }
    let mut h = Hypothesis::new(UnknownRule::ExitCodes, ev, ex, rows)
        .max(Severity::Low)
        .hint_if(is_riscv, Hint::RiscV)
        .hint_if(!unnamed.is_empty(), Hint::Unnamed)
        .removes(effect::NOTHING);
    if !unnamed.is_empty() && is_riscv {
        h = h.confidence(Confidence::Likely);
    }
    ctx.push(h);
}

/// A triple fault: the guest crashed; the exits say that, not why.
fn triple(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<&Item> = ex
        .named(&["TRIPLE_FAULT", "shutdown"])
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if rows.is_empty() {
        return;
    }
    let h = Hypothesis::new(UnknownRule::TripleFault, ev, ex, &rows)
        .grading(Grading::Fixed(Severity::Medium))
        .removes(effect::NOTHING);
    ctx.push(h);
}
