//! The numbers of a diagnosis as phrases: a finding's cost (exits, time, share of the exit
//! handling, share of vCPU time, rate), its expected effect, why its severity, the answer line
//! of an input, and what a comparison found (an input's facts are `input_facts`'). Formatting
//! only: every number comes computed.

use super::format;
use crate::analysis::compare::Measure as CompareMeasure;
use crate::analysis::sched::SchedSummary;
use crate::diagnose::{
    Change, Comparison, Cost, CpuBasis, Diagnosis, Effect, Finding, Grade, InputReport, Measure,
    ModelEffect, Scenario, ShareOf, Verdict, rank,
};

/// `of exit-handling time without idle`, …
pub(crate) fn share_of(of: ShareOf) -> &'static str {
    match of {
        ShareOf::OverheadTime => "of exit-handling time without idle",
        ShareOf::OverheadExits => "of exits without idle",
        ShareOf::HandledTime => "of all handled time",
        ShareOf::AllExits => "of all exits",
    }
}

/// `of a vCPU`, …
pub(crate) fn cpu_of(b: CpuBasis) -> &'static str {
    match b {
        CpuBasis::WindowVcpus => "of a vCPU",
        CpuBasis::WindowOneCpu => "of one CPU (all vCPUs together)",
        CpuBasis::HandledWithHalts => "of the vCPUs' time (from the handled time with halts)",
    }
}

/// A cost in one line: `893,519 exits · 5.81 s (88.5% of exit-handling time without idle) ·
/// 12.0% of a vCPU · 4,037/s`.
pub(crate) fn cost(c: &Cost) -> String {
    let mut parts = Vec::new();
    if c.exits > 0 {
        parts.push(format!("{} events", format::count(c.exits)));
    }
    match (c.time_ns, c.estimated_ns) {
        (Some(t), _) => parts.push(format::duration(t as f64)),
        (None, Some(t)) if t > 0 => parts.push(match c.typical_ns {
            Some(each) => format!(
                "≈ {} (at {} each, typical)",
                format::duration(t as f64),
                format::duration(each as f64)
            ),
            // Rows of several classes: each at its own class's typical cost.
            None => format!(
                "≈ {} (each exit at its class's typical cost)",
                format::duration(t as f64)
            ),
        }),
        _ => {}
    }
    if let (Some(s), Some(of)) = (c.share, c.share_of) {
        parts.push(format!("{} {}", format::share(s), share_of(of)));
    }
    if let (Some(s), Some(b)) = (c.cpu_share, c.cpu_basis) {
        parts.push(format!("{} {}", format::share(s), cpu_of(b)));
    }
    match (c.per_vcpu_second, c.per_second) {
        (Some(v), _) => parts.push(format!("{} per vCPU", format::rate(v))),
        (None, Some(r)) => parts.push(format::rate(r)),
        _ => {}
    }
    parts.join(" · ")
}

/// What fixing should change: `−893,519 events, −5.81 s of handling (88.5% of …, 12.0% of a
/// vCPU): text`.
pub(crate) fn effect(e: &Effect) -> String {
    let mut parts = Vec::new();
    if let Some(n) = e.exits_saved.filter(|&n| n > 0) {
        parts.push(format!("−{} events", format::count(n)));
    }
    if let Some(t) = e.time_saved_ns.filter(|&t| t > 0) {
        parts.push(format!("−{} of handling", format::duration(t as f64)));
    }
    let mut shares = Vec::new();
    if let (Some(s), Some(of)) = (e.share_saved.filter(|s| *s > 0.0), e.share_of) {
        shares.push(format!("{} {}", format::share(s), share_of(of)));
    }
    if let (Some(s), Some(b)) = (e.cpu_share_saved.filter(|s| *s > 0.0), e.cpu_basis) {
        shares.push(format!("{} {}", format::share(s), cpu_of(b)));
    }
    let mut s = parts.join(", ");
    match (s.is_empty(), shares.is_empty()) {
        (_, true) => {}
        (true, false) => s = format!("−{}", shares.join(", −")),
        (false, false) => s.push_str(&format!(" ({})", shares.join(", "))),
    }
    let text = match &e.model {
        Some(m) => format!("{} — {}", e.text, model(m)),
        None => e.text.clone(),
    };
    if s.is_empty() {
        text
    } else {
        format!("{s}: {text}")
    }
}

