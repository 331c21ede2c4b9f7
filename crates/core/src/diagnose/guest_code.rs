//! Guest code as evidence: under each exit reason a finding counts, the guest functions most
//! of those exits came from (`--guest-symbols`; see [`crate::analysis::guest_code`]). A port,
//! MSR or MMIO row gets the lines of the exit reason that carries its accesses (IO, MSR, MMIO
//! or nested-page faults), said to be of that reason's exits, not of the row's. Context, never
//! cost: they say where in the guest to look, not how much it costs.

use super::model::{Fact, Finding};
use super::words;
use crate::analysis::guest_code::{self, GuestCode, ReasonCode, Symbols};
use crate::decode::{ExitClass, Isa, exit_reason};
use crate::profile::{Profile, TableKind};

/// The most guest-code lines under one exit reason.
const LINES: usize = 3;
/// A line below this share of the reason's exits is left out (the first is always shown).
const MIN_SHARE: f64 = 0.05;

/// Joins the guest code of `profile` (input `name`) with `found`, and returns the notes that
/// say what it rests on: the map, the offset, what resolved — or that no exit had a RIP.
pub(super) fn join(
    found: &mut [Finding],
    profile: &Profile,
    symbols: &Symbols,
    name: &str,
) -> Vec<String> {
    let Some(code) = guest_code::attribute(profile, symbols) else {
        return vec![words::guest_code::no_rips(name)];
    };
    let settled = code
        .symbols
        .as_ref()
        .is_some_and(|m| m.offset.value().is_some());
    if settled {
        add(found, &code, profile.origin.isa);
    }
    words::guest_code::notes(name, &code)
}

/// Adds the guest-code lines under the exit-reason rows (and port, MSR, MMIO rows) of `found`;
/// true when any was added.
pub(super) fn add(found: &mut [Finding], code: &GuestCode, isa: Option<Isa>) -> bool {
    let mut added = false;
    for f in found.iter_mut() {
        let mut done: Vec<&str> = Vec::new();
        let mut out: Vec<Fact> = Vec::with_capacity(f.evidence.len());
        for e in f.evidence.drain(..) {
            let (reason, of_row) = match reason_of(&e, code, isa) {
                Some((r, of_row)) if !done.contains(&r.reason.as_str()) => (Some(r), of_row),
                _ => (None, false),
            };
            out.push(e);
            let Some(reason) = reason else { continue };
            done.push(&reason.reason);
            for (i, row) in reason.code.iter().take(LINES).enumerate() {
                if i > 0 && row.share < MIN_SHARE {
                    break;
                }
                let mut fact = Fact::said(
                    TableKind::GuestRip.as_str(),
                    row.name(),
                    words::guest_code::line(reason, row, of_row),
                );
                fact.count = row.count;
                fact.count_share = Some(row.share);
                out.push(fact);
                added = true;
            }
        }
        f.evidence = out;
    }
    added
}

/// The exit reason whose guest code explains fact `e`: its own (an exit row the finding
/// counts), or the one carrying a port, MSR or MMIO row (`true`: the lines are of all that
/// reason's exits, not of this row's alone).
fn reason_of<'a>(
    e: &Fact,
    code: &'a GuestCode,
    isa: Option<Isa>,
) -> Option<(&'a ReasonCode, bool)> {
    if !e.explains {
        return None;
    }
    let class = |r: &ReasonCode| exit_reason::lookup_name(isa, &r.reason).map(|i| i.class);
    let of_class = |c: ExitClass| code.reasons.iter().find(|r| class(r) == Some(c));
    match e.table {
        TableKind::Vmexit => code
            .reasons
            .iter()
            .find(|r| r.reason == e.key)
            .map(|r| (r, false)),
        TableKind::Ioport => of_class(ExitClass::Io).map(|r| (r, true)),
        TableKind::Msr => {
            // VMX tells writes from reads; SVM has one `msr` exit for both.
            let dir = match e.access {
                Some("write") => "WRITE",
                Some("read") => "READ",
                _ => "",
            };
            let msr = || {
                code.reasons
                    .iter()
                    .filter(|r| class(r) == Some(ExitClass::Msr))
            };
            msr()
                .find(|r| !dir.is_empty() && r.reason.to_ascii_uppercase().contains(dir))
                .or_else(|| msr().next())
                .map(|r| (r, true))
        }
        TableKind::Mmio => of_class(ExitClass::Mmio)
            .or_else(|| of_class(ExitClass::Mmu))
            .map(|r| (r, true)),
        _ => None,
    }
}
