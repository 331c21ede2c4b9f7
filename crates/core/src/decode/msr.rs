//! MSR names and classes: architectural Intel/AMD MSRs (SDM names, `IA32_*`), the x2APIC
//! registers 0x800–0x8ff by register, and the paravirtual MSRs of Hyper-V, KVM and PVM
//! (in `msr_hyperv.rs`). The class says what a guest is doing when it hammers an MSR, for rules.

use serde::{Deserialize, Serialize};

use super::msr_hyperv;

/// What an MSR is for, as far as exit diagnosis cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MsrClass {
    /// Timers and clocks: TSC deadline, TSC, the x2APIC timer, Hyper-V stimers and reference time.
    Timer,
    /// Sending IPIs: x2APIC ICR and SELF_IPI, Hyper-V ICR.
    Ipi,
    /// End of interrupt: x2APIC EOI, Hyper-V EOI.
    Eoi,
    /// Other local-APIC state: APIC base, TPR, ISR/IRR/TMR, LVTs, …
    ApicOther,
    /// Hyper-V SynIC: SCONTROL, SIMP, SIEFP, EOM, SINTx.
    HypervSynic,
    /// Any other Hyper-V synthetic MSR.
    HypervOther,
    /// KVM (and PVM) paravirtual MSRs: kvmclock, steal time, async PF, PV EOI, …
    KvmPv,
    /// Speculation control: SPEC_CTRL, PRED_CMD, FLUSH_CMD, ARCH_CAPABILITIES, …
    Speculation,
    Other,
}

