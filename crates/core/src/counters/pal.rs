//! PAL's static thresholds for the Hyper-V counter objects, evaluated the way PAL evaluates
//! them: per time slice, an alert when the slice's minimum, mean or maximum breaks the
//! threshold, the critical threshold taking the slice over the warning one (PAL.ps1
//! `StaticThreshold`; clinthuffman/PAL@0d22c4e5:PAL2/PALWizard/PAL.ps1). The thresholds are
//! those of `HyperV30.xml` (Windows Server 2012 and later; clinthuffman/PAL@75ecd07c:
//! PAL2/PALWizard/HyperV30.xml), with `HyperV.xml`'s (2008 R2) where it differs noted.

use serde::Serialize;

use super::names::{CONTEXT_SWITCHES, GUEST_RUN, LP, TOTAL_RUN, VP};
use crate::profile::{CounterLog, Series, Stats};

/// A PAL comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    fn breaks(self, v: f64, t: f64) -> bool {
        match self {
            Op::Gt => v > t,
            Op::Ge => v >= t,
            Op::Lt => v < t,
            Op::Le => v <= t,
        }
    }

    /// The operator as PAL writes it.
    pub fn word(self) -> &'static str {
        match self {
            Op::Gt => "gt",
            Op::Ge => "ge",
            Op::Lt => "lt",
            Op::Le => "le",
        }
    }
}

/// PAL's two conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Condition {
    Warning,
    Critical,
}

/// One threshold of a PAL threshold file.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Threshold {
    pub object: &'static str,
    pub counter: &'static str,
    pub condition: Condition,
    pub op: Op,
    pub value: f64,
    /// PAL's name for the threshold.
    pub name: &'static str,
    /// Where it is defined (repo@commit:path).
    pub source: &'static str,
}

const HV30: &str = "clinthuffman/PAL@75ecd07c:PAL2/PALWizard/HyperV30.xml";

/// The thresholds on the Hyper-V objects.
pub(crate) const THRESHOLDS: [Threshold; 12] = [
    t(
        VP,
        GUEST_RUN,
        Condition::Warning,
        Op::Gt,
        75.0,
        "Hyper-V: High processor utilization of more than 75% on a virtual processor",
    ),
    t(
        VP,
        GUEST_RUN,
        Condition::Critical,
        Op::Gt,
        90.0,
        "Hyper-V: Very high processor utilization of more than 90% on a virtual processor",
    ),
    t(
        LP,
        TOTAL_RUN,
        Condition::Warning,
        Op::Gt,
        75.0,
        "Hyper-V: High processor utilization of more than 75% on a physical processor",
    ),
    t(
        LP,
        TOTAL_RUN,
        Condition::Critical,
        Op::Gt,
        90.0,
        "Hyper-V: Very high processor utilization of more than 90% on a physical processor",
    ),
    // HyperV.xml (2008 R2) rates the same threshold Critical.
    t(
        LP,
        CONTEXT_SWITCHES,
        Condition::Warning,
        Op::Gt,
        20_000.0,
        "Hyper-V: more than 20,000 context switches per second on a logical processor",
    ),
    t(
        "Hyper-V Hypervisor Root Partition",
        "Address Spaces",
        Condition::Critical,
        Op::Gt,
        0.0,
        "Hyper-V: the CPU is not SLAT compatible (address spaces in use)",
    ),
    // HyperV.xml (2008 R2): Warning gt 100.
    t(
        "Hyper-V VM Vid Partition",
        "Remote Physical Pages",
        Condition::Critical,
        Op::Gt,
        0.0,
        "Virtual Machines are using memory from a remote NUMA Node",
    ),
    t(
        "Hyper-V Dynamic Memory VM",
        "Average Pressure",
        Condition::Critical,
        Op::Gt,
        83.0,
        "Hyper-V: maximum assigned memory is not enough",
    ),
    t(
        "Hyper-V Dynamic Memory Balancer",
        "Average Pressure",
        Condition::Critical,
        Op::Gt,
        83.0,
        "Hyper-V: virtual machines are paging",
    ),
    t(
        "Hyper-V Virtual Storage Device",
        "Error Count",
        Condition::Warning,
        Op::Gt,
        1.0,
        "Greater than 1 error per second on this virtual storage device",
    ),
    t(
        "Hyper-V Virtual Machine Health Summary",
        "Health Critical",
        Condition::Critical,
        Op::Ge,
        1.0,
        "Equal to or greater than 1 virtual machine is critical",
    ),
    t(
        "Hyper-V Virtual Machine Bus",
        "Throttle Events",
        Condition::Warning,
        Op::Gt,
        1.0,
        "Hyper-V: partitions had their interrupts throttled",
    ),
];

const fn t(
    object: &'static str,
    counter: &'static str,
    condition: Condition,
    op: Op,
    value: f64,
    name: &'static str,
) -> Threshold {
    Threshold {
        object,
        counter,
        condition,
        op,
        value,
        name,
        source: HV30,
    }
}

/// One slice (or the whole single-sample table) that broke a threshold.
#[derive(Debug, Clone, Serialize)]
pub struct Breach {
    /// Seconds from the first sample to the start of the slice (`None`: the whole input).
    pub start_s: Option<f64>,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

/// Every breach of one threshold on one counter instance, with the condition that won.
#[derive(Debug, Clone, Serialize)]
pub struct Alert {
    pub threshold: Threshold,
    pub path: String,
    pub instance: Option<String>,
    pub breaches: Vec<Breach>,
    /// Slices evaluated.
    pub slices: usize,
}

fn breaks(op: Op, s: &Stats, value: f64) -> bool {
    [s.min, s.mean, s.max].iter().any(|&v| op.breaks(v, value))
}

fn spans(series: &Series) -> Vec<(Option<f64>, Stats)> {
    if series.slices.is_empty() {
        series.stats.map(|s| (None, s)).into_iter().collect()
    } else {
        series
            .slices
            .iter()
            .map(|s| (Some(s.start_s), s.stats))
            .collect()
    }
}

/// Evaluates every threshold on every matching counter instance of `log`. A slice that breaks
/// a critical threshold is reported under it only (PAL's priority 100 over 50).
pub(crate) fn evaluate(log: &CounterLog) -> Vec<Alert> {
    let mut alerts = Vec::new();
    for series in &log.series {
        let spans = spans(series);
        let mine: Vec<&Threshold> = THRESHOLDS
            .iter()
            .filter(|t| series.path.is(t.object, t.counter))
            .collect();
        let critical = |s: &Stats| {
            mine.iter()
                .any(|t| t.condition == Condition::Critical && breaks(t.op, s, t.value))
        };
        for th in &mine {
            let breaches: Vec<Breach> = spans
                .iter()
                .filter(|(_, s)| {
                    breaks(th.op, s, th.value)
                        && (th.condition == Condition::Critical || !critical(s))
                })
                .map(|(start, s)| Breach {
                    start_s: *start,
                    min: s.min,
                    mean: s.mean,
                    max: s.max,
                })
                .collect();
            if !breaches.is_empty() {
                alerts.push(Alert {
                    threshold: **th,
                    path: series.path.display(),
                    instance: series.path.instance.clone(),
                    breaches,
                    slices: spans.len(),
                });
            }
        }
    }
    alerts.sort_by(|a, b| {
        b.threshold
            .condition
            .cmp(&a.threshold.condition)
            .then(b.breaches.len().cmp(&a.breaches.len()))
    });
    alerts
}
