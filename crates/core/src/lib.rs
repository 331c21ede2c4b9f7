//! virtlens-core: everything in virtlens that needs neither root nor unsafe code.
//!
//! The folders follow the pipeline (docs/development.md has the layout):
//! [`sources`] read files into a [`profile::Profile`] (the one data model), [`decode`] names
//! exit reasons, ports, addresses and MSRs for everyone, [`analysis`] turns profiles into
//! reports and comparisons, and [`render`] prints those as aligned text or JSON.
//! Sources never print, renderers never compute, and nothing here panics on bad input.

pub mod analysis;
pub mod config;
pub mod counters;
pub mod decode;
pub mod diagnose;
pub mod error;
pub mod events;
pub mod facts;
pub mod lint;
pub mod measure;
pub mod model;
pub mod profile;
pub mod render;
pub mod severity;
pub mod sources;

pub use error::{Error, Result};

/// The version of virtlens that wrote a document; goes into every JSON output.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
