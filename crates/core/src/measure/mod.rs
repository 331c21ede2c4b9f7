//! Lab measurements (`virtlens exitcost` / `virtlens lab`): the result types the micro-VM lab in
//! virtlens-host fills, the statistics over interleaved runs ([`summary`]), the headline numbers
//! of a lab run ([`mod@headline`]), which figures the clock cannot resolve ([`resolution`]) and the
//! date of a recording ([`date`]). Pure: no I/O, no unsafe.
//! Every result carries its [`BackendLabel`], so numbers from an emulating backend are never
//! shown as hardware exit costs.

pub mod date;
pub mod diagnosed;
pub mod headline;
pub mod io_path;
mod mode;
mod report;
pub mod resolution;
pub mod summary;

pub use headline::{ClockLine, Headline, Lesson, PortLine, ScenarioLine, headline, lesson};
pub use mode::Mode;
pub use report::{
    BackendLabel, EXITCOST_SCHEMA, ExitCostReport, LAB_SCHEMA, LabReport, Recording,
    ScenarioResult, Status, TestResult, VariantResult,
};
pub use summary::Summary;
