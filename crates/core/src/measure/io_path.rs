//! The IO-path scenario of `virtlens lab` (`io_path` in `virtlens.lab/2`): a micro-VM driver
//! submits requests through a ring, notifies the device, and learns of completions by an
//! interrupt injected from user space (`vmm-inject`), an irqfd through the in-kernel irqchip
//! (`irqfd`), or by polling (`poll`) — at queue depths 1…128, with coalescing and the x2APIC
//! EOI as variants. Per configuration: what each IO costs in counts (exact, the guest's own
//! and the VMM's) and in time (medians over interleaved runs, with their spread), and the IO
//! rate one vCPU could sustain at that CPU cost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::report::Status;
use super::summary::Summary;

/// How completions reach the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// The notify exits to the VMM, which completes and injects the interrupt itself
    /// (KVM_INTERRUPT, no in-kernel irqchip: the VMM is the interrupt controller and sees
    /// the EOI).
    VmmInject,
    /// The notify is an ioeventfd; a device thread completes and signals an irqfd routed as an
    /// MSI to the in-kernel LAPIC.
    Irqfd,
    /// The notify is an ioeventfd; no interrupt: the driver spins on the completion tail.
    Poll,
}

impl Delivery {
    pub const ALL: [Delivery; 3] = [Delivery::VmmInject, Delivery::Irqfd, Delivery::Poll];

    pub fn name(self) -> &'static str {
        match self {
            Delivery::VmmInject => "vmm-inject",
            Delivery::Irqfd => "irqfd",
            Delivery::Poll => "poll",
        }
    }

    /// Interrupts carry the completions (not polling).
    pub fn interrupts(self) -> bool {
        self != Delivery::Poll
    }
}

/// How the driver's handler ends an interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Eoi {
    /// A write to the xAPIC page's EOI register (0xfee000b0).
    Xapic,
    /// A write to the x2APIC EOI MSR (0x80b).
    X2apic,
    /// No interrupts, no EOI (polling).
    None,
}

/// A count per IO: the guest's, the VMM's or KVM's, over every run.
pub(crate) type PerIo = f64;

/// The trapping operations of one IO, by kind (each an exit on VMX/SVM without APIC
/// virtualization; counted by the guest and the VMM, never taken from the backend's `exits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ExitsPerIo {
    /// Queue notifications (port writes).
    pub notify: PerIo,
    /// Interrupts the driver took.
    pub interrupts: PerIo,
    /// EOI writes (one per interrupt).
    pub eoi: PerIo,
    /// HLTs of the driver waiting for a completion.
    pub halt: PerIo,
    /// Interrupt-window exits the VMM saw (vmm-inject).
    pub window: PerIo,
    /// notify + EOI + halt + window.
    pub total: PerIo,
}

/// Returns to the VMM of one IO, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReturnsPerIo {
    pub notify: PerIo,
    pub eoi: PerIo,
    pub halt: PerIo,
    pub window: PerIo,
    pub total: PerIo,
}

/// A time per IO over the runs: median, min, max and spread (IQR / median, %).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimePerIo {
    pub median_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub spread_pct: Option<f64>,
}

impl TimePerIo {
    pub fn of(samples: &[f64]) -> Option<TimePerIo> {
        let s = Summary::of(samples)?;
        Some(TimePerIo {
            median_ns: s.median,
            min_ns: s.min,
            max_ns: s.max,
            spread_pct: s.spread_pct(),
        })
    }
}

/// One configuration of the IO path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoPathRow {
    pub delivery: Delivery,
    /// Requests submitted per notify.
    pub qd: u32,
    /// Completions per interrupt.
    pub coalesce: u32,
    pub eoi: Eoi,
    pub status: Status,
    pub reason: Option<String>,
    pub ios_per_run: u64,
    pub runs: usize,
    pub exits_per_io: Option<ExitsPerIo>,
    pub vmm_returns_per_io: Option<ReturnsPerIo>,
    /// Interrupts the VMM injected with KVM_INTERRUPT, per IO.
    pub injections_per_io: Option<PerIo>,
    /// KVM's binary statistics per IO (on an emulating backend `exits` also counts emulation
    /// batches, and `insn_emulation` every emulated guest instruction).
    pub kvm_per_io: BTreeMap<String, PerIo>,
    /// Wall time per IO.
    pub ns_per_io: Option<TimePerIo>,
    /// CPU time of the vCPU thread per IO (in vmm-inject it runs the device too).
    pub vcpu_cpu_ns_per_io: Option<TimePerIo>,
    /// CPU time of the device thread's work per IO (irqfd, poll), its wait for the driver
    /// apart.
    pub device_cpu_ns_per_io: Option<TimePerIo>,
    /// 1 s over the median vCPU CPU per IO: the IOPS one vCPU sustains at this cost.
    pub ceiling_iops_per_vcpu: Option<f64>,
    /// What the backend changed in how the counts came about (e.g. a HLT standing in for an
    /// interrupt-window exit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The IO-path scenario's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoPathReport {
    /// How the device and the driver behave, in words.
    pub model: String,
    pub rows: Vec<IoPathRow>,
    /// What the backend changes in the reading (PVM emulation, interrupt windows).
    pub notes: Vec<String>,
}

impl IoPathReport {
    /// The row of one configuration.
    pub fn row(&self, delivery: Delivery, qd: u32, coalesce: u32, eoi: Eoi) -> Option<&IoPathRow> {
        self.rows.iter().find(|r| {
            r.delivery == delivery && r.qd == qd && r.coalesce == coalesce && r.eoi == eoi
        })
    }
}
