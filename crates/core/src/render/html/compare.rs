//! The `compare` page: the verdicts first, then per kind the totals of every input with idle
//! drawn apart, the keys that weigh most as before/after bars with their change, and the whole
//! aligned table.

use super::chart::{self, Bar, Chart, Group, Scale};
use super::page::{Block, DataTable, Page, Section};
use super::{amount, measured_on};
use crate::analysis::compare::{CompareRow, CompareTable, Comparison};
use crate::render::compare_text::{self, key_label};
use crate::render::format;

/// Keys drawn per chart; the rest are in the table.
const CHART_ROWS: usize = 12;

pub(super) fn page(c: &Comparison) -> Page {
    let names: Vec<String> = c.inputs.iter().map(input_name).collect();
    let same = c.inputs.windows(2).all(|w| w[0].backend == w[1].backend);
    let measured = if same {
        let first = c.inputs.first().and_then(|i| i.backend.as_deref());
        format!("every input: {}", measured_on(first))
    } else {
        let each: Vec<String> = c
            .inputs
            .iter()
            .map(|i| format!("{}: {}", i.number, measured_on(i.backend.as_deref())))
            .collect();
        each.join("; ")
    };
    let mut page = Page::new(
        "virtlens compare",
        format!("{} inputs: {}", c.inputs.len(), names.join(" · ")),
        measured,
    );
    page.summary = c.verdicts.iter().map(compare_text::sentence).collect();
    if c.ranking.len() > 1 {
        let order: Vec<String> = c.ranking.iter().map(usize::to_string).collect();
        page.summary.push(format!(
            "Least to most virtualization cost: {}.",
            order.join(" < ")
        ));
    }
    let mut inputs = Section::new("inputs", "Inputs");
    // The backend once, in the header, unless the inputs differ.
    let mut head = vec!["input", "name", "label", "file"];
    if !same {
        head.push("measured on");
    }
    let mut t = DataTable::new("", &head);
    t.numeric = vec![false; head.len()];
    for i in &c.inputs {
        let mut row = vec![
            i.number.to_string(),
            i.name.clone(),
            i.label.clone().unwrap_or_default(),
            i.path.clone().unwrap_or_default(),
        ];
        if !same {
            row.push(measured_on(i.backend.as_deref()));
        }
        t.rows.push(row);
    }
    inputs.blocks.push(Block::Table(t));
    page.sections.push(inputs);
    let measured = page.measured.clone();
    for (k, t) in c.tables.iter().enumerate() {
        page.sections
            .push(kind_section(k + 1, t, &names, &measured));
    }
    page.notes = c.notes.clone();
    page
}

fn input_name(i: &crate::analysis::compare::Input) -> String {
    format!("{} {}", i.number, i.label.as_deref().unwrap_or(&i.name))
}

fn kind_section(k: usize, t: &CompareTable, names: &[String], measured: &str) -> Section {
    let timed = t.totals.iter().flatten().all(|x| x.time_ns.is_some());
    let title = format::kind_title(&t.kind, None);
    let mut s = Section::new(format!("kind-{k}"), title.clone());
    s.blocks.push(Block::Chart(Box::new(chart::layout(totals(
        k, t, names, timed, measured,
    )))));
    s.blocks.push(Block::Chart(Box::new(chart::layout(keys(
        k, t, names, timed, measured,
    )))));
    s.blocks.push(Block::Table(full_table(t, names, timed)));
    s
}

/// Per input, the total without idle and the idle part.
fn totals(k: usize, t: &CompareTable, names: &[String], timed: bool, measured: &str) -> Chart {
    let mut table = DataTable::new("Totals", &["input", "without idle", "idle", "all"]);
    let groups = t
        .totals
        .iter()
        .zip(names)
        .map(|(tot, name)| {
            let Some(tot) = tot else {
                table
                    .rows
                    .push(vec![name.clone(), "-".into(), "-".into(), "-".into()]);
                return Group {
                    label: format!("{name} (no such table)"),
                    bars: Vec::new(),
                };
            };
            let (over, idle, all) = if timed {
                (
                    tot.overhead_time_ns.unwrap_or(0) as f64,
                    tot.idle_time_ns.unwrap_or(0) as f64,
                    tot.time_ns.unwrap_or(0) as f64,
                )
            } else {
                (
                    tot.overhead_count as f64,
                    tot.idle_count as f64,
                    tot.count as f64,
                )
            };
            let fmt = amount(timed);
            table
                .rows
                .push(vec![name.clone(), fmt(over), fmt(idle), fmt(all)]);
            let mut bars = vec![Bar {
                series: 0,
                value: over,
                shown: fmt(over),
            }];
            // No idle bar where there was no idle: the table says 0.
            if idle > 0.0 {
                bars.push(Bar {
                    series: 1,
                    value: idle,
                    shown: fmt(idle),
                });
            }
            Group {
                label: name.clone(),
                bars,
            }
        })
        .collect();
    let what = if timed { "handled time" } else { "exits" };
    Chart {
        id: format!("kind-{k}-totals"),
        title: format!("{what} per input, idle apart"),
        desc: format!(
            "For every input, the {what} without idle (what virtualization cost) and, as a \
             bar of its own, the idle part (the guest waiting)."
        ),
        axis: what.into(),
        series: vec!["without idle".into(), "idle".into()],
        groups,
        scale: Scale::Auto,
        tick: amount(timed),
        measured: measured.to_string(),
        table,
    }
}

