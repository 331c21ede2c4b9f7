//! `diagnose`: explains a profile the way an expert on the KVM list would — findings ranked by
//! the share of exit-handling time (idle excluded; exits when time is unknown) they explain,
//! each with the evidence rows, the cause, the fix as QEMU flags and libvirt XML (or a host or
//! guest change), the expected effect and the public source it rests on; joined with the lint
//! findings of a configuration when one is given; and, for several inputs, whether the change
//! between them helped and why.
//!
//! Any [`Profile`] goes through the same path — a file read by [`crate::sources`] or a live
//! capture — so `diagnose --live` only has to hand its profile to [`diagnose`].
//!
//! Rules never parse: `view` turns an input into merged, classed rows with shares (`counters`
//! does the same for kvm_stat / binary-stats counters); one module per rule family (`timer`,
//! `apic`, `io`, `mmio`, `msr`, `mmu`, `idle`, `spin`, `irq`, `unknown`, `config_join`) reads
//! it; `headline` sums an input up and [`compare`] says what changed between inputs. A row is explained by one finding only: families run in
//! a fixed order and later ones skip rows earlier ones claimed. Shared thresholds and their
//! reasons are in `grade`; rule-specific ones sit with their rules.

mod apic;
pub mod compare;
mod config_join;
mod context;
mod counters;
mod finding;
mod grade;
mod headline;
mod idle;
mod io;
mod irq;
mod mmio;
mod mmu;
mod msr;
mod spin;
mod timer;
mod unknown;
mod view;
mod words;

use serde::Serialize;

pub use compare::{Change, Comparison};
pub use context::GuestInfo;
pub use finding::{Confidence, ConfigEvidence, Evidence, Finding, Fix, Severity, Share};
pub use view::Input;

use crate::analysis::{self, Totals};
use crate::config::{Effective, Format, GuestFamily, Version, VmConfig};
use crate::decode::{Decoder, Isa};
use crate::facts::{HostFacts, Vendor};
use crate::profile::Profile;
use context::Ctx;
use view::View;

/// The version of the diagnose JSON schema.
pub const SCHEMA: &str = "virtlens.diagnose/1";

/// What diagnose knows besides the profiles.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The guest OS, when the user says (`--guest`).
    pub guest: Option<GuestFamily>,
    /// Host facts given (`--host-*`) or probed (`--host-facts auto`).
    pub host: HostFacts,
    pub qemu_version: Option<Version>,
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

/// One diagnosed input.
#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    #[serde(flatten)]
    pub input: Input,
    pub guest: GuestInfo,
    /// The host CPU vendor the rules assumed, and how it is known.
    pub host_vendor: Option<Vendor>,
    pub host_vendor_basis: Option<&'static str>,
    pub isa: Option<Isa>,
    pub backend: Option<String>,
    /// Totals of its exit reasons (or kvm_stat counters), idle apart.
    pub totals: Option<Totals>,
    /// `time` when durations are known, else `exits`.
    pub measure: Option<&'static str>,
    /// The answer in one paragraph.
    pub headline: String,
    pub worst: Option<Severity>,
}

/// The configuration a diagnosis used.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigReport {
    pub input: String,
    pub format: Format,
    pub document: usize,
    pub effective: Effective,
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
}

