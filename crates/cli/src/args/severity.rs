//! `--fail-on`: the one severity scale and the one default (high) of every command that grades
//! findings (diagnose, lint, counters). Lint's `error` is another name of `critical`.

use clap::ValueEnum;
use virtlens_core::Severity;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SeverityArg {
    /// The guest makes no progress, or the configuration will not start
    #[value(alias = "error")]
    Critical,
    High,
    Medium,
    Low,
    Info,
}

impl SeverityArg {
    pub fn severity(self) -> Severity {
        match self {
            SeverityArg::Critical => Severity::Critical,
            SeverityArg::High => Severity::High,
            SeverityArg::Medium => Severity::Medium,
            SeverityArg::Low => Severity::Low,
            SeverityArg::Info => Severity::Info,
        }
    }
}
