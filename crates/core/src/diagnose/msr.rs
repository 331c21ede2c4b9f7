//! `msr.*`: timer re-arming through IA32_TSC_DEADLINE (0x6e0) or the x2APIC timer count (0x838)
//! — the `nohz=off` signature — from MSR rows, or from MSR_WRITE exits alone when they lead a
//! non-Windows profile; and any other hot MSR, named. (Hyper-V and x2APIC ICR/EOI MSRs are
//! `apic.*`/`timer.*` and run first.)
//! Reference: exit-tools §4 (MSR 0x6e0 writes dominate, ~66k exits/s idle: nohz=off; samples 05
//! and 21).

use super::context::{Ctx, Graded};
use super::finding::{Confidence, Finding, Fix, Severity};
use super::grade;
use super::view::{Part, VRow, sat_sum};
use super::words;
use crate::decode::msr::{MsrClass, msr_class};
use crate::profile::{Access, Key};

const SRC_DEADLINE: &str = "exit-tools §4 (MSR 0x6e0 writes dominate, ~66k exits/s on an idle guest: guest \
     nohz=off; martins3/martins3.github.io \"记录调试 kvm 的一个有趣问题\"; testdata/exit-reports/05 and 21)";
const SRC_MSR: &str = "exit-tools §1.1 (kvm_msr), §2.1 (perf kvm stat --event=msr)";

/// Timer re-arm rates. A tickless idle Linux guest re-arms its deadline about once per wake-up:
/// hundreds to a few thousand times a second. `nohz=off` turns every tick into a wake-up and a
/// re-arm; the post measured ~66k exits/s on an idle guest. Below 5,000/s is normal; 5,000–20,000/s
/// is a busy or ticking guest (medium); from 20,000/s, the post's pathology (high).
const REARM_BUSY: f64 = 5_000.0;
const REARM_STORM: f64 = 20_000.0;

pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if let Some(m) = &ctx.view.msrs {
        let rows = ctx.free_rows(
            m.rows
                .iter()
                .filter(|r| {
                    matches!(r.key, Key::Msr { index: 0x6e0 | 0x838, access } if access != Some(Access::Read))
                })
                .collect(),
        );
        if let Some(g) = ctx.graded(m, &rows, Severity::Medium) {
            out.push(deadline(m, &rows, g, None));
        }
        let mut rest: Vec<&VRow> = ctx
            .free_rows(m.rows.iter().collect())
            .into_iter()
            .filter(|r| !rows.iter().any(|x| x.key == r.key))
            .collect();
        rest.sort_by_key(|r| std::cmp::Reverse(r.time_ns.unwrap_or(r.count)));
        for r in rest {
            if let Some(g) = ctx.graded(m, &[r], Severity::Low) {
                out.push(hot_msr(m, r, g));
            }
        }
        return;
    }
    let Some(ex) = ctx.exits() else {
        return;
    };
    if ctx.windows() && ctx.enlightened() == Some(true) {
        return; // apic.* reads a Windows guest's MSR writes
    }
    let writes = ctx.free_rows(ex.named(&["MSR_WRITE"]));
    let Some(g) = ctx.graded(ex, &writes, Severity::Medium) else {
        return;
    };
    let msr_count = sat_sum(writes.iter().map(|r| r.count));
    let idle = sat_sum(
        ex.class(crate::decode::ExitClass::Idle)
            .iter()
            .map(|r| r.count),
    );
    // Re-arming happens around every wake-up: with as many halts as MSR writes (a third or more),
    // the writes are most likely the timer; without halts they may as well be IPIs.
    let paired = idle > 0 && idle.saturating_mul(3) >= msr_count;
    let reasoning = format!(
        "Without MSR detail this is the likeliest reading: MSR_WRITE leads the exits{}, and on {} the \
         MSR written most is IA32_TSC_DEADLINE, re-armed around every wake-up; the other candidate is the \
         x2APIC ICR (0x830, IPIs).",
        if paired {
            format!(
                " with a halt for every {:.1} writes",
                msr_count as f64 / idle.max(1) as f64
            )
        } else {
            String::new()
        },
        if ctx.windows() {
            "a Windows guest without enlightenments"
        } else {
            "a Linux guest"
        }
    );
    let mut reasoning = reasoning;
    if !ctx.windows() && !ctx.linux() && !ctx.hv_signs().is_empty() {
        reasoning.push_str(
            " If this is a Windows guest (hypercall exits are present), the likelier reading is \
             SynIC's AutoEOI keeping APICv off: run again with --guest windows.",
        );
    }
    let confidence = if paired {
        Confidence::Likely
    } else {
        Confidence::Possible
    };
    out.push(deadline(ex, &writes, g, Some((confidence, reasoning))));
}