/// The heaviest keys, one bar per input, each after the first with its change.
fn keys(k: usize, t: &CompareTable, names: &[String], timed: bool, measured: &str) -> Chart {
    let mut head = vec!["key".to_string()];
    head.extend(names.iter().cloned());
    let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut table = DataTable::new("Per key (change against input 1)", &head_refs);
    let groups: Vec<Group> = t
        .rows
        .iter()
        .take(CHART_ROWS)
        .map(|r| {
            let mut cells = vec![key_label(r)];
            let mut bars = Vec::new();
            for i in 0..r.counts.len() {
                let (value, text) = value_of(r, i, timed);
                let change = change_of(r, i, timed);
                let shown = match (&change, value) {
                    (Some(c), Some(_)) => format!("{text} ({c})"),
                    _ => text.clone(),
                };
                cells.push(shown.clone());
                if let Some(v) = value {
                    bars.push(Bar {
                        series: i,
                        value: v,
                        shown,
                    });
                }
            }
            table.rows.push(cells);
            Group {
                label: key_label(r),
                bars,
            }
        })
        .collect();
    let what = if timed { "handled time" } else { "exits" };
    Chart {
        id: format!("kind-{k}-keys"),
        title: format!("{what} of the heaviest keys, input by input"),
        desc: format!(
            "The {} keys that weigh most in any input, one bar per input in input order; \
             each bar after the first says its change against input 1.",
            t.rows.len().min(CHART_ROWS)
        ),
        axis: what.into(),
        series: names.to_vec(),
        groups,
        scale: Scale::Auto,
        tick: amount(timed),
        measured: measured.to_string(),
        table,
    }
}

fn value_of(r: &CompareRow, i: usize, timed: bool) -> (Option<f64>, String) {
    if timed {
        let t = r.time_ns.get(i).copied().flatten();
        (
            t.map(|v| v as f64),
            t.map_or_else(|| "-".into(), |v| format::duration(v as f64)),
        )
    } else {
        let c = r.counts.get(i).copied().flatten();
        (
            c.map(|v| v as f64),
            c.map_or_else(|| "-".into(), format::count),
        )
    }
}

fn change_of(r: &CompareRow, i: usize, timed: bool) -> Option<String> {
    if i == 0 {
        return None;
    }
    let pct = if timed {
        r.time_change_pct.get(i).copied().flatten()
    } else {
        r.count_change_pct.get(i).copied().flatten()
    };
    let appeared = r.counts.first() == Some(&Some(0))
        && r.counts.get(i).copied().flatten().is_some_and(|n| n > 0);
    Some(format::change(pct, appeared))
}

fn full_table(t: &CompareTable, names: &[String], timed: bool) -> DataTable {
    // Inputs by number (the Inputs table names them): a table of many inputs stays narrow
    // enough to print.
    let mut head = vec!["key".to_string()];
    for i in 1..=names.len() {
        head.push(format!("#{i} count"));
        if timed {
            head.push(format!("#{i} time"));
        }
        if i > 1 {
            head.push(format!("#{i} Δ"));
        }
    }
    let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut table = DataTable::new(
        format!(
            "All keys of {} (#1 is input 1; Δ against input 1)",
            format::kind_title(&t.kind, None)
        ),
        &head_refs,
    );
    for r in &t.rows {
        let mut row = vec![key_label(r)];
        for i in 0..r.counts.len() {
            row.push(r.counts[i].map_or_else(|| "-".into(), format::count));
            if timed {
                row.push(value_of(r, i, true).1);
            }
            if let Some(c) = change_of(r, i, timed) {
                row.push(c);
            }
        }
        table.rows.push(row);
    }
    table.rows.push(total_row(t, timed));
    table
}

/// The table's last row: every input's totals as the analysis summed them (all exits and
/// the handled time, idle included, as the key rows above are).
fn total_row(t: &CompareTable, timed: bool) -> Vec<String> {
    let mut row = vec!["total".to_string()];
    for (i, tot) in t.totals.iter().enumerate() {
        match tot {
            Some(tot) => {
                row.push(format::count(tot.count));
                if timed {
                    row.push(format::opt_duration(tot.time_ns.map(|v| v as f64)));
                }
            }
            None => {
                row.push("-".into());
                if timed {
                    row.push("-".into());
                }
            }
        }
        if i > 0 {
            row.push(String::new());
        }
    }
    row
}
