//! HTML pages (`--html FILE`): one self-contained document per result (inline CSS, charts as
//! inline SVG with titles, descriptions, fill patterns and a data table each, no script, a
//! Content-Security-Policy that forbids every load), built from the page model in [`page`]
//! and rendered with minijinja templates. Like the text renderers, they only lay out and
//! format what the analysis computed.

mod axis;
mod chart;
mod compare;
mod counters;
mod diagnose;
mod io_path;
mod lab;
mod lint;
mod page;
mod report;
mod stretch;
mod text;
mod timeline;

use crate::analysis::compare::Comparison;
use crate::analysis::report::{Report, ReportRow};
use crate::analysis::stretch::StretchReport;
use crate::diagnose::Diagnosis;
use crate::measure::{ExitCostReport, LabReport};

/// Why a page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A template failed to render (a defect of virtlens, never of the input).
    #[error("rendering the HTML page: {0}")]
    Template(String),
}

/// The `report` page.
pub(crate) fn report(r: &Report) -> Result<String, Error> {
    page::render(&report::page(r))
}

/// The `compare` page.
pub(crate) fn compare(c: &Comparison) -> Result<String, Error> {
    page::render(&compare::page(c))
}

/// The `counters` page.
pub(crate) fn counters(r: &crate::counters::Report) -> Result<String, Error> {
    page::render(&counters::page(r))
}

/// The `lint` page.
pub(crate) fn lint(r: &crate::lint::LintReport) -> Result<String, Error> {
    page::render(&lint::page(r))
}

/// The `diagnose` page.
pub(crate) fn diagnose(d: &Diagnosis) -> Result<String, Error> {
    page::render(&diagnose::page(d))
}

/// The `lab` page; `offline` says why the bundled recording is shown instead of a measurement.
pub(crate) fn lab(r: &LabReport, offline: Option<&str>) -> Result<String, Error> {
    page::render(&lab::lab(r, offline))
}

/// The `exitcost` page.
pub(crate) fn exitcost(r: &ExitCostReport) -> Result<String, Error> {
    page::render(&lab::exitcost(r))
}

/// The `stretch` page.
pub(crate) fn stretch(r: &StretchReport) -> Result<String, Error> {
    page::render(&stretch::page(r))
}

/// What measured an input's figures, for the label on every chart.
fn measured_on(backend: Option<&str>) -> String {
    match backend {
        Some(b) => format!("KVM backend {b}, as the input states"),
        None => "a KVM host whose backend the input does not state (figures as recorded)".into(),
    }
}

/// How an amount reads: a duration (ns) when rows are timed, else a count.
fn amount(timed: bool) -> fn(f64) -> String {
    if timed {
        crate::render::format::duration
    } else {
        |v| crate::render::format::count(v as u64)
    }
}

/// A report row's key as a reader knows it: `0x608 read (ACPI PM timer)`, `HLT`.
fn row_label(r: &ReportRow) -> String {
    let mut key = match r.access {
        Some(a) => format!("{} {}", r.key, a.word()),
        None => r.key.clone(),
    };
    if let Some(n) = &r.name {
        key = format!("{key} ({n})");
    }
    key
}
