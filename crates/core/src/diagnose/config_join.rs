//! `config.*` and the join: when a configuration is given, each lint finding (computed by
//! [`crate::lint`] under the same host facts and guest) that names the cause of an exit finding
//! is folded into it — one finding naming both the evidence and the XML element or flag, citing
//! the rule — and the rest stand alone as `config.<rule>` findings.

use super::evidence::EvidenceSet;
use super::hypotheses::{ApicRule, RuleId, SpinRule, TimerRule};
use super::model::{Confidence, ConfigFact, Effect, Finding, Fix, ForGuest, Grade, Measure, Role};
use super::words::sources;
use crate::config::GuestFamily;
use crate::lint;

/// Which lint rules name the cause of which diagnosis, in the order they are preferred for the fix.
const JOINS: &[(RuleId, &[&str])] = &[
    (
        RuleId::Timer(TimerRule::AcpiPmPort),
        &["HV-PERF-004", "HV-DEP-002", "HV-PERF-001"],
    ),
    (
        RuleId::Timer(TimerRule::HpetMmio),
        &["HV-PERF-002", "HV-PERF-001", "HV-PERF-004", "HV-DEP-002"],
    ),
    (
        RuleId::Timer(TimerRule::RtcPort),
        &["HV-PERF-003", "HV-PERF-002", "HV-PERF-001"],
    ),
    (RuleId::Timer(TimerRule::HvRefCountMsr), &["HV-PERF-012"]),
    (
        RuleId::Timer(TimerRule::StimerMessageNested),
        &["HV-PERF-011"],
    ),
    (
        RuleId::Timer(TimerRule::LapicHypervisorHidden),
        &["HV-OPS-013"],
    ),
    (
        RuleId::Apic(ApicRule::ApicvInhibitedSynic),
        &["HV-PERF-005", "HV-PERF-006"],
    ),
    (
        RuleId::Apic(ApicRule::ApicAccessMmio),
        &["HV-PERF-005", "HV-PERF-006"],
    ),
    (
        RuleId::Apic(ApicRule::ApicvInhibited),
        &["HV-PERF-007", "HV-PERF-005"],
    ),
    (RuleId::Apic(ApicRule::ApicvOff), &["HV-HOST-002"]),
    (RuleId::Apic(ApicRule::IpiStorm), &["HV-PERF-009"]),
    (RuleId::Spin(SpinRule::Pause), &["HV-PERF-010"]),
];

/// Folds the configuration's lint findings into `findings` and appends the rest as `config.*`.
pub(super) fn join(ev: &EvidenceSet, findings: &mut Vec<Finding>) {
    let Some(c) = &ev.config else {
        return;
    };
    let mut left: Vec<&lint::Finding> = c.lint.iter().collect();
    for f in findings.iter_mut() {
        let Some((_, rules)) = JOINS.iter().find(|(id, _)| id.as_str() == f.id) else {
            continue;
        };
        let mut joined: Vec<&lint::Finding> = Vec::new();
        for rule in *rules {
            if let Some(i) = left.iter().position(|l| l.rule == *rule) {
                joined.push(left.remove(i));
            }
        }
        let Some(first) = joined.first() else {
            continue;
        };
        let worst = joined
            .iter()
            .map(|l| l.severity)
            .max()
            .unwrap_or(first.severity);
        if worst > f.severity {
            f.severity = worst;
            f.grade.why = format!(
                "{}; raised by the configuration's lint findings",
                f.grade.why
            );
        }
        f.cause = format!(
            "{} The configuration says the same: {} ({} at {}).",
            f.cause, first.message, first.rule, first.element
        );
        // The configuration's own fix adds exactly what this VM lacks; keep what the diagnosis
        // adds beyond it (hv-avic next to hv-stimer, host and guest changes).
        let lint = Fix::from_lint(&first.fix);
        if let Some(mine) = f
            .fixes
            .iter_mut()
            .find(|x| matches!(x.guest, ForGuest::Windows | ForGuest::Any) && x.qemu.is_some())
        {
            mine.qemu = merge(lint.qemu, mine.qemu.take(), ',');
            mine.libvirt = merge(lint.libvirt, mine.libvirt.take(), '\n');
        } else {
            f.fixes.push(lint);
        }
        if f.confidence == Confidence::Possible {
            f.confidence = Confidence::Likely;
        }
        f.config = joined.into_iter().map(ConfigFact::of).collect();
    }
    for l in left {
        findings.push(standalone(l, ev.guest.family));
    }
}

impl Fix {
    /// The fix of a lint finding (QEMU and libvirt parts as lint gives them).
    pub fn from_lint(f: &lint::Fix) -> Fix {
        Fix {
            guest: ForGuest::Any,
            summary: f.summary.clone(),
            qemu: f.qemu.clone(),
            libvirt: f.libvirt.clone(),
            host: None,
            in_guest: None,
            advice: Vec::new(),
        }
    }
}

/// `base` with the `sep`-separated parts of `extra` it lacks appended (`-cpu …,a` + `-cpu …,a,b`
/// → `-cpu …,a,b`); `extra` alone when there is no base.
fn merge(base: Option<String>, extra: Option<String>, sep: char) -> Option<String> {
    let Some(mut b) = base else {
        return extra;
    };
    if let Some(e) = extra {
        let missing: Vec<&str> = e
            .split(sep)
            .map(str::trim)
            .filter(|p| !p.is_empty() && !p.starts_with("-cpu") && !b.contains(p))
            .collect();
        for p in missing {
            b.push(sep);
            b.push_str(p);
        }
    }
    Some(b)
}

/// A lint finding no exit evidence speaks to.
fn standalone(l: &lint::Finding, guest: GuestFamily) -> Finding {
    Finding {
        id: format!("config.{}", l.rule.to_ascii_lowercase()),
        tag: "config",
        input: 0,
        rank: 0,
        role: Role::Config,
        severity: l.severity,
        grade: Grade {
            measure: Measure::Config,
            value: None,
            thresholds: None,
            capped_at: None,
            why: "the configuration's lint severity: no exit in the input speaks to it".into(),
        },
        title: l
            .message
            .split(": ")
            .next()
            .unwrap_or(&l.message)
            .to_string(),
        confidence: Confidence::Confirmed,
        cost: None,
        evidence: Vec::new(),
        against: Vec::new(),
        competing: Vec::new(),
        check: None,
        words_for: guest,
        cause: format!("{} ({} at {}).", l.message, l.rule, l.element),
        fixes: vec![Fix::from_lint(&l.fix)],
        advice: Vec::new(),
        effect: Effect {
            text: "as the lint rule states".into(),
            ..Effect::default()
        },
        sources: vec![sources::QEMU_HYPERV, sources::LIBVIRT_HYPERV],
        confirm: None,
        config: vec![ConfigFact::of(l)],
    }
}
