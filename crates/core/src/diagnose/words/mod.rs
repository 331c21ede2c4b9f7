//! Words: the prose of every hypothesis — its title and what it means (the catalogue), the
//! cause in plain words, the fixes as QEMU flags, libvirt XML, host and guest changes with the
//! advice tags they give, what fixing it changes, what would confirm it, the check that tells
//! it from its competitors, and its public sources — picked for the guest: Windows, Linux, or,
//! when the guest is unknown (or only weakly inferred), both variants, each labelled. Kept apart
//! from the rules' logic; numbers are not formatted here (the renderer shows them).

mod apic;
mod apic_inhibit;
mod arch;
mod cpuid;
mod emulation;
mod fixes;
pub(crate) mod guest_code;
mod halt;
mod hostlog;
mod hv;
mod hypercall;
mod idle;
mod io;
mod io_path;
mod irq;
mod mmio;
mod mmu;
mod msr;
mod nested;
pub(crate) mod overcommit;
mod sched;
pub(crate) mod sources;
mod spin;
mod timer;
mod unknown;

use crate::config::GuestFamily;

use super::evidence::{EvidenceSet, Strength};
use super::hypotheses::{
    ApicRule, Hint, HvRule, Hypothesis, IoRule, IrqRule, MmioRule, SchedRule, TimerRule,
};
use super::model::{Fix, ForGuest, Source};
use super::rules::{Family, RuleId};

/// The catalogue prose of one hypothesis id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Description {
    pub title: &'static str,
    /// What the finding means, in a few sentences.
    pub meaning: &'static str,
    pub sources: &'static [Source],
}

/// The words of one finding.
#[derive(Debug, Clone, Default)]
pub(crate) struct Words {
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
pub(crate) struct W<'a> {
    pub h: &'a Hypothesis,
    pub ev: &'a EvidenceSet,
}

impl W<'_> {
    pub(crate) fn has(&self, hint: Hint) -> bool {
        self.h.has(hint)
    }

    /// The guests to write for, first the likeliest: one when the guest is stated or strongly
    /// inferred, both (labelled) when it is weakly inferred or unknown.
    pub(crate) fn guests(&self) -> Vec<ForGuest> {
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
    pub(crate) fn by_guest(&self, text: impl Fn(ForGuest) -> String) -> String {
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
    pub(crate) fn fixes_by_guest(&self, fix: impl Fn(ForGuest) -> Vec<Fix>) -> Vec<Fix> {
        self.guests().into_iter().flat_map(fix).collect()
    }

    /// Whether the words are for one guest only.
    pub(crate) fn only(&self, g: ForGuest) -> bool {
        self.guests() == [g]
    }
}

/// "If the guest is Windows", "If the guest is Linux".
pub(crate) fn label(g: ForGuest) -> &'static str {
    match g {
        ForGuest::Windows => "If the guest is Windows",
        ForGuest::Linux => "If the guest is Linux",
        ForGuest::Any => "Any guest",
    }
}

/// The catalogue prose of `id`.
pub(crate) fn describe(id: RuleId) -> Description {
    match id {
        RuleId::Unknown(r) => unknown::describe(r),
        RuleId::Arch(r) => arch::describe(r),
        RuleId::Emulation(r) => emulation::describe(r),
        RuleId::Nested(r) => nested::describe(r),
        RuleId::Mmu(r) => mmu::describe(r),
        RuleId::Spin(r) => spin::describe(r),
        RuleId::Timer(r) => timer::describe(r),
        RuleId::Apic(r) => apic::describe(r),
        RuleId::Io(r) => io::describe(r),
        RuleId::Msr(r) => msr::describe(r),
        RuleId::Mmio(r) => mmio::describe(r),
        RuleId::Halt(r) => halt::describe(r),
        RuleId::Hypercall(r) => hypercall::describe(r),
        RuleId::Cpuid(r) => cpuid::describe(r),
        RuleId::Sched(r) => sched::describe(r),
        RuleId::Hv(r) => hv::describe(r),
        RuleId::Irq(r) => irq::describe(r),
        RuleId::Idle(r) => idle::describe(r),
        RuleId::Hostlog(r) => hostlog::describe(r),
    }
}

