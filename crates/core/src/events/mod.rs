//! Individual kvm events, as every trace source decodes them (trace text, perf.data, live
//! tracefs), and [`ProfileBuilder`], which pairs and aggregates a stream of them into a
//! [`crate::profile::Profile`].
//!
//! An [`Event`] borrows its names from the line or record it came from, so decoding a trace
//! allocates nothing per event; the builder interns what it keeps.

mod builder;
mod names;
mod reasons;
mod slots;
mod threads;
pub(crate) mod timeline;
pub(crate) mod tracepoints;

pub use builder::ProfileBuilder;

use crate::decode::Isa;

// What other crates use of this area (docs/development.md, "Public API").
pub use tracepoints::{AGGREGATED, TABLED};

/// One tracepoint hit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event<'a> {
    /// Timestamp in ns, when the source has one.
    pub ts_ns: Option<u64>,
    /// The host thread that hit the tracepoint (a vCPU thread for kvm events).
    pub tid: Option<u32>,
    /// The VMM process, when the source shows it.
    pub pid: Option<u32>,
    /// The host CPU.
    pub cpu: Option<u32>,
    /// The thread's name (`CPU 0/KVM` names its vCPU), when shown.
    pub comm: Option<&'a str>,
    pub kind: EventKind<'a>,
}

impl<'a> Event<'a> {
    /// An event of `kind` with nothing else known.
    pub fn new(kind: EventKind<'a>) -> Self {
        Self {
            ts_ns: None,
            tid: None,
            pid: None,
            cpu: None,
            comm: None,
            kind,
        }
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EventKind<'a> {
    /// `kvm_exit`: the guest left; `reason` as a code (binary sources) or a name (text).
    Exit {
        reason: Reason<'a>,
        isa: Option<Isa>,
        vcpu: Option<u32>,
        rip: Option<u64>,
    },
    /// `kvm_entry`: the guest is entered again.
    Entry { vcpu: Option<u32> },
    /// `kvm_pio`: an IO port access.
    Pio { write: bool, port: u64 },
    /// `kvm_mmio`: an MMIO access.
    Mmio { access: MmioAccess, gpa: u64 },
    /// `kvm_msr`: an MSR access handled by KVM.
    Msr { write: bool, index: u64 },
    /// `kvm_userspace_exit`: KVM_RUN returned to the VMM, with the exit reason's name.
    UserspaceExit { reason: &'a str },
    /// `kvm_hypercall` / `kvm_hv_hypercall`: a hypercall by number.
    Hypercall { nr: u64, hyperv: bool },
    /// `kvm_apicv_inhibit_changed` / `kvm_apicv_update_request` (the event's `name`): an
    /// APICv/AVIC inhibit set or cleared.
    ApicvInhibit {
        name: &'a str,
        change: crate::decode::apicv_inhibit::Change,
        /// The names printed after the mask (`IRQWIN|PIT_REINJ`), empty when none.
        names: &'a str,
    },
    /// `sched_switch`: thread `prev` left its CPU, still runnable (preempted) or blocked, and
    /// thread `next` got it.
    SchedSwitch {
        prev: u32,
        prev_runnable: bool,
        next: u32,
    },
    /// `sched_wakeup` / `sched_wakeup_new` (the event's `name`): thread `tid` became runnable.
    SchedWakeup { name: &'a str, tid: u32 },
    /// Any other event, by name (`kvm_fpu`, `kvm_set_irq`, …): counted, never dropped.
    Other { name: &'a str },
    /// Any other event, by a name the source interned once with
    /// [`ProfileBuilder::intern`] (binary sources: no string work per event).
    Interned { name: NameId },
}

/// A name interned in one [`ProfileBuilder`] (meaningless to any other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameId(pub(crate) u32);

impl EventKind<'_> {
    /// The tracepoint name this kind comes from.
    pub fn event_name(&self) -> &str {
        match self {
            EventKind::Exit { .. } => "kvm_exit",
            EventKind::Entry { .. } => "kvm_entry",
            EventKind::Pio { .. } => "kvm_pio",
            EventKind::Mmio { .. } => "kvm_mmio",
            EventKind::Msr { .. } => "kvm_msr",
            EventKind::UserspaceExit { .. } => "kvm_userspace_exit",
            EventKind::Hypercall { hyperv: false, .. } => "kvm_hypercall",
            EventKind::Hypercall { hyperv: true, .. } => "kvm_hv_hypercall",
            EventKind::SchedSwitch { .. } => "sched_switch",
            EventKind::Other { name }
            | EventKind::ApicvInhibit { name, .. }
            | EventKind::SchedWakeup { name, .. } => name,
            // Only the builder that interned it knows the name.
            EventKind::Interned { .. } => "",
        }
    }
}

/// An exit reason as the source gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason<'a> {
    /// The raw `exit_reason` field (VMX: flags in the high bits are kept and masked later).
    Code(u64),
    /// A printed name of any era (`EXTERNAL_INTERRUPT`, `apic_access`, `EXIT_NPF`, `npf`).
    Name(&'a str),
}

/// The `type` of a `kvm_mmio` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmioAccess {
    /// A read KVM could not satisfy and passes to userspace (perf ignores these).
    UnsatisfiedRead,
    Read,
    Write,
}
