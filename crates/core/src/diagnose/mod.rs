//! `diagnose`: explains a profile the way an expert on the KVM list would. The pipeline:
//!
//! 1. `evidence` — everything an input carries becomes one evidence set per VM (every table
//!    joined, counters and rates, the time base, the guest stated or inferred, host, config);
//! 2. `hypotheses` — one file per rule family proposes causes, each with evidence for and
//!    against, a confidence, a cost from the input's own numbers, and its competitors;
//! 3. `rank` — severity from absolute cost (share of vCPU time, rates), the main problem
//!    first, context after;
//! 4. `words` — cause, fixes and sources per guest, kept apart from the logic.
//!
//! The configuration's lint findings are joined in (`config_join`), several inputs are compared
//! (`compare`), and [`catalogue`] lists every rule for the docs. Any [`Profile`] goes through the
//! same path — a file read by [`crate::sources`] or a live capture.

pub(crate) mod catalogue;
pub(crate) mod compare;
mod config_join;
pub(crate) mod evidence;
mod guest_code;
pub(crate) mod hypotheses;
pub(crate) mod model;
pub(crate) mod rank;
pub(crate) mod rules;
pub(crate) mod words;

use hypotheses::UnknownRule;
use serde::Serialize;

pub use compare::{Change, Comparison};
pub use evidence::io::IoRate;
pub use evidence::{EvidenceSet, GuestBasis, Input, Strength, VcpuBasis, VendorBasis, WindowBasis};
pub use hypotheses::sched::{READY as READY_SHARE, model_effect};
pub use model::{
    Confidence, ConfigFact, Cost, CpuBasis, Effect, Fact, Finding, Fix, ForGuest, Grade, Measure,
    ModelEffect, Rival, Role, Scenario, Severity, ShareOf, Source,
};
pub use rules::{Family, Rule, RuleId, Threshold};
pub(crate) use words::overcommit;

use crate::analysis::{self, Totals};
use crate::config::{Format, GuestFamily, Version, VmConfig};
use crate::decode::Decoder;
use crate::facts::HostFacts;
use crate::profile::Profile;
use evidence::{Given, Guest, Host, Rate};
use hypotheses::Hypothesis;

// What other crates use of this area (docs/development.md, "Public API").
pub use catalogue::{entries as catalogue, shared_thresholds};

/// The version of the diagnose JSON schema (documented in docs/diagnose.md).
pub const SCHEMA: &str = "virtlens.diagnose/2";

/// What diagnose knows besides the profiles.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The guest OS, when the user says (`--guest`).
    pub guest: Option<GuestFamily>,
    /// Host facts given (`--host-*`) or probed (`--host-facts auto`).
    pub host: HostFacts,
    pub qemu_version: Option<Version>,
    /// The capture window in seconds, when the input does not show it (`--window`).
    pub window_s: Option<f64>,
    /// The vCPU count the input covers (`--vcpus`).
    pub vcpus: Option<u32>,
    /// The IO rate of the workload (`--iops`, `--fio`).
    pub io: Option<evidence::io::IoRate>,
    /// The guest's symbols (`--guest-symbols`): findings name the guest code of their exits.
    pub symbols: crate::analysis::guest_code::Symbols,
}

/// The result of diagnosing one or more inputs.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    pub schema: &'static str,
    pub virtlens: &'static str,
    pub inputs: Vec<InputReport>,
    /// Every input's findings, input by input, each input's ranked.
    pub findings: Vec<Finding>,
    /// Two or more inputs: what changed and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// The configuration joined with the profiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigReport>,
    pub host: HostFacts,
    pub notes: Vec<String>,
}

