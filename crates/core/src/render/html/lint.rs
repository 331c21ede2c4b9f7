//! The `lint` page: the configuration's findings, worst first — what is wrong, where (file and
//! line), the fix as libvirt XML and QEMU flags, the caveats and the sources — then the host
//! facts and the effective configuration lint read, and the recommended set when asked for.
//! Like the text, it only lays out what lint found.

use super::page::{Block, DataTable, FindingView, FixView, Page, Section, SourceView};
use crate::lint::{Finding, LintReport};
use crate::render::lint_text::{counts, effective, host};

pub(super) fn page(r: &LintReport) -> Page {
    let mut page = Page::new(
        "virtlens lint",
        format!("{} · {}", r.input, r.format.name()),
        "the configuration as written (lint measures nothing)".into(),
    );
    page.summary.push(format!("{}: {}", r.input, counts(r)));
    let mut findings = Section::new("findings", "Findings, worst first");
    if r.findings.is_empty() {
        findings
            .intro
            .push("No finding: nothing in this configuration matches a rule.".into());
    }
    for (i, f) in r.findings.iter().enumerate() {
        findings
            .blocks
            .push(Block::Finding(Box::new(finding(i + 1, f))));
    }
    page.sections.push(findings);
    let mut facts = Section::new("configuration", "What lint read");
    let mut table = DataTable::new("The host and the configuration", &["what", "value"]);
    table.numeric = vec![false, false];
    table.rows = vec![
        vec!["guest".into(), r.guest.describe()],
        vec!["host".into(), host(&r.host)],
        vec!["effective".into(), effective(&r.config)],
    ];
    for d in &r.documents {
        table.rows.push(vec![
            format!("document {} (line {})", d.document, d.first_line),
            d.guest.describe(),
        ]);
    }
    facts.blocks.push(Block::Table(table));
    page.sections.push(facts);
    if let Some(rec) = &r.recommendation {
        let mut s = Section::new("recommendation", format!("Recommended set: {}", rec.preset));
        s.blocks.push(Block::Finding(Box::new(FindingView {
            anchor: "recommended".into(),
            id: rec.preset.to_string(),
            title: format!(
                "the recommended Hyper-V set for this host ({})",
                host(&r.host)
            ),
            severity: "info".into(),
            confidence: String::new(),
            role: String::new(),
            place: String::new(),
            lines: Vec::new(),
            evidence: None,
            against: Vec::new(),
            competing: Vec::new(),
            cause: rec.notes.join(" "),
            fixes: vec![FixView {
                summary: "merge into the domain, or start QEMU with (keep your CPU model)".into(),
                snippets: vec![
                    ("libvirt XML".into(), "xml".into(), rec.libvirt_xml.clone()),
                    ("QEMU".into(), "sh".into(), rec.qemu_args.clone()),
                ],
            }],
            sources: Vec::new(),
        })));
        page.sections.push(s);
    }
    page.notes = r.notes.clone();
    page
}

fn finding(rank: usize, f: &Finding) -> FindingView {
    let mut lines = vec![(
        "at".to_string(),
        match f.count {
            1 => f.element.to_string(),
            n => format!("{} (and {} more like it)", f.element, n - 1),
        },
    )];
    if let Some(d) = f.document {
        lines.push(("document".into(), d.to_string()));
    }
    lines.extend(f.caveats.iter().map(|c| ("caveat".to_string(), c.clone())));
    let mut snippets = Vec::new();
    if let Some(x) = &f.fix.libvirt {
        snippets.push(("libvirt XML".into(), "xml".into(), x.clone()));
    }
    if let Some(q) = &f.fix.qemu {
        snippets.push(("QEMU".into(), "sh".into(), q.clone()));
    }
    FindingView {
        anchor: format!("finding-{rank}-{}", f.rule),
        id: f.rule.to_string(),
        title: f.message.clone(),
        severity: f.severity.lint_name().to_string(),
        confidence: String::new(),
        role: String::new(),
        place: format!("#{rank}"),
        lines,
        evidence: None,
        against: Vec::new(),
        competing: Vec::new(),
        cause: String::new(),
        fixes: vec![FixView {
            summary: f.fix.summary.clone(),
            snippets,
        }],
        sources: f.source.split("; ").map(SourceView::of_text).collect(),
    }
}
