//! `timer.*`: the guest's clock and timer on emulated platform devices, from the rows that name
//! them — ACPI PM timer reads, RTC ports, HPET MMIO, PIT ports — plus the Hyper-V reference
//! counter MSR when the TSC page is unusable, synthetic timers in message mode, and (from exit
//! reasons alone) Windows on the LAPIC timer with the hypervisor bit hidden. Platform timers are
//! VM-wide devices: their rates are judged per VM. The readings of IO and MMIO exits without
//! ports or addresses are made, with their competitors, in `io` and `mmio`.

use super::IoRule;
use super::effect;
use super::{Ctx, Grading, Hint, Hypothesis, Threshold, rules};
use crate::config::HvFlag;
use crate::decode::{ioport, mmio};
use crate::diagnose::evidence::{Item, Part};
use crate::diagnose::model::{Confidence, Severity};
use crate::profile::Access;

/// Accesses per second (whole VM) to an emulated timer device, each a round trip to QEMU:
/// from 100/s worth a look, 500/s medium, 2,000/s high — the rate of a 1 kHz Windows RTC tick
/// (index and data access per tick), behind the public reports of idle Windows VMs burning
/// 30–50% of a host CPU.
pub(crate) const DEVICE_RATE: [f64; 3] = [100.0, 500.0, 2_000.0];

const DEVICE: &[Threshold] = &[
    Threshold {
        name: "device accesses, low",
        value: DEVICE_RATE[0],
        unit: "/s",
    },
    Threshold {
        name: "device accesses, medium",
        value: DEVICE_RATE[1],
        unit: "/s",
    },
    Threshold {
        name: "device accesses, high",
        value: DEVICE_RATE[2],
        unit: "/s",
    },
];

rules! {
    /// The rules of `timer.*`.
    pub enum TimerRule in Timer {
        AcpiPmPort {
            id: "timer.acpi-pm-port",
            tag: "timer.acpi-pm-port",
            role: Problem,
            thresholds: DEVICE,
        },
        RtcPort {
            id: "timer.rtc-port",
            tag: "timer.rtc-port",
            role: Problem,
            thresholds: DEVICE,
        },
        HpetMmio {
            id: "timer.hpet-mmio",
            tag: "timer.hpet-mmio",
            role: Problem,
            thresholds: DEVICE,
        },
        PitPort {
            id: "timer.pit-port",
            tag: "timer.pit-port",
            role: Problem,
            thresholds: DEVICE,
        },
        HvRefCountMsr {
            id: "timer.hv-ref-count-msr",
            tag: "msr.hyperv-synthetic",
            role: Problem,
            thresholds: &[],
        },
        StimerMessageNested {
            id: "timer.stimer-message-nested",
            tag: "msr.hyperv-synthetic",
            role: Problem,
            thresholds: &[],
        },
        LapicHypervisorHidden {
            id: "timer.lapic-hypervisor-hidden",
            tag: "timer.lapic-hypervisor-hidden",
            role: Problem,
            thresholds: &[],
        },
        TscDeadlineRearm {
            id: "timer.tsc-deadline-rearm",
            tag: "timer.tsc-deadline-rearm",
            role: Problem,
            thresholds: super::timer_tick::THRESHOLDS,
        },
        TickStorm {
            id: "timer.tick-storm",
            tag: "timer.tick-storm",
            role: Problem,
            thresholds: super::timer_tick::THRESHOLDS,
        },
    }
}

/// How a timer device's exits are graded: by cost, and by their VM-wide rate.
pub(crate) fn device_grading() -> Grading {
    Grading::Rate {
        thresholds: DEVICE_RATE,
        per_vcpu: false,
        max: Severity::High,
        without_rate: Severity::High,
    }
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    if let Some(p) = &ev.ports {
        // acpi_idle's C-state entry reads P_LVLx then the PM timer: `io` reads both together.
        let cstate = !p.coded(|_, c| is_cstate_port(c)).is_empty();
        // The PM timer is read-only: the signature is reads (or rows without a direction).
        let pm = ports(ctx, p, ioport::is_acpi_pm_timer, true);
        if !pm.is_empty() && !cstate {
            ctx.push(acpi_pm(ctx, p, &pm));
        }
        rtc_pit(ctx, p);
    }
    if let Some(m) = &ev.mmio {
        let rows = ctx.free_rows(m.coded(|_, gpa| mmio::is_hpet(gpa)));
        if !rows.is_empty() {
            ctx.push(hpet(ctx, m, &rows));
        }
    }
    if let Some(m) = &ev.msrs {
        let refc = msrs(ctx, m, |i, a| i == 0x4000_0020 && a != Some(Access::Write));
        if !refc.is_empty() {
            let h = Hypothesis::new(TimerRule::HvRefCountMsr, ev, m, &refc).hint_if(
                ev.host
                    .facts
                    .clocksource
                    .as_deref()
                    .is_some_and(|c| c != "tsc"),
                Hint::ClocksourceNotTsc,
            );
            ctx.push(h);
        }
        let stimer = msrs(ctx, m, |i, a| {
            (0x4000_00b0..=0x4000_00b7).contains(&i) && a != Some(Access::Read)
        });
        if !stimer.is_empty() {
            let max = if ev.flag(HvFlag::StimerDirect) == Some(false) {
                Severity::Medium
            } else {
                Severity::Low
            };
            ctx.push(Hypothesis::new(TimerRule::StimerMessageNested, ev, m, &stimer).max(max));
        }
    }
    lapic_hidden(ctx);
}

