//! `io.*`: port IO that exits to the VMM — the emulated 8250 serial console (one exit per byte),
//! legacy virtio-pci queue notifications through the device's IO BAR, and any other hot port;
//! and, from exit reasons or kvm_stat's `io_exits` alone, the likeliest of these with what would
//! confirm it. (Timer ports — ACPI PM timer, RTC — are `timer.*` and run first.)
//! Reference: exit-tools §4 (serial PIO storm; legacy virtio `vp_notify`, sample 18/11).

use super::context::{Ctx, Graded};
use super::finding::{Confidence, Finding, Fix, Severity};
use super::timer;
use super::view::{Part, VRow};
use super::words;
use crate::config::HvFlag;
use crate::decode::{ExitClass, ioport};
use crate::profile::{Access, Key};

const SRC_SERIAL: &str = "exit-tools §4 (PIO storm on 0x3f8/0x3fd: tglx 87ed2pvgqw.ffs@tglx; richardweiyang \
     gitbook kvm_pio page)";
const SRC_VIRTIO: &str = "exit-tools §4 (io_exits from iowrite16 in vp_notify: legacy virtio-pci queue notify \
     of virtio-blk and virtio-rng, testdata/exit-reports/18 — mfleming 2017); exit-tools sample 11 \
     (0xc090:POUT)";
const SRC_PORT: &str =
    "exit-tools §1.1 (kvm_pio) and §4; DESIGN.md (port names from QEMU's PC machines)";

/// Firmware (SeaBIOS, OVMF) assigns PCI IO BARs from 0xc000 up.
const PCI_IO_FIRST: u64 = 0xc000;

/// Legacy virtio-pci's QUEUE_NOTIFY register is at offset 16 of the device's IO BAR, whose size
/// (32 or 64 bytes, more with MSI-X) keeps it aligned: the port's low five bits are 0x10.
pub fn is_virtio_notify(port: u64, access: Option<Access>, name: Option<&str>) -> bool {
    if name.is_some_and(|n| n.to_ascii_lowercase().contains("virtio")) {
        return access != Some(Access::In);
    }
    (PCI_IO_FIRST..=0xffff).contains(&port) && port & 0x1f == 0x10 && access != Some(Access::In)
}

pub fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if let Some(p) = &ctx.view.ports {
        keyed(ctx, p, out);
    }
    aggregate(ctx, out);
}

fn keyed(ctx: &Ctx<'_>, p: &Part, out: &mut Vec<Finding>) {
    let port = |r: &VRow| match r.key {
        Key::Port { port, .. } => port,
        _ => u64::MAX,
    };
    let serial: Vec<&VRow> = ctx.free_rows(
        p.rows
            .iter()
            .filter(|r| u16::try_from(port(r)).is_ok_and(ioport::is_serial))
            .collect(),
    );
    if let Some(g) = ctx.graded(p, &serial, Severity::Medium) {
        out.push(serial_finding(p, &serial, g));
    }
    let virtio: Vec<&VRow> = ctx.free_rows(
        p.rows
            .iter()
            .filter(|r| is_virtio_notify(port(r), r.key.access(), r.name.as_deref()))
            .collect(),
    );
    if let Some(g) = ctx.graded_userspace(p, &virtio, Severity::Medium) {
        // Confirmed when QEMU's own map names the port virtio and it sits at QUEUE_NOTIFY.
        let named = virtio.iter().any(|r| {
            r.name.as_deref().is_some_and(|n| n.contains("virtio"))
                && r.key.code().is_some_and(|p| p & 0x1f == 0x10)
        });
        let mut f = virtio_finding(p, &virtio, g);
        if !named {
            f = f.unconfirmed(
                Confidence::Likely,
                "name the port's device from QEMU's `info mtree` (virtlens diagnose --mtree FILE): a \
                 virtio-pci region confirms it",
            );
        }
        out.push(f);
    }
    // Any other port that matters: name it and say what it costs.
    let used: Vec<&Key> = out
        .iter()
        .flat_map(|f| f.evidence.iter())
        .filter_map(|e| e.id.as_ref().map(|(_, k)| k))
        .collect();
    let mut rest: Vec<&VRow> = ctx
        .free_rows(p.rows.iter().collect())
        .into_iter()
        .filter(|r| !used.contains(&&r.key))
        .collect();
    rest.sort_by_key(|r| std::cmp::Reverse(r.time_ns.unwrap_or(r.count)));
    for r in rest {
        let Some(g) = ctx.graded(p, &[r], Severity::Medium) else {
            continue;
        };
        out.push(port_finding(p, r, g));
    }
}

