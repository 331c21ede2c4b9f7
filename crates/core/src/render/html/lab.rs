//! The `lab` and `exitcost` pages: the backend and what its numbers mean first (an emulating
//! backend's figures are not hardware exit costs), the headline, every trap against its fix as
//! bars on a log axis (a trap is often orders of magnitude above its fix), and the exit costs
//! per CPU mode. The offline demo carries a banner: a recording, not a measurement.

use super::chart::{self, Bar, Chart, Group, Scale};
use super::page::{Block, DataTable, Page, Section};
use crate::measure::{
    BackendLabel, ExitCostReport, LabReport, Mode, Recording, ScenarioResult, Status, TestResult,
};
use crate::render::Style;
use crate::render::format::duration;
use crate::render::lab_text::{self, mode_kind, ns, times};

pub(super) fn lab(r: &LabReport, offline: Option<&str>) -> Page {
    let mut page = header(
        "virtlens lab",
        &r.backend,
        r.cpu.as_deref(),
        r.kernel.as_deref(),
        &r.recorded,
    );
    if let Some(why) = offline {
        let style = Style::plain();
        page.banner = lab_text::recording_banner(r, why, &style)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
    }
    let mut text = String::new();
    lab_text::summary(&mut text, r, &Style::plain());
    page.summary = text
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let measured = page.measured.clone();
    if !r.scenarios.is_empty() {
        let mut s = Section::new("scenarios", "Traps against their fixes");
        s.intro.push(
            "Each scenario does the same logical work twice: once hitting a known trap, once \
             like the fixed guest. Bars are ns per logical operation (the nop loop subtracted) on \
             a log axis; the trap's bar says how many times the fix it costs."
                .into(),
        );
        s.blocks.push(Block::Chart(Box::new(chart::layout(scenarios(
            &r.scenarios,
            &measured,
        )))));
        page.sections.push(s);
    }
    if let Some(io) = &r.io_path {
        page.sections
            .push(super::io_path::section(io, &r.backend, &measured));
    }
    if !r.tests.is_empty() {
        page.sections
            .push(costs(&r.tests, &r.recorded, &r.backend, &measured));
    }
    page.notes = r.notes.clone();
    page
}

pub(super) fn exitcost(r: &ExitCostReport) -> Page {
    let mut page = header(
        "virtlens exitcost",
        &r.backend,
        r.cpu.as_deref(),
        r.kernel.as_deref(),
        &r.recorded,
    );
    if !r.measured {
        page.banner
            .push("RECORDED, not measured here: these numbers describe another machine.".into());
    }
    page.summary
        .push(format!("Backend {}: {}", r.backend.name, r.backend.caveat));
    let measured = page.measured.clone();
    page.sections
        .push(costs(&r.tests, &r.recorded, &r.backend, &measured));
    page.notes = r.notes.clone();
    page
}

fn header(
    title: &str,
    b: &BackendLabel,
    cpu: Option<&str>,
    kernel: Option<&str>,
    rec: &Recording,
) -> Page {
    let subtitle = format!(
        "{} · kernel {} · measured {} on {} · {} interleaved runs per test{} · {:.1} s",
        cpu.unwrap_or("unknown CPU"),
        kernel.unwrap_or("unknown"),
        rec.date,
        rec.host.as_deref().unwrap_or("this host"),
        rec.rounds,
        if rec.quick { " (--quick)" } else { "" },
        rec.wall_s
    );
    Page::new(title, subtitle, format!("backend {}: {}", b.name, b.caveat))
}