/// The words of `h` on `ev`.
pub(crate) fn write(h: &Hypothesis, ev: &EvidenceSet) -> Words {
    let w = W { h, ev };
    let mut words = match h.id {
        RuleId::Unknown(r) => unknown::write(&w, r),
        RuleId::Arch(r) => arch::write(&w, r),
        RuleId::Emulation(r) => emulation::write(&w, r),
        RuleId::Nested(r) => nested::write(&w, r),
        RuleId::Mmu(r) => mmu::write(&w, r),
        RuleId::Spin(r) => spin::write(&w, r),
        RuleId::Timer(r) => timer::write(&w, r),
        RuleId::Apic(r) => apic::write(&w, r),
        RuleId::Io(r) => io::write(&w, r),
        RuleId::Msr(r) => msr::write(&w, r),
        RuleId::Mmio(r) => mmio::write(&w, r),
        RuleId::Halt(r) => halt::write(&w, r),
        RuleId::Hypercall(r) => hypercall::write(&w, r),
        RuleId::Cpuid(r) => cpuid::write(&w, r),
        RuleId::Sched(r) => sched::write(&w, r),
        RuleId::Hv(r) => hv::write(&w, r),
        RuleId::Irq(r) => irq::write(&w, r),
        RuleId::Idle(r) => idle::write(&w, r),
        RuleId::Hostlog(r) => hostlog::write(&w, r),
    };
    if !h.rivals.is_empty() && words.check.is_none() {
        words.check = Some(check_for(h.id).to_string());
    }
    if h.has(Hint::Aggregate) && words.confirm.is_none() {
        words.confirm = Some(check_for(h.id).to_string());
    }
    words
}

/// What speaks for a rival of a finding, in a phrase.
pub(crate) fn rival_why(id: RuleId) -> &'static str {
    match id {
        RuleId::Timer(TimerRule::AcpiPmPort) => {
            "a guest reading its clock from the ACPI PM timer (Windows without hv-time; Linux on clocksource acpi_pm)"
        }
        RuleId::Timer(TimerRule::RtcPort) => {
            "a Windows guest without hv-stimer driving its tick through the RTC"
        }
        RuleId::Timer(TimerRule::HpetMmio) => {
            "a guest on the emulated HPET (Windows without hv-stimer; Linux on clocksource hpet)"
        }
        RuleId::Io(IoRule::VirtioLegacyPioNotify) => {
            "legacy virtio-pci devices notifying their queues through port IO"
        }
        RuleId::Io(IoRule::SerialPioStorm) => "a serial console written byte by byte",
        RuleId::Io(IoRule::AcpiIdlePort) => {
            "acpi_idle's C-state entry, which ends with a dummy PM-timer read"
        }
        RuleId::Mmio(MmioRule::EmulatedDevice) => {
            "an emulated device the guest polls (VGA, USB, virtio without ioeventfd)"
        }
        RuleId::Timer(TimerRule::TscDeadlineRearm) => {
            "the guest re-arming its timer (TSC_DEADLINE 0x6e0), around every idle entry and exit"
        }
        RuleId::Apic(ApicRule::IpiStorm) => {
            "cross-vCPU IPIs through the x2APIC ICR (0x830), each waking another vCPU"
        }
        RuleId::Apic(ApicRule::ApicvInhibitedSynic) => {
            "a Windows guest whose SynIC AutoEOI keeps APICv off, so EOIs and IPIs go through MSRs"
        }
        RuleId::Apic(ApicRule::ApicvOff) => {
            "APIC virtualization switched off on the host (kvm_intel enable_apicv=0 / kvm_amd avic=0)"
        }
        RuleId::Apic(ApicRule::ApicvInhibited) => {
            "APIC virtualization enabled but inhibited (PIT reinjection, SynIC AutoEOI, nested, a \
             changed APIC ID)"
        }
        RuleId::Apic(ApicRule::HvApicMsrs) => {
            "Windows steered to the Hyper-V EOI/ICR/TPR MSRs by hv-vapic without hv-avic, with APICv on"
        }
        RuleId::Sched(SchedRule::VcpuReady) => {
            "other load on the host, or its own steal, taking CPUs from the vCPUs besides their own number"
        }
        _ => "another cause of the same exits",
    }
}

