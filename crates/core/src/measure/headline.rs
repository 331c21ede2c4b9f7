//! The headline of a lab run, computed from its results so renderers only print: what a
//! port exit to the VMM and an in-kernel one cost per mode, and what each scenario's trap
//! costs against its fix (for the clock: the ACPI PM timer against a TSC-page read).

use serde::{Deserialize, Serialize};

use super::mode::Mode;
use super::report::{BackendLabel, ScenarioResult, Status, TestResult};

/// The test whose cost is "a port exit to the VMM".
pub(crate) const VMM_PORT_TEST: &str = "pio_out_user";
/// The test whose cost is "an in-kernel port exit".
pub(crate) const KERNEL_PORT_TEST: &str = "ioeventfd_pio";
/// The scenario whose ratio is "reading the clock through the ACPI PM timer costs Z× a
/// TSC-page read".
pub(crate) const CLOCK_SCENARIO: &str = "clock_read";

/// Port exit costs in one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortLine {
    pub mode: Mode,
    /// `pio_out_user`: a port write answered by the VMM (userspace), ns.
    pub vmm_ns: f64,
    /// `ioeventfd_pio`: a port write caught in the kernel by an ioeventfd, ns.
    pub kernel_ns: f64,
}

/// The clock-read scenario in numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockLine {
    pub mode: Mode,
    pub pmtimer_ns: f64,
    pub tscpage_ns: f64,
    pub msr_ns: Option<f64>,
    /// PM timer / TSC page; `None` when the TSC-page read was too cheap to resolve (its status
    /// is `unresolved`, or it is ≤ 0 after the loop was subtracted).
    pub pmtimer_over_tscpage: Option<f64>,
}

/// One scenario's trap against its fix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioLine {
    pub name: String,
    pub mode: Mode,
    pub title: String,
    pub op: String,
    pub trap_ns: f64,
    pub fixed_ns: f64,
    pub trap_over_fixed: Option<f64>,
    pub trap_userspace_exits: Option<f64>,
    pub fixed_userspace_exits: Option<f64>,
}

/// The numbers a reader wants first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    pub ports: Vec<PortLine>,
    /// One per mode the clock scenario ran in.
    pub clock: Vec<ClockLine>,
    pub scenarios: Vec<ScenarioLine>,
}

/// `a / b` when `b` is positive.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite()).then(|| a / b)
}

fn ok_median(tests: &[TestResult], name: &str, mode: Mode) -> Option<f64> {
    tests
        .iter()
        .find(|t| t.name == name && t.mode == mode && t.status == Status::Ok)
        .and_then(|t| t.median_ns)
}

/// The headline of `tests` and `scenarios`.
pub fn headline(tests: &[TestResult], scenarios: &[ScenarioResult]) -> Headline {
    let ports = Mode::ALL
        .into_iter()
        .filter_map(|mode| {
            Some(PortLine {
                mode,
                vmm_ns: ok_median(tests, VMM_PORT_TEST, mode)?,
                kernel_ns: ok_median(tests, KERNEL_PORT_TEST, mode)?,
            })
        })
        .collect();
    // The trap measured; the fix measured or too cheap to resolve (then there is no ratio).
    let measured = |s: &ScenarioResult| {
        let fixed = matches!(s.fixed.status, Status::Ok | Status::Unresolved);
        Some((
            s.trap.ns_per_op.filter(|_| s.trap.status == Status::Ok)?,
            s.fixed.ns_per_op.filter(|_| fixed)?,
            s.fixed.status == Status::Ok,
        ))
    };
    let clock = scenarios
        .iter()
        .filter(|s| s.name == CLOCK_SCENARIO)
        .filter_map(|s| {
            let (pm, tsc, resolved) = measured(s)?;
            Some(ClockLine {
                mode: s.mode,
                pmtimer_ns: pm,
                tscpage_ns: tsc,
                msr_ns: s
                    .also
                    .iter()
                    .find(|v| v.status == Status::Ok)
                    .and_then(|v| v.ns_per_op),
                pmtimer_over_tscpage: ratio(pm, tsc).filter(|_| resolved),
            })
        })
        .collect();
    let scenarios = scenarios
        .iter()
        .filter_map(|s| {
            let (trap, fixed, resolved) = measured(s)?;
            Some(ScenarioLine {
                name: s.name.clone(),
                mode: s.mode,
                title: s.title.clone(),
                op: s.op.clone(),
                trap_ns: trap,
                fixed_ns: fixed,
                trap_over_fixed: ratio(trap, fixed).filter(|_| resolved),
                trap_userspace_exits: s.trap.userspace_exits_per_op,
                fixed_userspace_exits: s.fixed.userspace_exits_per_op,
            })
        })
        .collect();
    Headline {
        ports,
        clock,
        scenarios,
    }
}

/// What a newcomer reads first: the traps against their fixes in one mode, most expensive
/// first, with that mode's port exits.
#[derive(Debug, Clone, PartialEq)]
pub struct Lesson<'a> {
    pub mode: Mode,
    /// Whether guest code of `mode` ran natively here (`None`: not measured).
    pub native: Option<bool>,
    pub scenarios: Vec<&'a ScenarioLine>,
    pub ports: Option<&'a PortLine>,
}

