//! `irq.*`: host interrupts arriving while a vCPU runs (EXTERNAL_INTERRUPT, SVM `interrupt`,
//! kvm_stat `irq_exits`) — the normal floor of an interrupt-heavy guest, a problem only when
//! host device interrupts and housekeeping land on the vCPUs' cores. Never above low.
//! Reference: exit-tools §4 (seed tables: EXTERNAL_INTERRUPT leads even the healthy config 4;
//! sample 06: AMD idle baseline, interrupt 99.3% of exits).

use super::context::Ctx;
use super::finding::{Finding, Fix, Severity};
use super::grade;
use super::words;

const SRC: &str = "exit-tools §4 and testdata/seed-kvm-hyperv-traps (healthy config 4: EXTERNAL_INTERRUPT \
     56.8% of the time); testdata/exit-reports/06 (AMD idle baseline: interrupt 99.3% of exits)";

/// Below half of the cost, host interrupts are information; from half up, low: worth a look at
/// where host interrupts go, but the healthy seed config spends 57% here, so never more.
const DOMINANT: f64 = 0.5;

pub fn check(ctx: &Ctx<'_>, prior: &[Finding], out: &mut Vec<Finding>) {
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows = ctx.free_rows(ex.named(&["EXTERNAL_INTERRUPT", "interrupt", "irq_exits"]));
    if rows.is_empty() {
        return;
    }
    let (value, share) = ctx.view.share_against(ex, &rows);
    if value < grade::MINOR {
        return;
    }
    let severity = if value >= DOMINANT {
        Severity::Low
    } else {
        Severity::Info
    };
    let kicks = prior
        .iter()
        .find(|f| f.id.starts_with("apic.apicv") || f.id == "apic.avic-inhibited")
        .map(|f| {
            format!(
                " Part of them are IPI kicks that APIC virtualization would post without an exit: see \
                 {}.",
                f.id
            )
        })
        .unwrap_or_default();
    out.push(
        Finding::new(
            "irq.external",
            severity,
            "host interrupts arrive while vCPUs run",
        )
        .why(format!(
            "{}: {} of the {} — host interrupts are the normal floor of exit handling",
            severity,
            words::pct(value),
            share.of
        ))
        .share(Some(share))
        .evidence(rows.iter().map(|r| ex.evidence(r)).collect())
        .cause(format!(
            "{}. An external-interrupt exit is a host interrupt arriving while the vCPU runs: the host's \
             timer tick, device interrupts, and IPIs that kick the vCPU (wake-ups, TLB shootdowns). They \
             are the normal floor of a busy or interrupt-heavy guest; they become a cost to fix when host \
             devices' interrupts and housekeeping land on the vCPUs' cores.{kicks}",
            words::rows(ex, &rows)
        ))
        .fix(
            Fix::words("keep host interrupts off the vCPUs' cores when they matter")
                .host(
                    "pin vCPUs to dedicated cores (libvirt <cputune><vcpupin vcpu='0' cpuset='2'/>…) and keep \
                     host IRQs and housekeeping elsewhere (irqaffinity=, nohz_full=, irqbalance banned \
                     CPUs); passthrough devices with posted interrupts (VT-d/AVIC) deliver without exits",
                ),
        )
        .effect("fewer exits from host noise; nothing to gain when the interrupts are the guest's own IPIs and timers")
        .source(SRC),
    );
}
