//! The text form of a diagnosis, written to read like an expert's answer on the KVM list: per
//! input a title, what was assumed (guest, host, time base), the answer, then the findings in
//! rank order — the main problem first, context after — each with its cost, the evidence for and
//! against, the cause, the competing causes and the check that separates them, the fixes per
//! guest (QEMU, libvirt, host, guest), the expected effect for this input, what would confirm
//! it, the configuration it joins, why its severity, and its sources; then the comparison of
//! several inputs and the notes.

use super::Style;
use super::diagnose_numbers as num;
use super::format;
use crate::diagnose::{Diagnosis, Fact, Finding, ForGuest, InputReport, Role, Severity, Verdict};

/// Indent of a finding's fields, and width of their labels.
const INDENT: usize = 3;
const LABEL: usize = 10;

/// Renders `d` as text; `style` colours whole lines (the caller strips it when needed).
pub(crate) fn render(d: &Diagnosis, style: &Style) -> String {
    let mut out = String::new();
    for (i, input) in d.inputs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        header(&mut out, d, input, style);
        let findings: Vec<&Finding> = d.of_input(input.input.number).collect();
        if findings.is_empty() {
            out.push_str(&Style::paint(style.good, "no findings"));
            out.push('\n');
        }
        for f in findings {
            out.push('\n');
            finding(&mut out, f, style);
        }
    }
    if let Some(c) = &d.comparison {
        out.push('\n');
        out.push_str(&Style::paint(
            style.title,
            &format!(
                "Did it help? (each input against input 1: {})",
                d.inputs.first().map_or("", |i| i.input.name.as_str())
            ),
        ));
        out.push('\n');
        for ch in &c.changes {
            let paint = match ch.verdict {
                "helped" => style.good,
                "worse" => style.bad,
                _ => style.note,
            };
            out.push_str(&Style::paint(
                paint,
                &format!("  {} {}: {}", ch.input, ch.name, ch.verdict),
            ));
            out.push('\n');
            out.push_str(&format::wrap(&format!("    {}", num::change(c, ch)), 4));
        }
        if c.ranking.len() > 2 {
            let order: Vec<String> = c.ranking.iter().map(|n| n.to_string()).collect();
            out.push_str(&format!("  least to most cost: {}\n", order.join(" < ")));
        }
    }
    out.push('\n');
    out.push_str(&counts(d));
    out.push('\n');
    for n in &d.notes {
        out.push_str(&Style::paint(
            style.note,
            &format::wrap(&format!("note: {n}"), 6),
        ));
    }
    out
}

fn header(out: &mut String, d: &Diagnosis, r: &InputReport, style: &Style) {
    out.push_str(&Style::paint(
        style.title,
        &format!("{} · {}", r.input.name, r.input.format),
    ));
    out.push('\n');
    for line in super::input_facts::facts(r) {
        out.push_str(&format::wrap(&format!("  {line}"), 4));
    }
    if let Some(c) = &d.config {
        out.push_str(&format::wrap(
            &format!(
                "  config {} ({}): {}",
                c.input,
                c.format.name(),
                flags(&c.effective)
            ),
            4,
        ));
    }
    out.push('\n');
    let paint = match r.verdict {
        Verdict::Problem => style.bad,
        Verdict::WorthALook | Verdict::NotDiagnosed => style.note,
        _ => style.good,
    };
    out.push_str(&Style::paint(paint, &format::wrap(&num::answer(d, r), 0)));
}

pub(crate) fn flags(e: &crate::config::Effective) -> String {
    let mut parts: Vec<String> = Vec::new();
    if e.passthrough {
        parts.push("hv-passthrough".into());
    }
    parts.extend(e.hv.keys().map(|f| f.qemu().to_string()));
    if parts.is_empty() {
        parts.push("no Hyper-V enlightenments".into());
    }
    if e.hypervisor_hidden {
        parts.push("hypervisor bit hidden".into());
    }
    if e.kvm_hidden {
        parts.push("KVM hidden".into());
    }
    if e.hpet == Some(false) {
        parts.push("HPET off".into());
    }
    parts.join(", ")
}