fn serial_finding(p: &Part, rows: &[&VRow], g: Graded) -> Finding {
    Finding::new(
        "io.serial-pio-storm",
        g.severity,
        "the guest talks to the emulated 8250 serial port byte by byte",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| p.evidence(r)).collect())
    .cause(format!(
        "{}. The 8250 UART is emulated in QEMU: every byte written to THR (0x3f8) and every poll of the \
         line status register (0x3fd) is an exit and a round trip to userspace, plus IRQ-line updates. A \
         guest logging to a serial console (console=ttyS0 at a high log level) or spinning in a serial \
         loop turns this into a storm.",
        words::rows(p, rows)
    ))
    .fix(
        Fix::vm(
            "move bulk output to virtio-console and fix the guest's serial loop (do not tune the IRQ-storm \
             detector)",
            "-device virtio-serial-pci -device virtconsole,chardev=con0",
            "<console type='pty'><target type='virtio' port='0'/></console>",
        )
        .guest("log less to the serial console (loglevel=, quiet); use hvc0 (virtio-console) for bulk output"),
    )
    .effect("no exit per byte: virtio-console moves output through a ring with one notification per batch")
    .source(SRC_SERIAL)
}

fn virtio_finding(p: &Part, rows: &[&VRow], g: Graded) -> Finding {
    let slow = rows
        .iter()
        .filter_map(|r| r.mean_ns())
        .any(|m| m >= 20_000.0);
    let slow = if slow {
        " At tens of µs per notification these go through userspace: ioeventfd is off or not available."
    } else {
        ""
    };
    Finding::new(
        "io.virtio-legacy-pio-notify",
        g.severity,
        "legacy virtio-pci devices notify their queues through port IO",
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(rows.iter().map(|r| p.evidence(r)).collect())
    .cause(format!(
        "{}. A port in the PCI IO range (firmware assigns IO BARs from 0xc000) at BAR offset 0x10 is \
         legacy (virtio 0.9) virtio-pci's QUEUE_NOTIFY: the guest driver's vp_notify does an iowrite16 \
         there for every batch of requests (virtio-blk, virtio-net, virtio-rng), and every one is a PIO \
         exit.{slow}",
        words::rows(p, rows)
    ))
    .fix(
        Fix::vm(
            "use modern (virtio 1.0) devices, whose notifications are MMIO writes KVM completes in the \
             kernel through ioeventfd",
            "-device virtio-blk-pci,disable-legacy=on,ioeventfd=on (same for virtio-net-pci, virtio-rng-pci)",
            "<disk … model='virtio-non-transitional'><driver name='qemu' ioeventfd='on'/>…</disk> (libvirt ≥ \
             5.2; likewise for <interface>, <rng>)",
        )
        .guest("a guest kernel with modern virtio drivers (Linux ≥ 4.0)"),
    )
    .effect(
        "each notification becomes an in-kernel ioeventfd signal instead of a PIO exit to QEMU; with \
         event-idx the device also suppresses notifications it does not need",
    )
    .source(SRC_VIRTIO)
}

fn port_finding(p: &Part, r: &VRow, g: Graded) -> Finding {
    let port = r.key.key_text();
    Finding::new(
        "io.emulated-port",
        g.severity,
        format!(
            "port {port}{} is a hot exit",
            r.name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ),
    )
    .why(g.why)
    .share(Some(g.share))
    .evidence(vec![p.evidence(r)])
    .cause(format!(
        "{}. Every IN/OUT to this port exits; unless KVM emulates the device in the kernel (PIC, PIT, \
         ioeventfd) the access goes to QEMU and back.",
        words::row(p, r)
    ))
    .fix(Fix::words(
        "find what the guest uses this device for (virtlens diagnose --mtree FILE names the region) and \
         replace it with a paravirtual or in-kernel device; port 0x80 writes are Linux's io_delay \
         (guest: io_delay=none)",
    ))
    .effect("the port's exits disappear with the device access")
    .source(SRC_PORT)
}

/// IO exits without ports (exit reasons, kvm_stat `io_exits`): the likeliest cause, by guest.
fn aggregate(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    if ctx.view.ports.is_some() {
        return;
    }
    let Some(ex) = ctx.exits() else {
        return;
    };
    let rows = ctx.free_rows(ex.class(ExitClass::Io));
    let Some(g) = ctx.graded_userspace(ex, &rows, Severity::Medium) else {
        return;
    };
    let confirm = "record the ports: `perf kvm stat record -a sleep 10` then `perf kvm stat report \
                   --event=ioport`, or `virtlens record`; in the guest, `perf probe` on the exiting rip \
                   (what the sample-18 author did)";
    if ctx.windows() && ctx.flag(HvFlag::Time) != Some(true) && ctx.enlightened() != Some(true) {
        let reasoning = format!(
            "Without port detail this is the likeliest reading: a Windows guest without hv-time reads \
             its clock from the ACPI PM timer, the commonest source of steady port IO on Windows ({}).",
            words::rows(ex, &rows)
        );
        out.push(timer::acpi_pm(
            ctx,
            ex,
            &rows,
            g,
            Some((Confidence::Possible, reasoning)),
        ));
        return;
    }
    let mut f = virtio_finding(ex, &rows, g);
    f.cause = format!(
        "Without port detail this is the likeliest reading, not a certainty: on a {} the usual \
         source of steady port IO is legacy virtio-pci queue notification; the other candidates are the \
         ACPI PM timer (0x608/0xb008 reads), the RTC (0x70/0x71) and a serial console (0x3f8/0x3fd). {}",
        if ctx.linux() {
            "Linux"
        } else {
            "server (Linux)"
        },
        f.cause
    );
    out.push(f.unconfirmed(Confidence::Possible, confirm));
}
