//! The metric names of each per-key counter family `serve` exports: the counter, its help,
//! the label names of a series' key, name and access, and the metric of the summed durations
//! where a latency pair measures them.

use super::state::Family;

/// Name, help, key label names (key, name, access) and the time metric of a family.
pub(crate) struct FamilyText {
    pub name: &'static str,
    pub help: &'static str,
    pub labels: (&'static str, Option<&'static str>, Option<&'static str>),
    pub time: Option<(&'static str, &'static str)>,
}

pub(crate) fn text(f: Family) -> FamilyText {
    let (name, help, labels, time) = match f {
        Family::Exit => (
            "virtlens_exits",
            "VM exits by exit reason (kvm_exit).",
            ("reason", None, None),
            Some((
                "virtlens_exit_handling_seconds",
                "Time from VM exit to the next VM entry, by exit reason.",
            )),
        ),
        Family::Port => (
            "virtlens_pio_exits",
            "IO port exits by port (kvm_pio), with the port's name.",
            ("port", Some("name"), Some("access")),
            None,
        ),
        Family::Mmio => (
            "virtlens_mmio_exits",
            "MMIO exits by guest-physical address (kvm_mmio), with the range's name.",
            ("address", Some("name"), Some("access")),
            None,
        ),
        Family::Msr => (
            "virtlens_msr_exits",
            "MSR accesses handled by KVM by MSR (kvm_msr), with its name.",
            ("msr", Some("name"), Some("access")),
            None,
        ),
        Family::Userspace => (
            "virtlens_userspace_exits",
            "Returns from KVM_RUN to the VMM by reason (kvm_userspace_exit).",
            ("reason", None, None),
            Some((
                "virtlens_userspace_exit_handling_seconds",
                "Time from KVM_RUN returning to the VMM until it runs the vCPU again.",
            )),
        ),
        Family::Hypercall => (
            "virtlens_hypercalls",
            "Hypercalls by number (kvm_hypercall, kvm_hv_hypercall).",
            ("nr", None, None),
            None,
        ),
        Family::Halt => (
            "virtlens_halt_wakeups",
            "vCPU wake-ups from halt (kvm_vcpu_wakeup): kind poll or wait.",
            ("kind", None, None),
            Some((
                "virtlens_halt_seconds",
                "Time halted before waking, by kind.",
            )),
        ),
        Family::Event => (
            "virtlens_events",
            "kvm tracepoint hits by tracepoint.",
            ("event", None, None),
            None,
        ),
    };
    FamilyText {
        name,
        help,
        labels,
        time,
    }
}
