//! The answer in one paragraph: the main avoidable cost and its fix when there is one, else why
//! nothing is alarming (an idle guest, a healthy exit mix), else that there was nothing to read.

use super::finding::{Confidence, Finding, Severity};
use super::view::View;
use super::words;

/// The headline of one input, from its ranked findings.
pub fn of(view: &View, findings: &[Finding]) -> String {
    if view.is_empty() {
        return "Nothing to diagnose: the input holds no exit, port, MMIO or MSR rows.".to_string();
    }
    let main = findings
        .iter()
        .filter(|f| !f.is_idle() && f.severity >= Severity::Medium)
        .max_by(|a, b| {
            a.severity
                .cmp(&b.severity)
                .then(a.share_value().total_cmp(&b.share_value()))
                .then(b.rank.cmp(&a.rank))
        });
    if let Some(f) = main {
        let share = f
            .share
            .as_ref()
            .map(|s| format!(" — {} of the {}", words::pct(s.value), s.of))
            .unwrap_or_default();
        let sure = match f.confidence {
            Confidence::Confirmed => String::new(),
            c => format!(" ({}, from aggregate evidence)", c.name()),
        };
        let more = findings
            .iter()
            .filter(|x| x.severity >= Severity::Medium && x.id != f.id)
            .count();
        let more = match more {
            0 => String::new(),
            1 => " One more finding needs attention.".to_string(),
            n => format!(" {n} more findings need attention."),
        };
        return format!(
            "Main problem: {} [{}]{share}{sure}. Fix: {}.{more}",
            f.title, f.id, f.fix.summary
        );
    }
    let idle = findings.iter().find(|f| f.is_idle());
    // Findings that describe the normal floor of exit handling, not something to fix.
    let floor = |f: &Finding| super::compare::FLOOR.contains(&f.id.as_str());
    let pick = findings
        .iter()
        .filter(|f| !f.is_idle() && !f.id.starts_with("config."))
        .min_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(floor(a).cmp(&floor(b)))
                .then(b.share_value().total_cmp(&a.share_value()))
        });
    let share = |f: &Finding| {
        f.share
            .as_ref()
            .map(|x| format!(", {} of the {}", words::pct(x.value), x.of))
            .unwrap_or_default()
    };
    if let Some(u) = pick.filter(|p| p.id == "unknown.exit-codes" && p.share_value() >= 0.5) {
        return format!(
            "Not diagnosed: most exits are ones virtlens cannot name [{}{}]; the rules cover x86 \
             (VMX, SVM, PVM).",
            u.id,
            share(u)
        );
    }
    let mut s = match idle {
        Some(i) => format!(
            "Nothing alarming: the guest is mostly idle (halts are {} of {}: waiting, not overhead).",
            i.share
                .as_ref()
                .map_or_else(|| "most".to_string(), |x| words::pct(x.value)),
            i.share.as_ref().map_or("handled time", |x| x.of.as_str())
        ),
        None => "Nothing alarming: no costly problem found.".to_string(),
    };
    match pick {
        Some(p) if floor(p) => s.push_str(&format!(
            " The rest is the normal floor of exit handling: {} [{}{}].",
            p.title,
            p.id,
            share(p)
        )),
        Some(p) => {
            let sure = match p.confidence {
                Confidence::Confirmed => String::new(),
                c => format!(", {}", c.name()),
            };
            s.push_str(&format!(
                " Worth a look: {} [{}, {}{sure}{}].",
                p.title,
                p.id,
                p.severity,
                share(p)
            ));
        }
        None => {}
    }
    s
}
