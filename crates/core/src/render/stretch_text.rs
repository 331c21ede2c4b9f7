//! The text form of `virtlens stretch`: the layers, numbered; the stretch table (each layer's
//! median with its noise band, then each later layer's factor against the first with its noise
//! bounds and verdict); the summary table in the shape nested-virtualization studies print
//! (values per layer, change against the previous layer and against the first); the likely
//! causes per measure; the stated summaries checked; and the notes.

use comfy_table::{CellAlignment, Table as Grid, presets};

use super::Style;
use super::format::wrap;
use virtlens_guest::stats::num;

use crate::analysis::stretch::{Row, StatedCheck, Stretch, StretchReport, Value, Verdict};

/// A change in percent, with the precision its size deserves: `+4.53 %`, `+353.5 %`,
/// `+11,434 %` (a factor past 10× reads better in the stretch column).
fn pct(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "+" };
    let a = v.abs();
    if !a.is_finite() {
        return format!("{v} %");
    }
    if a >= 1000.0 {
        format!("{sign}{} %", super::format::count(a.round() as u64))
    } else if a >= 100.0 {
        format!("{v:+.1} %")
    } else {
        format!("{v:+.2} %")
    }
}

/// A measure's unit as text shows units elsewhere (`µs`, never `us`).
fn unit(u: &str) -> String {
    if u == "us" {
        "µs".into()
    } else {
        u.to_string()
    }
}

pub(crate) fn verdict(s: &Stretch) -> &'static str {
    match s.verdict {
        Verdict::Slower => "slower",
        Verdict::Faster => "faster",
        Verdict::WithinNoise => "within noise",
        Verdict::SlowerNoiseUnknown => "slower (noise unknown)",
        Verdict::FasterNoiseUnknown => "faster (noise unknown)",
        Verdict::Same => "same",
    }
}