/// The capture or command that names the rows behind `id`'s exits.
pub(crate) fn check_for(id: RuleId) -> &'static str {
    const ADDRESSES: &str = "record the addresses: `perf kvm stat record -a sleep 10`, then `perf \
         kvm stat report --event=mmio` (the HPET is 0xfed00000–0xfed003ff), or `virtlens record`";
    const DELIVERY: &str = "check `cat /sys/module/kvm_intel/parameters/enable_apicv` (or \
         `/sys/module/kvm_amd/parameters/avic`), trace why APICv is inhibited (`trace-cmd record \
         -e kvm:kvm_apicv_inhibit_changed`), and see whether the EOIs and halts return to the \
         VMM (a userspace irqchip): `virtlens record`, then `virtlens report`";
    const MSRS: &str = "record the MSRs: `perf kvm stat record -a sleep 10`, then `perf kvm stat \
         report --event=msr` — writes to 0x6e0 are timer re-arms, to 0x830 IPIs, to 0x40000070/71 \
         the Hyper-V EOI/ICR — or `trace-cmd record -e kvm:kvm_msr -e kvm:kvm_apic`";
    const PORTS: &str = "record the ports: `perf kvm stat record -a sleep 10`, then `perf kvm stat \
         report --event=ioport` (0x608/0xb008 reads: PM timer; 0x70/0x71: RTC; 0x3f8–0x3fd: \
         serial; 0xc000 and up: PCI device BARs), or `virtlens record`";
    const APICV: &str = "check `cat /sys/module/kvm_intel/parameters/enable_apicv` (or \
         `/sys/module/kvm_amd/parameters/avic`) and trace why APICv is inhibited: `trace-cmd \
         record -e kvm:kvm_apicv_inhibit_changed`";
    const READY: &str = "watch the ready share per vCPU live: `virtlens top --vm NAME`, or `perf \
         sched latency` and `pidstat -t -p PID 1` on the host";
    const HALTS: &str = "trace the halts and wake-ups: `trace-cmd record -e kvm:kvm_vcpu_wakeup -e \
         kvm:kvm_halt_poll_ns`";
    const HOSTLOG: &str = "watch the host's kernel log while the guest runs (`dmesg -w`, \
         `journalctl -kf`) and record the exits beside it (`perf kvm stat record -a sleep 10`), \
         then give both to `virtlens diagnose exits.txt dmesg.txt`";
    const EXITS: &str = "record the exits with their details: `perf kvm stat record -a sleep 10` \
         and `perf kvm stat report`, or `virtlens record`";
    match id {
        RuleId::Timer(TimerRule::HpetMmio) | RuleId::Mmio(MmioRule::EmulatedDevice) => ADDRESSES,
        RuleId::Irq(IrqRule::DeliveryExits) | RuleId::Hv(HvRule::InterruptDelivery) => DELIVERY,
        RuleId::Timer(TimerRule::TscDeadlineRearm)
        | RuleId::Apic(ApicRule::IpiStorm | ApicRule::ApicvInhibitedSynic) => MSRS,
        _ => match id.family() {
            Family::Timer | Family::Io => PORTS,
            Family::Apic => APICV,
            Family::Sched => READY,
            Family::Halt => HALTS,
            Family::Hostlog => HOSTLOG,
            Family::Unknown
            | Family::Arch
            | Family::Emulation
            | Family::Nested
            | Family::Mmu
            | Family::Spin
            | Family::Irq
            | Family::Msr
            | Family::Mmio
            | Family::Hypercall
            | Family::Cpuid
            | Family::Hv
            | Family::Idle => EXITS,
        },
    }
}
