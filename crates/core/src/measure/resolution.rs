//! Whether a lab figure says anything. A run is timed with two reads of a clock that moves in
//! steps, so a run's time is known to within one step, and a difference of two runs (an item
//! minus the nop loop of the same round) to within two; per operation, that is the step times
//! two over the operations of a run ([`per_op`]). A median below that, or a negative one (the
//! operation cost less than the run-to-run noise), is `unresolved`: never shown as a cost.
//! More operations per run resolve it.

use super::headline::{headline, ratio};
use super::report::{LabReport, Status, TestResult, VariantResult};

/// The smallest cost per operation a clock with steps of `clock_ns` can show at `ops` per
/// run; `differenced`: the figure is a difference of two runs.
pub fn per_op(clock_ns: f64, ops: u64, differenced: bool) -> Option<f64> {
    (ops > 0 && clock_ns.is_finite() && clock_ns > 0.0)
        .then(|| clock_ns * if differenced { 2.0 } else { 1.0 } / ops as f64)
}

/// Why a median of `median` ns per operation is unresolved at `resolution`, if it is.
pub(crate) fn unresolved(median: f64, resolution: Option<f64>) -> Option<String> {
    if median < 0.0 {
        return Some(
            "negative once the nop loop of the same round is subtracted: the operation costs \
             less than the run-to-run noise shows; more operations per run (--ops) or more \
             runs may resolve it"
                .into(),
        );
    }
    match resolution {
        Some(r) if median < r => Some(format!(
            "below what the clock resolves per operation at this loop count ({r:.3} ns); more \
             operations per run (--ops) may resolve it"
        )),
        _ => None,
    }
}

/// Marks `t` unresolved when its median is.
pub fn label_test(t: &mut TestResult) {
    if t.status != Status::Ok {
        return;
    }
    if let Some(why) = t.median_ns.and_then(|m| unresolved(m, t.resolution_ns)) {
        t.status = Status::Unresolved;
        t.reason = Some(why);
    }
}

/// Marks `v` unresolved when its cost per operation is.
pub fn label_variant(v: &mut VariantResult) {
    if v.status != Status::Ok {
        return;
    }
    if let Some(why) = v.ns_per_op.and_then(|m| unresolved(m, v.resolution_ns)) {
        v.status = Status::Unresolved;
        v.reason = Some(why);
    }
}

/// Labels every test, variant and ratio of `r` and recomputes its headline (also for a
/// recording made before figures were labelled).
pub fn label_lab(r: &mut LabReport) {
    r.tests.iter_mut().for_each(label_test);
    for s in &mut r.scenarios {
        label_variant(&mut s.trap);
        label_variant(&mut s.fixed);
        s.also.iter_mut().for_each(label_variant);
        s.trap_over_fixed = match (s.trap.status, s.fixed.status) {
            (Status::Ok, Status::Ok) => s
                .trap
                .ns_per_op
                .zip(s.fixed.ns_per_op)
                .and_then(|(t, f)| ratio(t, f)),
            _ => None,
        };
    }
    r.headline = headline(&r.tests, &r.scenarios);
}

/// Labels every test of `r`.
#[cfg(test)]
pub(crate) fn label_exitcost(r: &mut super::report::ExitCostReport) {
    r.tests.iter_mut().for_each(label_test);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Mode;

    #[test]
    fn resolution_per_operation() {
        assert_eq!(per_op(30.0, 1, true), Some(60.0));
        assert_eq!(per_op(30.0, 1000, false), Some(0.03));
        assert_eq!(per_op(30.0, 0, true), None);
        assert_eq!(per_op(0.0, 10, true), None);
    }

    #[test]
    fn negative_and_too_small_medians_are_never_ok() {
        let mut t =
            TestResult::not_measured("ram_store", Mode::User64, "", Status::Ok, String::new());
        t.median_ns = Some(-0.0016);
        label_test(&mut t);
        assert_eq!(t.status, Status::Unresolved);
        assert!(t.reason.as_deref().unwrap_or("").contains("negative"));
        t.status = Status::Ok;
        t.median_ns = Some(5.0);
        t.resolution_ns = Some(60.0);
        label_test(&mut t);
        assert_eq!(t.status, Status::Unresolved);
        assert!(
            t.reason
                .as_deref()
                .unwrap_or("")
                .contains("below what the clock resolves")
        );
        t.status = Status::Ok;
        t.median_ns = Some(61.0);
        t.reason = None;
        label_test(&mut t);
        assert_eq!((t.status, t.reason.as_deref()), (Status::Ok, None));
        let mut failed =
            TestResult::not_measured("x", Mode::Real, "", Status::Failed, "why".into());
        failed.median_ns = Some(-1.0);
        label_test(&mut failed);
        assert_eq!(failed.status, Status::Failed, "other statuses stay");
    }
}
