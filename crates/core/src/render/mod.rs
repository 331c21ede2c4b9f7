//! Renderers: show what analysis computed, as aligned text (with optional colour), JSON or an
//! HTML page, all through [`Export`]. They never compute: every share, total and delta comes
//! ready from [`crate::analysis`].

pub(crate) mod compare_text;
pub(crate) mod counters_text;
pub mod diagnose_numbers;
pub mod diagnose_text;
mod export;
pub mod findings_md;
pub mod format;
pub mod html;
pub(crate) mod io_path_text;
mod lab_answer;
pub(crate) mod lab_text;
pub mod lint_text;
pub(crate) mod model_text;
pub(crate) mod report_text;
pub(crate) mod stretch_text;
mod style;
pub mod top_text;

pub use export::{Export, LabRecording, TopScreen, json};
pub use style::Style;
