//! Horizontal bar charts as inline SVG: the geometry of labelled, grouped bars on a linear or
//! logarithmic axis, laid out here and drawn by the `bars.svg` template. Hand-built rather than
//! drawn with a plotting crate because every chart must carry what a plotting canvas does not
//! give: `<title>`/`<desc>`, a fill pattern per series (readable without colour and in grey
//! print), a value printed at every bar, and a data table beside it. Layout only: every value
//! comes computed, and every label comes formatted by the page builders.

use serde::Serialize;

use super::axis::Axis;
pub(super) use super::axis::Scale;
use super::page::DataTable;
use super::text::width as text_width;

/// The drawing width in SVG units: the width of the page's column, so that a chart drawn at
/// the column's width shows its text at the size the stylesheet sets. A chart whose labels
/// need more room is drawn wider (and scaled to the column) rather than clipped.
pub(super) const WIDTH: f64 = 940.0;
/// The least plot width left for the bars.
const MIN_PLOT: f64 = 360.0;
const BAR_H: f64 = 15.0;
const BAR_GAP: f64 = 2.0;
const GROUP_GAP: f64 = 9.0;
const AXIS_H: f64 = 34.0;
pub(super) const LEGEND_H: f64 = 26.0;
/// Font sizes (px) of the SVG's texts, as style.css sets them.
pub(super) const LABEL_PX: f64 = 12.0;
pub(super) const VALUE_PX: f64 = 11.5;
pub(super) const TICK_PX: f64 = 11.0;
pub(super) const LEGEND_PX: f64 = 12.0;
/// Characters of a group label drawn (the full label is in the bar's tooltip and the table).
const LABEL_CHARS: usize = 34;

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
    /// What the axis measures, with `(log scale)` on a log axis.
    pub axis: String,
    pub axis_x: f64,
    /// `log` or `linear`.
    pub scale: &'static str,
    /// What measured the figures; emptied by the page when its header says the same.
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
    /// Every series' name, legend or not (the page gives each name its pattern).
    pub names: Vec<String>,
    /// The fill pattern of each series, set by the page: one name, one pattern per page.
    pub patterns: Vec<usize>,
    pub groups: Vec<GroupView>,
    pub ticks: Vec<Tick>,
    pub table: DataTable,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct SeriesView {
    pub index: usize,
    pub name: String,
    pub pattern: usize,
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
    pub pattern: usize,
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

impl Figure {
    /// Gives series `i` the fill pattern `pattern[i]`.
    pub(super) fn set_patterns(&mut self, patterns: Vec<usize>) {
        for s in &mut self.series {
            s.pattern = patterns.get(s.index).copied().unwrap_or(s.index);
        }
        for b in self.groups.iter_mut().flat_map(|g| g.bars.iter_mut()) {
            b.pattern = patterns.get(b.series).copied().unwrap_or(b.series);
        }
        self.patterns = patterns;
    }
}

/// Lays `c` out: room for the longest group label on the left and the longest value on the
/// right, so no text leaves the drawing.
pub(super) fn layout(c: Chart) -> Figure {
    let values: Vec<f64> = c
        .groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.value))
        .collect();
    let axis = Axis::new(c.scale, &values);
    let ticks: Vec<(f64, String)> = axis.ticks().into_iter().map(|v| (v, (c.tick)(v))).collect();
    let label_w = c
        .groups
        .iter()
        .map(|g| text_width(&shorten(&g.label), LABEL_PX))
        .fold(0.0, f64::max);
    let first_tick = ticks
        .first()
        .map_or(0.0, |t| text_width(&t.1, TICK_PX) / 2.0);
    let plot_x = (label_w + 16.0).max(first_tick + 6.0).max(40.0);
    let value_w = c
        .groups
        .iter()
        .flat_map(|g| g.bars.iter())
        .map(|b| text_width(&b.shown, VALUE_PX) + 12.0)
        .fold(0.0, f64::max);
    let last_tick = ticks
        .last()
        .map_or(0.0, |t| text_width(&t.1, TICK_PX) / 2.0);
    let right = value_w.max(last_tick + 6.0).max(20.0);
    let plot_w = (WIDTH - plot_x - right).max(MIN_PLOT);
    let axis_label = if axis.is_log() && !c.axis.contains("log scale") {
        format!("{} (log scale)", c.axis)
    } else {
        c.axis.clone()
    };
    let axis_w = text_width(&axis_label, LABEL_PX);
    let mut width = plot_x + plot_w + right;
    let (series, legend_rows) = legend(&c.series, width);
    let legend_w = series
        .iter()
        .map(|s| s.x + legend_entry(&s.name))
        .fold(0.0, f64::max);
    width = width.max(legend_w + 6.0).max(axis_w + 12.0);
    let axis_x = (plot_x + plot_w / 2.0).clamp(axis_w / 2.0 + 6.0, width - axis_w / 2.0 - 6.0);
    let top = if legend_rows > 0 {
        legend_rows as f64 * LEGEND_H + 4.0
    } else {
        6.0
    };
    let mut y = top;
    let mut groups = Vec::new();
    for g in &c.groups {
        let start = y;
        let mut bars = Vec::new();
        for b in &g.bars {
            let w = axis.length(b.value) * plot_w;
            bars.push(BarView {
                series: b.series,
                series_name: c.series.get(b.series).cloned().unwrap_or_default(),
                pattern: b.series,
                y,
                width: w,
                shown: b.shown.clone(),
                text_x: plot_x + w + 4.0,
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
    let ticks = ticks
        .into_iter()
        .map(|(v, label)| Tick {
            x: plot_x + axis.length(v) * plot_w,
            label,
        })
        .collect();
    Figure {
        id: c.id,
        title: c.title,
        desc: c.desc,
        axis: axis_label,
        axis_x,
        scale: if axis.is_log() { "log" } else { "linear" },
        measured: c.measured,
        width,
        height: axis_y + AXIS_H,
        plot_x,
        plot_w,
        top,
        axis_y,
        bar_h: BAR_H,
        series,
        patterns: (0..c.series.len()).collect(),
        names: c.series,
        groups,
        ticks,
        table: c.table,
    }
}

/// A legend entry's width: swatch, gap, name, space after.
pub(super) fn legend_entry(name: &str) -> f64 {
    19.0 + text_width(name, LEGEND_PX) + 14.0
}

/// The legend's entries, left to right and wrapped to `width`; no legend for one series.
pub(super) fn legend(names: &[String], width: f64) -> (Vec<SeriesView>, usize) {
    if names.len() < 2 {
        return (Vec::new(), 0);
    }
    let mut out = Vec::new();
    let (mut x, mut row) = (10.0, 0usize);
    for (index, name) in names.iter().enumerate() {
        let w = legend_entry(name);
        if x + w > width && x > 10.0 {
            x = 10.0;
            row += 1;
        }
        out.push(SeriesView {
            index,
            name: name.clone(),
            pattern: index,
            x,
            y: 5.0 + row as f64 * LEGEND_H,
        });
        x += w;
    }
    (out, row + 1)
}

pub(super) fn shorten(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_string();
    }
    let mut s: String = label.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(scale: Scale, values: &[f64]) -> Figure {
        layout(spec(scale, values))
    }

    fn spec(scale: Scale, values: &[f64]) -> Chart {
        Chart {
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
        }
    }

    #[test]
    fn linear_bars_are_proportional_and_fit() {
        let f = chart(Scale::Linear, &[40.0, 20.0, 0.0]);
        let w: Vec<f64> = f.groups.iter().map(|g| g.bars[0].width).collect();
        assert!((w[0] / w[1] - 2.0).abs() < 1e-9, "{w:?}");
        assert!(w[0] <= f.plot_w && w[2] == 0.0, "{w:?}");
        assert_eq!(f.ticks.last().map(|t| t.label.as_str()), Some("40"));
        assert_eq!(f.scale, "linear");
        assert!(!f.axis.contains("log"));
    }

    #[test]
    fn log_bars_show_orders_of_magnitude() {
        let f = chart(Scale::Log, &[5.0, 50_000.0]);
        let w: Vec<f64> = f.groups.iter().map(|g| g.bars[0].width).collect();
        assert!(w[0] > 0.0 && w[1] > w[0] * 4.0, "{w:?}");
        assert_eq!(f.ticks.len(), 6, "1 to 100000");
    }

    #[test]
    fn values_over_two_decades_get_a_log_axis_that_says_so() {
        let f = chart(Scale::Auto, &[130e9, 2e6, 40e3]);
        assert_eq!(f.scale, "log");
        assert_eq!(f.axis, "a (log scale)");
        let f = chart(Scale::Auto, &[130.0, 2.0]);
        assert_eq!(f.scale, "linear");
        assert_eq!(f.axis, "a");
    }

    #[test]
    fn long_values_widen_the_drawing_instead_of_leaving_it() {
        let f = layout(Chart {
            groups: vec![Group {
                label: "a label".into(),
                bars: vec![Bar {
                    series: 0,
                    value: 1.0,
                    shown: "12.3% of exit-handling time without idle, by far the most".into(),
                }],
            }],
            ..spec(Scale::Linear, &[])
        });
        let b = &f.groups[0].bars[0];
        let end = b.text_x + text_width(&b.shown, VALUE_PX);
        assert!(end <= f.width, "value ends at {end} of {}", f.width);
        assert!(f.plot_w >= MIN_PLOT);
    }

    #[test]
    fn nothing_to_draw_is_not_a_division_by_zero() {
        let f = chart(Scale::Log, &[]);
        assert!(f.height > 0.0 && f.ticks.len() == 2);
        let f = chart(Scale::Linear, &[0.0, f64::NAN]);
        assert!(f.groups.iter().all(|g| g.bars[0].width == 0.0));
    }
}
