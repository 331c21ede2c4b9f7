//! Words: the prose of every hypothesis — its title and what it means (the catalogue), the
//! cause in plain words, the fixes as QEMU flags, libvirt XML, host and guest changes with the
//! advice tags they give, what fixing it changes, what would confirm it, the check that tells
//! it from its competitors, and its public sources — picked for the guest: Windows, Linux, or,
//! when the guest is unknown (or only weakly inferred), both variants, each labelled. Kept apart
//! from the rules' logic; numbers are not formatted here (the renderer shows them).

mod apic;
mod emulation;
mod fixes;
mod halt;
mod hv;
mod io;
mod iopath;
mod misc;
mod mmu;
mod nested;
pub mod overcommit;
mod sched;
pub mod sources;
mod timer;

use crate::config::GuestFamily;

use super::evidence::{EvidenceSet, Strength};
use super::hypotheses::{Hint, Hypothesis};
use super::model::{Fix, ForGuest, Source};

pub use fixes::hv_fix;

/// The catalogue prose of one hypothesis id.
#[derive(Debug, Clone, Copy)]
pub struct Description {
    pub title: &'static str,
    /// What the finding means, in a few sentences.
    pub meaning: &'static str,
    pub sources: &'static [Source],
}

/// The words of one finding.
#[derive(Debug, Clone, Default)]
pub struct Words {
    /// A title naming this finding's rows (default: the catalogue title).
    pub title: Option<String>,
    pub cause: String,
    pub fixes: Vec<Fix>,
    pub effect: String,
    pub confirm: Option<String>,
    /// The check that tells the finding from its competitors.
    pub check: Option<String>,
}

/// What the words of one hypothesis may look at.
pub struct W<'a> {
    pub h: &'a Hypothesis,
    pub ev: &'a EvidenceSet,
}

impl W<'_> {
    pub fn has(&self, hint: Hint) -> bool {
        self.h.has(hint)
    }

    /// The guests to write for, first the likeliest: one when the guest is stated or strongly
    /// inferred, both (labelled) when it is weakly inferred or unknown.
    pub fn guests(&self) -> Vec<ForGuest> {
        let g = &self.ev.guest;
        match (g.family, g.strength >= Strength::Strong) {
            (GuestFamily::Windows, true) => vec![ForGuest::Windows],
            (GuestFamily::Linux | GuestFamily::Other, true) => vec![ForGuest::Linux],
            (GuestFamily::Windows, false) => vec![ForGuest::Windows, ForGuest::Linux],
            (GuestFamily::Linux | GuestFamily::Other, false) => {
                vec![ForGuest::Linux, ForGuest::Windows]
            }
            (GuestFamily::Unknown, _) => vec![ForGuest::Linux, ForGuest::Windows],
        }
    }

    /// The text for each guest to write for, labelled when there are several.
    pub fn by_guest(&self, text: impl Fn(ForGuest) -> String) -> String {
        let guests = self.guests();
        if guests.len() == 1 {
            return text(guests[0]);
        }
        guests
            .iter()
            .map(|g| format!("{}: {}", label(*g), text(*g)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The fixes for each guest to write for, in the same order.
    pub fn fixes_by_guest(&self, fix: impl Fn(ForGuest) -> Vec<Fix>) -> Vec<Fix> {
        self.guests().into_iter().flat_map(fix).collect()
    }

    /// Whether the words are for one guest only.
    pub fn only(&self, g: ForGuest) -> bool {
        self.guests() == [g]
    }
}

/// "If the guest is Windows", "If the guest is Linux".
pub fn label(g: ForGuest) -> &'static str {
    match g {
        ForGuest::Windows => "If the guest is Windows",
        ForGuest::Linux => "If the guest is Linux",
        ForGuest::Any => "Any guest",
    }
}

/// The catalogue prose of `id`.
pub fn describe(id: &str) -> Option<Description> {
    timer::describe(id)
        .or_else(|| apic::describe(id))
        .or_else(|| io::describe(id))
        .or_else(|| mmu::describe(id))
        .or_else(|| halt::describe(id))
        .or_else(|| nested::describe(id))
        .or_else(|| emulation::describe(id))
        .or_else(|| iopath::describe(id))
        .or_else(|| hv::describe(id))
        .or_else(|| misc::describe(id))
        .or_else(|| sched::describe(id))
}

/// The words of `h` on `ev`.
pub fn write(h: &Hypothesis, ev: &EvidenceSet) -> Words {
    let w = W { h, ev };
    let family = h.id.split('.').next().unwrap_or("");
    let words = match family {
        _ if iopath::describe(h.id).is_some() => iopath::write(&w),
        "hv" => hv::write(&w),
        "timer" => timer::write(&w),
        "apic" => apic::write(&w),
        "io" | "mmio" => io::write(&w),
        "mmu" | "spin" => mmu::write(&w),
        "halt" | "idle" => halt::write(&w),
        "nested" => nested::write(&w),
        "emulation" => emulation::write(&w),
        "sched" => sched::write(&w),
        _ => misc::write(&w),
    };
    let mut words = words.unwrap_or_default();
    if !h.rivals.is_empty() && words.check.is_none() {
        words.check = Some(check_for(h.id).to_string());
    }
    if h.has(Hint::Aggregate) && words.confirm.is_none() {
        words.confirm = Some(check_for(h.id).to_string());
    }
    words
}

/// What speaks for a rival of a finding, in a phrase.
pub fn rival_why(id: &str) -> &'static str {
    match id {
        "timer.acpi-pm-port" => {
            "a guest reading its clock from the ACPI PM timer (Windows without hv-time; Linux on clocksource acpi_pm)"
        }
        "timer.rtc-port" => "a Windows guest without hv-stimer driving its tick through the RTC",
        "timer.hpet-mmio" => {
            "a guest on the emulated HPET (Windows without hv-stimer; Linux on clocksource hpet)"
        }
        "io.virtio-legacy-pio-notify" => {
            "legacy virtio-pci devices notifying their queues through port IO"
        }
        "io.serial-pio-storm" => "a serial console written byte by byte",
        "io.acpi-idle-port" => "acpi_idle's C-state entry, which ends with a dummy PM-timer read",
        "mmio.emulated-device" => {
            "an emulated device the guest polls (VGA, USB, virtio without ioeventfd)"
        }
        "timer.tsc-deadline-rearm" => {
            "the guest re-arming its timer (TSC_DEADLINE 0x6e0), around every idle entry and exit"
        }
        "apic.ipi-storm" => {
            "cross-vCPU IPIs through the x2APIC ICR (0x830), each waking another vCPU"
        }
        "apic.apicv-inhibited-synic" => {
            "a Windows guest whose SynIC AutoEOI keeps APICv off, so EOIs and IPIs go through MSRs"
        }
        "apic.apicv-off" => {
            "APIC virtualization switched off on the host (kvm_intel enable_apicv=0 / kvm_amd avic=0)"
        }
        "apic.apicv-inhibited" => {
            "APIC virtualization enabled but inhibited (PIT reinjection, SynIC AutoEOI, nested, a \
             changed APIC ID)"
        }
        "apic.hv-apic-msrs" => {
            "Windows steered to the Hyper-V EOI/ICR/TPR MSRs by hv-vapic without hv-avic, with APICv on"
        }
        "sched.vcpu-ready" => {
            "other load on the host, or its own steal, taking CPUs from the vCPUs besides their own number"
        }
        _ => "another cause of the same exits",
    }
}