fn finding(out: &mut String, f: &Finding, style: &Style) {
    let role = match f.role {
        Role::Main => " · main problem",
        Role::Context => " · context",
        Role::Config => " · configuration",
        Role::Problem => "",
    };
    let sure = match f.confidence.name() {
        "confirmed" => String::new(),
        c => format!(" · {c}"),
    };
    let paint = match f.severity {
        Severity::Critical | Severity::High => style.bad,
        Severity::Medium => style.note,
        _ => style.header,
    };
    out.push_str(&Style::paint(
        paint,
        &format!("{}. [{}] {}{role}{sure}", f.rank, f.severity, f.id),
    ));
    out.push('\n');
    out.push_str(&format::wrap(&format!("{:INDENT$}{}", "", f.title), INDENT));
    if let Some(c) = f.cost.as_ref().map(num::cost).filter(|c| !c.is_empty()) {
        field(out, "cost", &c);
    }
    facts(out, "evidence", &f.evidence);
    facts(out, "against", &f.against);
    field(out, "cause", &f.cause);
    for r in &f.competing {
        field(
            out,
            "competing",
            &format!("{} ({}): {}", r.id, r.confidence.name(), r.why),
        );
    }
    if let Some(c) = &f.check {
        field(out, "check", c);
    }
    for fix in &f.fixes {
        let who = match fix.guest {
            ForGuest::Any => String::new(),
            ForGuest::Windows => "[Windows] ".into(),
            ForGuest::Linux => "[Linux] ".into(),
        };
        field(out, "fix", &format!("{who}{}", fix.summary));
        for (label, part) in [
            ("  qemu", &fix.qemu),
            ("  libvirt", &fix.libvirt),
            ("  host", &fix.host),
            ("  guest", &fix.in_guest),
        ] {
            if let Some(p) = part {
                field(out, label, p);
            }
        }
    }
    field(out, "expect", &num::effect(&f.effect));
    if let Some(c) = &f.confirm {
        field(out, "confirm", c);
    }
    for c in &f.config {
        field(
            out,
            "config",
            &format!(
                "{} ({}) at {}: {}",
                c.rule,
                c.severity.lint_name(),
                c.element,
                c.message
            ),
        );
    }
    field(out, "severity", &num::grade(f.severity.name(), &f.grade));
    for s in &f.sources {
        let url = s.url.map(|u| format!(" <{u}>")).unwrap_or_default();
        field(
            out,
            "source",
            &format!("{} — {}{url}", s.reference, s.title),
        );
    }
}

fn field(out: &mut String, label: &str, text: &str) {
    for (i, line) in text.lines().enumerate() {
        let l = if i == 0 { label } else { "" };
        out.push_str(&format::wrap(
            &format!("{:INDENT$}{l:<LABEL$}{line}", ""),
            INDENT + LABEL,
        ));
    }
}

/// Rows of facts, aligned: key (and name), count, share, time, share, mean, rate.
fn facts(out: &mut String, label: &str, rows: &[Fact]) {
    const N: usize = 8;
    let cells: Vec<[String; N]> = rows
        .iter()
        .map(|e| {
            let mut key = e.key.clone();
            if let Some(a) = e.access {
                key.push_str(&format!(" {a}"));
            }
            if let Some(n) = &e.name {
                key.push_str(&format!(" ({n})"));
            }
            if !e.explains {
                key.push_str(" ·");
            }
            let mut c: [String; N] = Default::default();
            c[0] = key;
            c[7] = e
                .per_io
                .map(|v| format!("{}/IO", format::per_io(v)))
                .unwrap_or_default();
            if e.count == 0 && e.note.is_some() && e.time_share.is_none() {
                return c;
            }
            // A performance counter's value is a rate, a share or a time, not a count.
            let counter = e.table.as_str() == "perfmon";
            if e.count > 0 || (e.time_share.is_none() && !counter) {
                c[1] = format::count(e.count);
            }
            c[2] = e.count_share.map(format::share).unwrap_or_default();
            c[3] = e
                .time_ns
                .map(|t| format::duration(t as f64))
                .unwrap_or_default();
            c[4] = e.time_share.map(format::share).unwrap_or_default();
            c[5] = e
                .mean_ns
                .map(|m| format!("{} each", format::duration(m)))
                .unwrap_or_default();
            c[6] = e.per_second.map(format::rate).unwrap_or_default();
            c
        })
        .collect();
    let mut w = [0usize; N];
    for c in &cells {
        for (i, x) in c.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    for (n, (c, e)) in cells.iter().zip(rows).enumerate() {
        let l = if n == 0 { label } else { "" };
        let mut line = format!("{:INDENT$}{l:<LABEL$}{:<w0$}", "", c[0], w0 = w[0]);
        for (i, x) in c.iter().enumerate().skip(1) {
            if w[i] > 0 {
                let pad = w[i] - x.chars().count();
                line.push_str(&format!("  {}{x}", " ".repeat(pad)));
            }
        }
        if let Some(note) = &e.note {
            line.push_str(&format!("  {note}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

pub(crate) fn counts(d: &Diagnosis) -> String {
    let parts: Vec<String> = Severity::WORST_FIRST
        .iter()
        .map(|&s| (s, d.findings.iter().filter(|f| f.severity == s).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    let n = d.findings.len();
    if n == 0 {
        return "0 findings".to_string();
    }
    let context = d
        .findings
        .iter()
        .any(|f| f.evidence.iter().any(|e| !e.explains));
    format!(
        "{n} finding{}: {}{}",
        if n == 1 { "" } else { "s" },
        parts.join(", "),
        if context {
            " (evidence rows marked · are context, not counted in the cost)"
        } else {
            ""
        }
    )
}
