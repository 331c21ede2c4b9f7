//! `spin.*`: PAUSE-loop exits — a vCPU that exits only for host interrupts and pause loops is
//! spinning without doing anything privileged (a hung guest, sample 17), and pause exits that
//! dominate the cost mean lock-holder preemption on an overcommitted host.
//! Reference: exit-tools §4 (PAUSE with interrupt only, vCPU at 100%: SEV-ES boot hang),
//! hyperv-enlightenments §7 (PAUSE dominant → hv-spinlocks, HV-PERF-010).

use super::context::Ctx;
use super::finding::{Confidence, Finding, Fix, Severity};
use super::words;

const SRC_HANG: &str = "exit-tools §4 (PAUSE_INSTRUCTION with interrupt only, vCPU at 100%: guest spinning; \
     testdata/exit-reports/17, cai-fuqiang/md case/sev/vm_hung.md)";
const SRC_PLE: &str = "hyperv-enlightenments §7 (PAUSE exits dominant on an overcommitted host → hv-spinlocks \
     0x1fff, HV-PERF-010); QEMU docs/system/i386/hyperv.rst (hv-spinlocks)";

const PAUSE: [&str; 2] = ["PAUSE_INSTRUCTION", "pause"];
const INTERRUPT: [&str; 2] = ["EXTERNAL_INTERRUPT", "interrupt"];

/// Fewer exits than this say too little about what a vCPU does.
const HANG_MIN_EXITS: u64 = 50;

/// The hang signature (runs early so its rows stay its own).
pub fn hang(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits().filter(|p| !p.from_counters) else {
        return;
    };
    let pause = ex.named(&PAUSE);
    let irq = ex.named(&INTERRUPT);
    let only = ex.rows.iter().filter(|r| r.count > 0).all(|r| {
        r.exit_name().is_some_and(|n| {
            PAUSE
                .iter()
                .chain(&INTERRUPT)
                .any(|x| x.eq_ignore_ascii_case(n))
        })
    });
    if !only || pause.iter().all(|r| r.count == 0) || ex.totals.count < HANG_MIN_EXITS {
        return;
    }
    let rows: Vec<_> = pause.iter().chain(&irq).copied().collect();
    out.push(
        Finding::new(
            "spin.pause",
            Severity::High,
            "the vCPU only spins: nothing but host interrupts and pause-loop exits",
        )
        .why("high: a vCPU that never halts, programs no timer and touches no device is stuck")
        .share(Some(ex.share_struct(ex.share_of(&rows))))
        .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
        .cause(format!(
            "{}. The guest exits only because host interrupts arrive and because pause-loop exiting fires \
             when a PAUSE loop runs past ple_window: it executes no privileged instruction, never halts and \
             never touches a timer or device. That is a vCPU spinning in a loop — a guest hung or stuck \
             early in boot (sample 17: an SEV-ES guest hung at boot with vCPU0 at 100%; its registers are \
             encrypted, so only the exit mix tells).",
            words::rows(ex, &rows)
        ))
        .fix(
            Fix::words("find where the guest spins")
                .guest(
                    "look at its console/serial log; take a memory dump (virsh dump --memory-only) or read \
                     the registers (virsh qemu-monitor-command --hmp 'info registers'; not possible for \
                     SEV-ES/SNP guests — check firmware and guest kernel versions there)",
                ),
        )
        .effect("a guest that gets past the loop shows timer, idle and device exits again")
        .source(SRC_HANG)
        .unconfirmed(
            Confidence::Likely,
            "check that the vCPU thread runs at 100% (top -H -p <QEMU pid>) and capture longer: a busy guest \
             doing real work also programs its timer (MSR_WRITE/PREEMPTION_TIMER) and touches devices",
        ),
    );
}

/// Pause-loop exits as a cost: lock-holder preemption.
pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows = ctx.free_rows(ex.named(&PAUSE));
    let Some(g) = ctx.graded(ex, &rows, Severity::Medium) else {
        return;
    };
    out.push(
        Finding::new(
            "spin.pause",
            g.severity,
            "vCPUs spin on locks whose holder is not running (pause-loop exits)",
        )
        .why(g.why)
        .share(Some(g.share))
        .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
        .cause(format!(
            "{}. Pause-loop exiting fires when a vCPU spins in a PAUSE loop past ple_window: it waits for a \
             lock held by a vCPU that is not running — lock-holder preemption, the mark of an overcommitted \
             host or unpinned vCPUs (or heavy lock contention in the guest).",
            words::rows(ex, &rows)
        ))
        .fix(
            Fix::vm(
                "let the guest tell the hypervisor it spins (Windows: hv-spinlocks; Linux: PV spinlocks) and \
                 reduce overcommit",
                "-cpu …,hv-spinlocks=0x1fff (Windows) / -cpu …,kvm-pv-unhalt=on (Linux)",
                "<spinlocks state='on' retries='8191'/> (in <hyperv>, Windows)",
            )
            .host("fewer vCPUs than host CPUs, or pinned vCPUs (<cputune><vcpupin …/>); PLE tunables \
                   kvm_intel ple_gap/ple_window"),
        )
        .effect("spinning vCPUs yield to the lock holder instead of burning their time slice; PLE exits drop")
        .source(SRC_PLE),
    );
}
