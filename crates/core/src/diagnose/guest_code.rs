//! Guest code as evidence: under each exit reason a finding counts, the guest functions most
//! of those exits came from (`--guest-symbols`; see [`crate::analysis::guest_code`]). Context,
//! never cost: they say where in the guest to look, not how much it costs.

use super::model::{Fact, Finding};
use super::words;
use crate::analysis::guest_code::{self, GuestCode, Symbols};
use crate::profile::{Profile, TableKind};

/// The most guest-code lines under one exit reason.
const LINES: usize = 3;
/// A line below this share of the reason's exits is left out (the first is always shown).
const MIN_SHARE: f64 = 0.05;

/// The attribution of `profile`, when symbols were given, the offset settled and some exit
/// carried a RIP.
pub fn of(profile: &Profile, symbols: &Symbols) -> Option<GuestCode> {
    symbols.map.as_ref()?;
    let code = guest_code::attribute(profile, symbols)?;
    code.symbols.as_ref()?.offset.value()?;
    Some(code)
}

/// Adds the guest-code lines under every exit-reason row of `found`; true when any was added.
pub fn add(found: &mut [Finding], code: &GuestCode) -> bool {
    let mut added = false;
    for f in found.iter_mut() {
        let mut out: Vec<Fact> = Vec::with_capacity(f.evidence.len());
        for e in f.evidence.drain(..) {
            let reason = (e.table == TableKind::Vmexit && e.explains)
                .then(|| code.reasons.iter().find(|r| r.reason == e.key))
                .flatten();
            out.push(e);
            let Some(reason) = reason else { continue };
            for (i, row) in reason.code.iter().take(LINES).enumerate() {
                if i > 0 && row.share < MIN_SHARE {
                    break;
                }
                let mut fact = Fact::said(
                    TableKind::GuestRip.as_str(),
                    row.name(),
                    words::guest_code::line(reason, row),
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
