//! `lint`: checks a [`VmConfig`] against the Hyper-V enlightenment rules (docs/lint.md) —
//! dependencies QEMU enforces (`HV-DEP-*`), host mismatches (`HV-HOST-*`), performance traps
//! (`HV-PERF-*`) and operational traps (`HV-OPS-*`) — with optional host facts, and prints the
//! workload presets (`presets`). Rules never parse: they read the configuration model and
//! [`Options`]. Each finding names the rule, a severity, the cause in plain words, the element
//! or flag at fault, the fix (libvirt XML and QEMU flag) and the sources it rests on.
//!
//! Rules that need what a configuration cannot say are conditional on explicit options:
//! `HV-DEP-009` on `qemu_version`/`libvirt_version`, `HV-OPS-001` (high) and `HV-OPS-002` on
//! `migratable`, `HV-PERF-009`/`010` on `overcommitted` (009 also fires at ≥ 8 vCPUs),
//! `HV-PERF-011` on `nested_workload`, `HV-PERF-005` (high) on `ipi_heavy` or ≥ 8 vCPUs;
//! host rules on the facts in `host` (vendor, APICv/AVIC, clocksource).
//!
//! The rules are about x86 (Hyper-V enlightenments exist only on QEMU's x86 CPUs, the PIT and
//! HPET only on PC machines): a configuration for another architecture gets none. Values a
//! launch script leaves open become caveats on the findings they touch; findings that repeat
//! are merged with a count (`caveats`).

mod avic;
mod caveats;
mod context;
mod deps;
pub(crate) mod fix;
mod host;
mod ops;
mod perf;
pub(crate) mod presets;
pub(crate) mod rules;

use serde::Serialize;

use crate::config::{Effective, Format, Guest, GuestFamily, Origin, Version, VmConfig};
use crate::facts::HostFacts;
pub use fix::Fix;
pub use presets::{Preset, Recommendation};

// What other crates use of this area (docs/development.md, "Public API").
pub use presets::recommend;
pub use rules::{RULES, all as rules};

/// The version of the lint JSON schema.
pub const SCHEMA: &str = "virtlens.lint/1";

pub use crate::severity::Severity;

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    /// Spelled `error` for critical: the configuration will not start.
    #[serde(serialize_with = "crate::severity::lint_spelling")]
    pub severity: Severity,
    /// The cause, in plain words.
    pub message: String,
    /// The element or flag at fault (or where the missing one belongs).
    pub element: Origin,
    pub fix: Fix,
    /// The references the rule rests on.
    pub source: &'static str,
    /// Which document of the file (only when the file holds several).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<usize>,
    /// How many times the same finding occurs (elements written many times); `element` is the
    /// first.
    #[serde(skip_serializing_if = "is_one")]
    pub count: usize,
    /// Values the configuration leaves open that this finding depends on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// What lint knows besides the configuration.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub host: HostFacts,
    /// The guest OS, when the user says (`--guest`).
    pub guest: Option<GuestFamily>,
    /// The VM is live-migrated.
    pub migratable: bool,
    /// The host runs more vCPUs than it has CPUs (or vCPUs are not pinned).
    pub overcommitted: bool,
    /// The guest runs a hypervisor (Hyper-V role, WSL2, VBS/HVCI, Credential Guard).
    pub nested_workload: bool,
    /// IPI-heavy workload (cloud gaming, many vCPUs, network-heavy).
    pub ipi_heavy: bool,
    pub qemu_version: Option<Version>,
    pub libvirt_version: Option<Version>,
}

/// The assumptions a report was made under (the options that are not host facts).
#[derive(Debug, Clone, Serialize)]
pub struct Assumptions {
    pub migratable: bool,
    pub overcommitted: bool,
    pub nested_workload: bool,
    pub ipi_heavy: bool,
    pub qemu_version: Option<Version>,
    pub libvirt_version: Option<Version>,
}

