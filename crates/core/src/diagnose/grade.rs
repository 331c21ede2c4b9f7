//! The thresholds every rule shares, and why: how large a share of the exit-handling cost a
//! cause must explain to be raised and at which severity, and when the whole cost is too small
//! for any finding to matter (an idle guest). Rule-specific rates live with their rules.

use super::finding::Severity;
use super::view::Part;

/// A cause that explains at least a fifth of the exit-handling cost is the main lever:
/// removing it cuts that cost by at least 20% (Amdahl), the size of change the public
/// measurements report for a fix (reference hyperv-enlightenments §3.5: 30–40% → 1–3% idle
/// CPU; seed tables: 5× less handled time). It gets the rule's base severity.
pub const MAIN: f64 = 0.20;

/// 10–20%: worth fixing but not the main cost: one step below the base severity.
pub const SECONDARY: f64 = 0.10;

/// 3–10%: measurable — larger than the relative standard errors perf prints for the rows of
/// real tables (±0.1–12% of a row's *mean*, i.e. far less of the total) — but small: low.
pub const MINOR: f64 = 0.03;

/// Exits that go to QEMU (port IO, emulated MMIO) cost 3–90 µs each in the samples against
/// 1–4 µs for interrupt, MSR and APIC exits (seed tables' and samples 09/11/13's "Avg time"):
/// when only counts are known, a count share of 1% can be several % of the time, so rules
/// about them raise from this count share (at the lowest severity).
pub const USERSPACE_COUNT: f64 = 0.01;

/// The severity of a finding of base severity `base` that explains `share` of the cost, and
/// why; `None` when the share is below [`MINOR`] (not raised).
pub fn by_share(base: Severity, share: f64, measure: &str) -> Option<(Severity, String)> {
    let pct = share * 100.0;
    let (sev, why) = if share >= MAIN {
        (base, "the main cost (≥ 20%)")
    } else if share >= SECONDARY {
        (base.down(), "a secondary cost (10–20%)")
    } else if share >= MINOR {
        (Severity::Low.min(base), "a minor cost (3–10%)")
    } else {
        return None;
    };
    Some((sev, format!("explains {pct:.1}% of the {measure}: {why}")))
}

/// Exit handling without idle below 2% of all handled time is small whatever causes it.
/// Total handled time includes the time vCPUs sat halted, and the guest's own run time only
/// adds to the real denominator, so `overhead / total handled` bounds from above the share of
/// vCPU time exit handling took: below 2% no fix can win more than that (sample 13: 0.11%).
pub const SMALL_COST: f64 = 0.02;

/// With a capture window but no durations: under 200 exits/s without idle cost at most 2% of
/// one CPU even at 100 µs each (the slowest mean in the samples is 93 µs: 2012-era port IO to
/// QEMU, sample 09).
pub const SMALL_RATE: f64 = 200.0;

/// Fewer than 100 exits with neither durations nor a window are too few to weigh causes: one
/// burst decides the shares (sample 01's first bcc run: 35 exits).
pub const SMALL_SAMPLE: u64 = 100;

/// The severity cap the whole input's cost allows, with the reason: `Low` when exit handling
/// without idle is provably small (see [`SMALL_COST`], [`SMALL_RATE`]) or the sample too small
/// ([`SMALL_SAMPLE`]).
pub fn cost_cap(exits: Option<&Part>) -> Option<(Severity, String)> {
    let p = exits?;
    let t = &p.totals;
    if !p.timed && p.window_ns.is_none() && t.count < SMALL_SAMPLE {
        return Some((
            Severity::Low,
            format!(
                "capped at low: only {} exits, with neither durations nor a capture window — too few to \
                 weigh causes",
                t.count
            ),
        ));
    }
    if p.timed
        && let (Some(all), Some(over)) = (t.time_ns, t.overhead_time_ns)
        && all > 0
        && t.idle_count > 0
    {
        let f = over as f64 / all as f64;
        if f < SMALL_COST {
            return Some((
                Severity::Low,
                format!(
                    "capped at low: exit handling without idle is {:.2}% of all handled time (the rest is \
                     the guest halted), so no fix can win more than that",
                    f * 100.0
                ),
            ));
        }
    }
    if let Some(w) = p.window_ns.filter(|&w| w > 0) {
        let secs = w as f64 / 1e9;
        if let Some(over) = t.overhead_time_ns.filter(|_| p.timed) {
            let f = over as f64 / w as f64;
            if f < SMALL_COST {
                return Some((
                    Severity::Low,
                    format!(
                        "capped at low: exit handling without idle took {:.2}% of one CPU over the {secs:.1} s window",
                        f * 100.0
                    ),
                ));
            }
        } else {
            let rate = t.overhead_count as f64 / secs;
            if rate < SMALL_RATE {
                return Some((
                    Severity::Low,
                    format!(
                        "capped at low: only {rate:.0} exits/s without idle over the {secs:.1} s window"
                    ),
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_grade_down() {
        let g = |s| by_share(Severity::High, s, "time").map(|x| x.0);
        assert_eq!(g(0.9), Some(Severity::High));
        assert_eq!(g(0.15), Some(Severity::Medium));
        assert_eq!(g(0.05), Some(Severity::Low));
        assert_eq!(g(0.01), None);
        assert_eq!(
            by_share(Severity::Info, 0.05, "x").map(|x| x.0),
            Some(Severity::Info)
        );
    }
}