/// The capture or command that names the rows behind `id`'s exits.
pub fn check_for(id: &str) -> &'static str {
    match id.split('.').next().unwrap_or("") {
        _ if matches!(id, "timer.hpet-mmio" | "mmio.emulated-device") => {
            "record the addresses: `perf kvm stat record -a sleep 10`, then `perf kvm stat report \
             --event=mmio` (the HPET is 0xfed00000–0xfed003ff), or `virtlens record`"
        }
        _ if matches!(id, "irq.delivery-exits" | "hv.interrupt-delivery") => {
            "check `cat /sys/module/kvm_intel/parameters/enable_apicv` (or \
             `/sys/module/kvm_amd/parameters/avic`), trace why APICv is inhibited (`trace-cmd record \
             -e kvm:kvm_apicv_inhibit_changed`), and see whether the EOIs and halts return to the \
             VMM (a userspace irqchip): `virtlens record`, then `virtlens report`"
        }
        _ if matches!(
            id,
            "timer.tsc-deadline-rearm" | "apic.ipi-storm" | "apic.apicv-inhibited-synic"
        ) =>
        {
            "record the MSRs: `perf kvm stat record -a sleep 10`, then `perf kvm stat report \
             --event=msr` — writes to 0x6e0 are timer re-arms, to 0x830 IPIs, to 0x40000070/71 \
             the Hyper-V EOI/ICR — or `trace-cmd record -e kvm:kvm_msr -e kvm:kvm_apic`"
        }
        "timer" | "io" => {
            "record the ports: `perf kvm stat record -a sleep 10`, then `perf kvm stat report \
             --event=ioport` (0x608/0xb008 reads: PM timer; 0x70/0x71: RTC; 0x3f8–0x3fd: serial; \
             0xc000 and up: PCI device BARs), or `virtlens record`"
        }
        "apic" => {
            "check `cat /sys/module/kvm_intel/parameters/enable_apicv` (or \
             `/sys/module/kvm_amd/parameters/avic`) and trace why APICv is inhibited: `trace-cmd \
             record -e kvm:kvm_apicv_inhibit_changed`"
        }
        "sched" => {
            "watch the ready share per vCPU live: `virtlens top --vm NAME`, or `perf sched latency` and \
             `pidstat -t -p PID 1` on the host"
        }
        "halt" => {
            "trace the halts and wake-ups: `trace-cmd record -e kvm:kvm_vcpu_wakeup -e kvm:kvm_halt_poll_ns`"
        }
        _ => {
            "record the exits with their details: `perf kvm stat record -a sleep 10` and `perf kvm stat report`, or `virtlens record`"
        }
    }
}