/// The answer for one input, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A problem at medium or above.
    Problem,
    /// The worst is low: measurable, worth a look.
    WorthALook,
    /// Nothing costs more than the low thresholds; the guest is mostly idle.
    Idle,
    /// Nothing costs more than the low thresholds.
    NothingAlarming,
    /// Most exits are ones virtlens cannot name.
    NotDiagnosed,
    /// The input holds too few events to call it healthy (a pasted excerpt) and nothing in it
    /// is a problem.
    TooLittle,
    /// The input holds nothing the rules can read.
    NothingToDiagnose,
}

/// One diagnosed input.
#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    #[serde(flatten)]
    pub input: Input,
    pub verdict: Verdict,
    /// The rank of the main problem, when there is one.
    pub main: Option<usize>,
    pub worst: Option<Severity>,
    /// What the evidence set held.
    pub evidence: EvidenceSummary,
}

/// The evidence an input gave, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceSummary {
    pub guest: Guest,
    pub host: Host,
    pub rate: Rate,
    /// Totals of its exit reasons (or counters), idle apart.
    pub totals: Option<Totals>,
    /// The exit rows are counters (kvm_stat / binary stats), not exit reasons.
    pub from_counters: bool,
    /// The tables the input held: `vmexit`, `ioport`, `mmio`, `msr`, `counters`, `events`,
    /// `sched` (the vCPU threads' scheduler samples), `perfmon`, `kernel_log` (the host's
    /// kernel log, this input's or one joined with it).
    pub tables: Vec<&'static str>,
    /// The vCPU threads' scheduler samples as shares, when the input has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched: Option<crate::analysis::sched::SchedSummary>,
    /// Exits per IO by kind, when the IO rate was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<evidence::io::IoView>,
}

/// The configuration a diagnosis used.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigReport {
    pub input: String,
    pub format: Format,
    pub document: usize,
    pub effective: crate::config::Effective,
}

impl Diagnosis {
    /// The worst severity found.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// True when a finding is at or above `at`.
    pub fn fails(&self, at: Severity) -> bool {
        self.worst().is_some_and(|w| w >= at)
    }

    /// The findings of input `n` (1-based), ranked.
    pub fn of_input(&self, n: usize) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.input == n)
    }

    /// The main problem of input `n`, when there is one.
    pub fn main_of(&self, n: usize) -> Option<&Finding> {
        self.of_input(n).find(|f| f.role == Role::Main)
    }
}

