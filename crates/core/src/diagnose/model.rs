//! What a diagnosis says, as data: findings with a stable dotted id and the cause tag of the
//! case corpus, a severity with the measure and thresholds behind it, the cost computed from the
//! input's own numbers, the evidence for and against, competing explanations with the check that
//! separates them, the cause in words, fixes per guest (QEMU flags, libvirt XML, host and guest
//! changes, advice tags), the expected effect for this input and the public sources. Numbers are
//! kept as numbers here; renderers format them.

use serde::Serialize;

use crate::config::{GuestFamily, Origin};
use crate::lint;
use crate::profile::{Key, TableKind};

pub use crate::severity::Severity;

/// How sure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Aggregate evidence fits, but so do the competing causes listed with it.
    Possible,
    /// Aggregate evidence points here more than to its competitors.
    Likely,
    /// The rows that prove it are in the input (ports, addresses, MSR indexes, a signature).
    Confirmed,
}

impl Confidence {
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Possible => "possible",
            Confidence::Likely => "likely",
            Confidence::Confirmed => "confirmed",
        }
    }
}

/// Where a finding stands in the list the user reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The main problem of its input: the worst, costliest finding at low severity or above.
    Main,
    /// Another problem worth fixing.
    Problem,
    /// Context: idle, host interrupts, the normal floor of exit handling.
    Context,
    /// A configuration finding no exit speaks to.
    Config,
}

/// One row (or one absent row, or a configuration fact) that a finding rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fact {
    /// The key as the input shows it: `EPT_MISCONFIG`, `0x608`, `0x6e0`, `io_exits`, `hv-time`.
    pub key: String,
    /// The table it is from: `vmexit`, `ioport`, `mmio`, `msr`, `kvm_stat`, `config`, …
    pub table: TableKind,
    /// `read`/`write`/`in`/`out`, when the input says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<&'static str>,
    /// The decoded name of a port, address or MSR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub count: u64,
    /// Share of the table's exits (without idle; of all exits for idle rows).
    pub count_share: Option<f64>,
    pub time_ns: Option<u64>,
    /// Share of the table's handled time (without idle; of all handled time for idle rows).
    pub time_share: Option<f64>,
    pub mean_ns: Option<f64>,
    /// Events per second: from the capture window, `--window`, or a printed rate column.
    pub per_second: Option<f64>,
    /// Events per IO, when the IO rate was given (`--iops`, `--fio`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_io: Option<f64>,
    /// True when the finding's cost counts this row; false for supporting context.
    pub explains: bool,
    /// What this row says for (or against) the finding, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The row's identity, for claiming it (a row is explained by one finding only).
    #[serde(skip)]
    pub(crate) id: Option<(TableKind, Key)>,
}

impl Fact {
    /// A fact that is not a row: a configuration flag, an absent exit, a host setting.
    pub fn said(table: &str, key: impl Into<String>, note: impl Into<String>) -> Fact {
        Fact {
            key: key.into(),
            table: TableKind::from_name(table),
            access: None,
            name: None,
            count: 0,
            count_share: None,
            time_ns: None,
            time_share: None,
            mean_ns: None,
            per_second: None,
            per_io: None,
            explains: false,
            note: Some(note.into()),
            id: None,
        }
    }

    /// This row as context, not counted in the finding's cost.
    pub fn context(mut self) -> Fact {
        self.explains = false;
        self
    }

    /// This fact with its figure per IO.
    pub fn per_io(mut self, per_io: Option<f64>) -> Fact {
        self.per_io = per_io;
        self
    }

    /// This fact with a remark.
    pub fn note(mut self, note: impl Into<String>) -> Fact {
        self.note = Some(note.into());
        self
    }
}

/// What a share is a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShareOf {
    /// Exit-handling time without idle.
    OverheadTime,
    /// Exits without idle.
    OverheadExits,
    /// All handled time, idle included.
    HandledTime,
    /// All exits, idle included.
    AllExits,
}

/// Where the vCPU time behind a CPU share comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuBasis {
    /// The capture window times the vCPU count: a share of one vCPU.
    WindowVcpus,
    /// The capture window alone (vCPU count unknown): a share of one host CPU, all the
    /// input's vCPUs together — an upper bound of the per-vCPU share.
    WindowOneCpu,
    /// No window: the total handled time including halts, which is about the vCPUs' wall time
    /// when they were halted most of the time.
    HandledWithHalts,
}

