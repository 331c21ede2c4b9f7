//! The `counters` page: for each counter log, its `hv.*` findings (evidence, cause, fixes,
//! sources), a chart of the hypervisor events per second of every VM (Hyper-V virtual
//! processors) and of the scheduling waits of every VM (esxtop), and the tables the text shows
//! (virtual processors, broken PAL thresholds). The numbers are the log's, as recorded.

use super::chart::{self, Bar, Chart, Group, Scale};
use super::page::{Block, DataTable, FindingView, FixView, Page, Section, SourceView};
use crate::counters::hv::{EsxVm, HvFinding, VpMetrics};
use crate::counters::{Analysis, Report, words};
use crate::render::counters_text::{
    PAL_HEADER, VP_HEADER, fact_value, pal_cells, span, tool, vp_cells,
};
use crate::render::format;

pub(super) fn page(r: &Report) -> Page {
    let names: Vec<&str> = r.inputs.iter().map(|a| a.input.as_str()).collect();
    let mut page = Page::new(
        "virtlens counters",
        names.join(" · "),
        "the counters as the log recorded them (no measurement by virtlens)".into(),
    );
    for (n, a) in r.inputs.iter().enumerate() {
        page.summary.push(summary(a));
        page.sections.push(section(n + 1, a, &page.measured));
    }
    page.notes = r.notes.clone();
    page
}

/// One line per input: what was found, worst first.
fn summary(a: &Analysis) -> String {
    let worst = a.findings.iter().map(|f| f.level).max();
    match worst {
        None => format!(
            "{}: no hv.* finding; nothing in these counters is beyond its threshold",
            a.input
        ),
        Some(w) => {
            let ids: Vec<&str> = a.findings.iter().map(|f| f.id.id()).collect();
            format!(
                "{}: {} finding(s), worst {}: {}",
                a.input,
                a.findings.len(),
                w.name(),
                ids.join(", ")
            )
        }
    }
}

fn section(n: usize, a: &Analysis, measured: &str) -> Section {
    let mut s = Section::new(
        format!("input-{n}"),
        format!("{} · {}", a.input, tool(a.header.tool)),
    );
    s.intro.push(span(a));
    if a.findings.is_empty() {
        s.intro
            .push("No hv.* finding: nothing in these counters is beyond its threshold.".into());
    }
    for (i, f) in a.findings.iter().enumerate() {
        s.blocks
            .push(Block::Finding(Box::new(finding(n, i + 1, f))));
    }
    if let Some(c) = vp_chart(n, &a.vps, measured) {
        s.blocks.push(Block::Chart(Box::new(chart::layout(c))));
    }
    if !a.vps.is_empty() {
        let mut t = DataTable::new("Hyper-V virtual processors", &VP_HEADER);
        t.rows = a.vps.iter().map(vp_cells).collect();
        s.blocks.push(Block::Table(t));
    }
    if let Some(c) = esx_chart(n, &a.esx, measured) {
        s.blocks.push(Block::Chart(Box::new(chart::layout(c))));
    }
    if !a.pal.is_empty() {
        let mut t = DataTable::new(
            "PAL thresholds broken (per time slice: min, mean or max)",
            &PAL_HEADER,
        );
        t.numeric[1] = false;
        t.rows = a.pal.iter().map(pal_cells).collect();
        s.blocks.push(Block::Table(t));
        if let Some(al) = a.pal.first() {
            s.blocks.push(Block::Para {
                text: format!("Thresholds from {}.", al.threshold.source),
            });
        }
    }
    s
}

fn finding(input: usize, rank: usize, f: &HvFinding) -> FindingView {
    let w = words::of(f.id);
    let mut evidence = DataTable::new("Evidence", &["counter", "value"]);
    evidence.rows = f
        .facts
        .iter()
        .map(|x| vec![x.name.to_string(), fact_value(x)])
        .collect();
    FindingView {
        anchor: format!("finding-{input}-{rank}-{}", f.id),
        id: f.id.to_string(),
        title: w.title.to_string(),
        severity: f.level.name().to_string(),
        confidence: "from the counters' thresholds".into(),
        role: f.subject.clone(),
        place: format!("#{rank} of input {input}"),
        lines: Vec::new(),
        evidence: (!evidence.rows.is_empty()).then_some(evidence),
        against: Vec::new(),
        competing: Vec::new(),
        cause: w.cause_text(),
        fixes: w
            .fix
            .iter()
            .map(|fix| FixView {
                summary: fix.to_string(),
                snippets: Vec::new(),
            })
            .collect(),
        sources: w.sources.iter().map(|s| SourceView::of_text(s)).collect(),
    }
}

