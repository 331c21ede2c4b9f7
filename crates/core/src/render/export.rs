//! One export path: every command's result is shown through [`Export`], as text (with optional
//! colour), as its versioned JSON, or as a self-contained HTML page. The command computes the
//! result first; these only lay it out, so the three forms always say the same thing.

use serde::Serialize;

use super::{Style, compare_text, diagnose_text, html, lab_text, lint_text, model_text};
use super::{counters_text, report_text, stretch_text, top_text};
use crate::analysis::compare::Comparison;
use crate::analysis::report::Report;
use crate::analysis::stretch::StretchReport;
use crate::diagnose::Diagnosis;
use crate::lint::LintReport;
use crate::measure::{ExitCostReport, LabReport};
use crate::model::checked::Checked;
use crate::model::overcommit::Overcommit;

/// A computed result in the forms a user can ask for.
pub trait Export {
    /// The versioned JSON document (`--json`), pretty-printed, without a final newline.
    fn json(&self) -> String;
    /// The text for a terminal or a pipe; colour codes are stripped by the printer when the
    /// output is not a terminal or `NO_COLOR` is set.
    fn text(&self, style: &Style) -> String;
    /// The HTML page (`--html FILE`); `None` for results that have none.
    fn html(&self) -> Option<Result<String, html::Error>> {
        None
    }
}

/// Pretty JSON of any serialisable result (what [`Export::json`] prints).
pub fn json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialise: {e}\"}}"))
}

impl Export for Report {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        report_text::render(self, style)
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::report(self))
    }
}

impl Export for Comparison {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        compare_text::render(self, style)
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::compare(self))
    }
}

impl Export for crate::counters::Report {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        counters_text::render(self, style)
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::counters(self))
    }
}

impl Export for Diagnosis {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        diagnose_text::render(self, style)
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::diagnose(self))
    }
}

impl Export for ExitCostReport {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        lab_text::exitcost(self, style)
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::exitcost(self))
    }
}

impl Export for LabReport {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        lab_text::lab(self, style)
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::lab(self, None))
    }
}

/// The bundled lab recording shown where nothing can be measured: the report with a banner
/// saying why and whose numbers they are (its JSON is the report's, `"measured": false`).
pub struct LabRecording<'a> {
    pub report: &'a LabReport,
    /// Why nothing was measured (e.g. "--offline was given").
    pub why: &'a str,
}

impl Export for LabRecording<'_> {
    fn json(&self) -> String {
        json(self.report)
    }
    fn text(&self, style: &Style) -> String {
        let mut text = lab_text::recording_banner(self.report, self.why, style);
        text.push_str(&lab_text::lab(self.report, style));
        text
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::lab(self.report, Some(self.why)))
    }
}

impl Export for StretchReport {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        stretch_text::render(self, style)
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::stretch(self))
    }
}

impl Export for LintReport {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        lint_text::render(self, style)
    }
    fn html(&self) -> Option<Result<String, html::Error>> {
        Some(html::lint(self))
    }
}

impl Export for Overcommit {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        model_text::overcommit(self, style)
    }
}

impl Export for Checked {
    fn json(&self) -> String {
        json(self)
    }
    fn text(&self, style: &Style) -> String {
        model_text::checked(self, style)
    }
}

/// One refresh of `top`: the view and how many reasons per VM the screen shows. Its JSON is
/// one line per interval (a stream a script reads line by line).
pub struct TopScreen<'a> {
    pub view: &'a top_text::TopView,
    pub rows: usize,
}

impl Export for TopScreen<'_> {
    fn json(&self) -> String {
        serde_json::to_string(self.view)
            .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialise: {e}\"}}"))
    }
    fn text(&self, style: &Style) -> String {
        top_text::render(self.view, style, self.rows)
    }
}
