//! virtlens-core: everything in virtlens that needs no root. Its one `unsafe` call maps input
//! files read-only (`sources::mapped`).
//!
//! The folders follow the pipeline (docs/development.md has the layout):
//! [`sources`] read files into a [`profile::Profile`] (the one data model), [`decode`] names
//! exit reasons, ports, addresses and MSRs for everyone, [`analysis`] turns profiles into
//! reports and comparisons, and [`render`] prints those as aligned text or JSON.
//! Sources never print, renderers never compute, and nothing here panics on bad input.

// `pub` means public API: an item other crates cannot reach is pub(crate) (docs/development.md).
#![warn(unreachable_pub)]

pub mod analysis;
pub mod config;
pub mod counters;
pub mod decode;
pub mod diagnose;
pub mod events;
pub mod lint;
pub mod measure;
pub mod model;
pub mod profile;
pub mod render;
pub mod sources;

mod error;
mod facts;
mod severity;

pub use error::{Error, Result};
pub use facts::{Backend, HostFacts, Vendor, cpu_emulator};
pub use severity::Severity;

/// The capture file (`virtlens record`'s Parquet): what virtlens-host needs to write one that
/// [`sources`] reads back: its metadata keys, the decoder of ring-buffer records into a
/// profile, and the footer a reader looks for.
pub mod capture {
    pub use crate::sources::capture::decoder::{EventTable, Hit, ProfileFeed, ThreadInfo};
    pub use crate::sources::capture::fields::{Value, ValueKind, kind as value_kind, value};
    pub use crate::sources::capture::footer::{locate as locate_footer, parse as parse_footer};
    pub use crate::sources::capture::{CAPTURE_KEY, CaptureMeta, FORMAT, PROFILE_KEY, SCHEMA};
}

/// Not API: internals that core's own integration tests (tests/) check directly, where moving
/// the test into the module would move a large file. Nothing outside crates/core may use these,
/// and nothing new goes here without a reason in docs/development.md ("Public API").
#[doc(hidden)]
pub mod testing {
    /// tests/perfmon.rs checks the per-VP metrics of a Hyper-V counter log.
    pub use crate::counters::{hv::vp_metrics, names::VP};
    /// tests/apicv_inhibit.rs walks every kernel era's reason table through diagnose.
    pub use crate::decode::apicv_inhibit::{ERAS as APICV_ERAS, Inhibit, candidates};
    /// tests/trace_text.rs maps the reason names a trace prints to the profile's keys.
    pub use crate::decode::exit_reason::{guess_isa, lookup_name};
    /// tests/diagnose_iopath.rs checks the overcommit finding offers these two fixes.
    pub use crate::diagnose::overcommit::{FEWER_VCPUS, PIN};
    /// tests/diagnose_seeds.rs checks the text of one change of a comparison.
    pub use crate::render::diagnose_numbers::change as diagnose_change;
}

/// The version of virtlens that wrote a document; goes into every JSON output.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
