//! `io.*`: port IO that exits to the VMM — the emulated 8250 serial console (an exit per byte),
//! legacy virtio-pci queue notifications through the device's IO BAR, acpi_idle's C-state entry
//! (P_LVLx read, then a dummy PM-timer read), any other hot port; and IO exits without ports
//! (exit reasons, kvm_stat's `io_exits`), read as the likeliest of these for the guest, with the
//! others as competitors and the port report that tells them apart. Timer ports are `timer.*`
//! and run first.

use super::effect;
use super::rules;
use super::timer::{self, is_cstate_port};
use super::{Ctx, Hint, Hypothesis};
use super::{RuleId, TimerRule};
use crate::config::HvFlag;
use crate::decode::{ExitClass, ioport};
use crate::diagnose::evidence::{Item, Part};
use crate::diagnose::model::{Confidence, Severity};
use crate::diagnose::rules::Family;
use crate::profile::Access;

rules! {
    /// The rules of `io.*`.
    pub enum IoRule in Io {
        SerialPioStorm {
            id: "io.serial-pio-storm",
            tag: "io.serial-console",
            role: Problem,
            thresholds: &[],
        },
        VirtioLegacyPioNotify {
            id: "io.virtio-legacy-pio-notify",
            tag: "io.virtio-legacy-notify",
            role: Problem,
            thresholds: &[],
        },
        AcpiIdlePort {
            id: "io.acpi-idle-port",
            tag: "io.acpi-idle-port",
            role: Problem,
            thresholds: &[],
        },
        EmulatedPort {
            id: "io.emulated-port",
            tag: "io.emulated-device-port",
            role: Problem,
            thresholds: &[],
        },
        NotifyExits {
            id: "io.notify-exits",
            tag: "io.virtio-notify",
            role: Problem,
            thresholds: super::io_path::NOTIFY_EXITS_THRESHOLDS,
        },
        Polling {
            id: "io.polling",
            tag: "io.polling",
            role: Context,
            thresholds: super::io_path::POLLING_THRESHOLDS,
        },
    }
}

/// PCI IO BARs lie at 0x1000 and up on x86 (Linux's PCIBIOS_MIN_IO; below are ISA ports):
/// firmware (SeaBIOS, OVMF) assigns them from 0xc000 up, Linux itself from 0x1000 when the
/// firmware leaves them to it (qboot, a kernel booted directly).
const PCI_IO_FIRST: u64 = 0x1000;

/// Legacy virtio-pci's QUEUE_NOTIFY register is at offset 16 of the device's IO BAR, whose size
/// (32 or 64 bytes, more with MSI-X) keeps it aligned: the port's low five bits are 0x10.
pub(crate) fn is_virtio_notify(port: u64, access: Option<Access>, name: Option<&str>) -> bool {
    if name.is_some_and(|n| n.to_ascii_lowercase().contains("virtio")) {
        return access != Some(Access::In);
    }
    (PCI_IO_FIRST..=0xffff).contains(&port) && port & 0x1f == 0x10 && access != Some(Access::In)
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    match &ctx.ev.ports {
        Some(p) => keyed(ctx, p),
        None => aggregate(ctx),
    }
}