/// `msr.tsc-deadline-rearm`, from MSR rows or (with `aggregate`) from MSR_WRITE exits.
fn deadline(
    part: &Part,
    rows: &[&VRow],
    g: Graded,
    aggregate: Option<(Confidence, String)>,
) -> Finding {
    let rate: Option<f64> = rows.iter().map(|r| r.per_second).sum();
    let (severity, why) = match rate {
        Some(r) if r >= REARM_STORM => (
            Severity::High,
            format!(
                "{}/s re-arms: the nohz=off storm rate (≥ 20,000/s)",
                words::rate(r)
            ),
        ),
        Some(r) if r >= REARM_BUSY => (
            Severity::Medium,
            format!(
                "{}/s re-arms: a ticking or busy guest (5,000–20,000/s)",
                words::rate(r)
            ),
        ),
        Some(r) => (
            Severity::Low,
            format!(
                "{}/s re-arms: within what a tickless guest does (< 5,000/s); {}",
                words::rate(r),
                g.why
            ),
        ),
        None => (
            g.severity.min(Severity::Medium),
            format!(
                "{}; rate unknown (no capture window), so at most medium",
                g.why
            ),
        ),
    };
    let mut f = Finding::new(
        "msr.tsc-deadline-rearm",
        severity,
        "the guest re-arms its timer through TSC_DEADLINE writes, one exit each",
    )
    .why(why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| part.evidence(r)).collect())
    .cause(format!(
        "{}. Each write to IA32_TSC_DEADLINE (0x6e0; 0x838 is the x2APIC timer's initial count) programs \
         the guest's next timer interrupt and exits to KVM. A guest re-arms it whenever its next event \
         changes — around every idle entry and exit — and a guest booted with nohz=off keeps the periodic \
         tick running, so every tick wakes the vCPU and re-arms the timer: the post this signature comes \
         from saw ~66,000 exits/s on an idle guest.",
        words::rows(part, rows)
    ))
    .fix(
        Fix::words("let the guest's tick stop when idle")
            .guest(
                "remove nohz=off from the guest kernel command line (check /proc/cmdline) and use a tickless \
                 kernel (CONFIG_NO_HZ_IDLE); lower timer-heavy polling in the workload",
            )
            .host("on Intel, KVM emulates the deadline with the VMX preemption timer (kvm_intel \
                   preemption_timer=1, the default) — keep it on"),
    )
    .effect("the 0x6e0 writes fall to the guest's real timer events; the exit rate of an idle guest drops by \
             an order of magnitude (the post's comparison)")
    .source(SRC_DEADLINE);
    if let Some((c, reasoning)) = aggregate {
        f = f.unconfirmed(
            c,
            "`perf kvm stat record -a sleep 10` then `perf kvm stat report --event=msr` (0x6e0:W leads), or \
             `virtlens record`; in the guest, `cat /proc/cmdline` for nohz=off",
        );
        f.cause = format!("{reasoning} {}", f.cause);
    }
    f
}

fn hot_msr(m: &Part, r: &VRow, g: Graded) -> Finding {
    let index = r.key.code().unwrap_or(0);
    let class = u32::try_from(index).map_or(MsrClass::Other, msr_class);
    let what = match class {
        MsrClass::Speculation => {
            "a speculation-control MSR: KVM intercepts it until the guest's first write, and \
             IA32_PRED_CMD/FLUSH_CMD writes on every context switch exit if the host traps them"
        }
        MsrClass::KvmPv => "a KVM paravirtual MSR (kvmclock, steal time, PV EOI)",
        MsrClass::HypervSynic | MsrClass::HypervOther => "a Hyper-V synthetic MSR",
        MsrClass::Timer => "a timer MSR",
        _ => "an MSR KVM intercepts",
    };
    let severity = if g.value >= grade::MAIN {
        g.severity
    } else {
        Severity::Info.max(g.severity.down())
    };
    Finding::new(
        "msr.hot-msr",
        severity,
        format!(
            "{} is accessed often enough to matter",
            r.name.clone().unwrap_or_else(|| r.key.key_text())
        ),
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(vec![m.evidence(r)])
    .cause(format!(
        "{}. This is {what}; every intercepted RDMSR/WRMSR is an exit (about 1–2 µs in the kernel, more \
         when userspace handles it).",
        words::row(m, r)
    ))
    .fix(Fix::words(
        "find what in the guest accesses it so often (guest perf on the exiting rip) and whether the CPU \
         model hides a feature that would avoid it",
    ))
    .effect("the MSR's exits fall with the accesses")
    .source(SRC_MSR)
}
