//! `idle.*`: the guest waiting. HLT (MWAIT, idle-halt, kvm_stat `halt_exits`) time is the vCPU
//! halted until its next interrupt: not overhead, reported apart, always info. A profile whose
//! handled time is mostly idle is a healthy idle guest.
//! Reference: exit-tools §0.3 and §4 (HLT dominates Time%: sample 13, 0xba1a/blog_source).

use super::context::Ctx;
use super::finding::{Finding, Fix, Severity, Share};
use super::view::ratio;
use super::words;

const SRC: &str = "exit-tools §0.3 and §4 (HLT dominates Time%: guest idle, normal; \
     testdata/exit-reports/13: HLT 19.9% of exits but 99.89% of time; \
     0xba1a/blog_source@87f2987377e3 2020-09-28-perf-kvm-to-profile-vm-exit.md)";

/// Idle is worth a word when it is most of the handled time (timed), or, by count, when at least
/// a third of exits are halts (untimed): then the profile is mostly a guest waiting.
const IDLE_TIME: f64 = 0.5;
const IDLE_COUNT: f64 = 0.3;

pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<_> = ex.rows.iter().filter(|r| r.idle && r.count > 0).collect();
    if rows.is_empty() {
        return;
    }
    let t = &ex.totals;
    let (value, measure, of) = match (t.idle_time_ns, t.time_ns) {
        (Some(idle), Some(all)) if ex.timed => {
            (ratio(idle, all), "time", "all handled time, idle included")
        }
        _ => (
            ratio(t.idle_count, t.count),
            "exits",
            "all exits, idle included",
        ),
    };
    let enough = if measure == "time" {
        IDLE_TIME
    } else {
        IDLE_COUNT
    };
    if value < enough {
        return;
    }
    let overhead = match (t.overhead_time_ns, t.time_ns) {
        (Some(o), Some(all)) if ex.timed => format!(
            " Exit handling without idle is {} ({} of all handled time).",
            words::duration(o as f64),
            words::pct(ratio(o, all))
        ),
        _ => format!(
            " Exits without idle: {} ({}).",
            words::count(t.overhead_count),
            words::pct(ratio(t.overhead_count, t.count))
        ),
    };
    out.push(
        Finding::new("idle.hlt", Severity::Info, "the guest is mostly idle: halts dominate")
            .why(format!(
                "info: idle is {} of {}; it is the guest waiting, not virtualization overhead",
                words::pct(value),
                of
            ))
            .share(Some(Share {
                value,
                measure,
                of: of.to_string(),
            }))
            .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
            .cause(format!(
                "{}. HLT means the vCPU had nothing to run and halted; KVM counts the time until the next \
                 interrupt as the exit's handling time, so halts dominate the \"Time%\" of an idle guest. \
                 virtlens keeps it apart from the cost of virtualization.{overhead}",
                words::rows(ex, &rows)
            ))
            .fix(
                Fix::vm(
                    "nothing to fix; only when wake-up latency matters, poll instead of halting",
                    "-overcommit cpu-pm=on (dedicated pCPUs only: HLT/MWAIT stay in the guest)",
                    "<features><kvm><poll-control state='on'/></kvm></features> (guest haltpoll)",
                )
                .host("halt polling: kvm.halt_poll_ns (trades host CPU for wake-up latency)")
                .guest("cpuidle-haltpoll driver, or idle=poll (burns the CPU)"),
            )
            .effect("no change in throughput; polling lowers wake-up latency at the price of host CPU")
            .source(SRC),
    );
}
