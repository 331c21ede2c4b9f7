//! The text form of `virtlens model overcommit`: the inputs, both models' predictions side by
//! side, the assumptions in words; with `--measure`, the measured table next to the predicted
//! one and the model's error.

use comfy_table::{CellAlignment, Table as Grid, presets};

use super::Style;
use super::format::wrap;
use crate::model::overcommit::{Overcommit, Prediction};

fn grid(header: Vec<String>) -> Grid {
    let mut g = Grid::new();
    g.load_style(presets::NOTHING);
    let n = header.len();
    g.set_header(header);
    for i in 1..n {
        if let Some(c) = g.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    g
}

fn cells(name: &str, p: &Prediction) -> Vec<String> {
    vec![
        name.to_string(),
        format!("{:.4}", p.p_wait),
        format!("{:.3}", p.wait_over_burst),
        format!("{:.3}×", p.stretch),
        format!("{:.1} %", p.ready_pct),
    ]
}

/// Renders one prediction.
pub(crate) fn overcommit(m: &Overcommit, style: &Style) -> String {
    let i = &m.inputs;
    let mut out = Style::paint(
        style.title,
        &format!(
            "{} vCPUs × {} busy on {} pCPUs (+{} CPUs of other load): offered load {:.3} CPUs, ρ = {:.3}",
            i.vcpus, i.util, i.pcpus, i.background, m.offered_load, m.rho
        ),
    );
    out.push('\n');
    let mut g = grid(
        ["model", "P(wait)", "wait/burst", "stretch", "ready"]
            .map(str::to_string)
            .to_vec(),
    );
    g.add_row(cells("joint probability", &m.joint));
    g.add_row(cells("M/M/c (Erlang C)", &m.erlang_c));
    out.push_str(&format!("{g}\n\nassumptions:\n"));
    for a in &m.assumptions {
        out.push_str(&wrap(&format!("- {a}"), 2));
    }
    out
}

fn spread(s: &Option<virtlens_guest::stats::Spread>, unit: &str) -> String {
    s.map_or("-".into(), |s| {
        let (lo, hi) = s.band();
        format!("{:.2}{unit} [{:.2}–{:.2}]", s.median, lo, hi)
    })
}

/// Renders the predicted-against-measured table.
pub(crate) fn checked(t: &crate::model::checked::Checked, style: &Style) -> String {
    let mut out = Style::paint(
        style.title,
        &format!(
            "k busy micro-VM vCPUs on {} pCPUs: predicted against measured",
            t.pcpus
        ),
    );
    out.push('\n');
    let mut g = grid(
        [
            "k",
            "other load",
            "predicted stretch",
            "idle-host model",
            "measured stretch",
            "error",
            "predicted ready",
            "measured ready",
            "ready error",
        ]
        .map(str::to_string)
        .to_vec(),
    );
    for r in &t.rows {
        g.add_row(vec![
            r.k.to_string(),
            format!(
                "{:.2} CPUs ({:.1} threads)",
                r.background_cpus, r.background_runnable
            ),
            format!("{:.2}×", r.predicted_stretch_erlang),
            format!("{:.2}×", r.idle_host_stretch),
            spread(&r.measured_stretch, "×"),
            r.stretch_error_pct
                .map_or("-".into(), |e| format!("{e:+.1} %")),
            format!("{:.1} %", r.predicted_ready_pct),
            spread(&r.measured_ready_pct, " %"),
            r.ready_error_pp
                .map_or("-".into(), |e| format!("{e:+.1} pp")),
        ]);
    }
    out.push_str(&format!("{g}\n"));
    if let Some(e) = t.mean_abs_stretch_error_pct {
        out.push_str(&format!("mean |stretch error|: {e:.1} %\n"));
    }
    for n in &t.notes {
        out.push_str(&Style::paint(
            style.note,
            wrap(&format!("note: {n}"), 6).trim_end(),
        ));
        out.push('\n');
    }
    out
}
