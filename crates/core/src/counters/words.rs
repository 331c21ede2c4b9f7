//! The words of each `hv.*` finding: a title, the cause in plain words, the fix for Hyper-V,
//! for KVM and for VMware where they differ, and the public sources they rest on. Kept apart
//! from the logic in [`super::hv`]; numbers are formatted by the renderer.

use serde::Serialize;

use crate::diagnose::hypotheses::HvRule;
use crate::diagnose::words::overcommit;

/// What a finding says.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Words {
    pub title: &'static str,
    pub cause: &'static str,
    pub fix: &'static [&'static str],
    pub sources: &'static [&'static str],
}

impl Words {
    /// The cause as one line of text (the source keeps it wrapped for reading).
    pub(crate) fn cause_text(&self) -> String {
        self.cause.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// The words of finding `id`.
pub(crate) fn of(id: HvRule) -> Words {
    match id {
        HvRule::HypervisorTime => Words {
            title: "VPs spend a large share of their run time in the hypervisor",
            cause: "Every intercept (an interrupt arriving, an EOI or IPI the APIC is not virtualised for, \
                    an emulated IO instruction, a hypercall) runs hypervisor code on the VP's logical \
                    processor; that time is not available to the guest and caps what the VP can do.",
            fix: &[
                "See which intercepts dominate (the other hv.* findings and the VP's `… Intercepts/sec` counters) and remove that cause.",
                "KVM: compare with `virtlens diagnose` on a capture of the same workload; exits per second by reason name the cause.",
            ],
            sources: &[
                "https://learn.microsoft.com/windows-server/administration/performance-tuning/role/hyper-v-server/detecting-virtualized-environment-bottlenecks",
            ],
        },
        HvRule::InterruptDelivery => Words {
            title: "Interrupt delivery exits the guest: most intercepts are interrupts, EOIs and IPIs",
            cause: "Without hardware help, every device interrupt that arrives while the VP runs forces an \
                    exit (external interrupt), the hypervisor injects it as a virtual interrupt, and the \
                    guest's EOI (and any IPI it sends) exits again. At high IO rates this is two or more \
                    exits per IO, and it bounds IOPS per VP.",
            fix: &[
                "Hyper-V: assign the NVMe device to the VM (Discrete Device Assignment) on a host with Intel posted interrupts, so completions are delivered without intercepts.",
                "KVM: keep APIC virtualisation on (`kvm_intel enable_apicv=1` with posted interrupts, or `kvm_amd avic=1`) and nothing that inhibits it; with VFIO, posted interrupts need `intel_iommu=on` (IRQ remapping).",
                "Or poll instead of taking interrupts: Linux NVMe poll queues (`nvme.poll_queues=N`, io_uring `IORING_SETUP_IOPOLL`), Windows' NVMe polling; polling costs a busy CPU at low queue depth.",
                "Spread completions over more VPs (more queues / channels) so fewer interrupts land on one VP.",
            ],
            sources: &[
                "https://www.snia.org/educational-library/achieving-10-million-iops-single-vm-windows-hyper-v-2018",
                "ELI: Bare-Metal Performance for I/O Virtualization (ASPLOS 2012), https://research.ibm.com/publications/eli-bare-metal-performance-for-io-virtualization",
            ],
        },
        HvRule::Overcommit => Words {
            title: "vCPUs are ready but wait for a host CPU (CPU wait per dispatch, %RDY, %CSTP): the host is over-committed",
            cause: overcommit::READY_MEANS,
            fix: &[
                overcommit::FEWER_VCPUS,
                overcommit::PIN,
                overcommit::WEIGHTS,
                overcommit::MOVE,
            ],
            sources: &[
                "https://kb.vmware.com/s/article/2002181",
                "https://help.spotlightessentials.com/hyperv_alarm_cpuwaittimedispatch",
                "https://www.ibm.com/support/pages/virtual-machine-cpu-ready",
            ],
        },
        HvRule::CpuLimit => Words {
            title: "A CPU limit holds the VM back (%MLMTD)",
            cause: "%MLMTD is the time the VM was ready to run but was not scheduled because of its CPU limit.",
            fix: &["Raise or remove the VM's CPU limit (VM settings → CPU → Limit)."],
            sources: &["https://kb.vmware.com/s/article/2002181"],
        },
    }
}