/// Architectural MSRs with a fixed index.
#[rustfmt::skip]
static ARCH: &[(u32, &str)] = &[
    (0x0000_0000, "IA32_P5_MC_ADDR"),
    (0x0000_0001, "IA32_P5_MC_TYPE"),
    (0x0000_0006, "IA32_MONITOR_FILTER_SIZE"),
    (0x0000_0010, "IA32_TSC"),
    (0x0000_0017, "IA32_PLATFORM_ID"),
    (0x0000_001b, "IA32_APIC_BASE"),
    (0x0000_0033, "TEST_CTRL"),
    (0x0000_0034, "SMI_COUNT"),
    (0x0000_0035, "CORE_THREAD_COUNT"),
    (0x0000_003a, "IA32_FEATURE_CONTROL"),
    (0x0000_003b, "IA32_TSC_ADJUST"),
    (0x0000_0048, "IA32_SPEC_CTRL"),
    (0x0000_0049, "IA32_PRED_CMD"),
    (0x0000_004e, "PPIN_CTL"),
    (0x0000_004f, "PPIN"),
    (0x0000_0079, "IA32_BIOS_UPDT_TRIG"),
    (0x0000_008b, "IA32_BIOS_SIGN_ID"),
    (0x0000_008c, "IA32_SGXLEPUBKEYHASH0"),
    (0x0000_008d, "IA32_SGXLEPUBKEYHASH1"),
    (0x0000_008e, "IA32_SGXLEPUBKEYHASH2"),
    (0x0000_008f, "IA32_SGXLEPUBKEYHASH3"),
    (0x0000_009b, "IA32_SMM_MONITOR_CTL"),
    (0x0000_009e, "IA32_SMBASE"),
    (0x0000_00ce, "PLATFORM_INFO"),
    (0x0000_00cf, "CORE_CAPABILITIES"),
    (0x0000_00e2, "PKG_CST_CONFIG_CONTROL"),
    (0x0000_00e7, "IA32_MPERF"),
    (0x0000_00e8, "IA32_APERF"),
    (0x0000_00fe, "IA32_MTRRCAP"),
    (0x0000_010a, "IA32_ARCH_CAPABILITIES"),
    (0x0000_010b, "IA32_FLUSH_CMD"),
    (0x0000_0122, "IA32_TSX_CTRL"),
    (0x0000_0123, "IA32_MCU_OPT_CTRL"),
    (0x0000_0140, "MISC_FEATURES_ENABLES"),
    (0x0000_0174, "IA32_SYSENTER_CS"),
    (0x0000_0175, "IA32_SYSENTER_ESP"),
    (0x0000_0176, "IA32_SYSENTER_EIP"),
    (0x0000_0179, "IA32_MCG_CAP"),
    (0x0000_017a, "IA32_MCG_STATUS"),
    (0x0000_017b, "IA32_MCG_CTL"),
    (0x0000_0198, "IA32_PERF_STATUS"),
    (0x0000_0199, "IA32_PERF_CTL"),
    (0x0000_019a, "IA32_CLOCK_MODULATION"),
    (0x0000_019b, "IA32_THERM_INTERRUPT"),
    (0x0000_019c, "IA32_THERM_STATUS"),
    (0x0000_01a0, "IA32_MISC_ENABLE"),
    (0x0000_01a2, "TEMPERATURE_TARGET"),
    (0x0000_01a4, "MISC_FEATURE_CONTROL"),
    (0x0000_01a6, "OFFCORE_RSP_0"),
    (0x0000_01a7, "OFFCORE_RSP_1"),
    (0x0000_01b0, "IA32_ENERGY_PERF_BIAS"),
    (0x0000_01b1, "IA32_PACKAGE_THERM_STATUS"),
    (0x0000_01c4, "IA32_XFD"),
    (0x0000_01c5, "IA32_XFD_ERR"),
    (0x0000_01d9, "IA32_DEBUGCTL"),
    (0x0000_01f2, "IA32_SMRR_PHYSBASE"),
    (0x0000_01f3, "IA32_SMRR_PHYSMASK"),
    (0x0000_01fc, "POWER_CTL"),
    (0x0000_0250, "IA32_MTRR_FIX64K_00000"),
    (0x0000_0258, "IA32_MTRR_FIX16K_80000"),
    (0x0000_0259, "IA32_MTRR_FIX16K_A0000"),
    (0x0000_0268, "IA32_MTRR_FIX4K_C0000"),
    (0x0000_0269, "IA32_MTRR_FIX4K_C8000"),
    (0x0000_026a, "IA32_MTRR_FIX4K_D0000"),
    (0x0000_026b, "IA32_MTRR_FIX4K_D8000"),
    (0x0000_026c, "IA32_MTRR_FIX4K_E0000"),
    (0x0000_026d, "IA32_MTRR_FIX4K_E8000"),
    (0x0000_026e, "IA32_MTRR_FIX4K_F0000"),
    (0x0000_026f, "IA32_MTRR_FIX4K_F8000"),
    (0x0000_0277, "IA32_PAT"),
    (0x0000_02ff, "IA32_MTRR_DEF_TYPE"),
    (0x0000_0345, "IA32_PERF_CAPABILITIES"),
    (0x0000_038d, "IA32_FIXED_CTR_CTRL"),
    (0x0000_038e, "IA32_PERF_GLOBAL_STATUS"),
    (0x0000_038f, "IA32_PERF_GLOBAL_CTRL"),
    (0x0000_0390, "IA32_PERF_GLOBAL_OVF_CTRL"),
    (0x0000_0391, "IA32_PERF_GLOBAL_STATUS_SET"),
    (0x0000_0392, "IA32_PERF_GLOBAL_INUSE"),
    (0x0000_03f1, "IA32_PEBS_ENABLE"),
    (0x0000_03f2, "PEBS_DATA_CFG"),
    (0x0000_03f6, "PEBS_LD_LAT_THRESHOLD"),
    (0x0000_0480, "IA32_VMX_BASIC"),
    (0x0000_0481, "IA32_VMX_PINBASED_CTLS"),
    (0x0000_0482, "IA32_VMX_PROCBASED_CTLS"),
    (0x0000_0483, "IA32_VMX_EXIT_CTLS"),
    (0x0000_0484, "IA32_VMX_ENTRY_CTLS"),
    (0x0000_0485, "IA32_VMX_MISC"),
    (0x0000_0486, "IA32_VMX_CR0_FIXED0"),
    (0x0000_0487, "IA32_VMX_CR0_FIXED1"),
    (0x0000_0488, "IA32_VMX_CR4_FIXED0"),
    (0x0000_0489, "IA32_VMX_CR4_FIXED1"),
    (0x0000_048a, "IA32_VMX_VMCS_ENUM"),
    (0x0000_048b, "IA32_VMX_PROCBASED_CTLS2"),
    (0x0000_048c, "IA32_VMX_EPT_VPID_CAP"),
    (0x0000_048d, "IA32_VMX_TRUE_PINBASED_CTLS"),
    (0x0000_048e, "IA32_VMX_TRUE_PROCBASED_CTLS"),
    (0x0000_048f, "IA32_VMX_TRUE_EXIT_CTLS"),
    (0x0000_0490, "IA32_VMX_TRUE_ENTRY_CTLS"),
    (0x0000_0491, "IA32_VMX_VMFUNC"),
    (0x0000_0492, "IA32_VMX_PROCBASED_CTLS3"),
    (0x0000_0493, "IA32_VMX_EXIT_CTLS2"),
    (0x0000_04d0, "IA32_MCG_EXT_CTL"),
    (0x0000_0560, "IA32_RTIT_OUTPUT_BASE"),
    (0x0000_0561, "IA32_RTIT_OUTPUT_MASK_PTRS"),
    (0x0000_0570, "IA32_RTIT_CTL"),
    (0x0000_0571, "IA32_RTIT_STATUS"),
    (0x0000_0600, "IA32_DS_AREA"),
    (0x0000_0606, "RAPL_POWER_UNIT"),
    (0x0000_0610, "PKG_POWER_LIMIT"),
    (0x0000_0611, "PKG_ENERGY_STATUS"),
    (0x0000_0619, "DRAM_ENERGY_STATUS"),
    (0x0000_0639, "PP0_ENERGY_STATUS"),
    (0x0000_0641, "PP1_ENERGY_STATUS"),
    (0x0000_06a0, "IA32_U_CET"),
    (0x0000_06a2, "IA32_S_CET"),
    (0x0000_06a4, "IA32_PL0_SSP"),
    (0x0000_06a5, "IA32_PL1_SSP"),
    (0x0000_06a6, "IA32_PL2_SSP"),
    (0x0000_06a7, "IA32_PL3_SSP"),
    (0x0000_06a8, "IA32_INT_SSP_TAB"),
    (0x0000_06e0, "IA32_TSC_DEADLINE"),
    (0x0000_06e1, "IA32_PKRS"),
    (0x0000_0770, "IA32_PM_ENABLE"),
    (0x0000_0771, "IA32_HWP_CAPABILITIES"),
    (0x0000_0774, "IA32_HWP_REQUEST"),
    (0x0000_0c80, "IA32_DEBUG_INTERFACE"),
    (0x0000_0d90, "IA32_BNDCFGS"),
    (0x0000_0da0, "IA32_XSS"),
    (0xc000_0080, "IA32_EFER"),
    (0xc000_0081, "IA32_STAR"),
    (0xc000_0082, "IA32_LSTAR"),
    (0xc000_0083, "IA32_CSTAR"),
    (0xc000_0084, "IA32_FMASK"),
    (0xc000_0100, "IA32_FS_BASE"),
    (0xc000_0101, "IA32_GS_BASE"),
    (0xc000_0102, "IA32_KERNEL_GS_BASE"),
    (0xc000_0103, "IA32_TSC_AUX"),
    (0xc000_0104, "AMD64_TSC_RATIO"),
    (0xc000_0300, "AMD64_PERF_CNTR_GLOBAL_STATUS"),
    (0xc000_0301, "AMD64_PERF_CNTR_GLOBAL_CTL"),
    (0xc000_0302, "AMD64_PERF_CNTR_GLOBAL_STATUS_CLR"),
    (0xc001_0010, "AMD64_SYSCFG"),
    (0xc001_0015, "K7_HWCR"),
    (0xc001_0016, "K8_IORR_BASE0"),
    (0xc001_0017, "K8_IORR_MASK0"),
    (0xc001_0018, "K8_IORR_BASE1"),
    (0xc001_0019, "K8_IORR_MASK1"),
    (0xc001_001a, "K8_TOP_MEM1"),
    (0xc001_001d, "K8_TOP_MEM2"),
    (0xc001_0055, "K8_INT_PENDING_MSG"),
    (0xc001_0058, "FAM10H_MMIO_CONF_BASE"),
    (0xc001_0061, "AMD_PSTATE_CUR_LIMIT"),
    (0xc001_0062, "AMD_PSTATE_CTL"),
    (0xc001_0063, "AMD_PSTATE_STATUS"),
    (0xc001_0114, "VM_CR"),
    (0xc001_0115, "VM_IGNNE"),
    (0xc001_0117, "VM_HSAVE_PA"),
    (0xc001_011f, "AMD64_VIRT_SPEC_CTRL"),
    (0xc001_0130, "AMD64_SEV_ES_GHCB"),
    (0xc001_0131, "AMD64_SEV_STATUS"),
    (0xc001_0140, "AMD64_OSVW_ID_LENGTH"),
    (0xc001_0141, "AMD64_OSVW_STATUS"),
    (0xc001_0299, "AMD_RAPL_POWER_UNIT"),
    (0xc001_029a, "AMD_CORE_ENERGY_STATUS"),
    (0xc001_029b, "AMD_PKG_ENERGY_STATUS"),
    (0xc001_1020, "AMD64_LS_CFG"),
    (0xc001_1029, "AMD64_DE_CFG"),
];