fn keyed(ctx: &mut Ctx<'_>, p: &Part) {
    let ev = ctx.ev;
    let serial = ctx.free_rows(p.coded(|_, port| u16::try_from(port).is_ok_and(ioport::is_serial)));
    if !serial.is_empty() {
        ctx.push(Hypothesis::new(IoRule::SerialPioStorm, ev, p, &serial).removes(effect::REPLACED));
    }
    let cstate = ctx.free_rows(p.coded(|_, port| {
        is_cstate_port(port) || u16::try_from(port).is_ok_and(ioport::is_acpi_pm_timer)
    }));
    if cstate.iter().any(|r| r.code().is_some_and(is_cstate_port)) {
        let h = Hypothesis::new(IoRule::AcpiIdlePort, ev, p, &cstate).removes(effect::REPLACED);
        ctx.push(h);
    }
    let virtio =
        ctx.free_rows(p.coded(|r, port| is_virtio_notify(port, r.key.access(), r.name.as_deref())));
    if !virtio.is_empty() {
        // Confirmed when QEMU's own map names the port virtio and it sits at QUEUE_NOTIFY.
        let named = virtio.iter().any(|r| {
            r.name.as_deref().is_some_and(|n| n.contains("virtio"))
                && r.code().is_some_and(|c| c & 0x1f == 0x10)
        });
        let mut h = Hypothesis::new(IoRule::VirtioLegacyPioNotify, ev, p, &virtio)
            .hint_if(
                virtio
                    .iter()
                    .any(|r| r.mean_ns().is_some_and(|m| m >= 20_000.0)),
                Hint::Userspace,
            )
            .removes(effect::REPLACED);
        if !named {
            h = h.confidence(Confidence::Likely);
        }
        ctx.push(h);
    }
    let mut rest = ctx.free_rows(p.rows.iter().collect());
    rest.sort_by_key(|r| std::cmp::Reverse(r.time_ns.unwrap_or(r.count)));
    for r in rest {
        ctx.push(
            Hypothesis::new(IoRule::EmulatedPort, ev, p, &[r])
                .max(Severity::Medium)
                .removes(effect::REPLACED),
        );
    }
}

/// IO exits without ports: the likeliest reading for the guest, the others as competitors.
fn aggregate(ctx: &mut Ctx<'_>) {
    let ev = ctx.ev;
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows: Vec<&Item> = ctx
        .free_rows(ex.class(ExitClass::Io))
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    if rows.is_empty() {
        return;
    }
    let hv_time = ev.flag(HvFlag::Time);
    let stimer = ev.flag(HvFlag::Stimer);
    let t = &ex.totals;
    // Mostly halted: the exits happen between halts, at a timer's pace, not under load.
    let idle = match (t.idle_time_ns, t.time_ns) {
        (Some(i), Some(all)) if ex.timed && all > 0 => i as f64 >= 0.5 * all as f64,
        _ => t.idle_count.saturating_mul(3) >= t.count && t.idle_count > 0,
    };
    // Windows without a synthetic timer ticks through the RTC (or HPET) — the port IO of an
    // idle Windows guest is its tick; its clock reads (QueryPerformanceCounter) go to the ACPI
    // PM timer without hv-time, and come from running programs. Other guests have no such
    // prior: without ports the device is unknown, and every candidate is named.
    let (lead, rivals): (RuleId, &[RuleId]) = if ev.windows() {
        if hv_time == Some(true) || idle || ev.enlightened() == Some(true) {
            (
                RuleId::Timer(TimerRule::RtcPort),
                &[
                    RuleId::Timer(TimerRule::AcpiPmPort),
                    RuleId::Io(IoRule::VirtioLegacyPioNotify),
                ],
            )
        } else {
            (
                RuleId::Timer(TimerRule::AcpiPmPort),
                &[
                    RuleId::Timer(TimerRule::RtcPort),
                    RuleId::Io(IoRule::VirtioLegacyPioNotify),
                ],
            )
        }
    } else {
        (
            RuleId::Io(IoRule::EmulatedPort),
            &[
                RuleId::Io(IoRule::VirtioLegacyPioNotify),
                RuleId::Io(IoRule::SerialPioStorm),
                RuleId::Timer(TimerRule::AcpiPmPort),
                RuleId::Timer(TimerRule::RtcPort),
            ],
        )
    };
    let mut h = Hypothesis::new(lead, ev, ex, &rows)
        .confidence(Confidence::Possible)
        .hint(Hint::Aggregate)
        .hint_if(hv_time == Some(true), Hint::HvTimeOn)
        .hint_if(stimer == Some(true), Hint::StimerOn)
        .hint_if(idle, Hint::Idle)
        .hint_if(
            rows.iter()
                .any(|r| r.mean_ns().is_some_and(|m| m >= 20_000.0)),
            Hint::Userspace,
        )
        .removes(effect::REPLACED);
    if lead.family() == Family::Timer {
        h = h.grading(timer::device_grading());
    }
    for r in rivals {
        h = h.rival(*r, Confidence::Possible);
    }
    ctx.push(h);
}