/// Diagnoses `profiles` (each labelled table set of a file is an input of its own, as in
/// `compare`), with `config` joined when given.
pub fn diagnose(
    profiles: &[Profile],
    config: Option<&VmConfig>,
    decoder: &Decoder,
    options: &Options,
) -> Diagnosis {
    // Kernel logs are evidence about the other inputs' guests: joined with each of them, not
    // diagnosed (nor compared) on their own — unless they are all there is.
    let is_log = |p: &Profile| p.origin.format == crate::sources::kernel_log::FORMAT;
    let join_logs = profiles.iter().any(is_log) && !profiles.iter().all(is_log);
    let owned: Vec<Profile>;
    let mut host_log = Vec::new();
    let mut log_notes = Vec::new();
    let profiles: &[Profile] = if join_logs {
        for p in profiles.iter().filter(|p| is_log(p)) {
            host_log.extend(p.tables.iter().cloned());
            log_notes.push(format!(
                "{}: a kernel log, joined with every other input as evidence about the host",
                p.origin.path.as_deref().unwrap_or("kernel log")
            ));
        }
        owned = profiles.iter().filter(|p| !is_log(p)).cloned().collect();
        &owned
    } else {
        profiles
    };
    let given = Given {
        host_log,
        guest: options.guest,
        host: options.host.clone(),
        qemu_version: options.qemu_version,
        config,
        window_s: options.window_s,
        vcpus: options.vcpus,
        io: options.io.clone(),
    };
    let mut inputs = Vec::new();
    let mut findings = Vec::new();
    let mut notes = analysis::report::input_notes(profiles);
    notes.extend(log_notes);
    for (input, profile, tables) in evidence::split(profiles) {
        let ev = EvidenceSet::gather(input, profile, &tables, decoder, &given);
        let mut found: Vec<Finding> = hypotheses::run(&ev)
            .into_iter()
            .filter_map(|h| finding(h, &ev))
            .collect();
        config_join::join(&ev, &mut found);
        if options.symbols.map.is_some() {
            notes.extend(guest_code::join(
                &mut found,
                profile,
                &options.symbols,
                &ev.input.name,
            ));
        }
        rank::order(&mut found, ev.input.number);
        notes.extend(input_notes(&ev, options.window_s.is_some()));
        inputs.push(report(&ev, &found));
        findings.extend(found);
    }
    let fits = sums_fit(profiles);
    if inputs.len() >= 2 && !fits {
        notes.push(
            "counts or times too large to add up (near 2^64): the inputs were not compared".into(),
        );
    }
    let comparison = (inputs.len() >= 2 && fits).then(|| {
        let c = analysis::compare::build(profiles, decoder);
        let names: Vec<String> = inputs.iter().map(|i| i.input.name.clone()).collect();
        if c.inputs.len() != names.len() {
            notes.push("some inputs hold no tables; the comparison numbers the others".into());
        }
        compare::build(&c, &names, &findings)
    });
    if config.is_some() && inputs.len() > 1 {
        notes.push(
            "the configuration (--config) was joined with every input, as if all ran it".into(),
        );
    }
    Diagnosis {
        schema: SCHEMA,
        virtlens: crate::VERSION,
        inputs,
        findings,
        comparison,
        config: config.map(|c| ConfigReport {
            input: c.input.clone(),
            format: c.format,
            document: c.document,
            effective: c.effective(),
        }),
        host: options.host.clone(),
        notes,
    }
}

/// A hypothesis as the user reads it: graded, worded, with its competitors and its effect;
/// `None` when it is too small to report.
fn finding(h: Hypothesis, ev: &EvidenceSet) -> Option<Finding> {
    let rule = h.id.rule();
    let described = words::describe(h.id);
    let (severity, grade) = rank::grade(&h, ev)?;
    let w = words::write(&h, ev);
    let competing = h
        .rivals
        .iter()
        .map(|&(id, confidence)| Rival {
            id: id.as_str(),
            tag: id.rule().tag,
            title: words::describe(id).title,
            confidence,
            why: words::rival_why(id).to_string(),
        })
        .collect();
    let mut advice: Vec<&'static str> = w
        .fixes
        .iter()
        .flat_map(|f| f.advice.iter().copied())
        .collect();
    advice.sort_unstable();
    advice.dedup();
    let c = &h.cost;
    let part = |x: Option<f64>| x.map(|v| v * h.removes);
    let effect = Effect {
        removes: h.removes,
        exits_saved: Some((c.exits as f64 * h.removes) as u64),
        time_saved_ns: c
            .time_ns
            .or(c.estimated_ns)
            .map(|t| (t as f64 * h.removes) as u64),
        cpu_share_saved: part(c.cpu_share),
        cpu_basis: c.cpu_basis,
        share_saved: part(c.share),
        share_of: c.share_of,
        model: h.model.clone(),
        text: w.effect,
    };
    let confirm = w.confirm.or_else(|| {
        (h.confidence != Confidence::Confirmed).then(|| words::check_for(h.id).to_string())
    });
    Some(Finding {
        id: h.id.to_string(),
        tag: rule.tag,
        input: ev.input.number,
        rank: 0,
        role: rule.role,
        severity,
        grade,
        title: w.title.unwrap_or_else(|| described.title.to_string()),
        confidence: h.confidence,
        cost: Some(h.cost),
        evidence: h.evidence,
        against: h.against,
        competing,
        check: w.check,
        words_for: ev.guest.family,
        cause: w.cause,
        fixes: w.fixes,
        advice,
        effect,
        sources: described.sources.to_vec(),
        confirm,
        config: Vec::new(),
    })
}