/// The over-commit model's prediction: `model (fair-share): 6 vCPUs each wanting 97% of a CPU
/// on 2 CPUs + 0.30 CPUs of other load: ready 67.8% (66.1% measured), work ×3.10; with 1 vCPU:
/// ready 0.0%, work ×1.00`.
pub(crate) fn model(m: &ModelEffect) -> String {
    let after = match m.scenario {
        Scenario::FewerVcpus { vcpus } => {
            format!("with {vcpus} vCPU{}", if vcpus == 1 { "" } else { "s" })
        }
        Scenario::NoOtherLoad => "without the other load".to_string(),
    };
    format!(
        "model ({}): {} vCPUs each wanting {} of a CPU on {} CPUs + {:.2} CPUs of other load: ready \
         {} ({} measured), work ×{:.2}; {after}: ready {}, work ×{:.2}",
        m.model,
        m.vcpus,
        format::share(m.demand),
        m.pcpus,
        m.background_cpus,
        format::share(m.ready_predicted),
        format::share(m.ready_measured),
        m.stretch_predicted,
        format::share(m.ready_after),
        m.stretch_after
    )
}

/// The vCPU threads' scheduling in one line: `vCPU scheduling: 6 vCPU threads on 2 CPUs ·
/// ready 66.1% · runnable vCPUs per CPU 2.98 (above one in 100.0% of 3 intervals) · host busy
/// 99.5%, other load 0.30 CPUs, steal 0.4%`.
pub(crate) fn sched_line(s: &SchedSummary) -> String {
    let n: usize = s.vms.iter().map(|v| v.vcpus.len()).sum();
    let mut parts = vec![format!(
        "vCPU scheduling over {}: {n} vCPU thread{} on {} CPUs",
        format::duration(s.window_ns as f64),
        if n == 1 { "" } else { "s" },
        s.online_cpus
    )];
    if let Some(r) = s.ready_share {
        parts.push(format!("ready {}", format::share(r)));
    }
    if let Some(r) = s.runnable_per_cpu {
        let over = s
            .intervals_over_one
            .map(|o| {
                format!(
                    " (above one in {} of {} interval{})",
                    format::share(o),
                    s.intervals,
                    if s.intervals == 1 { "" } else { "s" }
                )
            })
            .unwrap_or_default();
        parts.push(format!("runnable vCPUs per CPU {r:.2}{over}"));
    }
    let h = &s.host;
    let mut host = Vec::new();
    if let Some(b) = h.busy_share {
        host.push(format!("host busy {}", format::share(b)));
    }
    if let Some(o) = h.other_load_cpus {
        host.push(format!("other load {o:.2} CPUs"));
    }
    if let Some(st) = h.steal_share {
        host.push(format!("steal {}", format::share(st)));
    }
    if !host.is_empty() {
        parts.push(host.join(", "));
    }
    parts.join(" · ")
}

fn threshold(m: Measure, v: f64) -> String {
    match m {
        Measure::CpuShare | Measure::OverheadShare | Measure::ReadyShare => format::share(v),
        Measure::WaitPerDispatch => format::duration(v),
        _ => format::rate(v),
    }
}

/// Why the severity: `high: 12.0% ≥ 10.0% (low 1.0%, medium 3.0%, high 10.0%) — its share of
/// vCPU time`.
pub(crate) fn grade(severity: &str, g: &Grade) -> String {
    let mut s = severity.to_string();
    if let (Some(v), Some(t)) = (g.value, g.thresholds) {
        s.push_str(&format!(
            ": {} (low {}, medium {}, high {})",
            threshold(g.measure, v),
            threshold(g.measure, t[0]),
            threshold(g.measure, t[1]),
            threshold(g.measure, t[2])
        ));
    }
    s.push_str(&format!(" — {}", g.why));
    if let Some(c) = g.capped_at {
        s.push_str(&format!("; held at {c}"));
    }
    s
}

