//! The `diagnose` page: per input the answer, what was assumed, the cost of each finding as
//! bars (the share of the exit handling it explains), then every finding with its evidence,
//! cause, fixes as copyable QEMU and libvirt snippets, expected effect and sources; then what
//! changed between inputs.

use super::chart::{self, Bar, Chart, Group, Scale};
use super::measured_on;
use super::page::{Block, DataTable, FindingView, FixView, Page, Section, SourceView};
use crate::diagnose::{Diagnosis, Fact, Finding, ForGuest, InputReport, Role};
use crate::render::diagnose_numbers as num;
use crate::render::{diagnose_text, format};

pub(super) fn page(d: &Diagnosis) -> Page {
    let names: Vec<String> = d.inputs.iter().map(|i| i.input.name.clone()).collect();
    let measured: Vec<String> = d
        .inputs
        .iter()
        .map(|i| measured_on(i.evidence.host.backend_label().as_deref()))
        .collect();
    let mut page = Page::new(
        "virtlens diagnose",
        names.join(" · "),
        dedup(measured).join("; "),
    );
    for r in &d.inputs {
        page.summary
            .push(format!("{}: {}", r.input.name, num::answer(d, r)));
    }
    page.summary.push(diagnose_text::counts(d));
    for r in &d.inputs {
        page.sections.push(input_section(d, r));
    }
    if let Some(c) = &d.comparison {
        let mut s = Section::new("did-it-help", "Did it help?");
        s.intro.push(format!(
            "Each input against input 1 ({}).",
            names.first().map_or("", String::as_str)
        ));
        for ch in &c.changes {
            s.blocks.push(Block::Para {
                text: format!(
                    "{} {}: {}. {}",
                    ch.input,
                    ch.name,
                    ch.verdict,
                    num::change(c, ch)
                ),
            });
        }
        page.sections.push(s);
    }
    page.notes = d.notes.clone();
    page
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in v {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn input_section(d: &Diagnosis, r: &InputReport) -> Section {
    let n = r.input.number;
    let mut s = Section::new(
        format!("input-{n}"),
        format!("{} · {}", r.input.name, r.input.format),
    );
    s.intro.extend(crate::render::input_facts::facts(r));
    if let Some(c) = &d.config {
        s.intro.push(format!(
            "config {} ({}): {}",
            c.input,
            c.format.name(),
            diagnose_text::flags(&c.effective)
        ));
    }
    let findings: Vec<&Finding> = d.of_input(n).collect();
    if findings.is_empty() {
        s.blocks.push(Block::Para {
            text: "No findings.".into(),
        });
    }
    let measured = measured_on(r.evidence.host.backend_label().as_deref());
    if let Some(c) = costs(n, &findings, &measured) {
        s.blocks.push(Block::Chart(Box::new(chart::layout(c))));
    }
    for f in findings {
        s.blocks.push(Block::Finding(Box::new(finding(f))));
    }
    s
}

/// The share of the exit handling each finding explains, context findings apart.
fn costs(n: usize, findings: &[&Finding], measured: &str) -> Option<Chart> {
    let costed: Vec<&&Finding> = findings
        .iter()
        .filter(|f| f.cost.as_ref().and_then(|c| c.share).is_some())
        .collect();
    if costed.is_empty() {
        return None;
    }
    let mut table = DataTable::new("Cost per finding", &["finding", "severity", "cost"]);
    table.numeric = vec![false, false, false];
    let groups = costed
        .iter()
        .map(|f| {
            let c = f.cost.as_ref();
            let share = c.and_then(|c| c.share).unwrap_or(0.0);
            let of = c.and_then(|c| c.share_of).map(num::share_of).unwrap_or("");
            table.rows.push(vec![
                f.id.clone(),
                f.severity.name().to_string(),
                c.map(num::cost).unwrap_or_default(),
            ]);
            Group {
                label: format!("{} [{}]", f.id, f.severity),
                bars: vec![Bar {
                    series: usize::from(f.role == Role::Context),
                    value: share * 100.0,
                    shown: format!("{} {of}", format::share(share)),
                }],
            }
        })
        .collect();
    Some(Chart {
        id: format!("input-{n}-costs"),
        title: "What each finding costs".into(),
        desc: "The share of the input's exit handling (idle apart) each finding explains, in \
               rank order; context findings (idle, host interrupts, the normal floor) are drawn \
               with a lighter pattern."
            .into(),
        axis: "share of exit handling explained (%)".into(),
        series: vec!["problem".into(), "context".into()],
        groups,
        scale: Scale::Linear,
        tick: |v| format!("{v:.0}%"),
        measured: measured.to_string(),
        table,
    })
}

fn finding(f: &Finding) -> FindingView {
    let role = match f.role {
        Role::Main => "main problem",
        Role::Problem => "problem",
        Role::Context => "context",
        Role::Config => "configuration",
    };
    let mut lines = Vec::new();
    if let Some(c) = f.cost.as_ref().map(num::cost).filter(|c| !c.is_empty()) {
        lines.push(("Cost".to_string(), c));
    }
    lines.push(("Expected effect".to_string(), num::effect(&f.effect)));
    if let Some(c) = &f.check {
        lines.push(("Check".to_string(), c.clone()));
    }
    if let Some(c) = &f.confirm {
        lines.push(("Confirm".to_string(), c.clone()));
    }
    for c in &f.config {
        lines.push((
            "Configuration".to_string(),
            format!(
                "{} ({}) at {}: {}",
                c.rule,
                c.severity.lint_name(),
                c.element,
                c.message
            ),
        ));
    }
    lines.push((
        "Severity".to_string(),
        num::grade(f.severity.name(), &f.grade),
    ));
    FindingView {
        anchor: format!("finding-{}-{}", f.input, f.id),
        id: f.id.clone(),
        title: f.title.clone(),
        severity: f.severity.name().to_string(),
        confidence: f.confidence.name().to_string(),
        role: role.to_string(),
        place: format!("#{} of input {}", f.rank, f.input),
        lines,
        evidence: (!f.evidence.is_empty()).then(|| evidence(&f.evidence)),
        against: f.against.iter().map(fact_line).collect(),
        competing: f
            .competing
            .iter()
            .map(|r| format!("{} ({}): {}", r.id, r.confidence.name(), r.why))
            .collect(),
        cause: f.cause.clone(),
        fixes: f.fixes.iter().map(fix).collect(),
        sources: f
            .sources
            .iter()
            .map(|s| SourceView {
                text: format!("{} — {}", s.reference, s.title),
                url: s.url.map(str::to_string),
            })
            .collect(),
    }
}

fn fix(fx: &crate::diagnose::Fix) -> FixView {
    let who = match fx.guest {
        ForGuest::Any => "",
        ForGuest::Windows => "[Windows] ",
        ForGuest::Linux => "[Linux] ",
    };
    let mut snippets = Vec::new();
    for (label, lang, part) in [
        ("QEMU command line", "shell", &fx.qemu),
        ("libvirt domain XML", "xml", &fx.libvirt),
        ("On the host", "shell", &fx.host),
        ("In the guest", "text", &fx.in_guest),
    ] {
        if let Some(p) = part {
            snippets.push((label.to_string(), lang.to_string(), p.clone()));
        }
    }
    FixView {
        summary: format!("{who}{}", fx.summary),
        snippets,
    }
}

fn key_of(e: &Fact) -> String {
    let mut key = e.key.clone();
    if let Some(a) = e.access {
        key.push_str(&format!(" {a}"));
    }
    if let Some(n) = &e.name {
        key.push_str(&format!(" ({n})"));
    }
    key
}

fn evidence(rows: &[Fact]) -> DataTable {
    let mut t = DataTable::new(
        "Evidence (rows marked context are not counted in the cost)",
        &[
            "row", "count", "exits%", "time", "time%", "mean", "rate", "counted", "note",
        ],
    );
    t.numeric[7] = false;
    t.numeric[8] = false;
    for e in rows {
        t.rows.push(vec![
            key_of(e),
            if e.count > 0 || e.time_share.is_none() && e.note.is_none() {
                format::count(e.count)
            } else {
                String::new()
            },
            e.count_share.map(format::share).unwrap_or_default(),
            e.time_ns
                .map(|t| format::duration(t as f64))
                .unwrap_or_default(),
            e.time_share.map(format::share).unwrap_or_default(),
            e.mean_ns.map(format::duration).unwrap_or_default(),
            e.per_second.map(format::rate).unwrap_or_default(),
            if e.explains { "cost" } else { "context" }.to_string(),
            e.note.clone().unwrap_or_default(),
        ]);
    }
    t
}

fn fact_line(e: &Fact) -> String {
    let mut s = key_of(e);
    if e.count > 0 {
        s.push_str(&format!(": {} events", format::count(e.count)));
    }
    if let Some(n) = &e.note {
        s.push_str(&format!(" — {n}"));
    }
    s
}