/// Diagnoses `profiles` (each labelled table set of a file is an input of its own, as in
/// `compare`), with `config` joined when given.
pub fn diagnose(
    profiles: &[Profile],
    config: Option<&VmConfig>,
    decoder: &Decoder,
    options: &Options,
) -> Diagnosis {
    let mut inputs = Vec::new();
    let mut findings = Vec::new();
    let mut notes = analysis::report::input_notes(profiles);
    for (input, profile, tables) in view::split(profiles) {
        let view = View::new(input, profile, &tables, decoder);
        let mut ctx = Ctx::new(
            &view,
            options.guest,
            &options.host,
            options.qemu_version,
            config,
        );
        let mut found = run_rules(&mut ctx);
        config_join::join(&ctx, &mut found);
        rank(&mut found, view.input.number);
        notes.extend(ctx.notes.iter().cloned());
        if let Some(n) = backend_note(&view) {
            notes.push(n);
        }
        inputs.push(InputReport {
            headline: headline::of(&view, &found),
            worst: found.iter().map(|f| f.severity).max(),
            guest: ctx.guest.clone(),
            host_vendor: ctx.host.vendor.clone(),
            host_vendor_basis: ctx.vendor_basis,
            isa: view.isa,
            backend: view.backend.clone(),
            totals: view.exits.as_ref().map(|p| p.totals.clone()),
            measure: view.exits.as_ref().map(|p| p.measure()),
            input: view.input.clone(),
        });
        findings.extend(found);
    }
    let fits = sums_fit(profiles);
    if inputs.len() >= 2 && !fits {
        notes.push(
            "counts or times too large to add up (near 2^64): the inputs were not compared"
                .to_string(),
        );
    }
    let comparison = (inputs.len() >= 2 && fits).then(|| {
        let c = analysis::compare::build(profiles, decoder);
        let names: Vec<String> = inputs.iter().map(|i| i.input.name.clone()).collect();
        if c.inputs.len() != names.len() {
            notes.push("some inputs hold no tables; the comparison numbers the others".to_string());
        }
        compare::build(&c, &names, &findings)
    });
    if config.is_some() && inputs.len() > 1 {
        notes.push(
            "the configuration (--config) was joined with every input, as if all ran it"
                .to_string(),
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

/// Every family in order; each later one leaves the rows earlier ones explained.
fn run_rules(ctx: &mut Ctx<'_>) -> Vec<Finding> {
    type Rule = fn(&Ctx<'_>, &[Finding], &mut Vec<Finding>);
    const RULES: [Rule; 12] = [
        |c, _, o| unknown::check(c, o),
        |c, _, o| mmu::storm(c, o),
        |c, _, o| spin::hang(c, o),
        |c, _, o| timer::check(c, o),
        |c, _, o| apic::check(c, o),
        |c, _, o| io::check(c, o),
        |c, _, o| mmio::check(c, o),
        |c, _, o| msr::check(c, o),
        |c, _, o| mmu::check(c, o),
        |c, _, o| spin::check(c, o),
        irq::check,
        |c, _, o| idle::check(c, o),
    ];
    let mut all: Vec<Finding> = Vec::new();
    for rule in RULES {
        let mut found = Vec::new();
        rule(ctx, &all, &mut found);
        for f in &found {
            ctx.claim(f);
        }
        all.extend(found);
    }
    if let Some((cap, why)) = ctx.cap() {
        for f in all.iter_mut().filter(|f| f.severity > cap && !f.is_idle()) {
            f.severity = cap;
            f.severity_reason = format!("{}; {why}", f.severity_reason);
        }
    }
    all
}

/// Overhead findings by share (then severity), then idle, then configuration-only findings.
fn rank(found: &mut [Finding], input: usize) {
    let group = |f: &Finding| {
        if f.id.starts_with("config.") {
            2
        } else if f.is_idle() {
            1
        } else {
            0
        }
    };
    found.sort_by(|a, b| {
        group(a)
            .cmp(&group(b))
            .then(b.share_value().total_cmp(&a.share_value()))
            .then(b.severity.cmp(&a.severity))
            .then(a.id.cmp(&b.id))
    });
    for (i, f) in found.iter_mut().enumerate() {
        f.input = input;
        f.rank = i + 1;
    }
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

/// The caveat for inputs from an emulating backend.
fn backend_note(view: &View) -> Option<String> {
    let pvm = view.isa == Some(Isa::Pvm) || view.backend.as_deref() == Some("pvm");
    pvm.then(|| {
        format!(
            "{}: PVM backend: guest ring-0 code is emulated instruction by instruction; its exit \
             costs are not hardware exit costs",
            view.input.name
        )
    })
}
