//! The timeline of a report page as an inline SVG lane chart: one lane per VM and vCPU, the
//! exits of each bucket stacked by reason (one fill pattern per reason, the page's), a time
//! axis in seconds at round values, and under each lane whose vCPU thread's scheduling was
//! traced a thin strip of the share of each bucket it ran, waited runnable and slept. Laid out
//! here, drawn by the `timeline.svg` template; every figure comes from the analysis.

use serde::Serialize;

use super::axis::ticks_upto;
use super::chart::{
    LABEL_PX, LEGEND_H, SeriesView, TICK_PX, Tick, VALUE_PX, WIDTH, legend, legend_entry, shorten,
};
use super::page::DataTable;
use super::text::width as text_width;
use crate::analysis::TimelineInput;
use crate::profile::{TimelineLane, TimelineSeries};
use crate::render::format;

/// A lane's bar height, its scheduler strip's, and the space between lanes.
const LANE_H: f64 = 44.0;
const STRIP_H: f64 = 7.0;
const STRIP_GAP: f64 = 2.0;
const LANE_GAP: f64 = 12.0;
const AXIS_H: f64 = 36.0;
/// The least plot width.
const MIN_PLOT: f64 = 420.0;
/// About this many time ticks.
const TICKS: f64 = 7.0;

/// The scheduler states' series names, in the strip's order from the bottom.
pub(super) const STATES: [&str; 3] = [
    "vCPU thread running",
    "vCPU thread ready (runnable, waiting for a CPU)",
    "vCPU thread sleeping",
];

