//! The `stretch` page: how many times longer the same work takes in each layer against the
//! first, as bars per measure (one per later layer, with the verdict against the noise), the
//! values with their noise bands, the likely causes and the stated summaries checked.

use virtlens_guest::stats::num;

use super::chart::{self, Bar, Chart, Group, Scale};
use super::page::{Block, DataTable, Page, Section};
use crate::analysis::stretch::StretchReport;
use crate::render::Style;
use crate::render::stretch_text::{stated_line, value_cell, verdict};

pub(super) fn page(r: &StretchReport) -> Page {
    let names: Vec<String> = r
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{} {}", i + 1, l.name))
        .collect();
    // Each distinct source once, with the layers it gave and what they ran on.
    let mut sources: Vec<(String, Vec<String>)> = Vec::new();
    for (i, l) in r.layers.iter().enumerate() {
        let hv = l
            .fingerprint
            .as_ref()
            .and_then(|f| f.hypervisor_vendor.clone())
            .map_or_else(
                || "no hypervisor named".to_string(),
                |h| format!("hypervisor {h}"),
            );
        let layer = format!("{} {} ({hv})", i + 1, l.name);
        match sources.iter_mut().find(|(src, _)| *src == l.source) {
            Some((_, layers)) => layers.push(layer),
            None => sources.push((l.source.clone(), vec![layer])),
        }
    }
    let measured: Vec<String> = sources
        .into_iter()
        .map(|(src, layers)| format!("{}: {src}", layers.join(", ")))
        .collect();
    let mut page = Page::new(
        "virtlens stretch",
        format!("layer 1 is the baseline: {}", names.join(" · ")),
        measured.join("; "),
    );
    let style = Style::plain();
    page.summary = r.stated.iter().map(|s| stated_line(s, &style).0).collect();
    let mut s = Section::new("stretch", "Stretch against layer 1");
    s.intro.push(
        "A factor above 1 means the same work takes longer than in layer 1; the verdict says \
         whether the difference stands out of the noise of both layers."
            .into(),
    );
    s.blocks.push(Block::Chart(Box::new(chart::layout(factors(
        r,
        &names,
        &page.measured,
    )))));
    s.blocks.push(Block::Table(values(r, &names)));
    page.sections.push(s);
    let causes: Vec<String> = r
        .rows
        .iter()
        .flat_map(|row| {
            row.causes
                .iter()
                .map(move |c| format!("{}: {c}", row.measure))
        })
        .collect();
    if !causes.is_empty() {
        let mut c = Section::new("causes", "Likely causes");
        c.blocks
            .extend(causes.into_iter().map(|text| Block::Para { text }));
        page.sections.push(c);
    }
    page.notes = r.notes.clone();
    page
}

fn factors(r: &StretchReport, names: &[String], measured: &str) -> Chart {
    let mut head = vec!["measure".to_string()];
    head.extend(names.iter().skip(1).map(|n| format!("{n}: stretch")));
    let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut table = DataTable::new("Stretch factors against layer 1", &head_refs);
    let groups = r
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![format!("{} ({})", row.measure, row.unit)];
            let mut bars = Vec::new();
            // vs_first holds one entry per layer after the first.
            for (i, s) in row.vs_first.iter().enumerate() {
                let Some(s) = s else {
                    cells.push("-".into());
                    continue;
                };
                let bounds = s
                    .bounds
                    .map(|(lo, hi)| format!(" [{}–{}]", num(lo), num(hi)))
                    .unwrap_or_default();
                let shown = format!("×{}{bounds} {}", num(s.factor), verdict(s));
                cells.push(shown.clone());
                bars.push(Bar {
                    series: i,
                    value: s.factor,
                    shown,
                });
            }
            table.rows.push(cells);
            Group {
                label: row.measure.clone(),
                bars,
            }
        })
        .collect();
    Chart {
        id: "stretch-factors".into(),
        title: "Stretch factor per measure against layer 1".into(),
        desc: "For every measure, how many times longer the same work takes in each later layer \
               than in layer 1 (1 = as fast), with the noise bounds and the verdict."
            .into(),
        axis: "stretch factor (×)".into(),
        series: names.iter().skip(1).cloned().collect(),
        groups,
        scale: Scale::Auto,
        tick: |v| format!("×{v:.1}"),
        measured: measured.to_string(),
        table,
    }
}

fn values(r: &StretchReport, names: &[String]) -> DataTable {
    let mut head = vec!["measure".to_string(), "unit".to_string()];
    head.extend(names.iter().map(|n| format!("{n}: median [band]")));
    let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = DataTable::new("Values per layer", &head_refs);
    t.numeric[1] = false;
    for row in &r.rows {
        let mut cells = vec![row.measure.clone(), row.unit.clone()];
        for v in &row.values {
            cells.push(value_cell(v.as_ref()));
        }
        t.rows.push(cells);
    }
    t
}
