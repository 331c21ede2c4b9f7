//! Turns what the bench measured into the result types of `virtlens_core::measure`: the nop
//! loop of the same round subtracted from each run (paired by round), median/min/max of the
//! differences, the run-to-run spread of the gross times, statistics per operation, and the
//! `unresolved` label where the clock (of step `clock_ns`) cannot show the figure.

use virtlens_core::measure::{ScenarioResult, Status, TestResult, VariantResult, ratio};
use virtlens_core::measure::{Summary, paired_differences};
use virtlens_core::measure::{label_test, label_variant, per_op};

use super::HostLabel;
use super::bench::Measured;
use super::catalog::Exit;
use super::profile::profile;
use super::scenarios::{Scenario, Variant, item_name};

/// The net (baseline subtracted) and gross summaries of `m`'s runs.
fn summaries(m: &Measured, base: Option<&Measured>) -> (Option<Summary>, Option<Summary>) {
    let gross: Vec<f64> = m.samples.iter().flatten().copied().collect();
    let gross = Summary::of(&gross);
    if m.baseline {
        return (gross, gross);
    }
    let Some(base) = base.filter(|b| b.status == Status::Ok) else {
        return (None, gross);
    };
    let (t, b): (Vec<f64>, Vec<f64>) = m
        .samples
        .iter()
        .zip(&base.samples)
        .filter_map(|(t, b)| Some(((*t)?, (*b)?)))
        .unzip();
    (Summary::of(&paired_differences(&t, &b)), gross)
}

/// The test result of `m` against the nop loop `base`, timed with a clock of step `clock_ns`.
pub(super) fn test_result(m: &Measured, base: Option<&Measured>, clock_ns: f64) -> TestResult {
    let mut t = TestResult::not_measured(&m.name, m.mode, &m.what, m.status, String::new());
    t.reason = m.reason.clone();
    t.baseline = m.baseline;
    t.note = Exit::from_name(&m.name)
        .and_then(|e| e.note(m.mode))
        .map(str::to_string);
    t.ops_per_run = m.ops_per_run;
    if m.status != Status::Ok {
        return t;
    }
    let (net, gross) = summaries(m, base);
    t.median_ns = net.map(|s| s.median);
    t.min_ns = net.map(|s| s.min);
    t.max_ns = net.map(|s| s.max);
    t.gross_median_ns = gross.map(|s| s.median);
    t.spread_pct = gross.and_then(|s| s.spread_pct());
    t.runs = gross.map_or(0, |s| s.n);
    t.stats_per_op = m.stats_per_op();
    t.userspace_exits_per_op = m.userspace_exits_per_op();
    t.resolution_ns = per_op(clock_ns, m.ops_per_run, !m.baseline);
    if net.is_none() && base.is_some() {
        t.reason = Some("the nop-loop baseline of this mode was not measured".into());
    }
    label_test(&mut t);
    t
}

fn variant_result(
    v: &Variant,
    m: Option<&Measured>,
    base: Option<&Measured>,
    host: &HostLabel,
    clock_ns: f64,
) -> VariantResult {
    let mut r = VariantResult {
        name: v.name.to_string(),
        what: v.what.to_string(),
        status: Status::Failed,
        reason: Some("not measured".into()),
        ns_per_op: None,
        min_ns: None,
        max_ns: None,
        gross_ns_per_op: None,
        spread_pct: None,
        resolution_ns: None,
        exits_per_op: None,
        userspace_exits_per_op: None,
        stats_per_op: Default::default(),
        profile: None,
        diagnosed_as: None,
    };
    let Some(m) = m else { return r };
    r.status = m.status;
    r.reason = m.reason.clone();
    if m.status != Status::Ok {
        return r;
    }
    let (net, gross) = summaries(m, base);
    r.ns_per_op = net.map(|s| s.median);
    r.min_ns = net.map(|s| s.min);
    r.max_ns = net.map(|s| s.max);
    r.gross_ns_per_op = gross.map(|s| s.median);
    r.spread_pct = gross.and_then(|s| s.spread_pct());
    r.stats_per_op = m.stats_per_op();
    r.exits_per_op = Some(r.stats_per_op.get("exits").copied().unwrap_or(0.0));
    r.userspace_exits_per_op = m.userspace_exits_per_op();
    r.profile = Some(profile(m, host));
    r.resolution_ns = per_op(clock_ns, m.ops_per_run, true);
    label_variant(&mut r);
    r
}

/// The scenario results, from the measured items of their variants and the nop loop.
pub(super) fn scenario_results(
    mode: virtlens_core::measure::Mode,
    scenarios: &[Scenario],
    measured: &[Measured],
    base: Option<&Measured>,
    host: &HostLabel,
    clock_ns: f64,
) -> Vec<ScenarioResult> {
    let find = |s: &Scenario, v: &Variant| {
        let name = item_name(s.name, v.name);
        measured.iter().find(|m| m.name == name)
    };
    scenarios
        .iter()
        .map(|s| {
            let trap = variant_result(&s.trap, find(s, &s.trap), base, host, clock_ns);
            let fixed = variant_result(&s.fixed, find(s, &s.fixed), base, host, clock_ns);
            let also = s
                .also
                .iter()
                .map(|v| variant_result(v, find(s, v), base, host, clock_ns))
                .collect();
            let resolved = trap.status == Status::Ok && fixed.status == Status::Ok;
            let trap_over_fixed = trap
                .ns_per_op
                .zip(fixed.ns_per_op)
                .filter(|_| resolved)
                .and_then(|(t, f)| ratio(t, f));
            ScenarioResult {
                name: s.name.to_string(),
                title: s.title.to_string(),
                op: s.op.to_string(),
                mode,
                trap,
                fixed,
                also,
                trap_over_fixed,
            }
        })
        .collect()
}
