//! The text form of a report: per table a title line, an aligned table with idle rows set
//! apart under their own heading, and a summary line with totals, time without idle and rate.

use comfy_table::{CellAlignment, Table as Grid, presets};

use super::Style;
use super::format;
use crate::analysis::report::{Report, ReportRow, ReportTable};
use crate::decode::Isa;
use crate::profile::TableKind;

/// Renders `report` as text; `style` colours whole lines (the caller strips it when needed).
pub(crate) fn render(report: &Report, style: &Style) -> String {
    let mut out = String::new();
    for (i, t) in report.tables.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        render_table(&mut out, t, style);
    }
    for sc in &report.sched {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&Style::paint(style.title, &sc.input));
        out.push('\n');
        out.push_str(&super::top_text::sched_table(&sc.summary, style));
    }
    for c in &report.counters {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&super::counters_text::series(&c.input, &c.log, None, style));
    }
    if report.tables.is_empty() && report.sched.is_empty() && report.counters.is_empty() {
        out.push_str("no table of the requested kind in the input\n");
    }
    for n in &report.notes {
        out.push_str(&Style::paint(style.note, &format!("note: {n}")));
        out.push('\n');
    }
    out
}

/// The table's title: input, kind, grouping, label and scope.
pub(crate) fn title(t: &ReportTable) -> String {
    let mut parts = vec![t.input.clone(), format::kind_title(&t.kind, t.isa)];
    if t.grouped_by != "key" {
        parts.push(format!("by {}", t.grouped_by));
    }
    parts.extend(t.label.clone());
    parts.extend(t.scope.clone());
    if t.partial {
        parts.push("partial: rows missing, see the notes".to_string());
    }
    parts.join(" · ")
}

fn key_header(t: &ReportTable) -> (&'static str, &'static str) {
    match (t.grouped_by, &t.kind) {
        ("vcpu", _) => ("vcpu", ""),
        ("vm", _) => ("vm", "pid"),
        (_, TableKind::Vmexit) => ("exit reason", "code"),
        (_, TableKind::Ioport) => ("port", "device"),
        (_, TableKind::Mmio) => ("address", "region"),
        (_, TableKind::Msr) => ("msr", "name"),
        (_, TableKind::GuestRip) => ("guest code", "RIPs"),
        (_, _) => ("event", ""),
    }
}

/// Which optional columns have anything to show.
struct Columns {
    second: bool,
    time: bool,
    min_max: bool,
    percentiles: bool,
    rate: bool,
}

fn render_table(out: &mut String, t: &ReportTable, style: &Style) {
    out.push_str(&Style::paint(style.title, &title(t)));
    out.push('\n');
    let cols = Columns {
        second: t.rows.iter().any(|r| second_cell(t, r).is_some()),
        time: t.timed,
        min_max: t
            .rows
            .iter()
            .any(|r| r.min_ns.is_some() || r.max_ns.is_some()),
        percentiles: t.rows.iter().any(|r| r.p50_ns.is_some()),
        rate: t.rows.iter().any(|r| r.per_second.is_some()),
    };
    let (key_name, second_name) = key_header(t);
    let mut header = vec![key_name];
    if cols.second {
        header.push(second_name);
    }
    header.push(if t.per_second { "per second" } else { "count" });
    if !t.overlapping {
        header.push(if t.kind == TableKind::Vmexit {
            "exits%"
        } else {
            "count%"
        });
    }
    if cols.rate {
        header.push("rate");
    }
    if cols.time {
        header.extend(["time", "time%"]);
        if cols.min_max {
            header.push("min");
        }
        header.push("mean");
        if cols.percentiles {
            header.extend(["p50", "p99"]);
        }
        if cols.min_max {
            header.push("max");
        }
    }
    let mut grid = Grid::new();
    grid.load_style(presets::NOTHING);
    grid.set_header(header.clone());
    let (busy, idle): (Vec<&ReportRow>, Vec<&ReportRow>) = t.rows.iter().partition(|r| !r.idle);
    for r in busy.iter().chain(&idle) {
        grid.add_row(cells(t, r, &cols));
    }
    for i in 1..header.len() {
        if let Some(c) = grid.column_mut(i) {
            let names = !matches!(t.kind, TableKind::Vmexit) && t.grouped_by == "key";
            c.set_cell_alignment(if cols.second && i == 1 && names {
                CellAlignment::Left
            } else {
                CellAlignment::Right
            });
        }
    }
    for (i, line) in grid.lines().enumerate() {
        let line = line.trim_end();
        if i == 0 {
            out.push_str(&Style::paint(style.header, line));
        } else if i > busy.len() {
            out.push_str(&Style::paint(style.idle, line));
        } else {
            out.push_str(line);
        }
        out.push('\n');
        if i == busy.len() && !idle.is_empty() {
            out.push_str(&Style::paint(
                style.idle,
                "  idle — the guest waiting, not virtualization overhead:",
            ));
            out.push('\n');
        }
    }
    if let Some(o) = &t.other {
        out.push_str(&format!(
            "  … {} more rows: {} events{}\n",
            o.rows,
            format::count(o.count),
            o.time_ns
                .filter(|_| t.timed)
                .map(|ns| format!(", {}", format::duration(ns as f64)))
                .unwrap_or_default()
        ));
    }
    out.push_str(&summary(t));
    out.push('\n');
}

