//! The counter objects and counters virtlens reads meaning into, by their English PDH names
//! (as `windows_exporter`, PAL and `esxtop -b` write them). Matching ignores case, because
//! `Get-Counter` prints paths in lower case.

/// `Hyper-V Hypervisor Logical Processor` (one instance per physical thread, `Hv LP n`).
pub(crate) const LP: &str = "Hyper-V Hypervisor Logical Processor";
/// `Hyper-V Hypervisor Virtual Processor` (one instance per guest vCPU, `VM:Hv VP n`).
pub const VP: &str = "Hyper-V Hypervisor Virtual Processor";
/// esxtop's per-VM CPU group.
pub(crate) const ESX_GROUP: &str = "Group Cpu";
/// esxtop's per-vCPU worlds (`Vcpu(gid:vm:wid:vcpu-n)`).
pub(crate) const ESX_VCPU: &str = "Vcpu";

pub(crate) const GUEST_RUN: &str = "% Guest Run Time";
pub(crate) const HV_RUN: &str = "% Hypervisor Run Time";
pub(crate) const TOTAL_RUN: &str = "% Total Run Time";
pub(crate) const CONTEXT_SWITCHES: &str = "Context Switches/sec";
pub(crate) const INTERCEPTS: &str = "Total Intercepts/sec";
pub(crate) const EXTERNAL_INTERRUPTS: &str = "External Interrupts/sec";
pub(crate) const VIRTUAL_INTERRUPTS: &str = "Virtual Interrupts/sec";
pub(crate) const IPIS_SENT: &str = "APIC IPIs Sent/sec";
pub(crate) const EOI: &str = "APIC EOI Accesses/sec";
pub(crate) const HYPERCALLS: &str = "Hypercalls/sec";
pub(crate) const IO_INSTRUCTIONS: &str = "IO Instructions/sec";
pub(crate) const MSR_ACCESSES: &str = "MSR Accesses/sec";
pub(crate) const NESTED_PAGE_FAULTS: &str = "Nested Page Fault Intercepts/sec";
pub(crate) const POSTED_NOTIFICATIONS: &str = "Posted Interrupt Notifications/sec";
pub(crate) const CPU_WAIT: &str = "CPU Wait Time Per Dispatch";
pub(crate) const ESX_READY: &str = "% Ready";
pub(crate) const ESX_COSTOP: &str = "% CoStop";
pub(crate) const ESX_MAX_LIMITED: &str = "% Max Limited";

/// The VM a VP instance belongs to: `sql01:Hv VP 3` → `sql01`; `_Total` → `None`.
pub(crate) fn vm_of_vp(instance: &str) -> Option<&str> {
    instance.rsplit_once(':').map(|(vm, _)| vm)
}

/// The VM of an esxtop CPU group or vCPU world: `2012201:FlowMonitor-csy` → `FlowMonitor-csy`,
/// `3497860:diskless vm 2:5421591:vmx` → `diskless vm 2`.
pub(crate) fn vm_of_esx(instance: &str) -> &str {
    let mut parts = instance.split(':');
    let _gid = parts.next();
    parts.next().unwrap_or(instance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_names() {
        assert_eq!(vm_of_vp("sql01:Hv VP 3"), Some("sql01"));
        assert_eq!(vm_of_vp("a:b:Hv VP 0"), Some("a:b"));
        assert_eq!(vm_of_vp("_Total"), None);
        assert_eq!(vm_of_esx("2012201:FlowMonitor-csy"), "FlowMonitor-csy");
        assert_eq!(
            vm_of_esx("3497860:diskless vm 2:5421591:vmx"),
            "diskless vm 2"
        );
    }
}
