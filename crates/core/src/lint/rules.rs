//! The lint rule catalogue: every id, its severity as the Hyper-V reference gives it, what it
//! checks, the inputs it needs beyond the configuration, and its public sources (documents,
//! code, bugs and talks, spelled out). Findings take their `source` from here so the two never
//! drift apart.

use serde::Serialize;

/// One lint rule.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    pub id: &'static str,
    /// Severity as §6 states it (some depend on the case; the finding carries the one used).
    pub severity: &'static str,
    pub checks: &'static str,
    /// What besides the configuration the rule needs; empty when nothing.
    pub needs: &'static str,
    pub source: &'static str,
}

const fn r(
    id: &'static str,
    severity: &'static str,
    checks: &'static str,
    needs: &'static str,
    source: &'static str,
) -> Rule {
    Rule {
        id,
        severity,
        checks,
        needs,
        source,
    }
}

/// Every rule, in §6 order.
pub const RULES: [Rule; 40] = [
    r(
        "HV-DEP-001",
        "error",
        "hv-stimer without hv-synic",
        "",
        "QEMU target/i386/kvm/kvm.c",
    ),
    r(
        "HV-DEP-002",
        "error",
        "hv-stimer without hv-time (libvirt: no hypervclock timer)",
        "",
        "QEMU target/i386/kvm/kvm.c; ruzickap/packer-templates #154",
    ),
    r(
        "HV-DEP-003",
        "error",
        "hv-synic without hv-vpindex",
        "",
        "QEMU target/i386/kvm/kvm.c; ruzickap/packer-templates #149",
    ),
    r(
        "HV-DEP-004",
        "error",
        "hv-stimer-direct without hv-stimer",
        "",
        "QEMU target/i386/kvm/kvm.c",
    ),
    r(
        "HV-DEP-005",
        "error",
        "hv-tlbflush or hv-ipi without hv-vpindex",
        "",
        "QEMU target/i386/kvm/kvm.c",
    ),
    r(
        "HV-DEP-006",
        "error",
        "hv-tlbflush-ext without hv-tlbflush",
        "",
        "QEMU target/i386/kvm/kvm.c",
    ),
    r(
        "HV-DEP-007",
        "error",
        "hv-evmcs or hv-tlbflush-direct without hv-vapic",
        "",
        "QEMU target/i386/kvm/kvm.c; Vitaly Kuznetsov on kvm@vger.kernel.org",
    ),
    r(
        "HV-DEP-008",
        "error",
        "hv-syndbg without hv-synic and hv-relaxed",
        "",
        "QEMU target/i386/kvm/kvm.c",
    ),
    r(
        "HV-DEP-009",
        "error",
        "a Hyper-V setting QEMU/libvirt reject: an unknown name, a state other than on/off, or a flag newer than the target QEMU/libvirt",
        "--qemu-version / --libvirt-version (for the version check)",
        "libvirt docs/formatdomain.rst",
    ),
    r(
        "HV-HOST-001",
        "error",
        "hv-evmcs on a non-Intel host or a guest CPU without VMX",
        "host vendor",
        "OpenStack Nova bug 2009280; qemus/qemu src/proc.sh; QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-HOST-002",
        "medium",
        "hv-avic (or passthrough) with host APICv/AVIC off",
        "host APICv/AVIC",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-PERF-001",
        "high",
        "Windows guest without any Hyper-V enlightenment",
        "guest OS",
        "QEMU docs/system/i386/hyperv.rst; intel/kvm-multios platform/client/libvirt_xml/windows11_sriov_ovmf.xml",
    ),
    r(
        "HV-PERF-002",
        "high",
        "Windows ≥ 7/2008 R2 without hv-stimer",
        "guest OS",
        "QEMU docs/system/i386/hyperv.rst; MicrosoftDocs/Virtualization-Documentation#1885, virt-manager#205, OpenNebula/addon-storpool#79, truenas/middleware#9247, ruzickap/packer-templates, ohthehugemanatee/win10vm#1, altechnative.net blog; KVM Forum 2021, Liang Li: The traps of using Hyper-V features in KVM",
    ),
    r(
        "HV-PERF-003",
        "high",
        "Windows without hv-stimer and with the HPET disabled (RTC as timer)",
        "guest OS",
        "virt-manager #205; MicrosoftDocs/Virtualization-Documentation#1885",
    ),
    r(
        "HV-PERF-004",
        "high",
        "Windows without hv-time",
        "guest OS",
        "KVM Forum 2021, Liang Li: The traps of using Hyper-V features in KVM; vfio-users 2016-10; QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-PERF-005",
        "high/medium",
        "hv-synic without hv-avic on an APICv/AVIC host",
        "host APICv/AVIC (--ipi-heavy for high)",
        "KVM Forum 2021, Liang Li: The traps of using Hyper-V features in KVM; Linux arch/x86/kvm/hyperv.c; QEMU commit e1f9a8e8",
    ),
    r(
        "HV-PERF-006",
        "medium",
        "hv-vapic without hv-avic on an APICv/AVIC host",
        "host APICv/AVIC",
        "QEMU target/i386/kvm/kvm.c; KVM Forum 2021, Liang Li: The traps of using Hyper-V features in KVM",
    ),
    r(
        "HV-PERF-007",
        "high",
        "AMD AVIC host with in-kernel PIT reinjection",
        "host vendor and AVIC",
        "Linux arch/x86/kvm/i8254.c; Proxmox qemu-server Cfg2Cmd/Timer.pm; qemus/qemu src/proc.sh",
    ),
    r(
        "HV-PERF-008",
        "low",
        "Windows without hv-frequencies",
        "guest OS",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-PERF-009",
        "medium",
        "no hv-tlbflush/hv-ipi with ≥ 8 vCPUs or an overcommitted host",
        "vCPU count or --overcommitted",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-PERF-010",
        "medium",
        "spinlocks never notify on an overcommitted host",
        "--overcommitted",
        "QEMU docs/system/i386/hyperv.rst; Proxmox qemu-server, OpenStack Nova and virt-install use 0x1fff",
    ),
    r(
        "HV-PERF-011",
        "high",
        "hv-stimer without direct mode for a nested workload",
        "--nested-workload",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-PERF-012",
        "high",
        "hv-time with a host clocksource other than tsc",
        "host clocksource",
        "Linux arch/x86/kvm/hyperv.c compute_tsc_page_parameters()",
    ),
    r(
        "HV-PERF-013",
        "medium",
        "Windows 11/2022/2025 on Intel without hv-evmcs",
        "guest OS, host vendor",
        "Proxmox qemu-server commit 30531026; Red Hat solution 7129100",
    ),
    r(
        "HV-PERF-014",
        "high/medium/low",
        "SVM exposed to the guest on an AMD AVIC host (inhibit NESTED)",
        "host vendor and AVIC (host kernel for the severity)",
        "Linux commit f44509f849fe (KVM: x86: SVM: allow AVIC to co-exist with a nested guest running, 5.19); \
         Linux arch/x86/include/asm/kvm_host.h enum kvm_apicv_inhibit",
    ),
    r(
        "HV-PERF-015",
        "high/medium",
        "x2APIC on an AMD AVIC host whose kernel predates x2AVIC (inhibit X2APIC), or more vCPUs than AVIC addresses (PHYSICAL_ID_TOO_BIG)",
        "host vendor, AVIC and kernel; vCPU count",
        "LWN 887196 (x2AVIC and hybrid AVIC, Linux 6.0) https://lwn.net/Articles/887196/; \
         Linux arch/x86/kvm/svm/avic.c avic_init_backing_page()",
    ),
    r(
        "HV-OPS-001",
        "medium/high",
        "hv-passthrough / mode='passthrough'",
        "--migratable for high",
        "QEMU docs/system/i386/hyperv.rst; QEMU target/i386/kvm/kvm.c; libvirt docs/formatdomain.rst",
    ),
    r(
        "HV-OPS-002",
        "high",
        "hv-reenlightenment on a migrated VM without a fixed TSC frequency",
        "--migratable",
        "QEMU docs/system/i386/hyperv.rst; OpenStack Nova bug 2046549",
    ),
    r(
        "HV-OPS-003",
        "medium",
        "hv-crash with panic action shutdown/destroy",
        "",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-OPS-004",
        "medium",
        "hv-syndbg on",
        "",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-OPS-005",
        "high/medium",
        "hv-no-nonarch-coresharing=on without pinning, or =auto",
        "",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-OPS-006",
        "info",
        "hv-enforce-cpuid",
        "",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-OPS-007",
        "info",
        "hv-reset on",
        "",
        "QEMU docs/system/i386/hyperv.rst; virt-manager virtinst/domain/features.py",
    ),
    r(
        "HV-OPS-008",
        "info",
        "vendor id without any enlightenment",
        "",
        "QEMU docs/system/i386/hyperv.rst",
    ),
    r(
        "HV-OPS-009",
        "medium",
        "hv-passthrough with explicit flags turned off",
        "",
        "QEMU docs/system/i386/hyperv.rst; qemus/qemu src/proc.sh",
    ),
    r(
        "HV-OPS-010",
        "error",
        "spinlock retries below 4095",
        "",
        "libvirt docs/formatdomain.rst",
    ),
    r(
        "HV-OPS-011",
        "low",
        "duplicate Hyper-V settings (a warning: the last one wins)",
        "",
        "MicrosoftDocs/Virtualization-Documentation#1885",
    ),
    r(
        "HV-OPS-012",
        "info",
        "non-Windows guest with hv-* and KVM not hidden",
        "guest OS",
        "Linux arch/x86/kernel/cpu/mshyperv.c",
    ),
    r(
        "HV-OPS-013",
        "info",
        "hypervisor bit or KVM signature hidden from a Windows guest",
        "guest OS",
        "vfio-users 2016-10; KVM Forum 2021, Liang Li: The traps of using Hyper-V features in KVM",
    ),
    r(
        "HV-OPS-014",
        "info",
        "Windows XP/2003 (NT < 6.0) with hv-*",
        "guest OS",
        "Proxmox qemu-server CPUConfig.pm get_hyperv_enlightenments",
    ),
];

/// Every rule.
pub fn all() -> impl Iterator<Item = &'static Rule> {
    RULES.iter()
}

/// The rule with `id`.
pub(crate) fn get(id: &str) -> Option<&'static Rule> {
    all().find(|r| r.id == id)
}

/// The sources of rule `id` (empty for an unknown id).
pub(crate) fn source(id: &str) -> &'static str {
    get(id).map_or("", |r| r.source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_complete() {
        let ids: Vec<&str> = all().map(|r| r.id).collect();
        assert_eq!(ids.len(), 40);
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
        for n in 1..=9 {
            assert!(get(&format!("HV-DEP-{n:03}")).is_some());
        }
        for n in 1..=15 {
            assert!(get(&format!("HV-PERF-{n:03}")).is_some());
        }
        for n in 1..=14 {
            assert!(get(&format!("HV-OPS-{n:03}")).is_some());
        }
    }
}
