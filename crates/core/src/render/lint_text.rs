//! The text form of a lint report: a header (input, format, guest, host facts, effective flags),
//! findings grouped by severity — each with its rule, cause, element, fix as libvirt XML and as
//! QEMU flags, and sources — a count line, notes, and the workload preset when asked for.

use super::{Style, format};
use crate::config::{Effective, PitPolicy};
use crate::facts::{HostFacts, Vendor};
use crate::lint::{Finding, LintReport, Recommendation, Severity};

const LABEL: usize = 9;

/// Renders `report` as text; `style` colours whole lines (the caller strips it when needed).
pub fn render(report: &LintReport, style: &Style) -> String {
    let mut out = String::new();
    if !report.input.is_empty() {
        header(&mut out, report, style);
        if report.findings.is_empty() {
            out.push_str(&Style::paint(style.good, "no findings"));
            out.push('\n');
        }
        for sev in Severity::WORST_FIRST {
            let group: Vec<&Finding> = report
                .findings
                .iter()
                .filter(|f| f.severity == sev)
                .collect();
            if group.is_empty() {
                continue;
            }
            let paint = match sev {
                Severity::Critical | Severity::High => style.bad,
                Severity::Medium => style.note,
                _ => style.header,
            };
            out.push('\n');
            out.push_str(&Style::paint(
                paint,
                &format!("{} ({})", sev.lint_name(), group.len()),
            ));
            out.push('\n');
            for f in group {
                finding(&mut out, f);
            }
        }
        out.push('\n');
        out.push_str(&counts(report));
        out.push('\n');
        for n in &report.notes {
            out.push_str(&Style::paint(style.note, &format!("note: {n}")));
            out.push('\n');
        }
    }
    if let Some(r) = &report.recommendation {
        if !report.input.is_empty() {
            out.push('\n');
        }
        recommendation(&mut out, r, &report.host, style);
    }
    out
}

fn header(out: &mut String, r: &LintReport, style: &Style) {
    let title = format!(
        "{} · {} · guest {}",
        r.input,
        r.format.name(),
        r.guest.describe()
    );
    out.push_str(&Style::paint(style.title, &title));
    out.push('\n');
    out.push_str(&format!("host: {}\n", host(&r.host)));
    out.push_str(&format::wrap(
        &format!("effective: {}", effective(&r.config)),
        11,
    ));
    for d in &r.documents {
        out.push_str(&format!(
            "document {} (line {}): guest {}\n",
            d.document,
            d.first_line,
            d.guest.describe()
        ));
    }
}

/// The host facts lint used, in a line.
pub(crate) fn host(h: &HostFacts) -> String {
    let mut parts = Vec::new();
    match &h.vendor {
        Some(Vendor::Intel) => parts.push("Intel".to_string()),
        Some(Vendor::Amd) => parts.push("AMD".to_string()),
        Some(Vendor::Hygon) => parts.push("Hygon".to_string()),
        Some(Vendor::Other(v)) => parts.push(v.clone()),
        None => {}
    }
    if let Some(a) = h.apicv {
        parts.push(format!("APICv {}", if a { "on" } else { "off" }));
    }
    if let Some(a) = h.avic {
        parts.push(format!("AVIC {}", if a { "on" } else { "off" }));
    }
    if let Some(cs) = &h.clocksource {
        parts.push(format!("clocksource {cs}"));
    }
    if parts.is_empty() {
        "unknown (host rules skipped; pass --host-vendor, --host-apicv or --host-facts auto)"
            .to_string()
    } else {
        parts.join(" · ")
    }
}

pub(crate) fn effective(e: &Effective) -> String {
    let mut flags: Vec<String> = Vec::new();
    if e.passthrough {
        flags.push("hv-passthrough".to_string());
    }
    flags.extend(e.hv.iter().map(|(f, v)| match v.as_str() {
        "on" => f.qemu().to_string(),
        v if v.contains(' ') => format!("{}='{v}'", f.qemu()),
        v => format!("{}={v}", f.qemu()),
    }));
    let mut parts = vec![if flags.is_empty() {
        "no hv flags".to_string()
    } else {
        flags.join(" ")
    }];
    if let Some(h) = e.hpet {
        parts.push(format!("HPET {}", if h { "on" } else { "off" }));
    }
    parts.push(format!(
        "PIT {}",
        match e.pit {
            None => "default (delay)",
            Some(PitPolicy::Delay) => "delay",
            Some(PitPolicy::Discard) => "discard",
            Some(PitPolicy::Other) => "other",
        }
    ));
    if e.rtc_catchup {
        parts.push("RTC catchup".to_string());
    }
    if e.kvm_hidden {
        parts.push("KVM hidden".to_string());
    }
    if e.hypervisor_hidden {
        parts.push("hypervisor bit hidden".to_string());
    }
    if let Some(n) = e.vcpus {
        parts.push(format!("{n} vCPU{}", if n == 1 { "" } else { "s" }));
    }
    if let Some(m) = e.max_vcpus.filter(|m| Some(*m) != e.vcpus) {
        parts.push(format!("up to {m} with hot-plug"));
    }
    if let Some(a) = e.arch.as_deref().filter(|a| !crate::config::is_x86(a)) {
        parts.push(a.to_string());
    }
    parts.join(" · ")
}

fn finding(out: &mut String, f: &Finding) {
    let doc = f
        .document
        .map(|d| format!(" [document {d}]"))
        .unwrap_or_default();
    out.push_str(&format::wrap(
        &format!("  {:<13}{}{doc}", f.rule, f.message),
        15,
    ));
    let mut field = |label: &str, text: &str| {
        for (i, line) in text.lines().enumerate() {
            let l = if i == 0 { label } else { "" };
            out.push_str(&format::wrap(
                &format!("{:6}{l:<LABEL$}{line}", ""),
                6 + LABEL,
            ));
        }
    };
    let at = match f.count {
        1 => f.element.to_string(),
        n => format!("{} (and {} more like it)", f.element, n - 1),
    };
    field("at", &at);
    for c in &f.caveats {
        field("caveat", c);
    }
    field("fix", &f.fix.summary);
    if let Some(x) = &f.fix.libvirt {
        field("libvirt", x);
    }
    if let Some(q) = &f.fix.qemu {
        field("qemu", q);
    }
    field("source", f.source);
}

pub(crate) fn counts(r: &LintReport) -> String {
    let n = r.findings.len();
    let parts: Vec<String> = Severity::WORST_FIRST
        .iter()
        .map(|&s| (s, r.count(s)))
        .filter(|(_, c)| *c > 0)
        .map(|(s, c)| format!("{c} {}", s.lint_name()))
        .collect();
    if parts.is_empty() {
        "0 findings".to_string()
    } else {
        format!(
            "{n} finding{}: {}",
            if n == 1 { "" } else { "s" },
            parts.join(", ")
        )
    }
}

fn recommendation(out: &mut String, r: &Recommendation, h: &HostFacts, style: &Style) {
    out.push_str(&Style::paint(
        style.title,
        &format!("recommended Hyper-V set: {} · host {}", r.preset, host(h)),
    ));
    out.push('\n');
    out.push_str(&Style::paint(
        style.header,
        "libvirt XML (merge into your domain):",
    ));
    out.push('\n');
    for line in r.libvirt_xml.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str(&Style::paint(
        style.header,
        "QEMU (keep your CPU model instead of host):",
    ));
    out.push('\n');
    for line in r.qemu_args.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    for n in &r.notes {
        out.push_str(&format::wrap(&format!("note: {n}"), 6));
    }
}
