//! Names of `kvm_userspace_exit` reasons: the `KVM_EXIT_*` numbering of the KVM uapi
//! (include/uapi/linux/kvm.h). The kernel prints `restart` when `errno` is -EINTR and `error`
//! for other negative errnos (the reason field is stale then); unknown numbers are shown as
//! numbers.

/// `KVM_EXIT_*` by number.
const NAMES: [&str; 41] = [
    "KVM_EXIT_UNKNOWN",
    "KVM_EXIT_EXCEPTION",
    "KVM_EXIT_IO",
    "KVM_EXIT_HYPERCALL",
    "KVM_EXIT_DEBUG",
    "KVM_EXIT_HLT",
    "KVM_EXIT_MMIO",
    "KVM_EXIT_IRQ_WINDOW_OPEN",
    "KVM_EXIT_SHUTDOWN",
    "KVM_EXIT_FAIL_ENTRY",
    "KVM_EXIT_INTR",
    "KVM_EXIT_SET_TPR",
    "KVM_EXIT_TPR_ACCESS",
    "KVM_EXIT_S390_SIEIC",
    "KVM_EXIT_S390_RESET",
    "KVM_EXIT_DCR",
    "KVM_EXIT_NMI",
    "KVM_EXIT_INTERNAL_ERROR",
    "KVM_EXIT_OSI",
    "KVM_EXIT_PAPR_HCALL",
    "KVM_EXIT_S390_UCONTROL",
    "KVM_EXIT_WATCHDOG",
    "KVM_EXIT_S390_TSCH",
    "KVM_EXIT_EPR",
    "KVM_EXIT_SYSTEM_EVENT",
    "KVM_EXIT_S390_STSI",
    "KVM_EXIT_IOAPIC_EOI",
    "KVM_EXIT_HYPERV",
    "KVM_EXIT_ARM_NISV",
    "KVM_EXIT_X86_RDMSR",
    "KVM_EXIT_X86_WRMSR",
    "KVM_EXIT_DIRTY_RING_FULL",
    "KVM_EXIT_AP_RESET_HOLD",
    "KVM_EXIT_X86_BUS_LOCK",
    "KVM_EXIT_XEN",
    "KVM_EXIT_RISCV_SBI",
    "KVM_EXIT_RISCV_CSR",
    "KVM_EXIT_NOTIFY",
    "KVM_EXIT_LOONGARCH_IOCSR",
    "KVM_EXIT_MEMORY_FAULT",
    "KVM_EXIT_TDX",
];

/// The `-EINTR` errno: KVM_RUN was interrupted by a signal and will be restarted.
const EINTR: i64 = 4;

/// The name of a userspace exit; unknown reasons are written into `buf` as their number.
pub fn name(reason: u32, errno: i64, buf: &mut String) -> &str {
    if errno == -EINTR {
        return "restart";
    }
    if errno < 0 {
        return "error";
    }
    match NAMES.get(reason as usize) {
        Some(n) => n,
        None => {
            buf.clear();
            buf.push_str(&reason.to_string());
            buf
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uapi_numbering_and_unknowns() {
        let mut buf = String::new();
        assert_eq!(name(2, 0, &mut buf), "KVM_EXIT_IO");
        assert_eq!(name(29, 0, &mut buf), "KVM_EXIT_X86_RDMSR");
        assert_eq!(name(39, 0, &mut buf), "KVM_EXIT_MEMORY_FAULT");
        assert_eq!(name(2, -4, &mut buf), "restart");
        assert_eq!(name(2, -14, &mut buf), "error");
        assert_eq!(name(77, 0, &mut buf), "77");
    }
}
