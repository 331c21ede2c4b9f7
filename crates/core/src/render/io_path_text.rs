//! The text form of the lab's IO-path scenario: one line per configuration (delivery mode,
//! queue depth, coalescing, EOI kind) with the exits and returns to the VMM per IO, the time
//! and CPU per IO (medians over interleaved runs, with the spread), and the IOPS one vCPU
//! sustains at that CPU cost; the model and the backend's notes under it.

use super::Style;
use super::format::{count, duration, per_io, wrap};
use super::lab_text::grid;
use crate::measure::BackendLabel;
use crate::measure::io_path::{Eoi, IoPathReport, IoPathRow, TimePerIo};

fn time(t: Option<&TimePerIo>) -> String {
    t.map_or_else(|| "-".into(), |t| duration(t.median_ns))
}

fn eoi(e: Eoi) -> &'static str {
    match e {
        Eoi::Xapic => "xapic",
        Eoi::X2apic => "x2apic",
        Eoi::None => "-",
    }
}

/// One configuration's cells, in the order of [`HEADER`] (the HTML page's table uses them too).
pub(crate) fn row(r: &IoPathRow) -> Vec<String> {
    let mut v = vec![
        r.delivery.name().to_string(),
        r.qd.to_string(),
        r.coalesce.to_string(),
        eoi(r.eoi).to_string(),
    ];
    match (&r.exits_per_io, &r.vmm_returns_per_io) {
        (Some(e), Some(ret)) => {
            v.extend([
                per_io(e.total),
                per_io(e.notify),
                per_io(e.interrupts),
                per_io(e.eoi),
                per_io(e.halt + e.window),
                per_io(ret.total),
                time(r.ns_per_io.as_ref()),
                r.ns_per_io
                    .and_then(|t| t.spread_pct)
                    .map_or_else(|| "-".into(), |s| format!("{s:.0}%")),
                time(r.vcpu_cpu_ns_per_io.as_ref()),
                time(r.device_cpu_ns_per_io.as_ref()),
                r.ceiling_iops_per_vcpu
                    .map_or_else(|| "-".into(), |c| count(c.round() as u64)),
            ]);
        }
        _ => {
            v.extend(std::iter::repeat_n(String::new(), 10));
            v.push(format!(
                "{}: {}",
                r.status.as_str(),
                r.reason.as_deref().unwrap_or("")
            ));
        }
    }
    v
}

/// The columns of the IO-path table.
pub(crate) const HEADER: [&str; 15] = [
    "mode",
    "qd",
    "k",
    "EOI",
    "exits",
    "notify",
    "irqs",
    "EOIs",
    "HLT/window",
    "VMM",
    "ns/IO",
    "spread",
    "vCPU CPU",
    "device CPU",
    "IOPS/vCPU",
];

/// Appends the IO-path section of a lab report.
pub(crate) fn io_path(out: &mut String, r: &IoPathReport, backend: &BackendLabel, style: &Style) {
    out.push('\n');
    out.push_str(&Style::paint(
        style.title,
        &format!("IO path (long64, backend {})", backend.name),
    ));
    out.push('\n');
    out.push_str(&wrap(
        "  per IO; exits = the guest's notify, EOI, HLT and interrupt-window exits (each an exit on \
         VMX/SVM without APIC virtualization), counted by the guest and the VMM; VMM = returns to \
         the VMM; ns and CPU = medians over interleaved runs; spread = IQR / median of ns/IO; \
         IOPS/vCPU = 1 s over the vCPU's CPU per IO",
        2,
    ));
    grid(&HEADER, r.rows.iter().map(row).collect(), 1, out, style);
    out.push_str(&wrap(&format!("  model: {}", r.model), 4));
    for n in &r.notes {
        let text = wrap(&format!("  note: {n}"), 4);
        out.push_str(&Style::paint(style.note, text.trim_end()));
        out.push('\n');
    }
}
