//! Horizontal bar charts as inline SVG: the geometry of labelled, grouped bars on a linear or
//! logarithmic axis, laid out here and drawn by the `bars.svg` template. Hand-built rather than
//! drawn with a plotting crate because every chart must carry what a plotting canvas does not
//! give: `<title>`/`<desc>`, a fill pattern per series (readable without colour and in grey
//! print), a value printed at every bar, and a data table beside it. Layout only: every value
//! comes computed, and every label comes formatted by the page builders.

use serde::Serialize;

use super::page::DataTable;

/// The drawing width in SVG units (the figure scales down with the page).
const WIDTH: f64 = 760.0;
const BAR_H: f64 = 15.0;
const BAR_GAP: f64 = 2.0;
const GROUP_GAP: f64 = 9.0;
const VALUE_W: f64 = 150.0;
const AXIS_H: f64 = 34.0;
const LEGEND_H: f64 = 26.0;
/// Characters of a group label drawn (the full label is in the bar's tooltip and the table).
const LABEL_CHARS: usize = 34;

/// How values map to bar lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scale {
    /// From zero.
    Linear,
    /// Decades; for values spread over orders of magnitude (a trap 1000× its fix).
    Log,
}

/// One bar before layout.
#[derive(Debug, Clone)]
pub(super) struct Bar {
    /// Index into the chart's series.
    pub series: usize,
    pub value: f64,
    /// The value as printed at the bar's end (`1.23 ms`, `42.0%`, `×3.1`).
    pub shown: String,
}

