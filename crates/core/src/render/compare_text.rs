//! The text form of a comparison: the inputs, numbered; per kind an aligned table with each
//! input's count and time and the change against input 1; totals with and without idle; then
//! the verdict sentences and the ranking.

use comfy_table::{CellAlignment, Table as Grid, presets};

use super::Style;
use super::format;
use crate::analysis::Totals;
use crate::analysis::compare::{CompareRow, CompareTable, Comparison, Measure, Verdict};

/// Renders `c` as text.
pub(crate) fn render(c: &Comparison, style: &Style) -> String {
    let mut out = String::new();
    for i in &c.inputs {
        let partial = if i.partial {
            " (partial: rows missing, see the notes)"
        } else {
            ""
        };
        out.push_str(&format!("{}  {}{partial}\n", i.number, i.name));
    }
    for t in &c.tables {
        out.push('\n');
        render_table(&mut out, t, style);
    }
    if !c.verdicts.is_empty() {
        out.push('\n');
    }
    for v in &c.verdicts {
        let paint = if v.after <= v.before {
            style.good
        } else {
            style.bad
        };
        out.push_str(&Style::paint(paint, &sentence(v)));
        out.push('\n');
    }
    if c.ranking.len() > 1 {
        let order: Vec<String> = c.ranking.iter().map(usize::to_string).collect();
        out.push_str(&format!(
            "least to most virtualization cost: {}\n",
            order.join(" < ")
        ));
    }
    if let Some(cc) = &c.counters {
        out.push('\n');
        out.push_str(&super::counters_text::compare(cc, style));
    }
    for n in &c.notes {
        out.push_str(&Style::paint(style.note, &format!("note: {n}")));
        out.push('\n');
    }
    out
}

fn render_table(out: &mut String, t: &CompareTable, style: &Style) {
    let timed = t.totals.iter().flatten().all(|x| x.time_ns.is_some());
    out.push_str(&Style::paint(
        style.title,
        &format::kind_title(&t.kind, None),
    ));
    out.push('\n');
    let n = t.totals.len();
    let mut header = vec!["key".to_string()];
    for i in 1..=n {
        header.push(format!("{i} count"));
        if timed {
            header.push(format!("{i} time"));
        }
        if i > 1 {
            header.push(format!("{i} Δ"));
        }
    }
    let mut grid = Grid::new();
    grid.load_style(presets::NOTHING);
    grid.set_header(header.clone());
    for r in &t.rows {
        grid.add_row(row_cells(r, timed));
    }
    grid.add_row(total_cells("total", &t.totals, timed, false));
    if t.rows.iter().any(|r| r.idle) {
        grid.add_row(total_cells("without idle", &t.totals, timed, true));
    }
    for i in 1..header.len() {
        if let Some(c) = grid.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    for (i, line) in grid.lines().enumerate() {
        let line = line.trim_end();
        let idle = i >= 1 && t.rows.get(i - 1).is_some_and(|r| r.idle);
        out.push_str(&match (i, idle) {
            (0, _) => Style::paint(style.header, line),
            (_, true) => Style::paint(style.idle, line),
            _ => line.to_string(),
        });
        out.push('\n');
    }
}

/// A row's key as shown: `0x608 read ACPI PM timer`, `HLT (idle)`.
pub(crate) fn key_label(r: &CompareRow) -> String {
    let mut key = match r.access {
        Some(a) => format!("{} {}", r.key, a.word()),
        None => r.key.clone(),
    };
    if let Some(name) = &r.name {
        key = format!("{key} {name}");
    }
    if r.idle {
        key.push_str(" (idle)");
    }
    key
}

fn row_cells(r: &CompareRow, timed: bool) -> Vec<String> {
    let mut c = vec![key_label(r)];
    for i in 0..r.counts.len() {
        c.push(r.counts[i].map_or_else(|| "-".into(), format::count));
        if timed {
            c.push(match r.time_ns[i] {
                Some(0) => "0".to_string(),
                t => format::opt_duration(t.map(|v| v as f64)),
            });
        }
        if i > 0 {
            let pct = if timed {
                r.time_change_pct[i]
            } else {
                r.count_change_pct[i]
            };
            let appeared = r.counts[0] == Some(0) && r.counts[i].is_some_and(|n| n > 0);
            c.push(format::change(pct, appeared));
        }
    }
    c
}

fn total_cells(
    name: &str,
    totals: &[Option<Totals>],
    timed: bool,
    without_idle: bool,
) -> Vec<String> {
    let pick = |t: &Totals| {
        if without_idle {
            (t.overhead_count, t.overhead_time_ns)
        } else {
            (t.count, t.time_ns)
        }
    };
    let base = totals.first().and_then(|t| t.as_ref()).map(pick);
    let mut c = vec![name.to_string()];
    for (i, t) in totals.iter().enumerate() {
        let v = t.as_ref().map(pick);
        c.push(v.map_or_else(|| "-".into(), |(n, _)| format::count(n)));
        if timed {
            c.push(format::opt_duration(
                v.and_then(|(_, t)| t).map(|t| t as f64),
            ));
        }
        if i > 0 {
            let measure = |x: (u64, Option<u64>)| if timed { x.1 } else { Some(x.0) };
            let pct = match (base.and_then(measure), v.and_then(measure)) {
                (Some(b), Some(x)) if b > 0 => Some((x as f64 - b as f64) / b as f64 * 100.0),
                _ => None,
            };
            c.push(format::change(pct, false));
        }
    }
    c
}

/// "2 spends 80% less time handling exits than 1 (idle excluded); EPT_MISCONFIG exits −100%, …"
pub(crate) fn sentence(v: &Verdict) -> String {
    let (verb, what, idle) = match v.measure {
        Measure::Time => ("spends", "time handling exits", " (idle excluded)"),
        Measure::Exits => ("makes", "exits", " (idle excluded)"),
    };
    let head = match v.change_pct {
        Some(p) if p.abs() < 0.5 => format!("{} {verb} about as much {what} as 1{idle}", v.input),
        Some(p) => format!(
            "{} {verb} {:.0}% {} {what} than 1{idle}",
            v.input,
            p.abs(),
            if p < 0.0 { "less" } else { "more" }
        ),
        None => format!("{} has {what} where 1 had none", v.input),
    };
    let movers: Vec<String> = v
        .movers
        .iter()
        .map(|m| match m.count_change_pct {
            Some(p) => format!("{} exits {}", m.key, format::change(Some(p), false)),
            None => format!("{} new ({} exits)", m.key, format::count(m.count_after)),
        })
        .collect();
    if movers.is_empty() {
        format!("{head} [{}]", v.name)
    } else {
        format!("{head}; {} [{}]", movers.join(", "), v.name)
    }
}
