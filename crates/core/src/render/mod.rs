//! Renderers: show what analysis computed, as aligned text (with optional colour), JSON or an
//! HTML page, all through [`Export`]. They never compute: every share, total and delta comes
//! ready from [`crate::analysis`].

pub(crate) mod compare_text;
pub(crate) mod counters_text;
pub(crate) mod diagnose_numbers;
pub(crate) mod diagnose_text;
mod export;
pub(crate) mod findings_md;
pub(crate) mod format;
pub(crate) mod html;
pub(crate) mod input_facts;
pub(crate) mod io_path_text;
mod lab_answer;
pub(crate) mod lab_text;
pub(crate) mod lint_text;
pub(crate) mod model_text;
pub(crate) mod report_text;
pub(crate) mod stretch_text;
mod style;
pub(crate) mod top_text;

pub use export::{Export, LabRecording, TopScreen, json};
pub use style::Style;

// What other crates use of this area (docs/development.md, "Public API").
pub use findings_md::{
    REGENERATE as FINDINGS_REGENERATE, entry_page as finding_page, render as findings_md,
    rule_page as lint_rule_page,
};
pub use format::{bytes, count, duration, rate};
pub use html::Error as HtmlError;
pub use lint_text::render as lint_text;
pub use top_text::{SCHEMA as TOP_SCHEMA, TopCounter, TopRow, TopView, TopVm};
