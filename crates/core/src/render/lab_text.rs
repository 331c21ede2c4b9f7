//! The text form of `virtlens exitcost` and `virtlens lab`: a header naming the backend with
//! its caveat in words (numbers from an emulating backend are not hardware exit costs), the
//! headline sentences, the exit-cost table per mode and the scenario table. For the offline
//! demo, a banner says the numbers are a recording (date, host, backend), not a measurement
//! of this host.

use comfy_table::{CellAlignment, Table as Grid, presets};

use super::Style;
use super::format::duration;
use crate::measure::{
    BackendLabel, ExitCostReport, LabReport, Mode, Recording, ScenarioResult, Status, TestResult,
    VariantResult,
};

/// Renders an exit-cost report.
pub(crate) fn exitcost(r: &ExitCostReport, style: &Style) -> String {
    let mut out = String::new();
    header(
        &mut out,
        "virtlens exitcost",
        &r.backend,
        r.cpu.as_deref(),
        r.kernel.as_deref(),
        &r.recorded,
        style,
    );
    notes(&mut out, &r.notes, style);
    tests(&mut out, &r.tests, &r.recorded, style);
    out
}

fn notes(out: &mut String, notes: &[String], style: &Style) {
    for n in notes {
        out.push_str(&Style::paint(style.note, &format!("note: {n}")));
        out.push('\n');
    }
    if !notes.is_empty() {
        out.push('\n');
    }
}

/// Renders a lab report.
pub(crate) fn lab(r: &LabReport, style: &Style) -> String {
    let mut out = String::new();
    super::lab_answer::answer(&mut out, r, style);
    out.push_str(&Style::paint(style.title, "Details"));
    out.push('\n');
    header(
        &mut out,
        "virtlens lab",
        &r.backend,
        r.cpu.as_deref(),
        r.kernel.as_deref(),
        &r.recorded,
        style,
    );
    notes(&mut out, &r.notes, style);
    summary(&mut out, r, style);
    tests(&mut out, &r.tests, &r.recorded, style);
    scenarios(&mut out, &r.scenarios, style);
    if let Some(io) = &r.io_path {
        super::io_path_text::io_path(&mut out, io, &r.backend, style);
    }
    out
}

