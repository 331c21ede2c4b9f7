//! Analysis: turning profiles into what users read. [`report`] groups and ranks one input's
//! rows with idle kept apart from overhead; [`compare`] aligns several inputs by key and says
//! what changed. Both produce plain data that the renderers print.

pub mod compare;
pub(crate) mod distribution;
pub mod filter;
pub mod guest_code;
pub(crate) mod inputs;
pub mod report;
pub mod sched;
pub mod stretch;
mod totals;

pub use totals::Totals;

use crate::decode::{ExitClass, Isa, exit_reason};
use crate::profile::Key;

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
