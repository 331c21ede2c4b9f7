//! Text for performance-counter inputs: `virtlens counters` (findings, PAL alerts per time
//! slice, the per-VM hypervisor numbers) and the counter statistics `report` shows.

use comfy_table::{CellAlignment, Table as Grid, presets};

use super::{Style, format};
use crate::counters::hv::{Fact, HvFinding, VpMetrics};
use crate::counters::pal::Alert;
use crate::counters::{Analysis, Report, words};
use crate::profile::{CounterLog, CounterTool};

fn grid(header: &[&str], right_from: usize) -> Grid {
    let mut g = Grid::new();
    g.load_style(presets::NOTHING);
    g.set_header(header.to_vec());
    for i in right_from..header.len() {
        if let Some(c) = g.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    g
}

pub(crate) fn tool(t: CounterTool) -> &'static str {
    match t {
        CounterTool::Perfmon => "perfmon counters",
        CounterTool::Esxtop => "esxtop counters",
        CounterTool::Table => "pasted counter table",
    }
}

/// What was sampled, in one line.
pub(crate) fn span(a: &Analysis) -> String {
    let mut parts = vec![format!("{} counters", a.counters)];
    parts.push(format!("{} sample(s)", a.header.samples));
    if let Some(i) = a.header.interval_s {
        parts.push(format!("every {}", format::duration(i * 1e9)));
    }
    if let (Some(f), Some(l)) = (&a.header.first, &a.header.last) {
        parts.push(format!("{f} – {l}"));
    }
    if let Some(z) = &a.header.time_zone {
        let bias = a
            .header
            .bias_minutes
            .map(|b| format!(", UTC{:+}:{:02}", -b / 60, (b % 60).abs()))
            .unwrap_or_default();
        parts.push(format!("{z}{bias}"));
    }
    if let Some(s) = a.header.slice_s {
        parts.push(format!("PAL slices of {}", format::duration(s * 1e9)));
    }
    parts.join(" · ")
}

/// A fact's value with its unit (`62.4%`, `9,214,942/s`, `4`).
pub(crate) fn fact_value(f: &Fact) -> String {
    match f.unit {
        "%" => format!("{:.1}%", f.value),
        "/s" => format::rate(f.value),
        "ns" => format::duration(f.value),
        "per IO" => format!("{:.2} per IO", f.value),
        "IOPS" => format!("{} IOPS", format::value(f.value)),
        "count" if f.value >= 0.0 => format::count(f.value.round() as u64),
        _ => format::value(f.value),
    }
}

fn fact(f: &Fact) -> String {
    format!("{}: {}", f.name, fact_value(f))
}

fn finding(out: &mut String, n: usize, f: &HvFinding, style: &Style) {
    let w = words::of(f.id);
    let head = format!(
        "{n}. [{}] {} — {} ({})",
        f.level.name(),
        f.id,
        w.title,
        f.subject
    );
    out.push_str(&Style::paint(style.title, &head));
    out.push('\n');
    let facts: Vec<String> = f.facts.iter().map(fact).collect();
    out.push_str(&format::wrap(
        &format!("   evidence: {}", facts.join("; ")),
        13,
    ));
    out.push_str(&format::wrap(&format!("   cause: {}", w.cause_text()), 10));
    for fix in w.fix {
        out.push_str(&format::wrap(&format!("   fix: {fix}"), 8));
    }
    for s in w.sources {
        out.push_str(&format!("   source: {s}\n"));
    }
}

/// The columns of the per-VM Hyper-V virtual processor table.
pub(crate) const VP_HEADER: [&str; 9] = [
    "vm",
    "VPs",
    "% guest",
    "% hypervisor",
    "intercepts",
    "ext. interrupts",
    "EOI",
    "IPIs sent",
    "wait/dispatch",
];

/// One VM's row of the virtual processor table.
pub(crate) fn vp_cells(m: &VpMetrics) -> Vec<String> {
    let o = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "-".to_string(), f);
    vec![
        m.subject.clone(),
        if m.vps > 0 {
            m.vps.to_string()
        } else {
            "-".into()
        },
        o(m.guest_run_pct, |v| format!("{v:.1}")),
        o(m.hv_run_pct, |v| format!("{v:.1}")),
        o(m.intercepts_per_s, format::rate),
        o(m.external_interrupts_per_s, format::rate),
        o(m.eoi_per_s, format::rate),
        o(m.ipis_sent_per_s, format::rate),
        o(m.cpu_wait_ns, format::duration),
    ]
}

/// The columns of the PAL alert table.
pub(crate) const PAL_HEADER: [&str; 5] =
    ["condition", "counter", "threshold", "slices", "worst max"];

/// One broken PAL threshold: its condition, counter, threshold, slices broken and worst max.
pub(crate) fn pal_cells(al: &Alert) -> Vec<String> {
    let worst = al
        .breaches
        .iter()
        .map(|b| b.max)
        .fold(f64::NEG_INFINITY, f64::max);
    vec![
        format!("{:?}", al.threshold.condition).to_lowercase(),
        al.path.clone(),
        format!(
            "{} {}",
            al.threshold.op.word(),
            format::value(al.threshold.value)
        ),
        format!("{}/{}", al.breaches.len(), al.slices),
        format::value(worst),
    ]
}

