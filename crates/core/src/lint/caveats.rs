//! Caveats on findings and merged repeats. A configuration can leave values open (a launch
//! script's `-cpu $CPU` with `CPU` set outside the file): each finding gets the caveats of the
//! areas its rule reads, so "no hv-stimer" says that `-cpu` was not fully known. Findings that
//! say the same thing about the same document (1M duplicate elements) are merged into one with
//! a count, and so are notes.

use std::collections::HashMap;

use super::Finding;
use crate::config::{Area, VmConfig};

/// The areas of a configuration a rule reads (the emulator, and so the architecture, always).
fn areas(rule: &str) -> &'static [Area] {
    match rule {
        "HV-PERF-003" => &[Area::Emulator, Area::Cpu, Area::Machine],
        "HV-PERF-005" | "HV-PERF-009" => &[Area::Emulator, Area::Cpu, Area::Vcpus],
        "HV-PERF-007" => &[Area::Emulator, Area::Machine, Area::Timers],
        "HV-OPS-003" => &[Area::Emulator, Area::Cpu, Area::Panic],
        "HV-OPS-004" => &[Area::Emulator, Area::Cpu, Area::Devices],
        _ => &[Area::Emulator, Area::Cpu],
    }
}

/// Gives each finding the caveats of `c` its rule depends on.
pub(super) fn attach(c: &VmConfig, findings: &mut [Finding]) {
    if c.caveats.is_empty() {
        return;
    }
    for f in findings {
        let reads = areas(f.rule);
        f.caveats = c
            .caveats
            .iter()
            .filter(|x| reads.contains(&x.area))
            .map(|x| x.message.clone())
            .collect();
    }
}

/// Merges findings with the same rule, severity, message and document into the first, counting
/// them; keeps the order of first appearance.
pub(super) fn merge(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let mut seen: HashMap<(&'static str, usize, String), usize> = HashMap::new();
    for f in findings {
        let key = (f.rule, f.document.unwrap_or(0), f.message.clone());
        match seen.get(&key) {
            Some(&i) if out[i].severity == f.severity => out[i].count += f.count,
            _ => {
                seen.insert(key, out.len());
                out.push(f);
            }
        }
    }
    out
}

/// Notes without repeats: a note seen N times once, with `(N times)`.
pub(super) fn merge_notes(notes: Vec<String>) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for n in notes {
        let c = counts.entry(n.clone()).or_insert(0);
        if *c == 0 {
            order.push(n);
        }
        *c += 1;
    }
    order
        .into_iter()
        .map(|n| match counts.get(&n) {
            Some(&k) if k > 1 => format!("{n} ({k} times)"),
            _ => n,
        })
        .collect()
}
