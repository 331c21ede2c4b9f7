//! Renderers: print what analysis computed, as aligned text (with optional colour) or JSON.
//! They never compute: every share, total and delta comes ready from [`crate::analysis`].

pub mod compare_text;
pub mod diagnose_numbers;
pub mod diagnose_text;
pub mod findings_md;
pub mod format;
pub mod lab_text;
pub mod lint_text;
pub mod model_text;
pub mod report_text;
pub mod stretch_text;
mod style;
pub mod top_text;

pub use style::Style;

/// Pretty JSON of any analysis result.
pub fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialise: {e}\"}}"))
}