fn second_cell(t: &ReportTable, r: &ReportRow) -> Option<String> {
    match (&t.kind, t.grouped_by) {
        (_, "vm") => r.pid.map(|p| p.to_string()),
        (_, "vcpu") => None,
        (TableKind::Vmexit, _) => r.code.map(|c| match t.isa {
            // The manuals' spelling: SVM exit codes and arm64 exception classes in hex.
            Some(Isa::Svm | Isa::Arm64) => format!("{c:#x}"),
            _ => c.to_string(),
        }),
        _ => r.name.clone(),
    }
}

fn cells(t: &ReportTable, r: &ReportRow, cols: &Columns) -> Vec<String> {
    let key = match r.access {
        Some(a) => format!("{} {}", r.key, a.word()),
        None => r.key.clone(),
    };
    let mut c = vec![key];
    if cols.second {
        c.push(second_cell(t, r).unwrap_or_default());
    }
    c.push(format::count(r.count));
    if let Some(s) = r.count_share {
        c.push(format::share(s));
    }
    if cols.rate {
        c.push(r.per_second.map(format::rate).unwrap_or_default());
    }
    if cols.time {
        let d = |ns: Option<u64>| format::opt_duration(ns.map(|v| v as f64));
        c.push(d(r.time_ns));
        c.push(r.time_share.map(format::share).unwrap_or_default());
        if cols.min_max {
            c.push(d(r.min_ns));
        }
        let mean = format::opt_duration(r.mean_ns);
        c.push(match r.rel_stderr_pct {
            Some(s) => format!("{mean} ±{s:.2}%"),
            None => mean,
        });
        if cols.percentiles {
            c.push(d(r.p50_ns));
            c.push(d(r.p99_ns));
        }
        if cols.min_max {
            c.push(d(r.max_ns));
        }
    }
    c
}

/// The totals line of a table (idle apart), indented by two spaces.
pub(crate) fn summary(t: &ReportTable) -> String {
    let tot = &t.total;
    if t.overlapping {
        return format!(
            "  {} counters; they overlap (one may include another), so there is no total",
            t.rows.len()
        );
    }
    let noun = if t.kind == TableKind::Vmexit {
        "exits"
    } else {
        "events"
    };
    let mut s = format!("  total {} {noun}", format::count(tot.count));
    if let Some(r) = tot.per_second {
        s.push_str(&format!(" ({})", format::rate(r)));
    }
    if let (Some(time), true) = (tot.time_ns, t.timed) {
        s.push_str(&format!(", {} handled", format::duration(time as f64)));
        if let Some(o) = tot.overhead_time_ns {
            s.push_str(&format!("; without idle {}", format::duration(o as f64)));
            if time > 0 {
                s.push_str(&format!(" ({})", format::share(o as f64 / time as f64)));
            }
        }
    } else if tot.idle_count > 0 {
        s.push_str(&format!(
            "; {} without idle",
            format::count(tot.overhead_count)
        ));
    }
    if let Some(w) = t.window_ns {
        s.push_str(&format!(" over {}", format::duration(w as f64)));
    }
    if let Some(p) = t.printed_count
        && p != tot.count
    {
        s.push_str(&format!(
            "; the input's total says {} ({} not in rows)",
            format::count(p),
            format::count(p.saturating_sub(tot.count))
        ));
    }
    s
}
