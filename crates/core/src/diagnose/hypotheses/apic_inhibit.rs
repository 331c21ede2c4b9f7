//! The inhibit reasons `kvm_apicv_inhibit_changed` names, read for `apic.apicv-inhibited`:
//! which reason leads (a sticky one with a cause to remove), and whether only benign toggling
//! reasons (IRQWIN, BLOCKIRQ) were traced — `apic.apicv-inhibit-toggling`, context only.

use crate::decode::apicv_inhibit::Inhibit;
use crate::diagnose::evidence::inhibits::{InhibitSeen, Seen};
use crate::diagnose::model::Fact;

/// Reasons KVM sets and clears by design: waiting for an interrupt window (AVIC), and a
/// debugger blocking interrupts. Nothing to remove.
pub(crate) fn benign(r: Inhibit) -> bool {
    matches!(r, Inhibit::Irqwin | Inhibit::Blockirq)
}

/// Whether every name `s` can be is benign.
fn all_benign(s: &InhibitSeen) -> bool {
    !s.reasons.is_empty() && s.reasons.iter().all(|&r| benign(r))
}

/// The reason to act on: the first that is not benign, a sticky one before others (the list
/// is most sets first).
pub(crate) fn lead(inhibits: &[InhibitSeen]) -> Option<&InhibitSeen> {
    let causes = || inhibits.iter().filter(|s| !all_benign(s));
    causes()
        .find(|s| s.seen() == Seen::Sticky)
        .or_else(|| causes().next())
}

/// Only benign reasons were traced (and at least one).
pub(crate) fn toggling_only(inhibits: &[InhibitSeen]) -> bool {
    !inhibits.is_empty() && inhibits.iter().all(all_benign)
}

/// One fact per reason: its sets and clears, how it behaved, and how long it stayed set.
pub(crate) fn facts(inhibits: &[InhibitSeen]) -> Vec<Fact> {
    inhibits
        .iter()
        .map(|s| {
            let seen = match s.seen() {
                Seen::Sticky if s.sets == 0 => {
                    "sticky: set before the trace and still set at its end"
                }
                Seen::Sticky => "sticky: set and kept",
                Seen::Toggling => "toggling: set and cleared again and again",
                Seen::Passing => "set and cleared",
                Seen::Cleared => "only cleared (set before the trace began)",
            };
            let held = s
                .held_mean_ns
                .map(|ns| format!(", set {} on average before each clear", fmt_ns(ns)))
                .unwrap_or_default();
            let mut f = Fact::said(
                "events",
                "kvm_apicv_inhibit_changed",
                format!(
                    "inhibit {}: {} set, {} cleared — {seen}{held}",
                    s.label(),
                    s.sets,
                    s.clears
                ),
            );
            f.count = s.sets.saturating_add(s.clears);
            f
        })
        .collect()
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.1} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}
