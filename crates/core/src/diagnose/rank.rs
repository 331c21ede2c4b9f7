//! Ranking: each hypothesis's severity from its absolute cost — the share of vCPU time it takes
//! (from a window, printed rates, or the handled time including halts of a mostly halted
//! guest), its rate per second where its rule judges rates, a measured value that is no exit
//! cost (a vCPU's ready share), or, when no absolute cost can be known, its share of the exit
//! handling — held to its rule's ceiling; then the order the user
//! reads: the main problem first (severity, then cost), the other problems, then context
//! (idle, host interrupts), then configuration-only findings.

use super::evidence::EvidenceSet;
use super::hypotheses::{Grading, Hypothesis};
use super::model::{Finding, Grade, Measure, Role, Severity};

/// Shares of vCPU time (or of one CPU) for low, medium and high: 1% is measurable against the
/// noise of any capture; 3% is what a user notices in a benchmark; 10% is a tenth of the machine
/// — the size of change the public fixes report (idle host CPU 30–40% → 1–3% after adding
/// synic+stimer, OpenNebula/addon-storpool#79). Below 1% nothing is alarming.
pub(crate) const CPU_SHARE: [f64; 3] = [0.01, 0.03, 0.10];

/// Without an absolute cost, shares of the exit handling (idle apart) for low, medium and high:
/// a cause of a fifth or more of it is the main lever (removing it cuts the cost by 20%,
/// Amdahl); a tenth is secondary; 3% is above what perf's per-row error moves.
pub(crate) const OVERHEAD_SHARE: [f64; 3] = [0.03, 0.10, 0.20];

/// Findings at info that explain less than this share of the exit handling are not reported.
pub(crate) const DROP_SHARE: f64 = 0.01;

/// Fewer exits than this are too few to weigh causes — one burst decides the shares (a pasted
/// trace excerpt, a first look at a live screen): capped at low. Signatures are not.
pub(crate) const SMALL_SAMPLE: u64 = 100;

/// The level `value` reaches on `[low, medium, high]`.
fn level(value: f64, t: [f64; 3]) -> Severity {
    if value >= t[2] {
        Severity::High
    } else if value >= t[1] {
        Severity::Medium
    } else if value >= t[0] {
        Severity::Low
    } else {
        Severity::Info
    }
}