/// One document of the input, as linted.
#[derive(Debug, Clone, Serialize)]
pub struct Document {
    pub document: usize,
    pub first_line: usize,
    pub guest: Guest,
    pub config: Effective,
}

/// The result of linting one input.
#[derive(Debug, Clone, Serialize)]
pub struct LintReport {
    pub schema: &'static str,
    pub virtlens: &'static str,
    pub input: String,
    pub format: Format,
    /// The (first) document's guest OS and effective configuration.
    pub guest: Guest,
    pub config: Effective,
    /// Every document, when the input holds more than one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<Document>,
    pub host: HostFacts,
    pub assumptions: Assumptions,
    /// Worst first, then by rule id.
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<Recommendation>,
}

impl LintReport {
    /// The worst severity found.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// True when a finding is at or above `at`.
    pub fn fails(&self, at: Severity) -> bool {
        self.worst().is_some_and(|w| w >= at)
    }

    /// How many findings of `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

/// Lints one configuration: its resolved guest, findings and notes.
pub fn check(config: &VmConfig, options: &Options) -> (Guest, Vec<Finding>, Vec<String>) {
    let ctx = context::Ctx::new(config, options);
    let mut notes = ctx.notes();
    notes.extend(config.caveats.iter().map(|c| c.message.clone()));
    if !config.is_x86() {
        let arch = config.arch.as_ref().map_or("", |a| a.value.as_str());
        notes.push(format!(
            "the architecture is {arch}: the Hyper-V enlightenments and PC timers these rules \
             check exist on x86 only, so no rule applies"
        ));
        return (ctx.guest.clone(), Vec::new(), caveats::merge_notes(notes));
    }
    let mut findings = Vec::new();
    deps::check(&ctx, &mut findings);
    host::check(&ctx, &mut findings);
    perf::check(&ctx, &mut findings);
    ops::check(&ctx, &mut findings);
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(b.rule)));
    let mut findings = caveats::merge(findings);
    caveats::attach(config, &mut findings);
    (ctx.guest.clone(), findings, caveats::merge_notes(notes))
}

/// Lints every document read from one input. `configs` must not be empty for a useful
/// report; an empty list gives a report with no findings.
pub fn lint(configs: &[VmConfig], options: &Options) -> LintReport {
    let several = configs.len() > 1;
    let mut findings = Vec::new();
    let mut notes = Vec::new();
    let mut documents = Vec::new();
    for c in configs {
        let (guest, mut f, n) = check(c, options);
        if several {
            for x in &mut f {
                x.document = Some(c.document);
            }
            notes.extend(
                n.into_iter()
                    .map(|n| format!("document {}: {n}", c.document)),
            );
        } else {
            notes.extend(n);
        }
        findings.extend(f);
        documents.push(Document {
            document: c.document,
            first_line: c.first_line,
            guest,
            config: c.effective(),
        });
    }
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.document.cmp(&b.document))
            .then(a.rule.cmp(b.rule))
    });
    let first = documents.first().cloned();
    LintReport {
        schema: SCHEMA,
        virtlens: crate::VERSION,
        input: configs.first().map(|c| c.input.clone()).unwrap_or_default(),
        format: configs.first().map_or(Format::Libvirt, |c| c.format),
        guest: first.as_ref().map(|d| d.guest.clone()).unwrap_or_default(),
        config: first.map_or_else(
            || Effective::of(&VmConfig::new(Format::Libvirt, "", 1, 1)),
            |d| d.config,
        ),
        documents: if several { documents } else { Vec::new() },
        host: options.host.clone(),
        assumptions: Assumptions {
            migratable: options.migratable,
            overcommitted: options.overcommitted,
            nested_workload: options.nested_workload,
            ipi_heavy: options.ipi_heavy,
            qemu_version: options.qemu_version,
            libvirt_version: options.libvirt_version,
        },
        findings,
        notes: caveats::merge_notes(notes),
        recommendation: None,
    }
}