/// x2APIC registers with one MSR each (0x800 + xAPIC offset / 16).
#[rustfmt::skip]
static X2APIC: &[(u32, &str)] = &[
    (0x802, "X2APIC_ID"),
    (0x803, "X2APIC_VERSION"),
    (0x808, "X2APIC_TPR"),
    (0x80a, "X2APIC_PPR"),
    (0x80b, "X2APIC_EOI"),
    (0x80d, "X2APIC_LDR"),
    (0x80f, "X2APIC_SIVR"),
    (0x828, "X2APIC_ESR"),
    (0x82f, "X2APIC_LVT_CMCI"),
    (0x830, "X2APIC_ICR"),
    (0x832, "X2APIC_LVT_TIMER"),
    (0x833, "X2APIC_LVT_THERMAL"),
    (0x834, "X2APIC_LVT_PMI"),
    (0x835, "X2APIC_LVT_LINT0"),
    (0x836, "X2APIC_LVT_LINT1"),
    (0x837, "X2APIC_LVT_ERROR"),
    (0x838, "X2APIC_TMICT"),
    (0x839, "X2APIC_TMCCT"),
    (0x83e, "X2APIC_TDCR"),
    (0x83f, "X2APIC_SELF_IPI"),
];

/// The name of an MSR index.
pub(crate) fn msr_name(index: u32) -> Option<String> {
    if let Some((_, n)) = ARCH.iter().find(|(i, _)| *i == index) {
        return Some((*n).to_string());
    }
    if let Some(n) = msr_hyperv::kvm(index) {
        return Some(n.to_string());
    }
    if let Some((n, _)) = msr_hyperv::hyperv(index) {
        return Some(n);
    }
    if let Some(n) = x2apic_name(index) {
        return Some(n);
    }
    ranged_name(index)
}