/// The report of one input from its ranked findings.
fn report(ev: &EvidenceSet, found: &[Finding]) -> InputReport {
    let main = found.iter().find(|f| f.role == Role::Main);
    let worst = found.iter().map(|f| f.severity).max();
    let unnamed = found
        .iter()
        .any(|f| f.id == UnknownRule::ExitCodes.id() && f.share_value() >= 0.5);
    let verdict = match main {
        _ if ev.is_empty() => Verdict::NothingToDiagnose,
        Some(f) if f.severity >= Severity::Medium => Verdict::Problem,
        _ if unnamed => Verdict::NotDiagnosed,
        Some(_) => Verdict::WorthALook,
        None if ev.size() < rank::SMALL_SAMPLE && ev.sched.is_none() => Verdict::TooLittle,
        None if found.iter().any(Finding::is_idle) => Verdict::Idle,
        None => Verdict::NothingAlarming,
    };
    let mut tables = Vec::new();
    for (present, name) in [
        (
            ev.exits.as_ref().is_some_and(|p| !p.from_counters),
            "vmexit",
        ),
        (ev.ports.is_some(), "ioport"),
        (ev.mmio.is_some(), "mmio"),
        (ev.msrs.is_some(), "msr"),
        (!ev.counters.is_empty(), "counters"),
        (!ev.events.is_empty(), "events"),
        (ev.sched.is_some(), "sched"),
        (ev.hv.is_some(), "perfmon"),
        (
            ev.host_log.as_ref().is_some_and(|l| !l.rows.is_empty()),
            "kernel_log",
        ),
    ] {
        if present {
            tables.push(name);
        }
    }
    InputReport {
        input: ev.input.clone(),
        verdict,
        main: main.map(|f| f.rank),
        worst,
        evidence: EvidenceSummary {
            guest: ev.guest.clone(),
            host: ev.host.clone(),
            rate: ev.rate.clone(),
            totals: ev.exits.as_ref().map(|p| p.totals.clone()),
            from_counters: ev.exits.as_ref().is_some_and(|p| p.from_counters),
            tables,
            sched: ev.sched.clone(),
            io: ev.io.clone(),
        },
    }
}

/// Remarks about one input: an emulating backend, host facts that contradict the exits.
fn input_notes(ev: &EvidenceSet, window_given: bool) -> Vec<String> {
    let mut out = Vec::new();
    let name = &ev.input.name;
    if ev.host.emulated() {
        out.push(format!(
            "{name}: PVM backend: guest ring-0 code is emulated instruction by instruction; its exit costs \
             are not hardware exit costs"
        ));
    }
    if let Some(by) = &ev.host.facts.cpu_emulator {
        out.push(format!(
            "{name}: costs are the exit counts weighed by typical hardware exit costs, not the \
             input's times ({by}'s)"
        ));
    }
    if ev.host.facts_disagree {
        out.push(format!(
            "{name}: the host facts name another CPU vendor than the exit names: they may describe another \
             host than the one the capture comes from"
        ));
    }
    if window_given && ev.rate.window_basis == Some(evidence::WindowBasis::Input) {
        out.push(format!(
            "{name}: the input shows its own capture window; --window was not used for it"
        ));
    }
    out
}

/// Whether every count and every time of every row, added up, fits in a u64 — then no sum the
/// comparison takes can overflow (it adds with plain `+`).
fn sums_fit(profiles: &[Profile]) -> bool {
    let rows = || {
        profiles
            .iter()
            .flat_map(|p| &p.tables)
            .flat_map(|t| &t.rows)
    };
    let counts = rows().try_fold(0u64, |a, r| a.checked_add(r.count));
    let times = rows().try_fold(0u64, |a, r| a.checked_add(r.time.total_ns.unwrap_or(0)));
    counts.is_some() && times.is_some()
}
