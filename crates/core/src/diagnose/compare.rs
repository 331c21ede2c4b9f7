//! Two (or more) inputs diagnosed together: did the change help, and why. The numbers are
//! [`crate::analysis::compare`]'s verdicts (totals without idle, the keys that moved most); the
//! why is which findings went away and which appeared between the first input and each other.
//! Data only: the renderer words it.

use serde::Serialize;

use super::model::{Finding, Role, Severity};
use crate::analysis::compare::{self, Verdict};

/// A change of at least 10% in exit-handling cost is a verdict; less is within what two captures
/// of the same workload differ by.
pub(crate) const CLEAR_CHANGE_PCT: f64 = 10.0;

/// What changed from input 1 to each other input.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// `compare`'s verdicts (one per input after the first) and its ranking (least cost first).
    pub verdicts: Vec<Verdict>,
    pub ranking: Vec<usize>,
    pub changes: Vec<Change>,
    pub notes: Vec<String>,
}

/// One input against input 1.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub input: usize,
    pub name: String,
    /// `helped`, `worse`, `no clear change`, or `unknown` (no common table).
    pub verdict: &'static str,
    pub change_pct: Option<f64>,
    /// Findings of input 1 gone here (ids).
    pub resolved: Vec<String>,
    /// Findings here that input 1 did not have (ids).
    pub new: Vec<String>,
    /// Findings of both (ids).
    pub persisting: Vec<String>,
}

/// The comparison of `inputs` (name per input, 1-based order) given every input's findings.
pub(crate) fn build(c: &compare::Comparison, names: &[String], findings: &[Finding]) -> Comparison {
    // What can go or come: problems of at least low severity (not context, not configuration).
    let ids = |input: usize| -> Vec<String> {
        findings
            .iter()
            .filter(|f| f.input == input && matches!(f.role, Role::Main | Role::Problem))
            .filter(|f| f.severity >= Severity::Low)
            .map(|f| f.id.clone())
            .collect()
    };
    let base = ids(1);
    let mut changes = Vec::new();
    for (i, name) in names.iter().enumerate().skip(1) {
        let input = i + 1;
        let here = ids(input);
        let v = c.verdicts.iter().find(|v| v.input == input);
        let (verdict, change_pct) = match v.and_then(|v| v.change_pct) {
            Some(p) if p <= -CLEAR_CHANGE_PCT => ("helped", Some(p)),
            Some(p) if p >= CLEAR_CHANGE_PCT => ("worse", Some(p)),
            Some(p) => ("no clear change", Some(p)),
            None => ("unknown", None),
        };
        changes.push(Change {
            input,
            name: name.clone(),
            verdict,
            change_pct,
            resolved: base
                .iter()
                .filter(|id| !here.contains(id))
                .cloned()
                .collect(),
            new: here
                .iter()
                .filter(|id| !base.contains(id))
                .cloned()
                .collect(),
            persisting: here
                .iter()
                .filter(|id| base.contains(id))
                .cloned()
                .collect(),
        });
    }
    Comparison {
        verdicts: c.verdicts.clone(),
        ranking: c.ranking.clone(),
        changes,
        notes: c.notes.clone(),
    }
}