fn analysis(out: &mut String, a: &Analysis, style: &Style) {
    out.push_str(&Style::paint(
        style.title,
        &format!("{} · {}", a.input, tool(a.header.tool)),
    ));
    out.push('\n');
    out.push_str(&format::wrap(&span(a), 2));
    if a.findings.is_empty() {
        out.push_str("no hv.* finding: nothing in these counters is beyond its threshold\n");
    }
    for (i, f) in a.findings.iter().enumerate() {
        out.push('\n');
        finding(out, i + 1, f, style);
    }
    if !a.vps.is_empty() {
        out.push('\n');
        out.push_str(&Style::paint(style.header, "Hyper-V virtual processors"));
        out.push('\n');
        let mut g = grid(&VP_HEADER, 1);
        for m in &a.vps {
            g.add_row(vp_cells(m));
        }
        out.push_str(&g.to_string());
        out.push('\n');
    }
    if !a.pal.is_empty() {
        out.push('\n');
        out.push_str(&Style::paint(
            style.header,
            "PAL thresholds broken (per time slice: min, mean or max)",
        ));
        out.push('\n');
        let mut g = grid(&PAL_HEADER, 2);
        for al in &a.pal {
            g.add_row(pal_cells(al));
        }
        out.push_str(&g.to_string());
        out.push('\n');
        if let Some(al) = a.pal.first() {
            out.push_str(&format!("  thresholds from {}\n", al.threshold.source));
        }
    }
}

/// `virtlens counters`.
pub(crate) fn render(report: &Report, style: &Style) -> String {
    let mut out = String::new();
    for (i, a) in report.inputs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        analysis(&mut out, a, style);
    }
    for n in &report.notes {
        out.push_str(&Style::paint(style.note, &format!("note: {n}")));
        out.push('\n');
    }
    out
}

/// The statistics of every counter of `log` (what `report` shows), the `top` largest means
/// first when asked.
pub(crate) fn series(input: &str, log: &CounterLog, top: Option<usize>, style: &Style) -> String {
    let mut out = String::new();
    out.push_str(&Style::paint(
        style.title,
        &format!(
            "{input} · {} · {} counters, {} sample(s)",
            tool(log.header.tool),
            log.series.len(),
            log.header.samples
        ),
    ));
    out.push('\n');
    let mut g = grid(&["counter", "mean", "min", "max", "samples", "blank"], 1);
    let mut rows: Vec<_> = log.series.iter().collect();
    if top.is_some() {
        rows.sort_by(|a, b| {
            let m = |s: &&crate::profile::Series| s.stats.map_or(f64::NEG_INFINITY, |s| s.mean);
            m(b).total_cmp(&m(a))
        });
    }
    let shown = top.unwrap_or(rows.len());
    for s in rows.iter().take(shown) {
        let (mean, min, max, n) = match s.stats {
            Some(st) => (
                format::value(st.mean),
                format::value(st.min),
                format::value(st.max),
                st.n.to_string(),
            ),
            None => ("-".into(), "-".into(), "-".into(), "0".into()),
        };
        g.add_row(vec![
            s.path.display(),
            mean,
            min,
            max,
            n,
            s.blank.to_string(),
        ]);
    }
    out.push_str(&g.to_string());
    out.push('\n');
    if rows.len() > shown {
        out.push_str(&format!("… and {} more counter(s)\n", rows.len() - shown));
    }
    out
}

/// Counters side by side (`compare`).
pub(crate) fn compare(c: &crate::counters::compare::Comparison, style: &Style) -> String {
    let mut out = String::new();
    out.push_str(&Style::paint(
        style.title,
        "performance counters, mean per input",
    ));
    out.push('\n');
    for (i, n) in c.inputs.iter().enumerate() {
        out.push_str(&format!("  {}  {n}\n", i + 1));
    }
    let mut header: Vec<String> = vec!["counter".into()];
    header.extend((1..=c.inputs.len()).map(|i| i.to_string()));
    header.push("change".into());
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut g = grid(&refs, 1);
    for r in &c.rows {
        let mut row = vec![r.path.clone()];
        row.extend(
            r.means
                .iter()
                .map(|m| m.map_or_else(|| "-".to_string(), format::value)),
        );
        row.push(format::change(r.change_pct, false));
        g.add_row(row);
    }
    out.push_str(&g.to_string());
    out.push('\n');
    for f in &c.findings {
        let list: Vec<String> = f
            .findings
            .iter()
            .map(|(id, level, subject)| format!("{id} [{}] ({subject})", level.name()))
            .collect();
        let text = if list.is_empty() {
            "no hv.* finding".to_string()
        } else {
            list.join(", ")
        };
        out.push_str(&format::wrap(&format!("  {}: {text}", f.input), 4));
    }
    out
}