fn scenarios(list: &[ScenarioResult], measured: &str) -> Chart {
    let mut table = DataTable::new(
        "Trap and fix per scenario, ns per logical operation",
        &[
            "scenario",
            "mode",
            "trap",
            "fixed",
            "trap ÷ fixed",
            "status",
        ],
    );
    table.numeric[1] = false;
    table.numeric[5] = false;
    let mut groups = Vec::new();
    for s in list {
        let ratio = s.trap_over_fixed.map(|x| format!("×{}", times(x)));
        let status = format!("{} / {}", s.trap.status.as_str(), s.fixed.status.as_str());
        table.rows.push(vec![
            s.title.clone(),
            s.mode.as_str().to_string(),
            ns(s.trap.ns_per_op),
            ns(s.fixed.ns_per_op),
            ratio.clone().unwrap_or_else(|| "-".into()),
            status,
        ]);
        let mut bars = Vec::new();
        for (series, v) in [(0, &s.trap), (1, &s.fixed)] {
            if v.status != Status::Ok {
                continue;
            }
            if let Some(x) = v.ns_per_op {
                let shown = match (&ratio, series) {
                    (Some(r), 0) => format!("{} ({r} the fix)", ns(Some(x))),
                    _ => ns(Some(x)),
                };
                bars.push(Bar {
                    series,
                    value: x,
                    shown,
                });
            }
        }
        groups.push(Group {
            label: format!("{} ({})", s.name, s.mode.short()),
            bars,
        });
    }
    Chart {
        id: "scenarios-trap-fix".into(),
        title: "Trap against fix, ns per logical operation".into(),
        desc: "For every scenario, the cost of one logical operation with the trap and with the \
               fix, on a log axis. A variant not measured here (unsupported, unresolved) has no \
               bar; the table says why."
            .into(),
        axis: "ns per logical operation (log scale)".into(),
        series: vec!["trap".into(), "fixed".into()],
        groups,
        scale: Scale::Log,
        tick: duration,
        measured: measured.to_string(),
        table,
    }
}

fn costs(tests: &[TestResult], rec: &Recording, b: &BackendLabel, measured: &str) -> Section {
    let mut s = Section::new("exit-costs", "Exit costs");
    s.intro.push(format!(
        "ns per guest operation with the nop loop of the same round subtracted; medians over {} \
         interleaved runs. The nop loop itself is the gross cost per iteration.",
        rec.rounds
    ));
    for mode in Mode::ALL {
        let of_mode: Vec<&TestResult> = tests.iter().filter(|t| t.mode == mode).collect();
        if of_mode.is_empty() {
            continue;
        }
        let mut table = DataTable::new(
            format!("{} ({})", mode.describe(), mode.as_str()),
            &[
                "test",
                "status",
                "median",
                "min",
                "max",
                "spread",
                "VMM exits/op",
                "what",
            ],
        );
        table.numeric[1] = false;
        table.numeric[7] = false;
        let mut groups = Vec::new();
        for t in &of_mode {
            let ok = t.status == Status::Ok;
            table.rows.push(vec![
                t.name.clone(),
                t.status.as_str().to_string(),
                if ok { ns(t.median_ns) } else { "-".into() },
                if ok { ns(t.min_ns) } else { "-".into() },
                if ok { ns(t.max_ns) } else { "-".into() },
                t.spread_pct
                    .map_or_else(|| "-".into(), |v| format!("{v:.1}%")),
                t.userspace_exits_per_op
                    .map_or_else(|| "-".into(), |v| format!("{v:.3}")),
                match (&t.reason, ok) {
                    (Some(r), false) => r.clone(),
                    _ => t.what.clone(),
                },
            ]);
            if let (true, Some(m)) = (ok, t.median_ns) {
                groups.push(Group {
                    label: t.name.clone(),
                    bars: vec![Bar {
                        series: usize::from(t.baseline),
                        value: m,
                        shown: if t.baseline {
                            format!("{} (gross loop cost)", ns(Some(m)))
                        } else {
                            ns(Some(m))
                        },
                    }],
                });
            }
        }
        if groups.is_empty() {
            s.blocks.push(Block::Table(table));
            continue;
        }
        let chart = Chart {
            id: format!("exit-costs-{}", mode.as_str()),
            title: format!("Exit costs, {} ({})", mode.describe(), mode.as_str()),
            desc: format!(
                "Median ns per guest operation of every test measured in {} ({}), on a log \
                 axis; tests not measured here are only in the table.",
                mode.describe(),
                mode_kind(b, mode)
            ),
            axis: "ns per operation (log scale)".into(),
            series: vec!["exit cost".into(), "nop loop (baseline)".into()],
            groups,
            scale: Scale::Log,
            tick: duration,
            measured: measured.to_string(),
            table,
        };
        s.blocks.push(Block::Chart(Box::new(chart::layout(chart))));
    }
    s
}
