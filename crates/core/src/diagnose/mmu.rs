//! `mmu.*`: guest memory faults — a fault storm where one fault is nearly every exit at a rate
//! no working guest reaches (the guest makes no progress), and EPT violations / NPFs dominating
//! the cost (memory being faulted in after boot, migration or reclaim).
//! Reference: exit-tools §4 (EXCEPTION_NMI/#PF at 330k/s; NPF storm on SEV-SNP, sample 30;
//! EPT_VIOLATION dominant, Senozhatsky RFC).

use super::context::Ctx;
use super::finding::{Confidence, Finding, Fix, Severity};
use super::view::ratio;
use super::words;

const SRC_STORM: &str = "exit-tools §4 (EXCEPTION_NMI/page fault at 330k/s, guest makes no progress: Jiri \
     Slaby/Avi Kivity, 20120918124646.02aaee4f.akpm@linux-foundation.org; NPF storm with rip 0 on SEV-SNP: \
     testdata/exit-reports/30)";
const SRC_EPT: &str = "exit-tools §4 (EPT_VIOLATION dominant: MMU faults after boot or migration; PTE \
     prefetch 8 → 16 cut exits ~14%, Senozhatsky, kvm@ 2021-10-12, \
     20211012091430.1754492-1-senozhatsky@chromium.org)";

/// The fault exits.
const FAULTS: [&str; 5] = [
    "EPT_VIOLATION",
    "npf",
    "EXCEPTION_NMI",
    "PF excp",
    "PF_EXCP",
];

/// A storm: one fault is ≥ 90% of all exits...
const STORM_SHARE: f64 = 0.9;
/// ...at ≥ 100,000/s: a fault every 10 µs, more than a guest faulting in fresh memory sustains
/// (the two public storms ran at 330k/s and 526k/s).
const STORM_RATE: f64 = 100_000.0;
/// Fewer exits than this are too short a capture to call a storm certain.
const STORM_SURE: u64 = 1_000;

/// `mmu.fault-storm`; runs before the other families so its rows stay its own.
pub fn storm(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits().filter(|p| !p.from_counters) else {
        return;
    };
    for r in ex.named(&FAULTS) {
        let share = ratio(r.count, ex.totals.count);
        let rate = r.per_second;
        // Without a rate a fault-heavy capture (early boot) cannot be told from a storm.
        if share < STORM_SHARE || r.count < 10 || !rate.is_some_and(|x| x >= STORM_RATE) {
            continue;
        }
        let sure = r.count >= STORM_SURE;
        let severity = if sure {
            Severity::Critical
        } else {
            Severity::High
        };
        let name = r.exit_name().unwrap_or("fault");
        let snp = if name.eq_ignore_ascii_case("npf") {
            " On AMD SEV-SNP guests NPF storms come from page-state changes or VMPL activity (the exits' \
             rip reads 0 because the guest state is encrypted)."
        } else {
            ""
        };
        let mut f = Finding::new(
            "mmu.fault-storm",
            severity,
            format!("a storm of {name} exits: the guest keeps faulting and makes no progress"),
        )
        .why(format!(
            "{} of all exits are {name}{}: a guest doing work shows other exits too",
            words::pct(share),
            rate.map(|x| format!(" at {}", words::rate(x))).unwrap_or_default()
        ))
        .share(Some(ex.share_struct(ex.share(r))))
        .evidence(vec![ex.evidence(r)])
        .cause(format!(
            "{}. Nearly every exit is the same fault: the guest faults on memory again and again without \
             the fault being resolved. Known cases: a host mm bug left a guest unable to fault in its first \
             page (EXCEPTION_NMI/#PF at 330k/s, fixed by reverting cf9b81d47a89).{snp}",
            words::row(ex, r)
        ))
        .fix(
            Fix::words("find the faulting address and what keeps it from being mapped")
                .host(
                    "trace the faults (`perf record -e kvm:kvm_page_fault -e kvm:kvm_exit`: the GPA and error \
                     code), check the host kernel against known KVM/mm fixes; on SEV-SNP check the host and \
                     guest page-state-change support",
                )
                .guest("look at the guest's state (console, crash dump) where it is not encrypted"),
        )
        .effect("once the fault is resolved the exit rate falls to normal and the guest runs")
        .source(SRC_STORM);
        if !sure {
            f = f.unconfirmed(
                Confidence::Likely,
                format!(
                    "only {} exits{} were captured: record a few seconds to see that the storm lasts",
                    words::count(r.count),
                    ex.window_ns
                        .map(|w| format!(" over {}", words::duration(w as f64)))
                        .unwrap_or_default()
                ),
            );
        }
        out.push(f);
        return;
    }
}

/// `mmu.ept-violation`: faults that dominate the cost without being a storm.
pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows = ctx.free_rows(ex.named(&["EPT_VIOLATION", "npf", "pf_fixed"]));
    let Some(g) = ctx.graded(ex, &rows, Severity::Medium) else {
        return;
    };
    let amd = if rows
        .iter()
        .any(|r| r.exit_name().is_some_and(|n| n.eq_ignore_ascii_case("npf")))
    {
        " On AMD, NPF exits also carry emulated MMIO (KVM uses reserved-bit nested page entries for it): \
         `perf kvm stat report --event=mmio` tells them apart."
    } else {
        ""
    };
    out.push(
        Finding::new(
            "mmu.ept-violation",
            g.severity,
            "guest memory is being faulted in: EPT violations are a large part of the cost",
        )
        .why(g.why)
        .share(Some(g.share))
        .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
        .cause(format!(
            "{}. An EPT violation is the guest touching memory KVM has not mapped yet: the first touch \
             after boot or live migration, memory the host reclaimed or swapped (ballooning, KSM, THP \
             splits), or dirty tracking.{amd}",
            words::rows(ex, &rows)
        ))
        .fix(
            Fix::vm(
                "back the guest with preallocated huge pages and keep the host from reclaiming its memory",
                "-object memory-backend-file,id=mem,size=…,mem-path=/dev/hugepages,prealloc=on \
                 -machine memory-backend=mem",
                "<memoryBacking><hugepages/><allocation mode='immediate'/></memoryBacking>",
            )
            .host("no swap or memory overcommit for this VM; KSM off if it keeps merging its pages"),
        )
        .effect(
            "one fault per 2 MiB/1 GiB page instead of per 4 KiB page, none after preallocation; a KVM RFC \
             raising the PTE prefetch from 8 to 16 cut such exits ~14% (Senozhatsky, kvm@ 2021-10-12)",
        )
        .source(SRC_EPT),
    );
}