/// The answer for one input, in one paragraph.
pub(crate) fn answer(d: &Diagnosis, r: &InputReport) -> String {
    let main = d.main_of(r.input.number);
    let fix = |f: &Finding| {
        let s = f.fix_summary();
        if s.is_empty() {
            String::new()
        } else {
            format!(" Fix: {s}.")
        }
    };
    let sure = |f: &Finding| match f.confidence.name() {
        "confirmed" => String::new(),
        c => format!(" ({c}, from aggregate evidence)"),
    };
    let absolute = r.evidence.rate.cpu_basis.is_some();
    let threshold = if absolute {
        format!(
            "nothing costs {} of vCPU time or more",
            format::share(rank::CPU_SHARE[0])
        )
    } else {
        format!(
            "no cause explains {} of the exit handling or more",
            format::share(rank::OVERHEAD_SHARE[0])
        )
    };
    match (r.verdict, main) {
        (Verdict::Problem, Some(f)) => {
            let more = d
                .of_input(r.input.number)
                .filter(|x| x.rank != f.rank && x.severity >= crate::diagnose::Severity::Medium)
                .count();
            let more = match more {
                0 => String::new(),
                1 => " One more finding needs attention.".into(),
                n => format!(" {n} more findings need attention."),
            };
            format!(
                "Main problem: {} [{}]{}{}.{}{more}",
                f.title,
                f.id,
                cost_dash(f),
                sure(f),
                fix(f)
            )
        }
        (Verdict::WorthALook, Some(f)) => format!(
            "Worth a look: {} [{}, low]{}{}.{}",
            f.title,
            f.id,
            cost_dash(f),
            sure(f),
            fix(f)
        ),
        (Verdict::Idle, _) => {
            format!("Nothing alarming: the guest is mostly idle, and {threshold}.")
        }
        (Verdict::NotDiagnosed, _) => {
            "Not diagnosed: most exits are ones virtlens cannot name; the rules \
                                       cover x86 (VMX, SVM, PVM)."
                .into()
        }
        (Verdict::TooLittle, _) => format!(
            "Too little to judge: the input holds fewer than {} exits and nothing in them is a \
             problem; capture longer (`perf kvm stat record -a sleep 10`, or `virtlens record`).",
            rank::SMALL_SAMPLE
        ),
        (Verdict::NothingToDiagnose, _) => {
            "Nothing to diagnose: the input holds no exit, port, MMIO, MSR or counter rows.".into()
        }
        _ => format!("Nothing alarming: {threshold}."),
    }
}

/// ` — <cost>` when the finding has one to show.
fn cost_dash(f: &Finding) -> String {
    match f.cost.as_ref().map(cost) {
        Some(c) if !c.is_empty() => format!(" — {c}"),
        _ => String::new(),
    }
}

/// What one input against input 1 shows, in one paragraph.
pub fn change(c: &Comparison, ch: &Change) -> String {
    let Some(v) = c.verdicts.iter().find(|v| v.input == ch.input) else {
        return format!(
            "{}: no table of the same kind as input 1, so the cost cannot be compared.",
            ch.name
        );
    };
    let (what, amount): (&str, fn(u64) -> String) = match v.measure {
        CompareMeasure::Time => ("exit-handling time without idle", |x| {
            format::duration(x as f64)
        }),
        CompareMeasure::Exits => ("exits without idle", |x| {
            format!("{} exits", format::count(x))
        }),
    };
    let pct = v
        .change_pct
        .map_or_else(|| "n/a".to_string(), |p| format!("{p:+.0}%"));
    let head = match ch.verdict {
        "helped" => format!("{} helped: {what} {pct}", ch.name),
        "worse" => format!("{} made it worse: {what} {pct}", ch.name),
        _ => format!("{} made no clear difference: {what} {pct}", ch.name),
    };
    let mut s = format!("{head} ({} → {}).", amount(v.before), amount(v.after));
    for (label, ids) in [
        ("Gone", &ch.resolved),
        ("New", &ch.new),
        ("Still there", &ch.persisting),
    ] {
        if !ids.is_empty() {
            s.push_str(&format!(" {label}: {}.", ids.join(", ")));
        }
    }
    if !v.movers.is_empty() {
        let moves: Vec<String> = v
            .movers
            .iter()
            .map(|m| {
                format!(
                    "{} {} → {}",
                    m.key,
                    format::count(m.count_before),
                    format::count(m.count_after)
                )
            })
            .collect();
        s.push_str(&format!(" Biggest moves: {}.", moves.join(", ")));
    }
    s
}

#[cfg(test)]
#[path = "diagnose_numbers_tests.rs"]
mod tests;