fn right_align(grid: &mut Grid, from: usize, to: usize) {
    for i in from..to {
        if let Some(c) = grid.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// Renders `r` as text.
pub(crate) fn render(r: &StretchReport, style: &Style) -> String {
    let mut out = String::new();
    for (i, l) in r.layers.iter().enumerate() {
        let source = match i.checked_sub(1).and_then(|p| r.layers.get(p)) {
            Some(prev) if prev.source == l.source => "same source".to_string(),
            _ => l.source.clone(),
        };
        let hv = l
            .fingerprint
            .as_ref()
            .and_then(|f| f.hypervisor_vendor.clone())
            .map(|h| format!(", hypervisor {h}"))
            .unwrap_or_default();
        out.push_str(&format!("{}  {}  ({source}{hv})\n", i + 1, l.name));
    }
    out.push('\n');
    out.push_str(&Style::paint(
        style.title,
        "stretch against layer 1 (factor > 1: the same work takes longer)",
    ));
    out.push('\n');
    out.push_str(&stretch_table(r));
    out.push('\n');
    if r.layers.len() > 2 {
        out.push_str(&Style::paint(
            style.title,
            "summary (as the nested study printed it: each layer against the one before)",
        ));
        out.push('\n');
        out.push_str(&summary_table(r));
        out.push('\n');
    }
    let explained: Vec<&Row> = r.rows.iter().filter(|row| !row.causes.is_empty()).collect();
    if !explained.is_empty() {
        out.push_str(&Style::paint(style.title, "likely causes"));
        out.push('\n');
        for row in explained {
            for c in &row.causes {
                out.push_str(&wrap(&format!("- {}: {c}", row.measure), 2));
            }
        }
        out.push('\n');
    }
    if !r.stated.is_empty() {
        out.push_str(&Style::paint(
            style.title,
            "stated summaries, recomputed from their own numbers",
        ));
        out.push('\n');
        for s in &r.stated {
            let (line, paint) = stated_line(s, style);
            out.push_str(&Style::paint(paint, wrap(&line, 2).trim_end()));
            out.push('\n');
        }
        out.push('\n');
    }
    for n in &r.notes {
        out.push_str(&Style::paint(
            style.note,
            wrap(&format!("note: {n}"), 6).trim_end(),
        ));
        out.push('\n');
    }
    out
}

/// A layer's value with its noise band: `33.55 [33.1–34.0]`; `-` where the layer lacks it.
pub(crate) fn value_cell(v: Option<&Value>) -> String {
    v.map_or("-".into(), |v| match v.spread {
        Some(s) if s.n > 1 => {
            let (lo, hi) = s.band();
            format!("{} [{}–{}]", num(v.value), num(lo), num(hi))
        }
        _ => num(v.value),
    })
}

fn stretch_table(r: &StretchReport) -> String {
    let n = r.layers.len();
    let mut header = vec!["measure".to_string(), "unit".to_string()];
    for i in 1..=n {
        header.push(format!("{i} median [band]"));
    }
    for i in 2..=n {
        header.push(format!("{i} stretch [bounds]"));
        header.push(format!("{i} change"));
        header.push(format!("{i} verdict"));
    }
    let mut grid = Grid::new();
    grid.load_style(presets::NOTHING);
    grid.set_header(header.clone());
    for row in &r.rows {
        let mut cells = vec![row.measure.clone(), unit(&row.unit)];
        for v in &row.values {
            cells.push(value_cell(v.as_ref()));
        }
        for s in &row.vs_first {
            match s {
                Some(s) => {
                    cells.push(match s.bounds {
                        Some((lo, hi)) => format!("{}× [{}–{}]", num(s.factor), num(lo), num(hi)),
                        None => format!("{}×", num(s.factor)),
                    });
                    cells.push(pct(s.change_pct));
                    cells.push(verdict(s).to_string());
                }
                None => cells.extend(["-".to_string(), "-".to_string(), "-".to_string()]),
            }
        }
        grid.add_row(cells);
    }
    right_align(&mut grid, 2, header.len());
    format!("{grid}\n")
}

fn summary_table(r: &StretchReport) -> String {
    let n = r.layers.len();
    let mut header = vec!["measure".to_string(), "unit".to_string()];
    header.extend(r.layers.iter().map(|l| l.name.clone()));
    for i in 1..n {
        header.push(format!("{} vs {}", r.layers[i].name, r.layers[i - 1].name));
    }
    header.push(format!("{} vs {}", r.layers[n - 1].name, r.layers[0].name));
    let mut grid = Grid::new();
    grid.load_style(presets::NOTHING);
    grid.set_header(header.clone());
    for row in &r.rows {
        let mut cells = vec![row.measure.clone(), unit(&row.unit)];
        cells.extend(
            row.values
                .iter()
                .map(|v| v.as_ref().map_or("-".into(), |v| num(v.value))),
        );
        let change = |s: &Option<Stretch>| s.as_ref().map_or("-".into(), |s| pct(s.change_pct));
        cells.extend(row.vs_previous.iter().map(change));
        cells.push(row.vs_first.last().map_or("-".into(), change));
        grid.add_row(cells);
    }
    right_align(&mut grid, 2, header.len());
    format!("{grid}\n")
}

pub(crate) fn stated_line(s: &StatedCheck, style: &Style) -> (String, anstyle::Style) {
    let st = &s.stated;
    let what = format!("{} vs {} on {}", st.layer, st.base, st.measure);
    let computed = s.computed.map(|c| {
        if s.is_factor {
            format!("{}×", num(c))
        } else {
            pct(c)
        }
    });
    match (s.agrees, computed) {
        (Some(true), Some(c)) => (
            format!("agrees: {what}: stated {}, the numbers give {c}", st.says),
            style.good,
        ),
        (Some(false), Some(c)) => (
            format!(
                "DISAGREES: {what}: stated {}, but the study's own numbers give {c}",
                st.says
            ),
            style.bad,
        ),
        (_, None) => (
            format!(
                "cannot check: {what}: stated {}, but the study gives no values for both layers",
                st.says
            ),
            style.note,
        ),
        (None, Some(c)) => (
            format!(
                "cannot read the stated {:?} ({what}); the numbers give {c}",
                st.says
            ),
            style.note,
        ),
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn percentages_and_units_read_as_elsewhere() {
        assert_eq!(pct(4.534), "+4.53 %");
        assert_eq!(pct(-71.66), "-71.66 %");
        assert_eq!(
            pct(353.45),
            "+353.4 %".replace("353.4", &format!("{:.1}", 353.45))
        );
        assert_eq!(pct(799_918.55), "+799,919 %");
        assert_eq!(pct(-1500.2), "-1,500 %");
        assert_eq!(unit("us"), "µs");
        assert_eq!(unit("MB/s"), "MB/s");
    }
}
