//! The text form of a diagnosis, written to read like an expert's answer on the KVM list: per
//! input a title, what was assumed (guest, host, totals), the headline, then the findings in
//! rank order — each with its evidence rows, cause, fix (QEMU and libvirt, host, guest),
//! expected effect, what would confirm it, the configuration it joins, why its severity, and
//! its sources — then the comparison of several inputs and the notes.

use super::Style;
use super::format;
use crate::diagnose::{Diagnosis, Evidence, Finding, InputReport, Severity};
use crate::facts::Vendor;

/// Indent of a finding's fields, and width of their labels.
const INDENT: usize = 3;
const LABEL: usize = 10;

/// Renders `d` as text; `style` colours whole lines (the caller strips it when needed).
pub fn render(d: &Diagnosis, style: &Style) -> String {
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
            out.push_str(&format::wrap(&format!("    {}", ch.summary), 4));
        }
        if c.ranking.len() > 2 {
            let order: Vec<String> = c.ranking.iter().map(|n| n.to_string()).collect();
            out.push_str(&format!("  least to most cost: {}\n", order.join(" < ")));
        }
    }
    let counts = counts(d);
    out.push('\n');
    out.push_str(&counts);
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
    let title = format!("{} · {}", r.input.name, r.input.format);
    out.push_str(&Style::paint(style.title, &title));
    out.push('\n');
    let host = match (&r.host_vendor, r.host_vendor_basis) {
        (Some(v), Some(b)) if b != "given" => format!("{} ({b})", vendor(v)),
        (Some(v), _) => vendor(v),
        (None, _) => "unknown".to_string(),
    };
    let mut facts = format!("guest {} · host {host}", r.guest.describe());
    if let Some(apicv) = d.host.apicv.or(d.host.avic) {
        facts.push_str(if apicv {
            ", APICv/AVIC on"
        } else {
            ", APICv/AVIC off"
        });
    }
    out.push_str(&format::wrap(&facts, 2));
    if let Some(t) = &r.totals {
        let mut s = format!("{} exits", format::count(t.count));
        if t.idle_count > 0 {
            s.push_str(&format!(" ({} idle)", format::count(t.idle_count)));
        }
        if let Some(all) = t.time_ns {
            s.push_str(&format!(", {} handled", format::duration(all as f64)));
            if let Some(o) = t.overhead_time_ns.filter(|_| t.idle_count > 0) {
                s.push_str(&format!(", {} without idle", format::duration(o as f64)));
            }
        }
        if let Some(r) = t.per_second {
            s.push_str(&format!(", {}", format::rate(r)));
        }
        out.push_str(&format!("{s}\n"));
    }
    if let Some(c) = &d.config {
        out.push_str(&format::wrap(
            &format!(
                "config {} ({}): {}",
                c.input,
                c.format.name(),
                flags(&c.effective)
            ),
            2,
        ));
    }
    out.push('\n');
    let paint = match r.worst {
        Some(Severity::Critical | Severity::High) => style.bad,
        Some(Severity::Medium) => style.note,
        _ => style.good,
    };
    out.push_str(&Style::paint(paint, &format::wrap(&r.headline, 0)));
}

fn vendor(v: &Vendor) -> String {
    match v {
        Vendor::Intel => "Intel".to_string(),
        Vendor::Amd => "AMD".to_string(),
        Vendor::Hygon => "Hygon".to_string(),
        Vendor::Other(s) => s.clone(),
    }
}

fn flags(e: &crate::config::Effective) -> String {
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
    let share = f
        .share
        .as_ref()
        .map(|s| format!(" · {} of {}", format::share(s.value), s.of))
        .unwrap_or_default();
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
        &format!("{}. [{}] {}{share}{sure}", f.rank, f.severity, f.id),
    ));
    out.push('\n');
    out.push_str(&format::wrap(&format!("{:INDENT$}{}", "", f.title), INDENT));
    evidence(out, &f.evidence);
    field(out, "cause", &f.cause);
    field(out, "fix", &f.fix.summary);
    if let Some(q) = &f.fix.qemu {
        field(out, "  qemu", q);
    }
    if let Some(x) = &f.fix.libvirt {
        field(out, "  libvirt", x);
    }
    if let Some(h) = &f.fix.host {
        field(out, "  host", h);
    }
    if let Some(g) = &f.fix.guest {
        field(out, "  guest", g);
    }
    field(out, "expect", &f.expected_effect);
    if let Some(c) = &f.confirm {
        field(out, "confirm", c);
    }
    for c in &f.config {
        field(
            out,
            "config",
            &format!(
                "{} ({}) at {}: {}",
                c.rule, c.severity, c.element, c.message
            ),
        );
    }
    field(out, "severity", &f.severity_reason);
    field(out, "source", &f.source);
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

/// The evidence rows, aligned: key (and name), count, share, time, share, mean, rate.
fn evidence(out: &mut String, rows: &[Evidence]) {
    const N: usize = 7;
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
            if e.count == 0 && e.note.is_some() {
                return c;
            }
            c[1] = format::count(e.count);
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
        let label = if n == 0 { "evidence" } else { "" };
        let mut line = format!("{:INDENT$}{label:<LABEL$}{:<w0$}", "", c[0], w0 = w[0]);
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

fn counts(d: &Diagnosis) -> String {
    let parts: Vec<String> = Severity::WORST_FIRST
        .iter()
        .map(|&s| (s, d.findings.iter().filter(|f| f.severity == s).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    let n = d.findings.len();
    if n == 0 {
        "0 findings".to_string()
    } else {
        format!(
            "{n} finding{}: {}{}",
            if n == 1 { "" } else { "s" },
            parts.join(", "),
            if d.findings
                .iter()
                .any(|f| f.evidence.iter().any(|e| !e.explains))
            {
                " (evidence rows marked · are context, not counted in the share)"
            } else {
                ""
            }
        )
    }
}