/// A labelled group of bars (one key, one scenario, one input).
#[derive(Debug, Clone)]
pub(super) struct Group {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// A chart before layout.
#[derive(Debug, Clone)]
pub(super) struct Chart {
    /// Unique in the page (`report-1-time`).
    pub id: String,
    pub title: String,
    /// What the chart shows, in a sentence or two (the SVG `<desc>`).
    pub desc: String,
    /// What the axis measures (`handled time`, `ns per operation (log scale)`).
    pub axis: String,
    pub series: Vec<String>,
    pub groups: Vec<Group>,
    pub scale: Scale,
    /// Formats an axis tick.
    pub tick: fn(f64) -> String,
    /// Where the figures come from and what measured them (the backend label).
    pub measured: String,
    /// The same numbers as a table.
    pub table: DataTable,
}

/// A chart laid out, ready for the template.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Figure {
    pub id: String,
    pub title: String,
    pub desc: String,
    pub axis: String,
    pub measured: String,
    pub width: f64,
    pub height: f64,
    pub plot_x: f64,
    pub plot_w: f64,
    /// Where the plot starts below the legend, and where the axis is.
    pub top: f64,
    pub axis_y: f64,
    pub bar_h: f64,
    /// The legend (empty for one series).
    pub series: Vec<SeriesView>,
    pub groups: Vec<GroupView>,
    pub ticks: Vec<Tick>,
    pub table: DataTable,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct SeriesView {
    pub index: usize,
    pub name: String,
    /// Legend position (top left of the swatch).
    pub x: f64,
    pub y: f64,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct GroupView {
    pub label: String,
    pub full_label: String,
    pub label_y: f64,
    pub bars: Vec<BarView>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct BarView {
    pub series: usize,
    pub series_name: String,
    pub y: f64,
    pub width: f64,
    pub shown: String,
    pub text_x: f64,
    pub text_y: f64,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Tick {
    pub x: f64,
    pub label: String,
}

/// Lays `c` out.
pub(super) fn layout(c: Chart) -> Figure {
    let longest = c
        .groups
        .iter()
        .map(|g| g.label.chars().count().min(LABEL_CHARS))
        .max()
        .unwrap_or(4);
    let plot_x = (longest as f64 * 7.6 + 18.0).clamp(70.0, 290.0);
    let plot_w = WIDTH - plot_x - VALUE_W;
    let (series, legend_rows) = legend(&c.series);
    let top = if legend_rows > 0 {
        legend_rows as f64 * LEGEND_H + 4.0
    } else {
        6.0
    };
    let values = c.groups.iter().flat_map(|g| g.bars.iter().map(|b| b.value));
    let axis = Axis::new(c.scale, values);
    let mut y = top;
    let mut groups = Vec::new();
    for g in &c.groups {
        let start = y;
        let mut bars = Vec::new();
        for b in &g.bars {
            let width = axis.length(b.value) * plot_w;
            bars.push(BarView {
                series: b.series,
                series_name: c.series.get(b.series).cloned().unwrap_or_default(),
                y,
                width,
                shown: b.shown.clone(),
                text_x: plot_x + width + 4.0,
                text_y: y + BAR_H - 3.5,
            });
            y += BAR_H + BAR_GAP;
        }
        if g.bars.is_empty() {
            y += BAR_H + BAR_GAP;
        }
        groups.push(GroupView {
            label: shorten(&g.label),
            full_label: g.label.clone(),
            label_y: (start + y - BAR_GAP) / 2.0 + 4.0,
            bars,
        });
        y += GROUP_GAP;
    }
    let axis_y = y - GROUP_GAP + 4.0;
    let ticks = axis
        .ticks()
        .into_iter()
        .map(|v| Tick {
            x: plot_x + axis.length(v) * plot_w,
            label: (c.tick)(v),
        })
        .collect();
    Figure {
        id: c.id,
        title: c.title,
        desc: c.desc,
        axis: c.axis,
        measured: c.measured,
        width: WIDTH,
        height: axis_y + AXIS_H,
        plot_x,
        plot_w,
        top,
        axis_y,
        bar_h: BAR_H,
        series,
        groups,
        ticks,
        table: c.table,
    }
}

/// The legend's entries, left to right and wrapped to the width; no legend for one series.
fn legend(names: &[String]) -> (Vec<SeriesView>, usize) {
    if names.len() < 2 {
        return (Vec::new(), 0);
    }
    let mut out = Vec::new();
    let (mut x, mut row) = (10.0, 0usize);
    for (index, name) in names.iter().enumerate() {
        let w = 30.0 + name.chars().count() as f64 * 6.8;
        if x + w > WIDTH && x > 10.0 {
            x = 10.0;
            row += 1;
        }
        out.push(SeriesView {
            index,
            name: name.clone(),
            x,
            y: 5.0 + row as f64 * LEGEND_H,
        });
        x += w;
    }
    (out, row + 1)
}

fn shorten(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_string();
    }
    let mut s: String = label.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

/// The value range on the axis.
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
}

impl Axis {
    fn new(scale: Scale, values: impl Iterator<Item = f64>) -> Axis {
        let finite: Vec<f64> = values.filter(|v| v.is_finite() && *v > 0.0).collect();
        let max = finite.iter().copied().fold(0.0_f64, f64::max);
        match scale {
            Scale::Linear => Axis {
                scale,
                lo: 0.0,
                hi: nice_ceiling(max),
            },
            Scale::Log => {
                let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
                let (lo, hi) = if finite.is_empty() {
                    (1.0, 10.0)
                } else {
                    let lo = 10f64.powf(min.log10().floor());
                    let hi = 10f64.powf(max.log10().ceil()).max(lo * 10.0);
                    (lo, hi)
                };
                Axis { scale, lo, hi }
            }
        }
    }

    /// Where `v` falls, 0–1 of the plot width.
    fn length(&self, v: f64) -> f64 {
        if !v.is_finite() || v <= 0.0 {
            return 0.0;
        }
        let at = match self.scale {
            Scale::Linear => v / self.hi,
            // A bar on a log axis starts at the axis' lowest decade: give the smallest value a
            // visible stub instead of nothing.
            Scale::Log => (v / self.lo).log10() / (self.hi / self.lo).log10(),
        };
        at.clamp(0.0, 1.0).max(0.004)
    }

    fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => (0..=4).map(|i| self.hi * f64::from(i) / 4.0).collect(),
            Scale::Log => {
                let mut out = Vec::new();
                let mut v = self.lo;
                while v <= self.hi * 1.0001 && out.len() < 16 {
                    out.push(v);
                    v *= 10.0;
                }
                out
            }
        }
    }
}

/// The smallest 1, 2, 2.5, 5 × 10ⁿ at or above `v` (1 for nothing).
fn nice_ceiling(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let decade = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * decade >= v * 0.999_999 {
            return m * decade;
        }
    }
    10.0 * decade
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(scale: Scale, values: &[f64]) -> Figure {
        layout(Chart {
            id: "t".into(),
            title: "t".into(),
            desc: "d".into(),
            axis: "a".into(),
            series: vec!["one".into(), "two".into()],
            groups: values
                .iter()
                .map(|&v| Group {
                    label: format!("{v}"),
                    bars: vec![Bar {
                        series: 0,
                        value: v,
                        shown: format!("{v}"),
                    }],
                })
                .collect(),
            scale,
            tick: |v| format!("{v}"),
            measured: String::new(),
            table: DataTable::default(),
        })
    }

    #[test]
    fn linear_bars_are_proportional_and_fit() {
        let f = chart(Scale::Linear, &[40.0, 20.0, 0.0]);
        let w: Vec<f64> = f.groups.iter().map(|g| g.bars[0].width).collect();
        assert!((w[0] / w[1] - 2.0).abs() < 1e-9, "{w:?}");
        assert!(w[0] <= f.plot_w && w[2] == 0.0, "{w:?}");
        assert_eq!(f.ticks.last().map(|t| t.label.as_str()), Some("50"));
    }

    #[test]
    fn log_bars_show_orders_of_magnitude() {
        let f = chart(Scale::Log, &[5.0, 50_000.0]);
        let w: Vec<f64> = f.groups.iter().map(|g| g.bars[0].width).collect();
        assert!(w[0] > 0.0 && w[1] > w[0] * 4.0, "{w:?}");
        assert_eq!(f.ticks.len(), 6, "1 to 100000");
    }

    #[test]
    fn nothing_to_draw_is_not_a_division_by_zero() {
        let f = chart(Scale::Log, &[]);
        assert!(f.height > 0.0 && f.ticks.len() == 2);
        let f = chart(Scale::Linear, &[0.0, f64::NAN]);
        assert!(f.groups.iter().all(|g| g.bars[0].width == 0.0));
    }
}
