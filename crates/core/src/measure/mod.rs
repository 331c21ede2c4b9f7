//! Lab measurements (`virtlens exitcost` / `virtlens lab`): the result types the micro-VM lab in
//! virtlens-host fills, the statistics over interleaved runs (`summary`), the headline numbers
//! of a lab run (`headline`), which figures the clock cannot resolve (`resolution`) and the
//! date of a recording (`date`). Pure: no I/O, no unsafe.
//! Every result carries its [`BackendLabel`], so numbers from an emulating backend are never
//! shown as hardware exit costs.

pub(crate) mod date;
pub(crate) mod diagnosed;
pub(crate) mod headline;
pub(crate) mod io_path;
mod mode;
mod report;
pub(crate) mod resolution;
pub(crate) mod summary;

pub use headline::{ClockLine, Headline, Lesson, PortLine, ScenarioLine, headline, lesson};
pub use mode::Mode;
pub use report::{
    BackendLabel, EXITCOST_SCHEMA, ExitCostReport, LAB_SCHEMA, LabReport, Recording,
    ScenarioResult, Status, TestResult, VariantResult,
};
pub use summary::Summary;

// What other crates use of this area (docs/development.md, "Public API").
pub use date::utc as utc_date;
pub use diagnosed::diagnose_scenarios;
pub use headline::ratio;
pub use io_path::{Delivery, Eoi, ExitsPerIo, IoPathReport, IoPathRow, ReturnsPerIo, TimePerIo};
pub use resolution::{label_lab, label_test, label_variant, per_op};
pub use summary::paired_differences;