/// The name of an x2APIC MSR (0x800–0x8ff), by register.
pub(crate) fn x2apic_name(index: u32) -> Option<String> {
    if let Some((_, n)) = X2APIC.iter().find(|(i, _)| *i == index) {
        return Some((*n).to_string());
    }
    match index {
        0x810..=0x817 => Some(format!("X2APIC_ISR{}", index - 0x810)),
        0x818..=0x81f => Some(format!("X2APIC_TMR{}", index - 0x818)),
        0x820..=0x827 => Some(format!("X2APIC_IRR{}", index - 0x820)),
        _ => None,
    }
}

/// MSRs that come in numbered banks.
fn ranged_name(index: u32) -> Option<String> {
    let name = match index {
        0xc1..=0xc8 => format!("IA32_PMC{}", index - 0xc1),
        0x186..=0x18d => format!("IA32_PERFEVTSEL{}", index - 0x186),
        0x200..=0x21f => {
            let n = (index - 0x200) / 2;
            let what = if index.is_multiple_of(2) {
                "PHYSBASE"
            } else {
                "PHYSMASK"
            };
            format!("IA32_MTRR_{what}{n}")
        }
        0x280..=0x29f => format!("IA32_MC{}_CTL2", index - 0x280),
        0x309..=0x30c => format!("IA32_FIXED_CTR{}", index - 0x309),
        0x400..=0x47f => {
            let bank = (index - 0x400) / 4;
            let what = ["CTL", "STATUS", "ADDR", "MISC"][(index % 4) as usize];
            format!("IA32_MC{bank}_{what}")
        }
        0x4c1..=0x4c8 => format!("IA32_A_PMC{}", index - 0x4c1),
        0xc001_0000..=0xc001_0003 => format!("K7_EVNTSEL{}", index - 0xc001_0000),
        0xc001_0004..=0xc001_0007 => format!("K7_PERFCTR{}", index - 0xc001_0004),
        0xc001_0064..=0xc001_006b => format!("AMD_PSTATE_DEF{}", index - 0xc001_0064),
        0xc001_0200..=0xc001_020b => {
            let n = (index - 0xc001_0200) / 2;
            let what = if index.is_multiple_of(2) {
                "CTL"
            } else {
                "CTR"
            };
            format!("F15H_PERF_{what}{n}")
        }
        _ => return None,
    };
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(i: u32) -> Option<String> {
        msr_name(i)
    }

    #[test]
    fn architectural() {
        assert_eq!(n(0x10).as_deref(), Some("IA32_TSC"));
        assert_eq!(n(0x1b).as_deref(), Some("IA32_APIC_BASE"));
        assert_eq!(n(0x3a).as_deref(), Some("IA32_FEATURE_CONTROL"));
        assert_eq!(n(0x3b).as_deref(), Some("IA32_TSC_ADJUST"));
        assert_eq!(n(0x48).as_deref(), Some("IA32_SPEC_CTRL"));
        assert_eq!(n(0x49).as_deref(), Some("IA32_PRED_CMD"));
        assert_eq!(n(0x10a).as_deref(), Some("IA32_ARCH_CAPABILITIES"));
        assert_eq!(n(0x10b).as_deref(), Some("IA32_FLUSH_CMD"));
        assert_eq!(n(0x1a0).as_deref(), Some("IA32_MISC_ENABLE"));
        assert_eq!(n(0x277).as_deref(), Some("IA32_PAT"));
        assert_eq!(n(0x2ff).as_deref(), Some("IA32_MTRR_DEF_TYPE"));
        assert_eq!(n(0x6e0).as_deref(), Some("IA32_TSC_DEADLINE"));
        assert_eq!(n(0x38f).as_deref(), Some("IA32_PERF_GLOBAL_CTRL"));
        assert_eq!(n(0xc000_0080).as_deref(), Some("IA32_EFER"));
        assert_eq!(n(0xc000_0082).as_deref(), Some("IA32_LSTAR"));
        assert_eq!(n(0xc000_0084).as_deref(), Some("IA32_FMASK"));
        assert_eq!(n(0xc000_0102).as_deref(), Some("IA32_KERNEL_GS_BASE"));
        assert_eq!(n(0xc000_0103).as_deref(), Some("IA32_TSC_AUX"));
    }

    #[test]
    fn banks() {
        assert_eq!(n(0x200).as_deref(), Some("IA32_MTRR_PHYSBASE0"));
        assert_eq!(n(0x20f).as_deref(), Some("IA32_MTRR_PHYSMASK7"));
        assert_eq!(n(0x401).as_deref(), Some("IA32_MC0_STATUS"));
        assert_eq!(n(0x40e).as_deref(), Some("IA32_MC3_ADDR"));
        assert_eq!(n(0xc2).as_deref(), Some("IA32_PMC1"));
        assert_eq!(n(0x30a).as_deref(), Some("IA32_FIXED_CTR1"));
        assert_eq!(n(0xc001_0201).as_deref(), Some("F15H_PERF_CTR0"));
    }

    #[test]
    fn x2apic_by_register() {
        for (i, want) in [
            (0x802, "X2APIC_ID"),
            (0x803, "X2APIC_VERSION"),
            (0x808, "X2APIC_TPR"),
            (0x80b, "X2APIC_EOI"),
            (0x80d, "X2APIC_LDR"),
            (0x80f, "X2APIC_SIVR"),
            (0x810, "X2APIC_ISR0"),
            (0x817, "X2APIC_ISR7"),
            (0x818, "X2APIC_TMR0"),
            (0x827, "X2APIC_IRR7"),
            (0x828, "X2APIC_ESR"),
            (0x82f, "X2APIC_LVT_CMCI"),
            (0x830, "X2APIC_ICR"),
            (0x832, "X2APIC_LVT_TIMER"),
            (0x836, "X2APIC_LVT_LINT1"),
            (0x838, "X2APIC_TMICT"),
            (0x839, "X2APIC_TMCCT"),
            (0x83e, "X2APIC_TDCR"),
            (0x83f, "X2APIC_SELF_IPI"),
        ] {
            assert_eq!(n(i).as_deref(), Some(want), "{i:#x}");
        }
        assert_eq!(n(0x831), None);
    }

    #[test]
    fn paravirtual() {
        assert_eq!(n(0x4000_0070).as_deref(), Some("HV_X64_MSR_EOI"));
        assert_eq!(n(0x4000_0071).as_deref(), Some("HV_X64_MSR_ICR"));
        assert_eq!(n(0x4000_0021).as_deref(), Some("HV_X64_MSR_REFERENCE_TSC"));
        assert_eq!(n(0x4000_0095).as_deref(), Some("HV_X64_MSR_SINT5"));
        assert_eq!(n(0x4000_00b2).as_deref(), Some("HV_X64_MSR_STIMER1_CONFIG"));
        assert_eq!(n(0x4b56_4d03).as_deref(), Some("MSR_KVM_STEAL_TIME"));
        assert_eq!(n(0x11).as_deref(), Some("MSR_KVM_WALL_CLOCK"));
        assert_eq!(n(0x1234_5678), None);
    }

    #[test]
    fn tables_have_no_duplicates() {
        let mut seen: Vec<u32> = ARCH.iter().chain(X2APIC).map(|(i, _)| *i).collect();
        let len = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), len);
    }
}
