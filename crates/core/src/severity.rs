//! One severity scale for everything virtlens grades: diagnose's findings and lint's. Lint
//! spells the top of the scale `error` (the configuration will not start), diagnose
//! `critical` (the guest makes no progress); both are [`Severity::Critical`].

use std::fmt;

use serde::Serialize;

/// How bad a finding is (ordered: `Info` < … < `Critical`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    /// The guest makes no progress, or the configuration will not start (lint's `error`).
    Critical,
}

impl Severity {
    /// Every severity, worst first.
    pub const WORST_FIRST: [Severity; 5] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ];

    /// `info`, `low`, `medium`, `high`, `critical`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// The name lint prints: `error` for [`Severity::Critical`].
    pub fn lint_name(self) -> &'static str {
        match self {
            Severity::Critical => "error",
            other => other.name(),
        }
    }

    /// A name of either spelling (`critical` or `error`; `warning` is `low`).
    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "error" => Some(Severity::Critical),
            "warning" => Some(Severity::Low),
            _ => Severity::WORST_FIRST.into_iter().find(|v| v.name() == s),
        }
    }

    /// One step less severe (`Info` stays `Info`).
    pub fn down(self) -> Severity {
        match self {
            Severity::Critical => Severity::High,
            Severity::High => Severity::Medium,
            Severity::Medium => Severity::Low,
            Severity::Low | Severity::Info => Severity::Info,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Serializes a severity as lint spells it (`#[serde(serialize_with = …)]`).
pub(crate) fn lint_spelling<S: serde::Serializer>(s: &Severity, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s.lint_name())
}