/// The banner of the offline demo: why nothing was measured, and whose numbers follow.
pub(crate) fn recording_banner(r: &LabReport, why: &str, style: &Style) -> String {
    let lines = [
        format!("{why}: showing the offline demo."),
        format!(
            "RECORDED, not measured here: virtlens {} recorded this on {} on {} (backend {}).",
            r.recorded.virtlens,
            r.recorded.host.as_deref().unwrap_or("an unnamed host"),
            r.recorded.date,
            r.backend.name
        ),
        "These numbers describe that machine, not this one. Run on a host with /dev/kvm to measure.".into(),
    ];
    let mut out = String::new();
    for l in lines {
        out.push_str(&Style::paint(style.note, &l));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Whether guest code of `mode` ran natively or was emulated on this backend, in words.
pub(crate) fn mode_kind(backend: &BackendLabel, mode: Mode) -> &'static str {
    match backend.emulates(mode) {
        Some(true) => "emulated here",
        Some(false) if !backend.hardware && mode.is_user() => "native here, traps nested",
        Some(false) => "native",
        None => "not measured",
    }
}

fn header(
    out: &mut String,
    title: &str,
    b: &BackendLabel,
    cpu: Option<&str>,
    kernel: Option<&str>,
    rec: &Recording,
    style: &Style,
) {
    let title = format!(
        "{title} · backend {} · {} · kernel {}",
        b.name,
        cpu.unwrap_or("unknown CPU"),
        kernel.unwrap_or("unknown")
    );
    out.push_str(&Style::paint(style.title, &title));
    out.push('\n');
    out.push_str(&format!(
        "measured {} on {} · {} interleaved runs per test{} · {:.1} s\n",
        rec.date,
        rec.host.as_deref().unwrap_or("this host"),
        rec.rounds,
        if rec.quick { " (--quick)" } else { "" },
        rec.wall_s
    ));
    if let Some(step) = rec.clock_resolution_ns {
        out.push_str(&format!(
            "clock step {} · time budget {}\n",
            ns(Some(step)),
            rec.budget_s
                .map_or_else(|| "none".to_string(), |b| format!("{b:.0} s"))
        ));
    }
    let paint = if b.hardware { style.good } else { style.bad };
    out.push_str(&Style::paint(paint, &format!("backend: {}", b.caveat)));
    out.push('\n');
    if !b.hardware {
        let per = |v: Option<f64>| v.map_or_else(|| "not measured".into(), |v| format!("{v:.2}"));
        out.push_str(&Style::paint(
            style.note,
            &format!(
                "  KVM emulated {} instructions per ring-0 guest instruction and {} per ring-3 one \
                 (insn_emulation).\n  Ring-0 figures are KVM's instruction emulator plus returns to \
                 the VMM; ring-3 figures are native guest code whose traps{} go through the outer \
                 hypervisor.\n  Do not read them as VMX/SVM exit costs: on hardware virtualization \
                 an exit handled in the kernel costs about a microsecond.",
                per(b.ring0_emulations_per_insn),
                per(b.ring3_emulations_per_insn),
                if b.nested == Some(true) { " (this host is itself a guest)" } else { "" },
            ),
        ));
        out.push('\n');
    }
    out.push('\n');
}

/// The summary lines of a lab report (ports, clock, the backend's caveat).
pub(crate) fn summary(out: &mut String, r: &LabReport, style: &Style) {
    out.push_str(&Style::paint(style.title, "Summary"));
    out.push('\n');
    let h = &r.headline;
    for p in &h.ports {
        out.push_str(&format!(
            "  {} ({}, {}): a port exit to the VMM costs {}, an in-kernel one (ioeventfd) {}\n",
            p.mode.as_str(),
            p.mode.short(),
            mode_kind(&r.backend, p.mode),
            duration(p.vmm_ns),
            duration(p.kernel_ns)
        ));
    }
    for c in &h.clock {
        let ratio = c.pmtimer_over_tscpage.map_or_else(
            || "more than a TSC-page read, which was too cheap to resolve".to_string(),
            |x| format!("{}× a TSC-page read", times(x)),
        );
        let msr = c
            .msr_ns
            .map(|m| format!(", an MSR read in the kernel {}", duration(m)))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {} ({}): reading the clock through the ACPI PM timer costs {} ({} vs {}{msr})\n",
            c.mode.as_str(),
            mode_kind(&r.backend, c.mode),
            ratio,
            duration(c.pmtimer_ns),
            duration(c.tscpage_ns),
        ));
    }
    if !r.backend.hardware {
        out.push_str(&Style::paint(
            style.note,
            &format!(
                "  ({}. Where ring 0 is emulated every guest instruction costs about as much as a \
                 nop loop iteration, so even exit-free code such as a TSC-page read is slow there.)",
                r.backend.caveat
            ),
        ));
        out.push('\n');
    }
    out.push('\n');
}

/// How a cost below the run-to-run noise is shown.
pub(crate) const NOISE: &str = "< noise";

/// A ratio with the digits that mean something: `0.9`, `4.7`, `24`, `2761`.
pub(crate) fn times(x: f64) -> String {
    if x.abs() >= 20.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// A cost per operation, with a decimal below 10 ns; `-` when unknown, `< noise` when the
/// nop loop subtracted left nothing (a cost below the run-to-run noise, never a negative one).
pub(crate) fn ns(v: Option<f64>) -> String {
    v.map_or_else(
        || "-".into(),
        |v| {
            if v <= 0.0 {
                NOISE.to_string()
            } else if v < 10.0 {
                format!("{v:.1} ns")
            } else {
                duration(v)
            }
        },
    )
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}%"))
}