/// The lesson of a headline: the guest kernel's mode (64-bit ring 0) when its code runs
/// natively on `backend`, else the first mode whose code does (64-bit ring 3 on a backend that
/// emulates ring 0, where an exit-free TSC-page read costs as much as a port exit and the
/// comparison would teach the opposite), else the guest kernel's. `None` without scenarios.
pub fn lesson<'a>(h: &'a Headline, backend: &BackendLabel) -> Option<Lesson<'a>> {
    let has = |m: Mode| h.scenarios.iter().any(|s| s.mode == m);
    let preferred = [Mode::Long64, Mode::User64, Mode::Prot32, Mode::Real];
    let mode = preferred
        .into_iter()
        .find(|&m| has(m) && backend.emulates(m) != Some(true))
        .or_else(|| preferred.into_iter().find(|&m| has(m)))?;
    let mut scenarios: Vec<&ScenarioLine> = h.scenarios.iter().filter(|s| s.mode == mode).collect();
    // Most expensive trap against its fix first; a fix too cheap to resolve counts as the
    // largest ratio (the trap costs more than the clock can compare).
    scenarios.sort_by(|a, b| {
        let r = |s: &ScenarioLine| s.trap_over_fixed.unwrap_or(f64::INFINITY);
        r(b).total_cmp(&r(a))
    });
    Some(Lesson {
        mode,
        native: backend.emulates(mode).map(|e| !e),
        scenarios,
        ports: h.ports.iter().find(|p| p.mode == mode),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::VariantResult;
    use std::collections::BTreeMap;

    fn test(name: &str, mode: Mode, ns: f64) -> TestResult {
        let mut t = TestResult::not_measured(name, mode, "", Status::Ok, String::new());
        t.reason = None;
        t.median_ns = Some(ns);
        t
    }

    fn variant(ns: f64, exits: f64) -> VariantResult {
        VariantResult {
            name: "v".into(),
            what: String::new(),
            status: Status::Ok,
            reason: None,
            ns_per_op: Some(ns),
            min_ns: None,
            max_ns: None,
            gross_ns_per_op: None,
            spread_pct: None,
            resolution_ns: None,
            exits_per_op: Some(exits),
            userspace_exits_per_op: Some(exits),
            stats_per_op: BTreeMap::new(),
            profile: None,
            diagnosed_as: None,
        }
    }

    #[test]
    fn ports_per_mode_and_clock_ratio() {
        let tests = vec![
            test(VMM_PORT_TEST, Mode::Long64, 7000.0),
            test(KERNEL_PORT_TEST, Mode::Long64, 1500.0),
            test(VMM_PORT_TEST, Mode::Real, 5000.0),
        ];
        let clock = ScenarioResult {
            name: CLOCK_SCENARIO.into(),
            title: "t".into(),
            op: "one clock read".into(),
            mode: Mode::Long64,
            trap: variant(6000.0, 1.0),
            fixed: variant(1500.0, 0.0),
            also: vec![variant(900.0, 0.0)],
            trap_over_fixed: Some(4.0),
        };
        let h = headline(&tests, &[clock]);
        assert_eq!(h.ports.len(), 1, "real mode has no in-kernel number");
        assert_eq!(h.ports[0].kernel_ns, 1500.0);
        let c = &h.clock[0];
        assert_eq!(c.pmtimer_over_tscpage, Some(4.0));
        assert_eq!(c.msr_ns, Some(900.0));
        assert_eq!(h.scenarios.len(), 1);
        assert_eq!(ratio(1.0, 0.0), None);
    }

    fn line(name: &str, mode: Mode, ratio: Option<f64>) -> ScenarioLine {
        ScenarioLine {
            name: name.into(),
            mode,
            title: String::new(),
            op: "one op".into(),
            trap_ns: 100.0,
            fixed_ns: 10.0,
            trap_over_fixed: ratio,
            trap_userspace_exits: None,
            fixed_userspace_exits: None,
        }
    }

    #[test]
    fn the_lesson_is_taught_where_guest_code_runs_natively() {
        use crate::facts::Backend;
        let h = Headline {
            ports: vec![],
            clock: vec![],
            scenarios: vec![
                line("clock_read", Mode::Long64, Some(0.9)),
                line("clock_read", Mode::User64, Some(2781.0)),
                line("apic_eoi", Mode::User64, Some(10.4)),
                line("serial_console", Mode::User64, None),
            ],
        };
        // Ring 0 emulated (PVM): the lesson comes from ring 3, largest ratio first, an
        // unresolved fix first of all.
        let pvm = BackendLabel::new(&Backend::Pvm, None, Some(1.0), Some(0.0), Some(true));
        let l = lesson(&h, &pvm).unwrap_or_else(|| unreachable!());
        assert_eq!((l.mode, l.native), (Mode::User64, Some(true)));
        let names: Vec<&str> = l.scenarios.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["serial_console", "clock_read", "apic_eoi"]);
        // Hardware: the guest kernel's mode.
        let vmx = BackendLabel::new(&Backend::Vmx, None, Some(0.0), Some(0.0), None);
        let l = lesson(&h, &vmx).unwrap_or_else(|| unreachable!());
        assert_eq!((l.mode, l.native), (Mode::Long64, Some(true)));
        assert!(lesson(&Headline::default(), &vmx).is_none());
    }

    #[test]
    fn an_unresolved_fix_keeps_its_line_without_a_ratio() {
        let mut fixed = variant(3.0, 0.0);
        fixed.status = Status::Unresolved;
        let clock = ScenarioResult {
            name: CLOCK_SCENARIO.into(),
            title: "t".into(),
            op: "one clock read".into(),
            mode: Mode::User64,
            trap: variant(6000.0, 1.0),
            fixed,
            also: vec![],
            trap_over_fixed: None,
        };
        let h = headline(&[], &[clock]);
        assert_eq!(h.clock[0].pmtimer_over_tscpage, None);
        assert_eq!(h.scenarios[0].trap_over_fixed, None);
        assert_eq!(h.scenarios[0].fixed_ns, 3.0);
    }
}
