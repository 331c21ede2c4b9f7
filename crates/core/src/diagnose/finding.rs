//! What a diagnosis says: findings with a stable dotted id, a severity, the share of the
//! exit-handling cost they explain, the evidence rows and numbers, the cause in plain words, the
//! fix (QEMU flags and libvirt XML, a host kernel parameter, or a guest change), the expected
//! effect, the sources, how sure the diagnosis is and what capture would confirm it, and the
//! lint findings of the configuration that say the same thing.

use std::fmt;

use serde::Serialize;

use crate::config::Origin;
use crate::lint;
use crate::profile::{Key, TableKind};

/// How bad a finding is (ordered: `Info` < … < `Critical`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    /// The guest makes no progress, or the configuration will not start.
    Critical,
}

impl Severity {
    /// Every severity, worst first.
    pub const WORST_FIRST: [Severity; 5] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// `info`, `low`, `medium`, `high`, `critical`.
    pub fn parse(s: &str) -> Option<Severity> {
        Severity::WORST_FIRST.into_iter().find(|v| v.name() == s)
    }

    /// One step less severe (`Info` stays `Info`).
    pub fn down(self) -> Severity {
        match self {
            Severity::Critical => Severity::High,
            Severity::High => Severity::Medium,
            Severity::Medium => Severity::Low,
            Severity::Low | Severity::Info => Severity::Info,
        }
    }

    /// The diagnose severity of a lint severity (a configuration QEMU rejects is critical).
    pub fn from_lint(s: lint::Severity) -> Severity {
        match s {
            lint::Severity::Info => Severity::Info,
            lint::Severity::Low => Severity::Low,
            lint::Severity::Medium => Severity::Medium,
            lint::Severity::High => Severity::High,
            lint::Severity::Error => Severity::Critical,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How sure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Aggregate evidence fits, but so do other causes (the cause names them).
    Possible,
    /// Aggregate evidence (exit reasons without ports/addresses/MSRs) points here.
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

/// What a share is a share of.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Share {
    /// 0–1.
    pub value: f64,
    /// `time` when durations are known, else `exits`.
    pub measure: &'static str,
    /// In words: "exit-handling time without idle", "MSR accesses", …
    pub of: String,
}

/// One row (or one absent row) that a finding rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The key as the input shows it: `EPT_MISCONFIG`, `0x608`, `0x6e0`, `io_exits`.
    pub key: String,
    /// The table it is from: `vmexit`, `ioport`, `mmio`, `msr`, `kvm_stat`, …
    pub table: TableKind,
    /// `read`/`write`/`in`/`out`, when the input says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<&'static str>,
    /// The decoded name of a port, address or MSR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub count: u64,
    /// Share of the table's exits without idle (of all exits for idle rows).
    pub count_share: Option<f64>,
    pub time_ns: Option<u64>,
    /// Share of the table's handled time without idle (of all handled time for idle rows).
    pub time_share: Option<f64>,
    pub mean_ns: Option<f64>,
    pub per_second: Option<f64>,
    /// True when the finding's share counts this row; false for supporting context.
    pub explains: bool,
    /// What this row says for the finding (e.g. "absent: no Hyper-V hypercalls").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The row's identity, for claiming it (a row is explained by one finding only).
    #[serde(skip)]
    pub(crate) id: Option<(TableKind, Key)>,
}

impl Evidence {
    /// This row as context, not counted in the finding's share.
    pub fn context(mut self) -> Evidence {
        self.explains = false;
        self
    }

    /// This row with a remark.
    pub fn note(mut self, note: impl Into<String>) -> Evidence {
        self.note = Some(note.into());
        self
    }
}

/// How to fix a finding; every part is optional, at least one is given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// In words.
    pub summary: String,
    /// QEMU command-line flags (`-cpu …,hv-time=on`, `-global …`).
    pub qemu: Option<String>,
    /// The libvirt XML snippet.
    pub libvirt: Option<String>,
    /// A host change: kernel module parameter, sysctl, clocksource.
    pub host: Option<String>,
    /// A guest change: kernel command line, driver, OS setting.
    pub guest: Option<String>,
}

impl Fix {
    /// A fix in words only.
    pub fn words(summary: impl Into<String>) -> Fix {
        Fix {
            summary: summary.into(),
            ..Fix::default()
        }
    }

