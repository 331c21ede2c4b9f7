//! The facts line of an input's diagnosis: which guest and host it is taken to be and on what
//! basis, its totals and time base, and the per-IO line. Formatting only: every number comes
//! computed.

use super::diagnose_numbers::sched_line;
use super::format;
use crate::diagnose::evidence::io::IoView;
use crate::diagnose::evidence::{GuestBasis, VcpuBasis, VendorBasis, WindowBasis};
use crate::diagnose::{CpuBasis, InputReport};
use crate::facts::Vendor;

/// The input's facts: guest, host, totals, time base.
pub(crate) fn facts(r: &InputReport) -> Vec<String> {
    let e = &r.evidence;
    let guest = match e.guest.family {
        crate::config::GuestFamily::Windows => "Windows",
        crate::config::GuestFamily::Linux => "Linux",
        crate::config::GuestFamily::Other => "non-Windows",
        crate::config::GuestFamily::Unknown => "unknown",
    };
    let basis = match e.guest.basis {
        GuestBasis::Option => "--guest".to_string(),
        GuestBasis::ConfigOs => format!(
            "from the configuration: {}",
            e.guest.config_id.as_deref().unwrap_or("os")
        ),
        GuestBasis::HypervInterface => "inferred: Hyper-V synthetic MSRs or hypercalls".into(),
        GuestBasis::KvmParavirt => {
            "inferred: KVM paravirtual MSRs (kvmclock, steal time, PV EOI)".into()
        }
        GuestBasis::Hypercalls => {
            "inferred (weak): hypercall exits, no Linux paravirtual sign".into()
        }
        GuestBasis::RtcTimer => "inferred (weak): RTC ports at a timer's rate".into(),
        GuestBasis::IoDelay => "inferred (weak): io_delay writes to port 0x80".into(),
        GuestBasis::ConfigHvFlags => "inferred (weak): the configuration's hv-* flags".into(),
        GuestBasis::None => {
            "not stated: both guests' causes are given (pass --guest windows|linux)".into()
        }
    };
    let host = match (&e.host.facts.vendor, e.host.vendor_basis) {
        (Some(v), b) => {
            let name = match v {
                Vendor::Intel => "Intel".to_string(),
                Vendor::Amd => "AMD".to_string(),
                Vendor::Hygon => "Hygon".to_string(),
                Vendor::Other(s) => s.clone(),
            };
            match b {
                Some(VendorBasis::ExitNames) => format!("{name} (from the exit names)"),
                Some(VendorBasis::Input) => format!("{name} (from the input)"),
                _ => name,
            }
        }
        (None, _) => "unknown".into(),
    };
    let apic = match e.host.apic_virt() {
        Some(true) => ", APICv/AVIC on",
        Some(false) => ", APICv/AVIC off",
        None => "",
    };
    let mut out = vec![format!("guest {guest} ({basis}) · host {host}{apic}")];
    if let Some(t) = &e.totals {
        let unit = if e.from_counters {
            "exits (counters)"
        } else {
            "exits"
        };
        let mut s = format!("{} {unit}", format::count(t.count));
        if t.idle_count > 0 {
            s.push_str(&format!(" ({} idle)", format::count(t.idle_count)));
        }
        if let Some(all) = t.time_ns {
            s.push_str(&format!(", {} handled", format::duration(all as f64)));
            if let Some(o) = t.overhead_time_ns.filter(|_| t.idle_count > 0) {
                s.push_str(&format!(", {} without idle", format::duration(o as f64)));
            }
        }
        if let Some(r) = t.per_second {
            s.push_str(&format!(", {}", format::rate(r)));
        }
        out.push(s);
    }
    let rate = &e.rate;
    let mut base = Vec::new();
    if let Some(w) = rate.window_ns {
        let from = match rate.window_basis {
            Some(WindowBasis::Option) => " (--window)",
            _ => "",
        };
        base.push(format!("window {}{from}", format::duration(w as f64)));
    }
    if rate.printed_rates {
        base.push("rates as printed (CurAvg/s)".into());
    }
    if let Some(n) = rate.vcpus {
        let from = match rate.vcpus_basis {
            Some(VcpuBasis::Option) => "--vcpus",
            Some(VcpuBasis::Config) => "configuration",
            _ => "seen in the input",
        };
        base.push(format!("{n} vCPUs ({from})"));
    }
    match rate.cpu_basis {
        Some(CpuBasis::HandledWithHalts) => {
            base.push("no window: vCPU time taken from the handled time with halts".into())
        }
        // Performance counters are rates already.
        None if e.tables.is_empty() || e.tables == ["perfmon"] => {}
        None => base.push(
            "no time base: costs are shares of the exit handling (give --window SECONDS)".into(),
        ),
        _ => {}
    }
    if !base.is_empty() && (e.totals.is_some() || e.sched.is_none()) {
        out.push(base.join(" · "));
    }
    if let Some(s) = &e.sched {
        out.push(sched_line(s));
    }
    if let Some(io) = &e.io {
        out.push(io_line(io));
    }
    out
}

/// The per-IO line: the IO rate, each kind of exit per IO, the handling per IO and the
/// ceiling it implies.
fn io_line(io: &IoView) -> String {
    let from = match io.rate.basis {
        "fio" => " (fio)",
        _ => " (--iops)",
    };
    let mut s = format!(
        "IO rate {} IOPS{from}",
        format::count(io.rate.iops.round() as u64)
    );
    let kinds = [
        ("notify", &io.notify),
        ("EOI", &io.eoi),
        ("window", &io.window),
        ("IPI", &io.ipi),
        ("halt", &io.halt),
        ("injected", &io.injections),
        ("external", &io.external),
        ("to the VMM", &io.returns),
    ];
    let per: Vec<String> = kinds
        .iter()
        .filter_map(|(name, k)| k.per_io.map(|v| format!("{name} {}", format::per_io(v))))
        .collect();
    if !per.is_empty() {
        s.push_str(&format!(" · per IO: {}", per.join(", ")));
    }
    if let (Some(h), Some(c)) = (io.handling_ns_per_io, io.ceiling_iops_per_vcpu) {
        let typical = if io.handling_basis == "typical" {
            " (typical exit costs)"
        } else {
            ""
        };
        s.push_str(&format!(
            " · exit handling ≈ {} per IO{typical}: at most ≈ {} IOPS per vCPU",
            format::duration(h),
            format::count(c.round() as u64)
        ));
    }
    if let Some(n) = &io.note {
        s.push_str(&format!(" · {n}"));
    }
    s
}
