//! The `report` page: per table, where the handled time goes by key with idle drawn apart
//! (the guest waiting is not overhead), the latency distributions of the costliest keys
//! where single events were timed, and the whole table.

use super::chart::{self, Bar, Chart, Group, Scale};
use super::page::{Block, DataTable, Page, Section};
use super::{amount, measured_on, row_label};
use crate::analysis::report::{Report, ReportRow, ReportTable};
use crate::render::format;
use crate::render::report_text;

/// Keys drawn per chart; the rest are in the table.
const CHART_ROWS: usize = 15;
/// Keys whose latency distribution is drawn.
const LATENCY_ROWS: usize = 3;

pub(super) fn page(r: &Report) -> Page {
    let inputs: Vec<&str> = dedup(r.tables.iter().map(|t| t.input.as_str()));
    let backends: Vec<Option<&str>> = r.tables.iter().map(|t| t.backend.as_deref()).collect();
    let mut page = Page::new(
        "virtlens report",
        inputs.join(", "),
        measured_on(backends.first().copied().flatten()),
    );
    for (i, t) in r.tables.iter().enumerate() {
        page.sections.push(table_section(i + 1, t));
    }
    if r.tables.is_empty() {
        page.summary
            .push("No table of the requested kind in the input.".into());
    }
    for t in &r.timelines {
        let n = page.sections.len() + 1;
        let mut s = Section::new(format!("timeline-{n}"), format!("{}: timeline", t.input));
        s.intro.push(
            "When the exits happened: per VM and vCPU, the exits of each time bucket by \
             reason."
                .into(),
        );
        let measured = measured_on(backends.first().copied().flatten());
        s.blocks
            .push(Block::Timeline(Box::new(super::timeline::layout(
                format!("timeline-{n}-lanes"),
                t,
                &measured,
            ))));
        page.sections.push(s);
    }
    for sc in &r.sched {
        let mut s = Section::new(
            format!("sched-{}", page.sections.len() + 1),
            format!("{}: vCPU scheduling", sc.input),
        );
        s.intro
            .push(crate::render::diagnose_numbers::sched_line(&sc.summary));
        page.sections.push(s);
    }
    page.notes = r.notes.clone();
    page
}

fn dedup<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

fn table_section(n: usize, t: &ReportTable) -> Section {
    let mut s = Section::new(format!("table-{n}"), report_text::title(t));
    s.intro.push(report_text::summary(t).trim().to_string());
    let measured = measured_on(t.backend.as_deref());
    for c in breakdown(n, t, &measured) {
        s.blocks.push(Block::Chart(Box::new(chart::layout(c))));
    }
    let mut costly: Vec<&ReportRow> = t.rows.iter().filter(|r| !r.latency.is_empty()).collect();
    costly.sort_by_key(|r| std::cmp::Reverse(r.time_ns.unwrap_or(0)));
    for (k, r) in costly.into_iter().take(LATENCY_ROWS).enumerate() {
        s.blocks.push(Block::Chart(Box::new(chart::layout(latency(
            n, k, t, r, &measured,
        )))));
    }
    s.blocks.push(Block::Table(full_table(t)));
    s
}

/// Time (or count) per key: the overhead keys in one chart, the idle keys (the guest waiting,
/// which the analysis marks) in a chart of their own, so a long idle never flattens the
/// overhead.
fn breakdown(n: usize, t: &ReportTable, measured: &str) -> Vec<Chart> {
    let (busy, idle): (Vec<&ReportRow>, Vec<&ReportRow>) = t.rows.iter().partition(|r| !r.idle);
    let what = if t.timed { "handled time" } else { "events" };
    let mut out = Vec::new();
    if !busy.is_empty() {
        let more = busy.len().saturating_sub(CHART_ROWS) + t.other.as_ref().map_or(0, |o| o.rows);
        out.push(Chart {
            id: format!("table-{n}-breakdown"),
            title: format!("{what} per overhead key"),
            desc: format!(
                "{} per key of {} that virtualization cost, largest first; idle keys (the \
                 guest waiting) are in {}.{}",
                capitalise(what),
                report_text::title(t),
                if idle.is_empty() {
                    "no row of this table"
                } else {
                    "the next chart"
                },
                if more > 0 {
                    format!(" {more} smaller keys are only in the table below the chart.")
                } else {
                    String::new()
                }
            ),
            series: vec!["overhead".into()],
            ..rows_chart(t, &busy[..busy.len().min(CHART_ROWS)], what, measured, true)
        });
    }
    if !idle.is_empty() {
        out.push(Chart {
            id: format!("table-{n}-idle"),
            title: format!("{what} per idle key, apart from the overhead"),
            desc: format!(
                "{} per idle key of {}: the guest waiting (HLT and the like), not \
                 virtualization overhead, drawn apart so its length does not flatten the \
                 overhead keys.",
                capitalise(what),
                report_text::title(t)
            ),
            series: vec!["idle (not overhead)".into()],
            ..rows_chart(t, &idle, what, measured, false)
        });
    }
    out
}