/// What a finding costs, from the input's own numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cost {
    pub exits: u64,
    /// Measured handling time of those exits.
    pub time_ns: Option<u64>,
    /// Without measured time: exits × the typical cost of their class (see `typical_ns`).
    pub estimated_ns: Option<u64>,
    /// The typical cost per exit the estimate used.
    pub typical_ns: Option<u64>,
    /// Exits per second (all vCPUs of the input).
    pub per_second: Option<f64>,
    /// Exits per second per vCPU, when the vCPU count is known.
    pub per_vcpu_second: Option<f64>,
    /// The share of vCPU time (or of one CPU) the exits took.
    pub cpu_share: Option<f64>,
    pub cpu_basis: Option<CpuBasis>,
    /// The share of the input's exit-handling cost (idle apart) the finding explains.
    pub share: Option<f64>,
    pub share_of: Option<ShareOf>,
}

impl Cost {
    /// The cost's share value (0 when none).
    pub fn share_value(&self) -> f64 {
        self.share.unwrap_or(0.0)
    }
}

/// The measure a severity was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// The share of vCPU time (or of one CPU) the cause costs.
    CpuShare,
    /// Events per second (per vCPU when known).
    Rate,
    /// The share of exit handling, when no absolute cost can be known.
    OverheadShare,
    /// A signature whose severity does not depend on its size (a hung vCPU, a crash).
    Signature,
    /// A lint finding of the configuration.
    Config,
    /// Context: reported, never alarming.
    Context,
    /// The share of wall time vCPUs were runnable but not running (ready %, %RDY).
    ReadyShare,
    /// Performance counters held to their own published thresholds (docs/counters.md).
    Counters,
    /// A vCPU's mean wait for a host CPU per dispatch, ns (Hyper-V's CPU Wait Time Per
    /// Dispatch).
    WaitPerDispatch,
}

/// Why a finding has its severity: the measure, its value and the thresholds it was held to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grade {
    pub measure: Measure,
    pub value: Option<f64>,
    /// The thresholds for low, medium and high on that measure.
    pub thresholds: Option<[f64; 3]>,
    /// The most this cause can be (the rule's ceiling), when it held the severity down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capped_at: Option<Severity>,
    /// Why, in words (no numbers: the renderer states them).
    pub why: String,
}

/// Which guest a fix (or cause text) is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ForGuest {
    Any,
    Windows,
    Linux,
}

/// One way to fix a finding; every part but the summary is optional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// The guest this fix is for (`any` when it does not depend on it).
    pub guest: ForGuest,
    pub summary: String,
    /// QEMU command-line flags (`-cpu …,hv-time=on`, `-global …`).
    pub qemu: Option<String>,
    /// The libvirt XML snippet.
    pub libvirt: Option<String>,
    /// A host change: kernel module parameter, sysctl, clocksource.
    pub host: Option<String>,
    /// A change inside the guest: kernel command line, driver, OS setting.
    pub in_guest: Option<String>,
    /// What advice this fix gives, in the case corpus's vocabulary (`advice.hv-time`, …).
    pub advice: Vec<&'static str>,
}

/// A cause that explains the same exits, shown with the finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rival {
    pub id: &'static str,
    pub tag: &'static str,
    pub title: &'static str,
    pub confidence: Confidence,
    /// What speaks for it here, in words.
    pub why: String,
}

/// What fixing a finding should change, computed for this input.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Effect {
    /// The part of the finding's cost the fix removes (0–1).
    pub removes: f64,
    pub exits_saved: Option<u64>,
    pub time_saved_ns: Option<u64>,
    pub cpu_share_saved: Option<f64>,
    pub cpu_basis: Option<CpuBasis>,
    pub share_saved: Option<f64>,
    pub share_of: Option<ShareOf>,
    /// The over-commit model's prediction behind the effect, when one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelEffect>,
    /// What changes, in words.
    pub text: String,
}

