//! Counters side by side: the mean of every counter path the inputs share (host names
//! ignored, case ignored), the change of each later input against the first, and each input's
//! `hv.*` findings, so "did the change help" reads the same for perfmon logs as for exits.

use serde::Serialize;

use super::hv::{self, Level};
use crate::profile::{CounterLog, Profile};

/// One counter across the inputs.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub path: String,
    /// The mean in each input, in input order (`None`: not in that input).
    pub means: Vec<Option<f64>>,
    /// The last input against the first, in percent.
    pub change_pct: Option<f64>,
}

/// An input's findings, by id and level.
#[derive(Debug, Clone, Serialize)]
pub struct InputFindings {
    pub input: String,
    pub findings: Vec<(String, Level, String)>,
}

/// The counters of two or more inputs compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub inputs: Vec<String>,
    pub rows: Vec<Row>,
    pub findings: Vec<InputFindings>,
}

fn key(log: &CounterLog, i: usize) -> Option<(String, f64)> {
    let s = log.series.get(i)?;
    Some((s.path.display().to_lowercase(), s.stats?.mean))
}

/// Compares the counters of `profiles`; `None` when fewer than two carry counters.
pub(crate) fn compare(profiles: &[Profile]) -> Option<Comparison> {
    let logs: Vec<(String, &CounterLog)> = profiles
        .iter()
        .filter_map(|p| {
            Some((
                p.origin
                    .path
                    .clone()
                    .unwrap_or_else(|| p.origin.format.clone()),
                p.counters.as_ref()?,
            ))
        })
        .collect();
    if logs.len() < 2 {
        return None;
    }
    let mut rows: Vec<Row> = Vec::new();
    for (n, (_, log)) in logs.iter().enumerate() {
        for i in 0..log.series.len() {
            let Some((k, mean)) = key(log, i) else {
                continue;
            };
            let display = log.series[i].path.display();
            let row = match rows.iter_mut().find(|r| r.path.to_lowercase() == k) {
                Some(r) => r,
                None => {
                    rows.push(Row {
                        path: display,
                        means: vec![None; logs.len()],
                        change_pct: None,
                    });
                    let last = rows.len() - 1;
                    &mut rows[last]
                }
            };
            row.means[n] = Some(mean);
        }
    }
    for r in &mut rows {
        if let (Some(Some(a)), Some(Some(b))) = (r.means.first(), r.means.last())
            && *a != 0.0
        {
            r.change_pct = Some((b - a) / a.abs() * 100.0);
        }
    }
    // Counters every input has first, then by the size of the change.
    rows.sort_by(|a, b| {
        let full = |r: &Row| r.means.iter().all(Option::is_some);
        full(b).cmp(&full(a)).then(
            b.change_pct
                .map_or(0.0, f64::abs)
                .total_cmp(&a.change_pct.map_or(0.0, f64::abs)),
        )
    });
    let findings = logs
        .iter()
        .map(|(name, log)| InputFindings {
            input: name.clone(),
            findings: hv::findings(log, None)
                .into_iter()
                .map(|f| (f.id.to_string(), f.level, f.subject))
                .collect(),
        })
        .collect();
    Some(Comparison {
        inputs: logs.into_iter().map(|(n, _)| n).collect(),
        rows,
        findings,
    })
}
