//! Paravirtual MSRs: the Hyper-V synthetic MSRs (0x40000000–0x400001ff, Hyper-V TLFS and Linux
//! `hyperv-tlfs.h`), KVM's own MSRs (0x4b564d00–0x4b564dff and the legacy 0x11/0x12,
//! `kvm_para.h`) and PVM's (0x4b564df0–0x4b564dff, virt-pvm `pvm_para.h`).

use super::msr::MsrClass;

/// Fixed Hyper-V synthetic MSRs (the SINT and STIMER ranges are named by [`hyperv`]).
#[rustfmt::skip]
static HYPERV: &[(u32, &str, MsrClass)] = &[
    (0x4000_0000, "HV_X64_MSR_GUEST_OS_ID", MsrClass::HypervOther),
    (0x4000_0001, "HV_X64_MSR_HYPERCALL", MsrClass::HypervOther),
    (0x4000_0002, "HV_X64_MSR_VP_INDEX", MsrClass::HypervOther),
    (0x4000_0003, "HV_X64_MSR_RESET", MsrClass::HypervOther),
    (0x4000_0010, "HV_X64_MSR_VP_RUNTIME", MsrClass::HypervOther),
    (0x4000_0020, "HV_X64_MSR_TIME_REF_COUNT", MsrClass::Timer),
    (0x4000_0021, "HV_X64_MSR_REFERENCE_TSC", MsrClass::Timer),
    (0x4000_0022, "HV_X64_MSR_TSC_FREQUENCY", MsrClass::HypervOther),
    (0x4000_0023, "HV_X64_MSR_APIC_FREQUENCY", MsrClass::HypervOther),
    (0x4000_0070, "HV_X64_MSR_EOI", MsrClass::Eoi),
    (0x4000_0071, "HV_X64_MSR_ICR", MsrClass::Ipi),
    (0x4000_0072, "HV_X64_MSR_TPR", MsrClass::ApicOther),
    (0x4000_0073, "HV_X64_MSR_VP_ASSIST_PAGE", MsrClass::HypervOther),
    (0x4000_0080, "HV_X64_MSR_SCONTROL", MsrClass::HypervSynic),
    (0x4000_0081, "HV_X64_MSR_SVERSION", MsrClass::HypervSynic),
    (0x4000_0082, "HV_X64_MSR_SIEFP", MsrClass::HypervSynic),
    (0x4000_0083, "HV_X64_MSR_SIMP", MsrClass::HypervSynic),
    (0x4000_0084, "HV_X64_MSR_EOM", MsrClass::HypervSynic),
    (0x4000_0085, "HV_X64_MSR_SIRBP", MsrClass::HypervSynic),
    (0x4000_00f0, "HV_X64_MSR_GUEST_IDLE", MsrClass::HypervOther),
    (0x4000_00f1, "HV_X64_MSR_SYNDBG_CONTROL", MsrClass::HypervOther),
    (0x4000_00f2, "HV_X64_MSR_SYNDBG_STATUS", MsrClass::HypervOther),
    (0x4000_00f3, "HV_X64_MSR_SYNDBG_SEND_BUFFER", MsrClass::HypervOther),
    (0x4000_00f4, "HV_X64_MSR_SYNDBG_RECV_BUFFER", MsrClass::HypervOther),
    (0x4000_00f5, "HV_X64_MSR_SYNDBG_PENDING_BUFFER", MsrClass::HypervOther),
    (0x4000_00ff, "HV_X64_MSR_SYNDBG_OPTIONS", MsrClass::HypervOther),
    (0x4000_0100, "HV_X64_MSR_CRASH_P0", MsrClass::HypervOther),
    (0x4000_0101, "HV_X64_MSR_CRASH_P1", MsrClass::HypervOther),
    (0x4000_0102, "HV_X64_MSR_CRASH_P2", MsrClass::HypervOther),
    (0x4000_0103, "HV_X64_MSR_CRASH_P3", MsrClass::HypervOther),
    (0x4000_0104, "HV_X64_MSR_CRASH_P4", MsrClass::HypervOther),
    (0x4000_0105, "HV_X64_MSR_CRASH_CTL", MsrClass::HypervOther),
    (0x4000_0106, "HV_X64_MSR_REENLIGHTENMENT_CONTROL", MsrClass::HypervOther),
    (0x4000_0107, "HV_X64_MSR_TSC_EMULATION_CONTROL", MsrClass::HypervOther),
    (0x4000_0108, "HV_X64_MSR_TSC_EMULATION_STATUS", MsrClass::HypervOther),
    (0x4000_0118, "HV_X64_MSR_TSC_INVARIANT_CONTROL", MsrClass::HypervOther),
];

