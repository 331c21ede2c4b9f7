//! `halt.*`: halt/wake churn — many short halts per second, each a halt exit, a trip through
//! the host scheduler, a wake-up IPI and an entry — whose cure is halt polling (host
//! `halt_poll_ns`, the guest's cpuidle-haltpoll driver). A vCPU halted because it had nothing
//! to run is not churn: that is `idle`.

use super::{Ctx, Grading, Hint, Hypothesis, Threshold, cost, rules};
use crate::decode::ExitClass;
use crate::diagnose::evidence::{ratio, sat_sum};
use crate::diagnose::model::{Confidence, Fact, Severity};

/// A halt shorter than this on average is churn: KVM's default halt-polling window on x86 is
/// 200 µs, so halts of that order are what polling would absorb.
pub(crate) const CHURN_MEAN_NS: f64 = 500_000.0;

/// Wake-ups per second per vCPU: from 1,000/s worth a look, 5,000/s medium, 20,000/s high.
pub(crate) const CHURN_RATE: [f64; 3] = [1_000.0, 5_000.0, 20_000.0];

/// What a halt/wake cycle costs the host beyond the halted time: the HLT exit, scheduling the
/// vCPU thread out and in, the waking IPI and the entry — a few microseconds each ("a trip
/// through the scheduler, normally on the order of a few micro-seconds", the KVM halt-polling
/// documentation).
pub(crate) const CHURN_NS: u64 = 8_000;

/// A halt this short on average did not block: the vCPU was runnable again at once (an
/// interrupt pending that the guest cannot take, a wake-up before it slept) — halt polling,
/// which shortens the sleep, cannot help.
pub(crate) const NO_BLOCK_NS: f64 = 5_000.0;

/// The share of the churn's cost polling removes: the halts shorter than its window (most of
/// them, by [`CHURN_MEAN_NS`]) no longer schedule out, but the halt exits themselves stay.
pub(crate) const CHURN_REMOVES: f64 = 0.6;

/// When polling already absorbs most wake-ups, tuning it further removes little more.
pub(crate) const POLLED_REMOVES: f64 = 0.2;

/// Halt polling absorbs the churn when this share of halts end in a successful poll.
pub(crate) const POLL_WORKS: f64 = 0.5;

rules! {
    /// The rules of `halt.*`.
    pub enum HaltRule in Halt {
        Churn {
            id: "halt.churn",
            tag: "halt.churn",
            role: Problem,
            thresholds: &[
                Threshold {
                    name: "mean halt at most",
                    value: CHURN_MEAN_NS,
                    unit: "ns",
                },
                Threshold {
                    name: "wake-ups per vCPU, low",
                    value: CHURN_RATE[0],
                    unit: "/s per vCPU",
                },
                Threshold {
                    name: "wake-ups per vCPU, medium",
                    value: CHURN_RATE[1],
                    unit: "/s per vCPU",
                },
                Threshold {
                    name: "wake-ups per vCPU, high",
                    value: CHURN_RATE[2],
                    unit: "/s per vCPU",
                },
                Threshold {
                    name: "mean halt below which halts did not block",
                    value: NO_BLOCK_NS,
                    unit: "ns",
                },
                Threshold {
                    name: "successful polls for polling to work",
                    value: POLL_WORKS,
                    unit: "share",
                },
            ],
        },
    }
}

/// `halt.churn`: short halts at a high rate.
pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let halts: Vec<_> = ctx
        .free_rows(ex.class(ExitClass::Idle))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    let n = sat_sum(halts.iter().map(|r| r.count));
    if n == 0 {
        return;
    }
    let mean = halts
        .iter()
        .try_fold(0u64, |a, r| Some(a.saturating_add(r.time_ns?)))
        .map(|t| t as f64 / n as f64);
    if mean.is_some_and(|m| m > CHURN_MEAN_NS) {
        return;
    }
    let per_second: Option<f64> = halts.iter().map(|r| r.per_second).sum();
    let c = &ev.counters;
    let polled = c.total(&["halt_successful_poll"]).unwrap_or(0);
    let works = ratio(polled, n.saturating_add(polled)) >= POLL_WORKS;
    let mut facts: Vec<Fact> = halts.iter().map(|r| ex.fact(r)).collect();
    let extra = [
        "halt_wakeup",
        "kvm_vcpu_wakeup",
        "halt_successful_poll",
        "halt_attempted_poll",
    ];
    facts.extend(extra.iter().filter_map(|n| c.fact(n).map(Fact::context)));
    // Without durations the halts' length is unknown: a high rate alone may be idle ticks.
    let confidence = if mean.is_some() {
        Confidence::Confirmed
    } else {
        Confidence::Possible
    };
    let h = Hypothesis::with_cost(
        HaltRule::Churn,
        cost::of_rate(ev, n, per_second, CHURN_NS),
        facts,
    )
    .confidence(confidence)
    .grading(Grading::Rate {
        thresholds: CHURN_RATE,
        per_vcpu: true,
        max: if works { Severity::Low } else { Severity::High },
        without_rate: Severity::Info,
    })
    .hint_if(works, Hint::PollingWorks)
    .hint_if(mean.is_some_and(|m| m < NO_BLOCK_NS), Hint::NoBlock)
    .hint_if(mean.is_none(), Hint::Aggregate)
    .removes(if works { POLLED_REMOVES } else { CHURN_REMOVES });
    ctx.push(h);
}
