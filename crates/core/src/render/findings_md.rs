//! docs/findings.md: the catalogue of every finding id `diagnose` and `lint` can report, as
//! Markdown — what it means, its thresholds, its fixes and its public sources. Written from
//! [`crate::diagnose::catalogue`] and [`crate::lint::rules`]; the example `findings_md` prints
//! it and a test fails when the checked-in file differs.

use std::fmt::Write as _;

use crate::diagnose::catalogue::Entry;
use crate::diagnose::model::{Fix, ForGuest, Source};
use crate::diagnose::rules::{Family, Threshold};
use crate::lint::rules::Rule;

use super::format;

/// The command that rewrites the file (printed in its header).
pub const REGENERATE: &str =
    "cargo run -q -p virtlens-core --example findings_md > docs/findings.md";

/// The whole page.
pub fn render(entries: &[Entry], shared: &[Threshold], lint: &[Rule]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Findings: every id `diagnose` and `lint` report\n\n\
         Generated from the rule catalogues (`diagnose::catalogue::entries()` and \
         `lint::rules::RULES`) by\n`{REGENERATE}`; do not edit by hand \
         (`cargo test -p virtlens-core --test tests -- findings_doc::` fails when\nthis file differs). \
         How the diagnosis works: [diagnose.md](diagnose.md); the configuration lint: \
         [lint.md](lint.md).\n"
    );
    contents(&mut out, entries, lint);
    severity(&mut out, shared);
    let _ = writeln!(out, "## `diagnose` findings\n");
    let _ = writeln!(
        out,
        "A finding's cost comes from the input's own numbers, and its severity from that cost \
         graded by the\nthresholds above; the thresholds listed with a rule are its own (when \
         it fires, or how it is\ngraded). The fixes shown are the general form for an input of \
         which nothing is known, so both\nguests' variants appear, labelled; on a real input \
         they are picked for the guest, host and\nconfiguration at hand. A *context* finding \
         explains part of the picture and never leads the list.\n"
    );
    for e in entries {
        entry(&mut out, e);
    }
    lint_rules(&mut out, lint);
    out.trim_end().to_string() + "\n"
}

/// One `diagnose` finding's section of the page, on its own (`virtlens mcp`'s page per id).
pub fn entry_page(e: &Entry) -> String {
    let mut out = String::new();
    entry(&mut out, e);
    out.trim_end().to_string() + "\n"
}

/// One lint rule's row of the page, as a section of its own.
pub fn rule_page(r: &Rule) -> String {
    let needs = if r.needs.is_empty() { "-" } else { r.needs };
    format!(
        "### `{}`\n\nLint rule · severity {}\n\nChecks: {}\n\nNeeds besides the configuration: {}\n\nSources: {}\n",
        r.id, r.severity, r.checks, needs, r.source
    )
}

fn contents(out: &mut String, entries: &[Entry], lint: &[Rule]) {
    let mut families: Vec<Family> = Vec::new();
    for e in entries {
        if !families.contains(&e.family) {
            families.push(e.family);
        }
    }
    let _ = writeln!(
        out,
        "{} `diagnose` rules in {} families, and {} `lint` rules.\n",
        entries.len(),
        families.len(),
        lint.len()
    );
    for f in families {
        let ids: Vec<String> = entries
            .iter()
            .filter(|e| e.family == f)
            .map(|e| format!("[`{}`](#{})", e.id, anchor(e.id)))
            .collect();
        let _ = writeln!(out, "- **{}**: {}", f.name(), ids.join(", "));
    }
    let _ = writeln!(out, "- **lint**: [configuration rules](#lint-rules)\n");
}

fn severity(out: &mut String, shared: &[Threshold]) {
    let _ = writeln!(
        out,
        "## Severity\n\nEvery rule graded by cost shares uses these thresholds: a share of vCPU \
         time when the input has a\ntime base (a capture window, printed rates, `--window`), \
         else a share of the exit handling\nwithout idle.\n\n| threshold | value |\n|---|---|"
    );
    for t in shared {
        let _ = writeln!(out, "| {} | {} |", t.name, value(t));
    }
    let _ = writeln!(out);
}

fn entry(out: &mut String, e: &Entry) {
    let _ = writeln!(out, "### `{}`\n\n**{}**\n", e.id, e.title);
    let _ = writeln!(out, "{}\n", e.meaning);
    let context = if e.context { " · context" } else { "" };
    let _ = writeln!(
        out,
        "Family `{}` · cause tag `{}`{context}\n",
        e.family.name(),
        e.tag
    );
    if !e.thresholds.is_empty() {
        let _ = writeln!(out, "| threshold | value |\n|---|---|");
        for t in &e.thresholds {
            let _ = writeln!(out, "| {} | {} |", t.name, value(t));
        }
        let _ = writeln!(out);
    }
    if e.fixes.is_empty() {
        let _ = writeln!(
            out,
            "Fix: none (it explains, it does not ask for a change).\n"
        );
    } else {
        let _ = writeln!(out, "Fix:\n");
        for f in &e.fixes {
            fix(out, f);
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "Sources:\n");
    for s in &e.sources {
        let _ = writeln!(out, "- {}", source(s));
    }
    let _ = writeln!(out);
}

fn fix(out: &mut String, f: &Fix) {
    let guest = match f.guest {
        ForGuest::Any => String::new(),
        ForGuest::Windows => "[Windows] ".to_string(),
        ForGuest::Linux => "[Linux] ".to_string(),
    };
    let _ = writeln!(out, "- {guest}{}", one_line(&f.summary));
    let parts = [
        ("QEMU", &f.qemu),
        ("libvirt", &f.libvirt),
        ("host", &f.host),
        ("in the guest", &f.in_guest),
    ];
    for (what, text) in parts {
        let Some(text) = text else { continue };
        if text.contains('\n') || text.contains('<') {
            let _ = writeln!(out, "  - {what}:\n\n    ```\n{}\n    ```", indent(text));
        } else {
            let _ = writeln!(out, "  - {what}: `{}`", text.replace('`', "'"));
        }
    }
}

fn lint_rules(out: &mut String, lint: &[Rule]) {
    let _ = writeln!(
        out,
        "## Lint rules\n\n`virtlens lint` (and `diagnose --config`) check a VM configuration \
         against these rules; each\nfinding names the element or flag at fault and gives the fix \
         as libvirt XML and QEMU flags. The\nseverity is the rule's usual one; some depend on \
         the case (`--migratable`, `--ipi-heavy`, the host).\n\n\
         | id | severity | checks | needs besides the configuration | sources |\n|---|---|---|---|---|"
    );
    for r in lint {
        let needs = if r.needs.is_empty() { "-" } else { r.needs };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            r.id,
            r.severity,
            cell(r.checks),
            cell(needs),
            cell(r.source)
        );
    }
}

fn value(t: &Threshold) -> String {
    match t.unit {
        "share" => format::share(t.value),
        "ns" => format::duration(t.value),
        "exits" => format::count(t.value.round() as u64),
        "version" => format!("{}", t.value),
        "×" => format!("{}×", t.value),
        unit => format!("{} {unit}", t.value),
    }
}

fn source(s: &Source) -> String {
    match s.url {
        Some(u) => format!("{} `{}` — {} <{u}>", s.kind, s.reference, s.title),
        None => format!("{} `{}` — {}", s.kind, s.reference, s.title),
    }
}

/// The anchor GitHub and most renderers give a `### \`id\`` heading.
fn anchor(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
        .collect::<String>()
        .to_lowercase()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}
