//! Performance counters — Hyper-V's hypervisor counter sets from perfmon / typeperf / relog
//! CSV or a pasted table, and esxtop's per-VM CPU scheduling numbers — turned into what
//! virtlens says about them: PAL's thresholds per time slice (`pal`), the per-VM hypervisor
//! metrics and the `hv.*` findings (`hv`), and the words for each finding (`words`).
//! Sources read the files (`crate::sources::perfmon_csv`, `crate::sources::counter_table`);
//! this module never parses.

pub(crate) mod compare;
pub(crate) mod hv;
pub(crate) mod names;
pub(crate) mod pal;
pub(crate) mod words;

use serde::Serialize;

use crate::profile::{CounterLog, LogHeader, Profile};

pub use hv::Level;

// What other crates use of this area (docs/development.md, "Public API").
pub use pal::Condition;

/// The version of the counters JSON schema.
pub const SCHEMA: &str = "virtlens.counters/1";

/// Everything virtlens says about one input's counters.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub input: String,
    #[serde(flatten)]
    pub header: LogHeader,
    pub counters: usize,
    /// The IO rate the per-IO numbers use (`--iops`), when given.
    pub iops: Option<f64>,
    pub vps: Vec<hv::VpMetrics>,
    pub esx: Vec<hv::EsxVm>,
    pub pal: Vec<pal::Alert>,
    pub findings: Vec<hv::HvFinding>,
}

/// The analyses of several inputs.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub inputs: Vec<Analysis>,
    pub notes: Vec<String>,
}

/// Analyses `log` (read from `input`).
pub fn analyse(input: &str, log: &CounterLog, iops: Option<f64>) -> Analysis {
    Analysis {
        input: input.to_string(),
        header: log.header.clone(),
        counters: log.series.len(),
        iops,
        vps: hv::vp_metrics(log),
        esx: hv::esx_vms(log),
        pal: pal::evaluate(log),
        findings: hv::findings(log, iops),
    }
}

/// The analyses of every profile that carries counters; the others are named in the notes.
pub fn report(profiles: &[Profile], iops: Option<f64>) -> Report {
    let mut inputs = Vec::new();
    let mut notes = Vec::new();
    for p in profiles {
        let name = p.origin.path.clone().unwrap_or_else(|| "<input>".into());
        match &p.counters {
            Some(log) => inputs.push(analyse(&name, log, iops)),
            None => notes.push(format!(
                "{name}: no performance counters in it (a {} input)",
                p.origin.format
            )),
        }
        notes.extend(p.warnings.iter().map(|w| match w.line {
            Some(l) => format!("{name}:{l}: {}", w.message),
            None => format!("{name}: {}", w.message),
        }));
    }
    Report {
        schema: SCHEMA,
        inputs,
        notes,
    }
}
