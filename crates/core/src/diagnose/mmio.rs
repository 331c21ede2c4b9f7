//! `mmio.*`: guest accesses to emulated MMIO that are neither the HPET (`timer.*`) nor the local
//! APIC (`apic.*`): a named device region, or — from EPT_MISCONFIG exits or kvm_stat's
//! `mmio_exits` alone — emulated MMIO as such, with what would name the device.
//! Reference: exit-tools §1.1 (kvm_mmio), §2.1 (`perf kvm stat --event=mmio`), §4.

use super::context::{Ctx, Graded};
use super::finding::{Confidence, Finding, Fix, Severity};
use super::view::{Part, VRow};
use super::words;
use crate::decode::{ExitClass, mmio};
use crate::profile::Key;

const SRC: &str = "exit-tools §1.1 (kvm_mmio, EPT_MISCONFIG = emulated MMIO), §2.1 (perf kvm stat \
                   --event=mmio), §4";

pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if let Some(m) = &ctx.view.mmio {
        let mut rows: Vec<&VRow> = ctx.free_rows(m.rows.iter().collect());
        rows.sort_by_key(|r| std::cmp::Reverse(r.time_ns.unwrap_or(r.count)));
        // Group by device name: one finding per device region.
        let mut groups: Vec<(String, Vec<&VRow>)> = Vec::new();
        for r in rows {
            let dev = device(r);
            match groups.iter_mut().find(|(d, _)| *d == dev) {
                Some((_, v)) => v.push(r),
                None => groups.push((dev, vec![r])),
            }
        }
        for (dev, rows) in groups {
            if let Some(g) = ctx.graded_userspace(m, &rows, Severity::Medium) {
                out.push(device_finding(m, &dev, &rows, g, None));
            }
        }
        return;
    }
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows = ctx.free_rows(ex.class(ExitClass::Mmio));
    let Some(g) = ctx.graded_userspace(ex, &rows, Severity::Medium) else {
        return;
    };
    let guess = if ctx.windows() {
        "On a Windows guest that uses Hyper-V enlightenments the usual candidates are a legacy \
         device's registers (VGA/QXL, USB controller polling) or virtio notifications without ioeventfd."
    } else {
        "The usual candidates are virtio notifications without ioeventfd, a clock on the HPET \
         (clocksource=hpet), or an emulated device polled by the guest (VGA, USB)."
    };
    out.push(
        device_finding(ex, "emulated MMIO", &rows, g, Some(guess)).unconfirmed(
            Confidence::Possible,
            "record the addresses: `perf kvm stat record -a sleep 10` then `perf kvm stat report \
             --event=mmio`, or `virtlens record`; `--mtree` with QEMU's `info mtree` names the device",
        ),
    );
}

/// The device an address belongs to, from its decoded name (the part before the register).
fn device(r: &VRow) -> String {
    match (&r.name, &r.key) {
        (Some(n), _) => n.split([' ', ':']).next().unwrap_or(n).to_string(),
        (None, Key::Mmio { gpa, .. }) if mmio::is_ioapic(*gpa) => "ioapic".to_string(),
        (None, Key::Mmio { gpa, .. }) => format!("{:#x}", gpa & !0xfff),
        _ => "mmio".to_string(),
    }
}

fn device_finding(p: &Part, dev: &str, rows: &[&VRow], g: Graded, guess: Option<&str>) -> Finding {
    let cause = match guess {
        Some(guess) => format!(
            "{}. EPT_MISCONFIG (VMX) is how an access to emulated MMIO exits: KVM marks those pages with \
             a reserved-bit EPT entry, and unless an ioeventfd or an in-kernel device takes the access, it \
             goes to QEMU. {guess}",
            words::rows(p, rows)
        ),
        None => format!(
            "{}. Each access to {dev} exits; unless KVM completes it in the kernel (ioeventfd, in-kernel \
             IOAPIC/LAPIC), it is a round trip to QEMU.",
            words::rows(p, rows)
        ),
    };
    Finding::new(
        "mmio.emulated-device",
        g.severity,
        format!("the guest hammers {dev}: every access is an MMIO exit"),
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| p.evidence(r)).collect())
    .cause(cause)
    .fix(
        Fix::vm(
            "replace the emulated device with a paravirtual one, or let KVM take the access in the kernel",
            "-device virtio-…-pci,ioeventfd=on; -device qemu-xhci instead of UHCI/EHCI; virtio-gpu or \
             QXL instead of a VGA framebuffer the guest polls",
            "<driver ioeventfd='on'/> on virtio devices; <controller type='usb' model='qemu-xhci'/>",
        )
        .guest("find the driver touching it (guest perf/ETW on the exiting rip)"),
    )
    .effect("the device's MMIO exits disappear or stay in the kernel (no userspace round trip)")
    .source(SRC)
}