fn rtc_pit(ctx: &mut Ctx<'_>, p: &Part) {
    let rtc = ports(ctx, p, ioport::is_rtc, false);
    if !rtc.is_empty() {
        let h = platform(TimerRule::RtcPort, ctx, p, &rtc);
        ctx.push(h);
    }
    let pit = ports(ctx, p, ioport::is_pit, false);
    if !pit.is_empty() {
        let h = platform(TimerRule::PitPort, ctx, p, &pit);
        ctx.push(h);
    }
}

/// The ACPI C-state control ports (P_LVL2/P_LVL3 at PMBASE+0x14/0x15).
pub(crate) fn is_cstate_port(port: u64) -> bool {
    matches!(port, 0x614 | 0x615 | 0xb014 | 0xb015)
}

/// Unclaimed rows of ports `pred` accepts; with `reads_only`, writes are left out.
fn ports<'p>(ctx: &Ctx<'_>, p: &'p Part, pred: fn(u16) -> bool, reads_only: bool) -> Vec<&'p Item> {
    ctx.free_rows(p.coded(|r, port| {
        u16::try_from(port).is_ok_and(pred) && !(reads_only && r.key.access() == Some(Access::Out))
    }))
}

fn msrs<'p>(
    ctx: &Ctx<'_>,
    m: &'p Part,
    pred: impl Fn(u64, Option<Access>) -> bool,
) -> Vec<&'p Item> {
    ctx.free_rows(m.coded(|r, i| pred(i, r.key.access())))
}

/// A platform timer hypothesis with what the configuration says about the enlightenments.
fn platform(id: TimerRule, ctx: &Ctx<'_>, p: &Part, rows: &[&Item]) -> Hypothesis {
    let ev = ctx.ev;
    Hypothesis::new(id, ev, p, rows)
        .grading(device_grading())
        .hint_if(ev.flag(HvFlag::Time) == Some(true), Hint::HvTimeOn)
        .hint_if(ev.flag(HvFlag::Stimer) == Some(true), Hint::StimerOn)
        .hint_if(
            ev.config
                .as_ref()
                .is_some_and(|c| c.effective.hpet == Some(false)),
            Hint::HpetOff,
        )
        .hint_if(
            rows.iter()
                .any(|r| r.mean_ns().is_some_and(|m| m >= 2_000.0)),
            Hint::Userspace,
        )
}

/// `timer.acpi-pm-port` from port rows; on a Linux (or unknown) guest the PM timer is also read
/// by acpi_idle's dummy wait, a competitor the clocksource tells apart.
pub(crate) fn acpi_pm(ctx: &Ctx<'_>, p: &Part, rows: &[&Item]) -> Hypothesis {
    let h = platform(TimerRule::AcpiPmPort, ctx, p, rows);
    if ctx.ev.windows() {
        h
    } else {
        h.rival(IoRule::AcpiIdlePort, Confidence::Possible)
    }
}

/// `timer.hpet-mmio` from HPET address rows.
pub(crate) fn hpet(ctx: &Ctx<'_>, m: &Part, rows: &[&Item]) -> Hypothesis {
    platform(TimerRule::HpetMmio, ctx, m, rows)
}

/// Windows on the LAPIC timer with no enlightenment in use: no hypercall, no MSR write, no
/// HPET, APIC writes dominating — the hypervisor bit is hidden. Cheap, but every Hyper-V
/// enlightenment is lost.
fn lapic_hidden(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits().filter(|p| !p.from_counters) else {
        return;
    };
    let hidden = ev.config.as_ref().map(|c| c.effective.hypervisor_hidden);
    if !ev.windows() || ev.enlightened() != Some(false) || hidden == Some(false) {
        return;
    }
    let misconfig = ex.named(&["EPT_MISCONFIG", "npf"]);
    let apic_write = ctx.free_rows(ex.named(&["APIC_WRITE"]));
    if ex.share_of(&misconfig).0 >= 0.03 || ex.share_of(&apic_write).0 < 0.20 {
        return;
    }
    let absent = [
        ex.absent("VMCALL", "absent: no Hyper-V hypercalls"),
        ex.absent("MSR_WRITE", "absent: no synthetic-MSR or x2APIC writes"),
    ];
    let mut h = Hypothesis::new(TimerRule::LapicHypervisorHidden, ev, ex, &apic_write)
        .max(Severity::Low)
        .support(absent)
        .hint(Hint::NoEnlightenment)
        .hint_if(hidden == Some(true), Hint::HypervisorHidden)
        .removes(effect::NOTHING);
    if hidden != Some(true) {
        h = h.confidence(Confidence::Likely).hint(Hint::Aggregate);
    }
    ctx.push(h);
}