/// One number a per-VM chart draws: its series name and how to get it from a row.
type Kind<T> = (&'static str, fn(&T) -> Option<f64>);

/// The series, bar groups and table of a per-VM chart: one group per row, one bar per kind the
/// row has, only the kinds some row has; `lead` names the table's first columns and
/// `lead_cells` fills them (the first is the group's label).
fn per_vm<T>(
    rows: &[T],
    kinds: &[Kind<T>],
    lead: &[&str],
    lead_cells: fn(&T) -> Vec<String>,
    shown: fn(f64) -> String,
    caption: &str,
) -> Option<(Vec<String>, Vec<Group>, DataTable)> {
    let kinds: Vec<&Kind<T>> = kinds
        .iter()
        .filter(|(_, get)| rows.iter().any(|r| get(r).is_some()))
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let mut head = lead.to_vec();
    head.extend(kinds.iter().map(|(name, _)| *name));
    let mut table = DataTable::new(caption, &head);
    let mut groups = Vec::new();
    for r in rows {
        let mut cells = lead_cells(r);
        let label = cells.first().cloned().unwrap_or_default();
        let mut bars = Vec::new();
        for (series, (_, get)) in kinds.iter().enumerate() {
            match get(r) {
                Some(v) => {
                    cells.push(shown(v));
                    bars.push(Bar {
                        series,
                        value: v,
                        shown: shown(v),
                    });
                }
                None => cells.push("-".into()),
            }
        }
        table.rows.push(cells);
        groups.push(Group { label, bars });
    }
    let series = kinds.iter().map(|(name, _)| name.to_string()).collect();
    Some((series, groups, table))
}

/// The hypervisor events per second of every VM, by kind (only the kinds the log has).
fn vp_chart(n: usize, vps: &[VpMetrics], measured: &str) -> Option<Chart> {
    const KINDS: [Kind<VpMetrics>; 8] = [
        ("intercepts", |m| m.intercepts_per_s),
        ("external interrupts", |m| m.external_interrupts_per_s),
        ("virtual interrupts", |m| m.virtual_interrupts_per_s),
        ("APIC EOI", |m| m.eoi_per_s),
        ("IPIs sent", |m| m.ipis_sent_per_s),
        ("hypercalls", |m| m.hypercalls_per_s),
        ("IO instructions", |m| m.io_instructions_per_s),
        ("MSR accesses", |m| m.msr_per_s),
    ];
    let title = "Hypervisor events per second, per VM";
    let (series, groups, table) = per_vm(
        vps,
        &KINDS,
        &["vm"],
        |m| vec![m.subject.clone()],
        format::rate,
        title,
    )?;
    Some(Chart {
        id: format!("counters-{n}-hv-events"),
        title: title.into(),
        desc: "For every VM the log names, its virtual processors' intercepts and the interrupt, \
               EOI, IPI, hypercall, IO-instruction and MSR events behind them, per second, as \
               the Hyper-V Hypervisor Virtual Processor counters recorded them."
            .into(),
        axis: "events per second".into(),
        series,
        groups,
        scale: Scale::Auto,
        tick: format::rate,
        measured: measured.to_string(),
        table,
    })
}

/// The scheduling waits of every VM esxtop logged: % ready, % co-stop, % max limited.
fn esx_chart(n: usize, vms: &[EsxVm], measured: &str) -> Option<Chart> {
    const KINDS: [Kind<EsxVm>; 3] = [
        ("% ready per vCPU", |v| v.ready_pct),
        ("% co-stop", |v| v.costop_pct),
        ("% max limited", |v| v.max_limited_pct),
    ];
    let title = "CPU scheduling waits, per VM";
    let (series, groups, table) = per_vm(
        vms,
        &KINDS,
        &["vm", "vCPUs"],
        |v| vec![v.vm.clone(), v.vcpus.to_string()],
        |v| format!("{v:.1}%"),
        title,
    )?;
    Some(Chart {
        id: format!("counters-{n}-esx-waits"),
        title: title.into(),
        desc: "For every VM esxtop logged, the share of time its vCPUs were ready to run but \
               waited for a CPU (% ready, per vCPU), were held back to stay in step with their \
               siblings (% co-stop), or were held by a CPU limit (% max limited)."
            .into(),
        axis: "% of the interval".into(),
        series,
        groups,
        scale: Scale::Linear,
        tick: |v| format!("{v:.0}%"),
        measured: measured.to_string(),
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_link_their_address() {
        let s =
            SourceView::of_text("ELI (ASPLOS 2012), https://research.ibm.com/publications/eli.");
        assert_eq!(
            s.url.as_deref(),
            Some("https://research.ibm.com/publications/eli")
        );
        assert_eq!(SourceView::of_text("a paper").url, None);
    }
}
