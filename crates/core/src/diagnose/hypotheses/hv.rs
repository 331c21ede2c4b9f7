//! `hv.*`: what Hyper-V's hypervisor counters (and esxtop's per-VM scheduling numbers) say, as
//! hypotheses — the readings of [`crate::counters::hv`] (VP time in the hypervisor, interrupt
//! delivery that intercepts, CPU wait per dispatch, esxtop ready / co-stop, CPU limits), each
//! with the counter values it rests on, per IO when the IO rate is given. The severity is the
//! reading's own (ratios and published alarm levels, see docs/counters.md).

use super::effect;
use super::sched::{DISPATCH_WAIT_NS, READY};
use super::{Ctx, Grading, Hypothesis, Threshold, rules};
use crate::counters::hv::{COSTOP_PCT, Fact as Reading, HvFinding};
use crate::diagnose::evidence::hv::HvEvidence;
use crate::diagnose::model::{Confidence, Cost, Fact, Measure, Severity};

/// `hv.overcommit` is held to the thresholds of the KVM ready-time findings (`sched.*`).
const OVERCOMMIT_THRESHOLDS: &[Threshold] = &[
    Threshold {
        name: "ready share per vCPU (%RDY), low",
        value: READY[0],
        unit: "share",
    },
    Threshold {
        name: "ready share per vCPU (%RDY), medium",
        value: READY[1],
        unit: "share",
    },
    Threshold {
        name: "ready share per vCPU (%RDY), high",
        value: READY[2],
        unit: "share",
    },
    Threshold {
        name: "CPU wait per dispatch, low",
        value: DISPATCH_WAIT_NS[0],
        unit: "ns",
    },
    Threshold {
        name: "CPU wait per dispatch, medium (the most it makes alone)",
        value: DISPATCH_WAIT_NS[1],
        unit: "ns",
    },
    Threshold {
        name: "co-stop per vCPU (%CSTP), low",
        value: COSTOP_PCT / 100.0,
        unit: "share",
    },
];

rules! {
    /// The rules of `hv.*`.
    pub enum HvRule in Hv {
        HypervisorTime {
            id: "hv.hypervisor-time",
            tag: "hv.hypervisor-time",
            role: Problem,
            thresholds: &[],
        },
        InterruptDelivery {
            id: "hv.interrupt-delivery",
            tag: "apic.apicv-inhibited",
            role: Problem,
            thresholds: &[],
        },
        Overcommit {
            id: "hv.overcommit",
            tag: "sched.overcommit",
            role: Problem,
            thresholds: OVERCOMMIT_THRESHOLDS,
        },
        CpuLimit {
            id: "hv.cpu-limit",
            tag: "sched.cpu-limit",
            role: Problem,
            thresholds: &[],
        },
    }
}

/// A counter value as a fact: rates per second, per IO, times and shares where they belong.
fn fact(subject: &str, r: &Reading) -> Fact {
    let key = if subject == "_Total" {
        r.name.to_string()
    } else {
        format!("{} ({subject})", r.name)
    };
    let mut f = Fact::said("perfmon", key, "");
    f.note = None;
    match r.unit {
        "/s" | "IOPS" => f.per_second = Some(r.value),
        "per IO" => f.per_io = Some(r.value),
        "ns" => f.mean_ns = Some(r.value),
        "%" => f.count_share = Some(r.value / 100.0),
        _ => f.count = r.value.max(0.0).round() as u64,
    }
    f.explains = false;
    f
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(hv) = &ctx.ev.hv else {
        return;
    };
    for r in &hv.readings {
        let id = r.id;
        let facts: Vec<Fact> = r.facts.iter().map(|x| fact(&r.subject, x)).collect();
        let rate = r.facts.iter().find(|x| x.unit == "/s").map(|x| x.value);
        // The share of VP time the reading stands for: the hypervisor's run time, and of it the
        // part its interrupt intercepts make up (each intercept taken as costing the same).
        // When interrupt delivery is a finding of the same VM, the hypervisor time is what is
        // left once it is counted: the cause first, the rest of the symptom after.
        let vp = hv.vps.iter().find(|m| m.subject == r.subject);
        let hv_time = vp.and_then(|m| m.hv_run_pct).map(|p| p / 100.0);
        let irq_part = vp.and_then(|m| {
            let total = m.intercepts_per_s.filter(|t| *t > 0.0)?;
            let irq = m.external_interrupts_per_s.unwrap_or(0.0)
                + m.eoi_per_s.unwrap_or(0.0)
                + m.ipis_sent_per_s.unwrap_or(0.0);
            Some(hv_time? * (irq / total).min(1.0))
        });
        let irq_found = hv
            .readings
            .iter()
            .any(|x| x.id == HvRule::InterruptDelivery && x.subject == r.subject);
        let cpu_share = match id {
            HvRule::HypervisorTime if irq_found => {
                hv_time.map(|t| (t - irq_part.unwrap_or(0.0)).max(0.0))
            }
            HvRule::HypervisorTime => hv_time,
            HvRule::InterruptDelivery => irq_part,
            HvRule::Overcommit | HvRule::CpuLimit => None,
        };
        let cost = Cost {
            per_second: rate,
            cpu_share,
            ..Cost::default()
        };
        let h = Hypothesis::with_cost(id, cost, facts)
            .grading(Grading::Counters(r.level))
            .confidence(Confidence::Likely)
            .removes(effect::NOTHING);
        ctx.push(if id == HvRule::Overcommit {
            overcommit(h, hv, r)
        } else {
            h
        });
    }
}

/// `hv.overcommit` graded as the KVM ready-time findings are: esxtop's %RDY per vCPU on the
/// ready-share thresholds (co-stop above 3% makes it low at least); Hyper-V's CPU wait per
/// dispatch, which has no share, low from 60 µs and medium from 100 µs, never high alone.
fn overcommit(h: Hypothesis, hv: &HvEvidence, r: &HvFinding) -> Hypothesis {
    if let Some(v) = hv.esx.iter().find(|v| v.vm == r.subject) {
        let ready = v.ready_pct.unwrap_or(0.0) / 100.0;
        let mut h = h.grading(Grading::Measured {
            measure: Measure::ReadyShare,
            value: ready,
            thresholds: READY,
            max: Severity::High,
            why: "the VM's ready share per vCPU (%RDY), on the thresholds of the KVM ready time",
        });
        h.cost.cpu_share = Some(ready);
        return h.floor_if(v.costop_pct.is_some_and(|c| c >= COSTOP_PCT), Severity::Low);
    }
    match hv
        .vps
        .iter()
        .find(|m| m.subject == r.subject)
        .and_then(|m| m.cpu_wait_ns)
    {
        Some(w) => h.grading(Grading::Measured {
            measure: Measure::WaitPerDispatch,
            value: w,
            thresholds: [
                DISPATCH_WAIT_NS[0],
                DISPATCH_WAIT_NS[1],
                DISPATCH_WAIT_NS[1],
            ],
            max: Severity::Medium,
            why: "the VPs' CPU wait per dispatch, as the KVM ready time's: without a ready share \
                  it is never high alone",
        }),
        None => h,
    }
}