/// What the over-commit model (`virtlens model overcommit`) predicts for this input: run with
/// the host's CPUs, its vCPUs and what each wants of a CPU as measured, then with the change
/// the fix makes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelEffect {
    /// Which prediction applies: `erlang-c` (below saturation), `fair-share` (at or above it:
    /// each runnable vCPU gets CPUs ÷ load of a CPU), `never-waits` (fewer runnables than CPUs).
    pub model: &'static str,
    pub pcpus: u32,
    pub vcpus: u32,
    /// The share of time each vCPU wants a CPU (measured: run + wait over wall).
    pub demand: f64,
    /// Other load on the host, in CPUs (its other work and its own steal).
    pub background_cpus: f64,
    /// Ready share the model predicts for the input as it is, beside the measured one.
    pub ready_predicted: f64,
    pub ready_measured: f64,
    /// The change the prediction is for.
    pub scenario: Scenario,
    /// Ready share the model predicts after the change.
    pub ready_after: f64,
    /// How many times longer a vCPU's work takes, now and after the change.
    pub stretch_predicted: f64,
    pub stretch_after: f64,
}

/// A change the over-commit model is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "change")]
pub enum Scenario {
    /// The vCPUs cut to this many (the most that keep ready below the low threshold).
    FewerVcpus { vcpus: u32 },
    /// The host's other load gone (moved, or out-weighted by the VMs' CPU shares).
    NoOtherLoad,
}

/// A public source a user can open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Source {
    /// What it is: `lore`, `commit`, `doc`, `bug`, `talk`, `post`.
    pub kind: &'static str,
    /// The reference: a Message-ID, `project commit-id`, a bug id.
    #[serde(rename = "ref")]
    pub reference: &'static str,
    /// What it says, in a few words.
    pub title: &'static str,
    pub url: Option<&'static str>,
}

/// A lint finding of the configuration that a diagnosis joined (or that stands alone as a
/// `config.*` finding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigFact {
    /// The lint rule id (`HV-PERF-004`).
    pub rule: &'static str,
    /// As lint spells it (`error` for critical).
    #[serde(serialize_with = "crate::severity::lint_spelling")]
    pub severity: Severity,
    pub message: String,
    /// The XML element or argv flag at fault (or where the missing one belongs).
    pub element: Origin,
}

impl ConfigFact {
    pub fn of(f: &lint::Finding) -> ConfigFact {
        ConfigFact {
            rule: f.rule,
            severity: f.severity,
            message: f.message.clone(),
            element: f.element.clone(),
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable dotted id: `timer.acpi-pm-port`, `apic.apicv-inhibited-synic`, `config.hv-perf-002`.
    pub id: String,
    /// The cause tag of the case corpus (`timer.rtc-port`, `halt.churn`, …).
    pub tag: &'static str,
    /// The input (1-based) the finding is about.
    pub input: usize,
    /// 1-based place in its input's ranking.
    pub rank: usize,
    pub role: Role,
    pub severity: Severity,
    pub grade: Grade,
    /// One line: what is wrong.
    pub title: String,
    pub confidence: Confidence,
    /// `None` for configuration-only findings.
    pub cost: Option<Cost>,
    /// The rows that speak for it (those with `explains` make up the cost).
    pub evidence: Vec<Fact>,
    /// What speaks against it, or is missing.
    pub against: Vec<Fact>,
    /// Other causes of the same exits, with the check that tells them apart.
    pub competing: Vec<Rival>,
    pub check: Option<String>,
    /// The guest the words were picked for (`unknown`: both variants, labelled).
    pub words_for: GuestFamily,
    pub cause: String,
    pub fixes: Vec<Fix>,
    /// Every advice tag the fixes give.
    pub advice: Vec<&'static str>,
    pub effect: Effect,
    pub sources: Vec<Source>,
    /// What capture or check would confirm the diagnosis (when it is not confirmed).
    pub confirm: Option<String>,
    /// The configuration's lint findings that this finding joins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<ConfigFact>,
}

impl Finding {
    /// The share of the exit-handling cost it explains (0 when none).
    pub fn share_value(&self) -> f64 {
        self.cost.as_ref().map_or(0.0, Cost::share_value)
    }

    /// True for context findings (idle, host interrupts, the normal floor).
    pub fn is_context(&self) -> bool {
        self.role == Role::Context
    }

    /// True for findings about idle (reported apart from overhead).
    pub fn is_idle(&self) -> bool {
        self.id.starts_with("idle.")
    }

    /// The first fix's summary (empty when there is none).
    pub fn fix_summary(&self) -> &str {
        self.fixes.first().map_or("", |f| f.summary.as_str())
    }
}