/// KVM's paravirtual MSRs.
#[rustfmt::skip]
static KVM: &[(u32, &str)] = &[
    (0x11, "MSR_KVM_WALL_CLOCK"),
    (0x12, "MSR_KVM_SYSTEM_TIME"),
    (0x4b56_4d00, "MSR_KVM_WALL_CLOCK_NEW"),
    (0x4b56_4d01, "MSR_KVM_SYSTEM_TIME_NEW"),
    (0x4b56_4d02, "MSR_KVM_ASYNC_PF_EN"),
    (0x4b56_4d03, "MSR_KVM_STEAL_TIME"),
    (0x4b56_4d04, "MSR_KVM_PV_EOI_EN"),
    (0x4b56_4d05, "MSR_KVM_POLL_CONTROL"),
    (0x4b56_4d06, "MSR_KVM_ASYNC_PF_INT"),
    (0x4b56_4d07, "MSR_KVM_ASYNC_PF_ACK"),
    (0x4b56_4d08, "MSR_KVM_MIGRATION_CONTROL"),
    // PVM's MSRs sit at the top of KVM's range. 0x4b564df2/3/6/7 changed meaning between PVM
    // versions (SWITCH_CR3, SUPERVISOR_RSP, REDZONE, RETS_RIP), so only the stable ones are named.
    (0x4b56_4df0, "MSR_PVM_LINEAR_ADDRESS_RANGE"),
    (0x4b56_4df1, "MSR_PVM_VCPU_STRUCT"),
    (0x4b56_4df4, "MSR_PVM_EVENT_ENTRY"),
    (0x4b56_4df5, "MSR_PVM_RETU_RIP"),
];

/// The name and class of a Hyper-V synthetic MSR.
pub(super) fn hyperv(index: u32) -> Option<(String, MsrClass)> {
    if let Some((_, name, class)) = HYPERV.iter().find(|(i, _, _)| *i == index) {
        return Some(((*name).to_string(), *class));
    }
    match index {
        0x4000_0090..=0x4000_009f => Some((
            format!("HV_X64_MSR_SINT{}", index - 0x4000_0090),
            MsrClass::HypervSynic,
        )),
        0x4000_00b0..=0x4000_00b7 => {
            let n = (index - 0x4000_00b0) / 2;
            let what = if index.is_multiple_of(2) {
                "CONFIG"
            } else {
                "COUNT"
            };
            Some((format!("HV_X64_MSR_STIMER{n}_{what}"), MsrClass::Timer))
        }
        _ => None,
    }
}

/// The name of a KVM or PVM paravirtual MSR.
pub(super) fn kvm(index: u32) -> Option<&'static str> {
    KVM.iter().find(|(i, _)| *i == index).map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperv_names() {
        let n = |i| hyperv(i).map(|(n, _)| n);
        assert_eq!(n(0x4000_0000).as_deref(), Some("HV_X64_MSR_GUEST_OS_ID"));
        assert_eq!(n(0x4000_0020).as_deref(), Some("HV_X64_MSR_TIME_REF_COUNT"));
        assert_eq!(n(0x4000_0073).as_deref(), Some("HV_X64_MSR_VP_ASSIST_PAGE"));
        assert_eq!(n(0x4000_0090).as_deref(), Some("HV_X64_MSR_SINT0"));
        assert_eq!(n(0x4000_009f).as_deref(), Some("HV_X64_MSR_SINT15"));
        assert_eq!(n(0x4000_00b0).as_deref(), Some("HV_X64_MSR_STIMER0_CONFIG"));
        assert_eq!(n(0x4000_00b7).as_deref(), Some("HV_X64_MSR_STIMER3_COUNT"));
        assert_eq!(n(0x4000_0105).as_deref(), Some("HV_X64_MSR_CRASH_CTL"));
        assert_eq!(n(0x4000_00ff).as_deref(), Some("HV_X64_MSR_SYNDBG_OPTIONS"));
        assert_eq!(n(0x4000_0050), None);
    }

    #[test]
    fn kvm_names() {
        assert_eq!(kvm(0x4b56_4d00), Some("MSR_KVM_WALL_CLOCK_NEW"));
        assert_eq!(kvm(0x4b56_4d07), Some("MSR_KVM_ASYNC_PF_ACK"));
        assert_eq!(kvm(0x12), Some("MSR_KVM_SYSTEM_TIME"));
        assert_eq!(kvm(0x4b56_4df1), Some("MSR_PVM_VCPU_STRUCT"));
        assert_eq!(kvm(0x4b56_4df2), None);
    }
}
