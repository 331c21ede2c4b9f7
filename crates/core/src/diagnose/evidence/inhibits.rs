//! APICv/AVIC inhibits by reason: the `apicv_inhibit` rows (sets and clears, and the time a
//! reason stayed set when the trace is timed) gathered per reason, and whether each one stuck
//! or toggled.

use crate::decode::apicv_inhibit::{self, Inhibit};
use crate::profile::{Table, TableKind};

/// A reason cleared at least this many times toggles: KVM sets and clears it around short
/// events (IRQ windows, nested runs) by design. Fewer, and still set at the end, it stuck.
/// Three, not two: a reboot clears and sets a sticky reason once (APIC_ID_MODIFIED, PIT_REINJ
/// when the VMM resets the PIT), and a second reset can happen in a long trace.
pub(crate) const TOGGLE_CLEARS: u64 = 3;

/// How one reason behaved over the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Set at the end of the trace (still in the last mask, or set more often than cleared),
    /// and not toggling.
    Sticky,
    /// Set and cleared again and again.
    Toggling,
    /// Set and cleared once or twice, not set at the end: it came and went.
    Passing,
    /// Only clears (the trace began while it was set).
    Cleared,
}

/// One reason's changes in the input.
#[derive(Debug, Clone, PartialEq)]
pub struct InhibitSeen {
    /// The reason's number as printed.
    pub number: u32,
    /// The reason when the line or the era says it; else every name `number` can be.
    pub reasons: Vec<Inhibit>,
    pub sets: u64,
    pub clears: u64,
    /// Still set at the end of the trace (the last mask has it).
    pub held: bool,
    /// The mean time the reason stayed set before a clear, when timed.
    pub held_mean_ns: Option<f64>,
    /// The sum of those times.
    pub held_total_ns: Option<u64>,
}

impl InhibitSeen {
    /// The reason when one name is certain.
    pub fn reason(&self) -> Option<Inhibit> {
        match self.reasons.as_slice() {
            [r] => Some(*r),
            _ => None,
        }
    }

    pub fn seen(&self) -> Seen {
        if self.clears >= TOGGLE_CLEARS && self.sets >= TOGGLE_CLEARS - 1 {
            Seen::Toggling
        } else if self.held || self.sets > self.clears {
            Seen::Sticky
        } else if self.sets == 0 {
            Seen::Cleared
        } else {
            Seen::Passing
        }
    }

    /// `PIT_REINJ`, or `reason 4 (PIT_REINJ, APIC_ID_MODIFIED or PHYSICAL_ID_ALIASED by
    /// kernel version)`.
    pub fn label(&self) -> String {
        match self.reason() {
            Some(r) => r.name().to_string(),
            None if self.reasons.is_empty() => format!("reason {} (unknown)", self.number),
            None => format!(
                "reason {} ({}, by kernel version)",
                self.number,
                self.reasons
                    .iter()
                    .map(|r| r.name())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        }
    }
}

/// The reasons of `tables`' `apicv_inhibit` rows, most sets first.
pub(crate) fn gather(tables: &[&Table]) -> Vec<InhibitSeen> {
    let mut out: Vec<InhibitSeen> = Vec::new();
    for t in tables.iter().filter(|t| t.kind == TableKind::ApicvInhibit) {
        for r in &t.rows {
            let Some(c) = apicv_inhibit::parse(&r.key.key_text()) else {
                continue;
            };
            let reasons = c.reasons();
            let i = match out
                .iter()
                .position(|s| s.number == c.number && s.reasons == reasons)
            {
                Some(i) => i,
                None => {
                    out.push(InhibitSeen {
                        number: c.number,
                        reasons,
                        sets: 0,
                        clears: 0,
                        held: false,
                        held_mean_ns: None,
                        held_total_ns: None,
                    });
                    out.len() - 1
                }
            };
            let s = &mut out[i];
            if c.held {
                s.held = true;
            } else if c.set {
                s.sets = s.sets.saturating_add(r.count);
            } else {
                s.clears = s.clears.saturating_add(r.count);
                if let Some(total) = r.time.total_ns {
                    let t = s.held_total_ns.unwrap_or(0).saturating_add(total);
                    s.held_total_ns = Some(t);
                }
            }
        }
    }
    // A cleared row keeps its name only when a set named it: fold unnamed clears into the
    // one named reason of the same number.
    let mut i = 0;
    while i < out.len() {
        let named_twin = (out[i].reason().is_none())
            .then(|| {
                let n = out[i].number;
                let cands = out[i].reasons.clone();
                out.iter()
                    .position(|s| s.number == n && s.reason().is_some_and(|r| cands.contains(&r)))
            })
            .flatten();
        match named_twin {
            Some(j) if j != i => {
                let s = out.remove(i);
                let j = if j > i { j - 1 } else { j };
                let t = &mut out[j];
                t.sets = t.sets.saturating_add(s.sets);
                t.clears = t.clears.saturating_add(s.clears);
                t.held |= s.held;
                t.held_total_ns = match (t.held_total_ns, s.held_total_ns) {
                    (Some(a), Some(b)) => Some(a.saturating_add(b)),
                    (a, b) => a.or(b),
                };
            }
            _ => i += 1,
        }
    }
    for s in &mut out {
        s.held_mean_ns = s
            .held_total_ns
            .filter(|_| s.clears > 0)
            .map(|t| t as f64 / s.clears as f64);
    }
    out.sort_by(|a, b| {
        b.sets
            .cmp(&a.sets)
            .then(b.clears.cmp(&a.clears))
            .then(a.number.cmp(&b.number))
    });
    out
}