    /// A fix with QEMU flags and libvirt XML.
    pub fn vm(summary: &str, qemu: &str, libvirt: &str) -> Fix {
        Fix {
            summary: summary.to_string(),
            qemu: Some(qemu.to_string()),
            libvirt: Some(libvirt.to_string()),
            ..Fix::default()
        }
    }

    pub fn host(mut self, host: &str) -> Fix {
        self.host = Some(host.to_string());
        self
    }

    pub fn guest(mut self, guest: &str) -> Fix {
        self.guest = Some(guest.to_string());
        self
    }

    /// The fix of a lint finding (QEMU and libvirt parts as lint gives them).
    pub fn from_lint(f: &lint::Fix) -> Fix {
        Fix {
            summary: f.summary.clone(),
            qemu: f.qemu.clone(),
            libvirt: f.libvirt.clone(),
            ..Fix::default()
        }
    }
}

/// A lint finding of the configuration that a diagnosis joined (or that stands alone as a
/// `config.*` finding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigEvidence {
    /// The lint rule id (`HV-PERF-004`).
    pub rule: &'static str,
    pub severity: lint::Severity,
    pub message: String,
    /// The XML element or argv flag at fault (or where the missing one belongs).
    pub element: Origin,
}

impl ConfigEvidence {
    pub fn of(f: &lint::Finding) -> ConfigEvidence {
        ConfigEvidence {
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
    /// The input (1-based) the finding is about.
    pub input: usize,
    /// 1-based place in its input's ranking.
    pub rank: usize,
    pub severity: Severity,
    /// Why this severity: the share, rate or cap behind it.
    pub severity_reason: String,
    /// One line: what is wrong.
    pub title: String,
    /// The share of the cost the finding explains (`None` for configuration-only and idle
    /// findings, which explain no overhead).
    pub share: Option<Share>,
    pub evidence: Vec<Evidence>,
    pub cause: String,
    pub fix: Fix,
    pub expected_effect: String,
    pub source: String,
    pub confidence: Confidence,
    /// What capture or check would confirm the diagnosis (when it is not confirmed).
    pub confirm: Option<String>,
    /// The configuration's lint findings that this finding joins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<ConfigEvidence>,
}

impl Finding {
    /// A finding with everything but the texts empty; rules fill it with the builder methods.
    pub fn new(id: &str, severity: Severity, title: impl Into<String>) -> Finding {
        Finding {
            id: id.to_string(),
            input: 0,
            rank: 0,
            severity,
            severity_reason: String::new(),
            title: title.into(),
            share: None,
            evidence: Vec::new(),
            cause: String::new(),
            fix: Fix::default(),
            expected_effect: String::new(),
            source: String::new(),
            confidence: Confidence::Confirmed,
            confirm: None,
            config: Vec::new(),
        }
    }

    pub fn why(mut self, reason: impl Into<String>) -> Finding {
        self.severity_reason = reason.into();
        self
    }

    pub fn share(mut self, share: Option<Share>) -> Finding {
        self.share = share;
        self
    }

    pub fn evidence(mut self, rows: Vec<Evidence>) -> Finding {
        self.evidence = rows;
        self
    }

    pub fn cause(mut self, text: impl Into<String>) -> Finding {
        self.cause = text.into();
        self
    }

    pub fn fix(mut self, fix: Fix) -> Finding {
        self.fix = fix;
        self
    }

    pub fn effect(mut self, text: impl Into<String>) -> Finding {
        self.expected_effect = text.into();
        self
    }

    pub fn source(mut self, text: impl Into<String>) -> Finding {
        self.source = text.into();
        self
    }

    /// Marks the finding as resting on aggregate evidence: how sure, and what would confirm it.
    pub fn unconfirmed(mut self, confidence: Confidence, confirm: impl Into<String>) -> Finding {
        self.confidence = confidence;
        self.confirm = Some(confirm.into());
        self
    }

    /// The share value (0 when none).
    pub fn share_value(&self) -> f64 {
        self.share.as_ref().map_or(0.0, |s| s.value)
    }

    /// True for findings about idle (reported apart from overhead).
    pub fn is_idle(&self) -> bool {
        self.id.starts_with("idle.")
    }
}