fn per_op(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

fn stats(map: &std::collections::BTreeMap<String, f64>) -> String {
    let mut v: Vec<(&String, &f64)> = map.iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(a.1));
    v.iter()
        .take(4)
        .map(|(k, x)| format!("{k} {x:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn grid(
    header: &[&str],
    rows: Vec<Vec<String>>,
    left: usize,
    out: &mut String,
    style: &Style,
) {
    let mut g = Grid::new();
    g.load_style(presets::NOTHING);
    g.set_header(header.to_vec());
    for r in rows {
        g.add_row(r);
    }
    for i in left..header.len() {
        if let Some(c) = g.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    if let Some(c) = g.column_mut(header.len() - 1) {
        c.set_cell_alignment(CellAlignment::Left);
    }
    for (i, line) in g.lines().enumerate() {
        let line = line.trim_end();
        out.push_str(&if i == 0 {
            Style::paint(style.header, line)
        } else {
            line.to_string()
        });
        out.push('\n');
    }
}

fn tests(out: &mut String, tests: &[TestResult], rec: &Recording, style: &Style) {
    if tests.is_empty() {
        return;
    }
    out.push_str(&Style::paint(style.title, "Exit costs"));
    out.push('\n');
    out.push_str(&format!(
        "  ns per guest operation, the nop loop of the same round subtracted; median, min and max \
         over {} interleaved runs;\n  spread = interquartile range / median of the raw per-op \
         times; VMM exits = returns to userspace per op; stats = KVM statistics per op\n",
        rec.rounds
    ));
    for mode in Mode::ALL {
        let rows: Vec<Vec<String>> = tests
            .iter()
            .filter(|t| t.mode == mode)
            .map(|t| match t.status {
                Status::Ok => vec![
                    t.name.clone(),
                    t.status.as_str().into(),
                    ns(t.median_ns),
                    ns(t.min_ns),
                    ns(t.max_ns),
                    pct(t.spread_pct),
                    per_op(t.userspace_exits_per_op),
                    if t.baseline {
                        format!("(gross loop cost) {}", stats(&t.stats_per_op))
                    } else {
                        stats(&t.stats_per_op)
                    },
                ],
                Status::Unresolved => vec![
                    t.name.clone(),
                    t.status.as_str().into(),
                    NOISE.into(),
                    "-".into(),
                    "-".into(),
                    pct(t.spread_pct),
                    per_op(t.userspace_exits_per_op),
                    t.reason.clone().unwrap_or_default(),
                ],
                _ => vec![
                    t.name.clone(),
                    t.status.as_str().into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    t.reason.clone().unwrap_or_default(),
                ],
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        out.push('\n');
        out.push_str(&Style::paint(
            style.header,
            &format!("{} ({})", mode.describe(), mode.as_str()),
        ));
        out.push('\n');
        let h = [
            "test",
            "status",
            "median",
            "min",
            "max",
            "spread",
            "VMM exits",
            "stats per op / reason",
        ];
        grid(&h, rows, 2, out, style);
    }
    out.push('\n');
}

fn variant_row(kind: &str, v: &VariantResult) -> Vec<String> {
    match v.status {
        Status::Ok => vec![
            format!("{kind}: {}", v.name),
            ns(v.ns_per_op),
            ns(v.min_ns),
            ns(v.max_ns),
            pct(v.spread_pct),
            per_op(v.userspace_exits_per_op),
            per_op(v.exits_per_op),
            v.what.clone(),
        ],
        Status::Unresolved => vec![
            format!("{kind}: {}", v.name),
            NOISE.into(),
            "-".into(),
            "-".into(),
            pct(v.spread_pct),
            per_op(v.userspace_exits_per_op),
            per_op(v.exits_per_op),
            v.reason.clone().unwrap_or_default(),
        ],
        _ => vec![
            format!("{kind}: {}", v.name),
            v.status.as_str().into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            v.reason.clone().unwrap_or_default(),
        ],
    }
}

fn scenarios(out: &mut String, list: &[ScenarioResult], style: &Style) {
    if list.is_empty() {
        return;
    }
    out.push_str(&Style::paint(style.title, "Trap scenarios"));
    out.push('\n');
    out.push_str(
        "  ns per logical operation (nop loop subtracted, median); VMM exits = returns to \
         userspace per op; exits = KVM's exits statistic per op\n",
    );
    for s in list {
        out.push('\n');
        out.push_str(&Style::paint(
            style.header,
            &format!(
                "{} ({}) — {}; per {}",
                s.name,
                s.mode.as_str(),
                s.title,
                s.op
            ),
        ));
        out.push('\n');
        let mut rows = vec![variant_row("trap", &s.trap), variant_row("fixed", &s.fixed)];
        rows.extend(s.also.iter().map(|v| variant_row("also", v)));
        let h = [
            "variant",
            "ns/op",
            "min",
            "max",
            "spread",
            "VMM exits",
            "exits",
            "what it does",
        ];
        grid(&h, rows, 1, out, style);
        if let Some(x) = s.trap_over_fixed {
            out.push_str(&format!("  the trap costs {}× the fix\n", times(x)));
        }
        if let (Some(t), Some(f)) = (&s.trap.diagnosed_as, &s.fixed.diagnosed_as) {
            let ids = |v: &Vec<String>| {
                if v.is_empty() {
                    "nothing".to_string()
                } else {
                    v.join(", ")
                }
            };
            out.push_str(&format!(
                "  diagnose: the trap → {}; the fix → {}\n",
                ids(t),
                ids(f)
            ));
        }
    }
    out.push('\n');
}

#[cfg(test)]
#[path = "lab_text_tests.rs"]
mod tests;
