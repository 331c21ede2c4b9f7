//! Two (or more) inputs diagnosed together: did the change help, and why. The numbers are
//! [`crate::analysis::compare`]'s verdicts (totals without idle, the keys that moved most); the
//! why is which findings went away and which appeared between the first input and each other.

use serde::Serialize;

use super::finding::{Finding, Severity};
use super::words;
use crate::analysis::compare::{self, Measure, Verdict};

/// A change of at least 10% in exit-handling cost is a verdict; less is within what two captures
/// of the same workload differ by (the seed README: recording lengths are not even stated).
const CLEAR_CHANGE_PCT: f64 = 10.0;

/// Findings that describe the normal floor of exit handling, not a cause that comes and goes.
pub(super) const FLOOR: [&str; 2] = ["irq.external", "apic.apic-write"];

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
    /// Findings of input 1 gone here.
    pub resolved: Vec<String>,
    /// Findings here that input 1 did not have.
    pub new: Vec<String>,
    /// Findings of both.
    pub persisting: Vec<String>,
    /// The answer in one paragraph.
    pub summary: String,
}

/// The comparison of `inputs` (name per input, 1-based order) given every input's findings.
pub fn build(c: &compare::Comparison, names: &[String], findings: &[Finding]) -> Comparison {
    // What can go or come: findings of at least low severity that name a cause (not idle, not
    // the configuration, not the normal floor of host interrupts and APIC writes).
    let ids = |input: usize| -> Vec<(String, Severity)> {
        findings
            .iter()
            .filter(|f| f.input == input && !f.is_idle() && !f.id.starts_with("config."))
            .filter(|f| f.severity >= Severity::Low && !FLOOR.contains(&f.id.as_str()))
            .map(|f| (f.id.clone(), f.severity))
            .collect()
    };
    let present = |input: usize, id: &str| findings.iter().any(|f| f.input == input && f.id == id);
    let base = ids(1);
    let mut changes = Vec::new();
    for (i, name) in names.iter().enumerate().skip(1) {
        let input = i + 1;
        let here = ids(input);
        let resolved: Vec<String> = base
            .iter()
            .filter(|(id, _)| !present(input, id))
            .map(|(id, _)| id.clone())
            .collect();
        let new: Vec<String> = here
            .iter()
            .filter(|(id, _)| !present(1, id))
            .map(|(id, s)| format!("{id} ({s})"))
            .collect();
        let persisting: Vec<String> = here
            .iter()
            .filter(|(id, _)| present(1, id))
            .map(|(id, _)| id.clone())
            .collect();
        let v = c.verdicts.iter().find(|v| v.input == input);
        let (verdict, change_pct) = match v.and_then(|v| v.change_pct) {
            Some(p) if p <= -CLEAR_CHANGE_PCT => ("helped", Some(p)),
            Some(p) if p >= CLEAR_CHANGE_PCT => ("worse", Some(p)),
            Some(p) => ("no clear change", Some(p)),
            None => ("unknown", None),
        };
        let title = |id: &str, input: usize| {
            findings
                .iter()
                .find(|f| f.input == input && f.id == id)
                .map_or_else(|| id.to_string(), |f| format!("{id} ({})", f.title))
        };
        let gone: Vec<String> = resolved.iter().map(|id| title(id, 1)).collect();
        let summary = summary(name, verdict, v, &gone, &new, &persisting);
        changes.push(Change {
            input,
            name: name.clone(),
            verdict,
            change_pct,
            resolved,
            new,
            persisting,
            summary,
        });
    }
    Comparison {
        verdicts: c.verdicts.clone(),
        ranking: c.ranking.clone(),
        changes,
        notes: c.notes.clone(),
    }
}

fn amount(measure: Measure, v: u64) -> String {
    match measure {
        Measure::Time => words::duration(v as f64),
        Measure::Exits => format!("{} exits", words::count(v)),
    }
}

fn summary(
    name: &str,
    verdict: &str,
    v: Option<&Verdict>,
    resolved: &[String],
    new: &[String],
    persisting: &[String],
) -> String {
    let Some(v) = v else {
        return format!(
            "{name}: no table of the same kind as input 1, so the cost cannot be compared."
        );
    };
    let what = match v.measure {
        Measure::Time => "exit-handling time without idle",
        Measure::Exits => "exits without idle",
    };
    let change = v
        .change_pct
        .map(|p| format!("{:+.0}%", p))
        .unwrap_or_else(|| "n/a".into());
    let head = match verdict {
        "helped" => format!("{name} helped: {what} {change}"),
        "worse" => format!("{name} made it worse: {what} {change}"),
        _ => format!("{name} made no clear difference: {what} {change}"),
    };
    let mut s = format!(
        "{head} ({} → {}).",
        amount(v.measure, v.before),
        amount(v.measure, v.after)
    );
    if !resolved.is_empty() {
        s.push_str(&format!(" Gone: {}.", resolved.join(", ")));
    }
    if !new.is_empty() {
        s.push_str(&format!(" New: {}.", new.join(", ")));
    }
    if !persisting.is_empty() {
        s.push_str(&format!(" Still there: {}.", persisting.join(", ")));
    }
    if !v.movers.is_empty() {
        let moves: Vec<String> = v
            .movers
            .iter()
            .map(|m| {
                format!(
                    "{} {} → {}",
                    m.key,
                    words::count(m.count_before),
                    words::count(m.count_after)
                )
            })
            .collect();
        s.push_str(&format!(" Biggest moves: {}.", moves.join(", ")));
    }
    s
}