/// The timeline laid out, ready for the template.
#[derive(Debug, Clone, Serialize)]
pub(super) struct TimelineFigure {
    pub id: String,
    pub title: String,
    pub desc: String,
    pub measured: String,
    pub axis: String,
    pub axis_x: f64,
    pub width: f64,
    pub height: f64,
    pub plot_x: f64,
    pub plot_w: f64,
    pub top: f64,
    pub axis_y: f64,
    pub series: Vec<SeriesView>,
    /// Every series' name (the reasons, then the states when a lane has them).
    pub names: Vec<String>,
    pub patterns: Vec<usize>,
    pub lanes: Vec<LaneView>,
    pub ticks: Vec<Tick>,
    pub table: DataTable,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct LaneView {
    pub label: String,
    pub full_label: String,
    pub label_y: f64,
    /// The lane's baseline and the end of its plot.
    pub base_y: f64,
    pub total: String,
    pub total_x: f64,
    pub paths: Vec<PathView>,
    /// The scheduler strip's frame (top, height) and its paths, when traced.
    pub strip_y: f64,
    pub strip: Vec<PathView>,
}

/// One series of one lane: its bars as one path.
#[derive(Debug, Clone, Serialize)]
pub(super) struct PathView {
    pub series: usize,
    pub series_name: String,
    pub pattern: usize,
    pub d: String,
    pub title: String,
}

impl TimelineFigure {
    /// Gives series `i` the fill pattern `patterns[i]` (the page's, one per name).
    pub(super) fn set_patterns(&mut self, patterns: Vec<usize>) {
        let of = |i: usize| patterns.get(i).copied().unwrap_or(i);
        for s in &mut self.series {
            s.pattern = of(s.index);
        }
        for p in self
            .lanes
            .iter_mut()
            .flat_map(|l| l.paths.iter_mut().chain(l.strip.iter_mut()))
        {
            p.pattern = of(p.series);
        }
        self.patterns = patterns;
    }
}

/// A lane's name: the VM (or its process) and the vCPU, or how many lanes were folded.
fn lane_label(l: &TimelineLane) -> String {
    if l.folded > 0 {
        return format!("{} other vCPUs, per vCPU", l.folded);
    }
    let vm = match (&l.vm, l.pid) {
        (Some(name), _) => Some(name.clone()),
        (None, Some(pid)) => Some(format!("pid {pid}")),
        (None, None) => None,
    };
    match (vm, l.vcpu) {
        (Some(vm), Some(v)) => format!("{vm} vCPU {v}"),
        (Some(vm), None) => format!("{vm}, vCPU unknown"),
        (None, Some(v)) => format!("vCPU {v}"),
        (None, None) => "VM and vCPU unknown".into(),
    }
}

/// Seconds at a tick, with as many decimals as the tick distance needs.
fn seconds(v: f64, step: f64) -> String {
    let decimals = (-step.log10()).ceil().clamp(0.0, 9.0) as usize;
    format!("{v:.decimals$} s")
}

/// A trace-clock time as the trace prints it (seconds, µs digits).
fn trace_time(ns: u64) -> String {
    format!("{:.6} s", ns as f64 / 1e9)
}

/// Lays out the timeline of input `t` as figure `id`.
pub(super) fn layout(id: String, t: &TimelineInput, measured: &str) -> TimelineFigure {
    let tl = &t.timeline;
    // A profile read back from a file may claim any number: never more than the builder makes.
    let n = tl.buckets.clamp(1, crate::events::timeline::BUCKETS);
    let traced = tl.lanes.iter().any(|l| l.sched.is_some());
    let mut names = tl.reasons.clone();
    if traced {
        names.extend(STATES.iter().map(|s| s.to_string()));
    }
    let labels: Vec<String> = tl.lanes.iter().map(lane_label).collect();
    let totals: Vec<String> = tl
        .lanes
        .iter()
        .map(|l| format!("{} exits", format::count(l.exits)))
        .collect();
    let span_s = (tl.bucket_ns as f64 * n as f64) / 1e9;
    let (tick_values, step) = ticks_upto(span_s, TICKS);
    let ticks: Vec<(f64, String)> = tick_values
        .into_iter()
        .map(|v| (v, seconds(v, step)))
        .collect();
    let label_w = labels
        .iter()
        .map(|l| text_width(&shorten(l), LABEL_PX))
        .fold(0.0, f64::max);
    let first_tick = ticks
        .first()
        .map_or(0.0, |t| text_width(&t.1, TICK_PX) / 2.0);
    let plot_x = (label_w + 16.0).max(first_tick + 6.0).max(40.0);
    let total_w = totals
        .iter()
        .map(|s| text_width(s, VALUE_PX) + 12.0)
        .fold(0.0, f64::max);
    let last_tick = ticks
        .last()
        .map_or(0.0, |t| text_width(&t.1, TICK_PX) / 2.0 + 6.0);
    let right = total_w.max(last_tick).max(20.0);
    let plot_w = (WIDTH - plot_x - right).max(MIN_PLOT);
    // A folded lane is drawn per vCPU (its sum over its vCPUs), so that it does not flatten
    // the lanes of one vCPU each.
    let per_vcpu = |l: &TimelineLane| f64::from(l.folded.max(1));
    let peak = tl
        .lanes
        .iter()
        .flat_map(|l| (0..n).map(move |i| stacked(&l.series, i) as f64 / per_vcpu(l)))
        .fold(0.0, f64::max)
        .max(1.0);
    let axis = format!(
        "seconds from trace time {} · one bar per {} · tallest bar {} exits",
        trace_time(tl.start_ns),
        format::duration(tl.bucket_ns as f64),
        if peak.fract() == 0.0 {
            format::count(peak as u64)
        } else {
            format!("{peak:.1}")
        }
    );
    let axis_w = text_width(&axis, LABEL_PX);
    let mut width = plot_x + plot_w + right;
    let (series, legend_rows) = legend(&names, width);
    let legend_w = series
        .iter()
        .map(|s| s.x + legend_entry(&s.name))
        .fold(0.0, f64::max);
    width = width.max(legend_w + 6.0).max(axis_w + 12.0);
    let top = legend_rows as f64 * LEGEND_H + 6.0;
    let bw = plot_w / n as f64;
    let scale = LANE_H / peak;
    let mut y = top;
    let mut lanes = Vec::new();
    for (k, l) in tl.lanes.iter().enumerate() {
        let base_y = y + LANE_H;
        let label = labels.get(k).cloned().unwrap_or_default();
        let paths = lane_paths(
            l,
            &tl.reasons,
            &label,
            plot_x,
            bw,
            base_y,
            scale / per_vcpu(l),
        );
        let strip_y = base_y + STRIP_GAP;
        let strip = l
            .sched
            .as_ref()
            .map(|s| {
                let rows = [&s.running_ns, &s.ready_ns, &s.sleeping_ns];
                let geometry = (plot_x, bw, strip_y + STRIP_H);
                // A folded lane's strip is the mean of its threads.
                let whole = tl.bucket_ns.saturating_mul(u64::from(l.folded.max(1)));
                strip_paths(&rows, whole, tl.reasons.len(), &label, geometry)
            })
            .unwrap_or_default();
        lanes.push(LaneView {
            label: shorten(&label),
            full_label: label,
            label_y: y + LANE_H / 2.0 + 4.0,
            base_y,
            total: totals.get(k).cloned().unwrap_or_default(),
            total_x: plot_x + plot_w + 6.0,
            paths,
            strip_y,
            strip,
        });
        y = base_y
            + if l.sched.is_some() {
                STRIP_GAP + STRIP_H
            } else {
                0.0
            }
            + LANE_GAP;
    }
    let axis_y = y - LANE_GAP + 4.0;
    let ticks = ticks
        .into_iter()
        .map(|(v, label)| Tick {
            x: plot_x + if span_s > 0.0 { v / span_s } else { 0.0 } * plot_w,
            label,
        })
        .collect();
    let axis_x = (plot_x + plot_w / 2.0).clamp(axis_w / 2.0 + 6.0, width - axis_w / 2.0 - 6.0);
    TimelineFigure {
        title: format!("Exits over time per vCPU, {}", t.input),
        desc: desc(t, traced),
        id,
        measured: measured.to_string(),
        axis,
        axis_x,
        width,
        height: axis_y + AXIS_H,
        plot_x,
        plot_w,
        top,
        axis_y,
        series,
        patterns: (0..names.len()).collect(),
        names,
        lanes,
        ticks,
        table: table(t, &labels),
    }
}

fn desc(t: &TimelineInput, traced: bool) -> String {
    let tl = &t.timeline;
    let mut s = format!(
        "{} exits with a timestamp from {} to {}, in buckets of {}: one lane per VM and vCPU \
         (most exits first), each bar the exits of one bucket stacked by reason, every lane on \
         the same scale (a lane of several vCPUs drawn per vCPU).",
        format::count(tl.exits()),
        trace_time(tl.first_ns),
        trace_time(tl.last_ns),
        format::duration(tl.bucket_ns as f64)
    );
    if traced {
        s.push_str(
            " The strip under a lane is how its vCPU thread spent each bucket on the host \
             (running, runnable but waiting for a CPU, sleeping), from the trace's \
             sched_switch and sched_wakeup events; blank where its state was not yet known.",
        );
    }
    s
}

/// The stacked exits of bucket `i`.
fn stacked(series: &[TimelineSeries], i: usize) -> u64 {
    series.iter().filter_map(|s| s.counts.get(i)).sum()
}

/// One path per reason of lane `l`: its bars stacked on the reasons before it.
fn lane_paths(
    l: &TimelineLane,
    reasons: &[String],
    label: &str,
    plot_x: f64,
    bw: f64,
    base_y: f64,
    scale: f64,
) -> Vec<PathView> {
    let n = l.series.first().map_or(0, |s| s.counts.len());
    let mut below = vec![0u64; n];
    let mut out = Vec::new();
    for s in &l.series {
        let mut d = String::new();
        let mut sum = 0u64;
        for (i, &c) in s.counts.iter().enumerate() {
            let Some(b) = below.get_mut(i) else { break };
            if c > 0 {
                let x = plot_x + i as f64 * bw;
                let y = base_y - (*b + c) as f64 * scale;
                let h = c as f64 * scale;
                d.push_str(&format!("M{x:.2} {y:.2}h{bw:.2}v{h:.2}h{:.2}z", -bw));
            }
            *b += c;
            sum += c;
        }
        let name = reasons.get(s.reason).cloned().unwrap_or_default();
        out.push(PathView {
            series: s.reason,
            title: format!("{label} — {name}: {} exits", format::count(sum)),
            series_name: name,
            pattern: s.reason,
            d,
        });
    }
    out
}

/// The scheduler strip: per state, each bucket's share of `bucket_ns` (the bucket's width
/// times the lane's threads), stacked from the strip's bottom (`geometry`: plot x, bucket
/// width, strip bottom).
fn strip_paths(
    rows: &[&Vec<u64>; 3],
    bucket_ns: u64,
    first_series: usize,
    label: &str,
    (plot_x, bw, bottom): (f64, f64, f64),
) -> Vec<PathView> {
    let n = rows[0].len();
    let mut below = vec![0.0f64; n];
    let mut out = Vec::new();
    for (k, row) in rows.iter().enumerate() {
        let mut d = String::new();
        let mut sum = 0u64;
        for (i, &ns) in row.iter().enumerate() {
            let Some(b) = below.get_mut(i) else { break };
            let share = (ns as f64 / bucket_ns.max(1) as f64).clamp(0.0, 1.0 - *b);
            if share > 0.0 {
                let x = plot_x + i as f64 * bw;
                let y = bottom - (*b + share) * STRIP_H;
                let h = share * STRIP_H;
                d.push_str(&format!("M{x:.2} {y:.2}h{bw:.2}v{h:.2}h{:.2}z", -bw));
            }
            *b += share;
            sum = sum.saturating_add(ns);
        }
        out.push(PathView {
            series: first_series + k,
            series_name: STATES[k].to_string(),
            pattern: first_series + k,
            title: format!("{label} — {}: {}", STATES[k], format::duration(sum as f64)),
            d,
        });
    }
    out
}

/// The numbers of the lanes as a table: exits, the reason with most, and the share of traced
/// time in each scheduler state.
fn table(t: &TimelineInput, labels: &[String]) -> DataTable {
    let tl = &t.timeline;
    let mut table = DataTable::new(
        format!("Lanes of the timeline of {}", t.input),
        &[
            "lane",
            "exits",
            "most exits",
            "running",
            "ready (waiting)",
            "sleeping",
        ],
    );
    table.numeric[2] = false;
    for (k, l) in tl.lanes.iter().enumerate() {
        let top = l
            .series
            .iter()
            .map(|s| (s.counts.iter().sum::<u64>(), s.reason))
            .max()
            .and_then(|(_, r)| tl.reasons.get(r).cloned())
            .unwrap_or_default();
        let mut row = vec![
            labels.get(k).cloned().unwrap_or_default(),
            format::count(l.exits),
            top,
        ];
        match &l.sched {
            Some(s) => {
                let sums = [&s.running_ns, &s.ready_ns, &s.sleeping_ns]
                    .map(|v| v.iter().sum::<u64>() as f64);
                let all: f64 = sums.iter().sum();
                row.extend(sums.iter().map(|v| {
                    if all > 0.0 {
                        format::share(v / all)
                    } else {
                        String::new()
                    }
                }));
            }
            None => row.extend(["not traced".to_string(), String::new(), String::new()]),
        }
        table.rows.push(row);
    }
    table
}
