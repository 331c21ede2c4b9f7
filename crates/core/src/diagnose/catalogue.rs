//! The rule catalogue, listable from code: every hypothesis id with its title, what it means,
//! its cause tag, whether it is context, its thresholds (its own and the shared severity
//! thresholds) its public sources and its general fixes — the logic half from `hypotheses`, the
//! prose half from `words`, joined by id. docs/findings.md is generated from [`entries`]
//! (`render::findings_md`).

use serde::Serialize;

use super::evidence::{EvidenceSet, Given, Input};
use super::hypotheses::Hypothesis;
use super::model::{Cost, Fix, Role, Source};
use super::rules::{Family, RuleId, Threshold};
use super::{rank, words};
use crate::decode::Decoder;
use crate::profile::{Origin, Profile};

/// One rule of the catalogue.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub id: &'static str,
    pub family: Family,
    pub tag: &'static str,
    pub title: &'static str,
    pub meaning: &'static str,
    pub context: bool,
    pub thresholds: Vec<Threshold>,
    pub sources: Vec<Source>,
    /// The fixes it gives when nothing is known about the input (both guests' variants, each
    /// labelled); on a real input the words adapt them to the guest, host and configuration.
    pub fixes: Vec<Fix>,
}

/// The severity thresholds every rule graded by cost shares.
pub fn shared_thresholds() -> Vec<Threshold> {
    let names = ["low", "medium", "high"];
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        out.push(Threshold {
            name: match *n {
                "low" => "share of vCPU time, low",
                "medium" => "share of vCPU time, medium",
                _ => "share of vCPU time, high",
            },
            value: rank::CPU_SHARE[i],
            unit: "share",
        });
    }
    for (i, n) in names.iter().enumerate() {
        out.push(Threshold {
            name: match *n {
                "low" => "share of exit handling without a time base, low",
                "medium" => "share of exit handling without a time base, medium",
                _ => "share of exit handling without a time base, high",
            },
            value: rank::OVERHEAD_SHARE[i],
            unit: "share",
        });
    }
    out
}

/// Every rule, family by family in the order they run.
pub fn entries() -> Vec<Entry> {
    RuleId::all()
        .into_iter()
        .map(|id| {
            let r = id.rule();
            let d = words::describe(id);
            Entry {
                id: id.as_str(),
                family: id.family(),
                tag: r.tag,
                title: d.title,
                meaning: d.meaning,
                context: r.role == Role::Context,
                thresholds: r.thresholds.to_vec(),
                sources: d.sources.to_vec(),
                fixes: general_fixes(id),
            }
        })
        .collect()
}

/// The fixes of rule `id` on an input of which nothing is known: no rows, no guest, no host.
pub(crate) fn general_fixes(id: RuleId) -> Vec<Fix> {
    let input = Input {
        number: 1,
        name: String::new(),
        path: None,
        label: None,
        format: String::new(),
    };
    let profile = Profile::new(Origin::new("catalogue", None));
    let ev = EvidenceSet::gather(input, &profile, &[], &Decoder::builtin(), &Given::default());
    words::write(&Hypothesis::with_cost(id, Cost::default(), Vec::new()), &ev).fixes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_sources_and_prose() {
        for e in &entries() {
            assert!(!e.sources.is_empty(), "{}: no sources", e.id);
            assert!(!e.meaning.is_empty() && !e.title.is_empty(), "{}", e.id);
        }
    }
}