/// A one-series chart of `rows` with its table (the id, title and description to be set).
/// Overhead rows say their share of the overhead (the table's totals without idle), so a key
/// that is all of the overhead never reads `0.0%` because idle dwarfs it.
fn rows_chart(
    t: &ReportTable,
    rows: &[&ReportRow],
    what: &str,
    measured: &str,
    overhead: bool,
) -> Chart {
    let timed = t.timed;
    let amount_of = |r: &ReportRow| {
        if timed {
            r.time_ns.unwrap_or(0)
        } else {
            r.count
        }
    };
    let whole = if timed {
        t.total.overhead_time_ns.unwrap_or(0)
    } else {
        t.total.overhead_count
    };
    let mut table = DataTable::new(
        "Per key",
        &[
            "key",
            "kind",
            if timed { "handled time" } else { "count" },
            "share of all",
            "share of the overhead",
        ],
    );
    table.numeric[1] = false;
    let groups = rows
        .iter()
        .map(|r| {
            let v = amount_of(r);
            let shown = if timed {
                format::duration(v as f64)
            } else {
                format::count(v)
            };
            let of_all = if timed { r.time_share } else { r.count_share };
            let of_all = of_all.map(format::share).unwrap_or_default();
            let of_overhead = if overhead && whole > 0 {
                format::share(v as f64 / whole as f64)
            } else {
                String::new()
            };
            let kind = if r.idle { "idle" } else { "overhead" };
            table.rows.push(vec![
                row_label(r),
                kind.to_string(),
                shown.clone(),
                of_all.clone(),
                of_overhead.clone(),
            ]);
            let text = if !of_overhead.is_empty() {
                format!("{shown} · {of_overhead} of the overhead")
            } else if !of_all.is_empty() {
                format!("{shown} · {of_all} of all")
            } else {
                shown
            };
            Group {
                label: row_label(r),
                bars: vec![Bar {
                    series: 0,
                    value: v as f64,
                    shown: text,
                }],
            }
        })
        .collect();
    Chart {
        id: String::new(),
        title: String::new(),
        desc: String::new(),
        axis: what.to_string(),
        series: Vec::new(),
        groups,
        scale: Scale::Auto,
        tick: amount(timed),
        measured: measured.to_string(),
        table,
    }
}

fn latency(n: usize, k: usize, t: &ReportTable, r: &ReportRow, measured: &str) -> Chart {
    let mut table = DataTable::new("Latency buckets", &["from", "to", "events", "share"]);
    table.numeric[0] = true;
    let groups = r
        .latency
        .iter()
        .map(|b| {
            let label = format!(
                "{} – {}",
                format::duration(b.lo_ns as f64),
                format::duration(b.hi_ns as f64)
            );
            table.rows.push(vec![
                format::duration(b.lo_ns as f64),
                format::duration(b.hi_ns as f64),
                format::count(b.count),
                format::share(b.share),
            ]);
            Group {
                label,
                bars: vec![Bar {
                    series: 0,
                    value: b.share * 100.0,
                    shown: format!("{} · {}", format::share(b.share), format::count(b.count)),
                }],
            }
        })
        .collect();
    let p = |v: Option<u64>| format::opt_duration(v.map(|v| v as f64));
    Chart {
        id: format!("table-{n}-latency-{}", k + 1),
        title: format!("Latency of {}", row_label(r)),
        desc: format!(
            "How long single {} events took, in buckets from shortest to longest (median {}, \
             99th percentile {}), in {}.",
            row_label(r),
            p(r.p50_ns),
            p(r.p99_ns),
            report_text::title(t)
        ),
        axis: "share of the key's events (%)".into(),
        series: vec!["events".into()],
        groups,
        scale: Scale::Linear,
        tick: |v| format!("{v:.0}%"),
        measured: measured.to_string(),
        table,
    }
}

fn full_table(t: &ReportTable) -> DataTable {
    let mut head = vec!["key", "count", "count%"];
    if t.timed {
        head.extend(["time", "time%", "mean", "p50", "p99"]);
    }
    head.push("idle");
    let mut table = DataTable::new(format!("All rows of {}", report_text::title(t)), &head);
    for r in &t.rows {
        let d = |ns: Option<u64>| format::opt_duration(ns.map(|v| v as f64));
        let mut row = vec![
            row_label(r),
            format::count(r.count),
            r.count_share.map(format::share).unwrap_or_default(),
        ];
        if t.timed {
            row.extend([
                d(r.time_ns),
                r.time_share.map(format::share).unwrap_or_default(),
                format::opt_duration(r.mean_ns),
                d(r.p50_ns),
                d(r.p99_ns),
            ]);
        }
        row.push(if r.idle { "idle".into() } else { String::new() });
        table.rows.push(row);
    }
    if let Some(o) = &t.other {
        let mut row = vec![
            format!("… {} more rows", o.rows),
            format::count(o.count),
            String::new(),
        ];
        if t.timed {
            row.push(format::opt_duration(o.time_ns.map(|v| v as f64)));
            row.extend([String::new(), String::new(), String::new(), String::new()]);
        }
        row.push(String::new());
        table.rows.push(row);
    }
    table
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
