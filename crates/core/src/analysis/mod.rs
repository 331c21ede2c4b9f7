//! Analysis: turning profiles into what users read. [`report`] groups and ranks one input's
//! rows with idle kept apart from overhead; [`compare`] aligns several inputs by key and says
//! what changed. Both produce plain data that the renderers print.

pub(crate) mod compare;
pub(crate) mod distribution;
pub(crate) mod filter;
pub(crate) mod guest_code;
pub(crate) mod inputs;
pub(crate) mod report;
mod report_table;
pub(crate) mod sched;
pub(crate) mod stretch;
mod totals;

pub use totals::Totals;

use crate::decode::{ExitClass, Isa, exit_reason};
use crate::profile::Key;

// What other crates use of this area (docs/development.md, "Public API").
pub use compare::{Comparison, build as compare};
pub use filter::{Filter, apply as apply_filter};
pub use guest_code::{
    CodeRow, GuestCode, MapUsed, Offset, ReasonCode, Site, Symbols, attribute as guest_code,
};
pub use report::{By, Options as ReportOptions, Report, TimelineInput, build as report};
pub use sched::{SchedSummary, VmSched, summarize as summarize_sched};
pub use stretch::{
    Layer, StretchReport, Verdict as StretchVerdict, analyse as stretch, read_layers,
};

/// The class of an exit key under `isa` (None for non-exit keys or unknown names).
pub fn exit_class(key: &Key, isa: Option<Isa>) -> Option<ExitClass> {
    let Key::Exit { name, code } = key else {
        return None;
    };
    let by_code = code
        .zip(isa)
        .and_then(|(c, i)| exit_reason::lookup_code(i, c));
    by_code
        .or_else(|| exit_reason::lookup_name(isa, name))
        .map(|info| info.class)
}

/// Whether a key is the guest waiting (HLT, MWAIT, idle-halt): idle, not overhead.
pub fn is_idle(key: &Key, isa: Option<Isa>) -> bool {
    exit_class(key, isa) == Some(ExitClass::Idle)
}