/// The severity of `h` and why; `None` when it is too small to report.
pub(crate) fn grade(h: &Hypothesis, ev: &EvidenceSet) -> Option<(Severity, Grade)> {
    let grade = |measure, value, thresholds, why: &str| Grade {
        measure,
        value,
        thresholds,
        capped_at: None,
        why: why.to_string(),
    };
    let (max, rate) = match h.grading {
        Grading::Fixed(s) => {
            return Some((
                s,
                grade(
                    Measure::Signature,
                    None,
                    None,
                    "a signature whose severity does not depend on its size",
                ),
            ));
        }
        Grading::Counters(s) => {
            return Some((
                s,
                grade(
                    Measure::Counters,
                    None,
                    None,
                    "the performance counters against their published thresholds (docs/counters.md)",
                ),
            ));
        }
        Grading::Context(s) => {
            return Some((
                s,
                grade(
                    Measure::Context,
                    h.cost.share,
                    None,
                    "context: the normal floor of exit handling, never the main problem",
                ),
            ));
        }
        Grading::Measured {
            measure,
            value,
            thresholds,
            max,
            why,
        } => return measured(h, grade(measure, Some(value), Some(thresholds), why), max),
        Grading::Cost { max } => (max, None),
        Grading::Rate {
            thresholds,
            per_vcpu,
            max,
            without_rate,
        } => (max, Some((thresholds, per_vcpu, without_rate))),
    };
    let c = &h.cost;
    let (mut sev, mut g) = match (c.cpu_share, c.share) {
        (Some(cpu), _) => (
            level(cpu, CPU_SHARE),
            grade(
                Measure::CpuShare,
                Some(cpu),
                Some(CPU_SHARE),
                "its share of vCPU time",
            ),
        ),
        (None, Some(share)) => (
            level(share, OVERHEAD_SHARE),
            grade(
                Measure::OverheadShare,
                Some(share),
                Some(OVERHEAD_SHARE),
                "its share of the exit handling: the input has no time base for an absolute cost \
                 (give --window SECONDS)",
            ),
        ),
        (None, None) => (
            Severity::Info,
            grade(
                Measure::OverheadShare,
                None,
                None,
                "no cost can be computed",
            ),
        ),
    };
    if let Some((thresholds, per_vcpu, without_rate)) = rate {
        let value = if per_vcpu {
            c.per_vcpu_second.or(c.per_second)
        } else {
            c.per_second.or(c.per_vcpu_second)
        };
        // A per-vCPU threshold held to the whole input's rate (vCPU count unknown) is an upper
        // bound: it cannot by itself make a finding high.
        let bound = per_vcpu && c.per_vcpu_second.is_none();
        match value {
            Some(v) => {
                let raw = level(v, thresholds);
                let r = if bound {
                    raw.min(Severity::Medium)
                } else {
                    raw
                };
                if r > sev {
                    sev = r;
                    g = grade(
                        Measure::Rate,
                        Some(v),
                        Some(thresholds),
                        if per_vcpu && !bound {
                            "its rate per vCPU"
                        } else if per_vcpu {
                            "its rate, all vCPUs together — an upper bound of the rate per vCPU \
                             (give --vcpus N)"
                        } else {
                            "its rate for the whole VM (an emulated device is one per VM)"
                        },
                    );
                    if r < raw {
                        g.capped_at = Some(r);
                    }
                }
            }
            None if sev > without_rate => {
                sev = without_rate;
                g.capped_at = Some(without_rate);
                g.why = format!(
                    "{}; a count without a rate cannot tell a storm from a long capture (give \
                     --window SECONDS)",
                    g.why
                );
            }
            None => {}
        }
    }
    floor_and_ceiling(h, max, &mut sev, &mut g);
    let small = ev.size() < SMALL_SAMPLE
        && ev.rate.window_basis != Some(super::evidence::WindowBasis::Option);
    if small && sev > Severity::Low {
        sev = Severity::Low;
        g.capped_at = Some(Severity::Low);
        g.why = format!("{}; too few exits to weigh causes", g.why);
    }
    // Counts alone — no durations, no time base — say what dominates, not what it costs.
    let counts_only = !ev.rate.absolute() && ev.exits.as_ref().is_some_and(|ex| !ex.timed);
    if counts_only && sev > Severity::Medium {
        sev = Severity::Medium;
        g.capped_at = Some(Severity::Medium);
        g.why = format!(
            "{}; counts without durations or a time base cannot show a high cost",
            g.why
        );
    }
    let share = c.share.unwrap_or(0.0);
    if sev == Severity::Info
        && share < DROP_SHARE
        && c.cpu_share.is_none_or(|x| x < CPU_SHARE[0] / 10.0)
    {
        return None;
    }
    Some((sev, g))
}

/// The severity of a measured value (not an exit cost): its level, raised to the floor, held
/// to `max`; the exit-count caps do not apply (the rule judges its own sample size).
fn measured(h: &Hypothesis, mut g: Grade, max: Severity) -> Option<(Severity, Grade)> {
    let mut sev = level(g.value?, g.thresholds?);
    floor_and_ceiling(h, max, &mut sev, &mut g);
    Some((sev, g))
}

/// `sev` raised to the hypothesis's floor, then held to the rule's ceiling `max`.
fn floor_and_ceiling(h: &Hypothesis, max: Severity, sev: &mut Severity, g: &mut Grade) {
    if h.floor > *sev {
        *sev = h.floor;
        g.why = format!("{}; raised to the least the evidence warrants", g.why);
    }
    if *sev > max {
        *sev = max;
        g.capped_at = Some(max);
    }
}

/// The costs a finding is ordered by: its vCPU share, then its share of the exit handling.
fn cpu(f: &Finding) -> f64 {
    f.cost.as_ref().and_then(|c| c.cpu_share).unwrap_or(0.0)
}

/// Orders one input's findings and numbers them: problems (worst, costliest first), context,
/// configuration; the first problem at low or above is the main one.
pub(crate) fn order(found: &mut [Finding], input: usize) {
    let group = |f: &Finding| match f.role {
        Role::Main | Role::Problem => 0,
        Role::Context => 1,
        Role::Config => 2,
    };
    found.sort_by(|a, b| {
        group(a)
            .cmp(&group(b))
            .then(b.severity.cmp(&a.severity))
            .then(cpu(b).total_cmp(&cpu(a)))
            .then(b.share_value().total_cmp(&a.share_value()))
            .then(a.id.cmp(&b.id))
    });
    let mut main = false;
    for (i, f) in found.iter_mut().enumerate() {
        f.input = input;
        f.rank = i + 1;
        if matches!(f.role, Role::Main | Role::Problem) {
            f.role = if !main && f.severity >= Severity::Low {
                main = true;
                Role::Main
            } else {
                Role::Problem
            };
        }
    }
}
