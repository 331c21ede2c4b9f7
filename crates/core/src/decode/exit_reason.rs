//! VM-exit reasons: the types, lookup by code for VMX, SVM, PVM, arm64 and RISC-V (VMX flag bits
//! included), and the display key of unknown codes. The tables live in `exit_<isa>.rs`; lookup by name in every era's spelling and the ISA guess in `exit_names.rs`
//! (re-exported here).

use serde::{Deserialize, Serialize};

use super::exit_arm64::ARM64_EXITS;
use super::exit_pvm::PVM_EXITS;
use super::exit_riscv::RISCV_EXITS;
use super::exit_svm::{SVM_EXIT_ERR, SVM_EXITS};
use super::exit_vmx::VMX_EXITS;

pub use super::exit_names::{guess_isa, lookup_name};

/// The virtualization extension (or architecture) whose exit codes a capture uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isa {
    Vmx,
    Svm,
    Pvm,
    /// AArch64 KVM: exits are exception types and, for traps, ESR_EL2 exception classes.
    Arm64,
    /// RISC-V KVM (the H extension): exits are trap causes (`scause`).
    Riscv,
}

impl Isa {
    /// Every ISA, in the order of [`Isa::index`] (checked when compiling).
    pub const ALL: [Isa; 5] = [Isa::Vmx, Isa::Svm, Isa::Pvm, Isa::Arm64, Isa::Riscv];

    /// The ISA's place in [`Isa::ALL`]: tables indexed by ISA are `[T; Isa::ALL.len()]`.
    pub const fn index(self) -> usize {
        match self {
            Isa::Vmx => 0,
            Isa::Svm => 1,
            Isa::Pvm => 2,
            Isa::Arm64 => 3,
            Isa::Riscv => 4,
        }
    }

    /// The lowercase name used in JSON and on the command line: `vmx`, `svm`, `pvm`, `arm64`,
    /// `riscv`.
    pub fn as_str(self) -> &'static str {
        match self {
            Isa::Vmx => "vmx",
            Isa::Svm => "svm",
            Isa::Pvm => "pvm",
            Isa::Arm64 => "arm64",
            Isa::Riscv => "riscv",
        }
    }

    /// Whether the ISA is one of x86's (VMX, SVM, PVM): the rules that name x86 devices,
    /// registers and instructions apply.
    pub fn is_x86(self) -> bool {
        matches!(self, Isa::Vmx | Isa::Svm | Isa::Pvm)
    }
}

const _: () = {
    let mut i = 0;
    while i < Isa::ALL.len() {
        assert!(Isa::ALL[i].index() == i, "Isa::ALL out of Isa::index order");
        i += 1;
    }
};

/// What an exit means for the guest: used to keep idle apart from overhead and by rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitClass {
    Idle,
    Io,
    Mmio,
    Msr,
    Interrupt,
    Apic,
    Mmu,
    Spin,
    Hypercall,
    Cpuid,
    Exception,
    Other,
}

impl ExitClass {
    /// The snake_case name used in JSON: `idle`, `mmio`, …
    pub fn as_str(self) -> &'static str {
        match self {
            ExitClass::Idle => "idle",
            ExitClass::Io => "io",
            ExitClass::Mmio => "mmio",
            ExitClass::Msr => "msr",
            ExitClass::Interrupt => "interrupt",
            ExitClass::Apic => "apic",
            ExitClass::Mmu => "mmu",
            ExitClass::Spin => "spin",
            ExitClass::Hypercall => "hypercall",
            ExitClass::Cpuid => "cpuid",
            ExitClass::Exception => "exception",
            ExitClass::Other => "other",
        }
    }
}

/// One exit reason of one ISA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitReasonInfo {
    pub isa: Isa,
    pub code: u64,
    pub name: &'static str,
    pub class: ExitClass,
    pub description: &'static str,
}

impl ExitReasonInfo {
    /// One entry of an ISA's table (`exit_<isa>.rs`).
    pub(super) const fn of(
        isa: Isa,
        code: u64,
        name: &'static str,
        class: ExitClass,
        description: &'static str,
    ) -> ExitReasonInfo {
        ExitReasonInfo {
            isa,
            code,
            name,
            class,
            description,
        }
    }
}

/// Bits 15:0 of a VMX exit reason: the basic exit reason.
pub(crate) const VMX_BASIC_MASK: u64 = 0xffff;

/// The VMX exit-reason flag bits (above the basic reason) and their names.
pub(crate) const VMX_FLAGS: &[(u32, &str)] = &[
    (26, "BUS_LOCK_DETECTED"),
    (27, "ENCLAVE_MODE"),
    (28, "PENDING_MTF"),
    (29, "FROM_VMX_ROOT"),
    (31, "FAILED_VMENTRY"),
];

/// Bits of a 32-bit VMX exit reason that the SDM reserves (always 0 from real hardware).
const VMX_RESERVED: u64 = 0x43ff_0000;

/// The whole table of one ISA, sorted by code.
pub(crate) fn table(isa: Isa) -> &'static [ExitReasonInfo] {
    match isa {
        Isa::Vmx => VMX_EXITS,
        Isa::Svm => SVM_EXITS,
        Isa::Pvm => PVM_EXITS,
        Isa::Arm64 => ARM64_EXITS,
        Isa::Riscv => RISCV_EXITS,
    }
}

/// The basic exit reason of a raw VMX exit reason: the low 16 bits, when the rest is only flag
/// bits. `None` when a reserved bit or a bit above 31 is set: such a value is not a VMX exit
/// reason at all (PVM hosts report their own codes, e.g. 0x20000, in the same tracepoint field,
/// and masking those would turn them into `EXCEPTION_NMI`).
pub(crate) fn vmx_basic(raw: u64) -> Option<u64> {
    if raw > u64::from(u32::MAX) || raw & VMX_RESERVED != 0 {
        return None;
    }
    Some(raw & VMX_BASIC_MASK)
}

/// The names of the flag bits set above the basic reason of a raw VMX exit reason, low bit
/// first: `FAILED_VMENTRY` (31), `ENCLAVE_MODE` (27), … A reserved bit that is set is named
/// `RESERVED_BIT`; bits above 31 are named `ABOVE_BIT_31`.
pub(crate) fn vmx_flags(raw: u64) -> Vec<&'static str> {
    let mut out = Vec::new();
    for bit in 16..32u32 {
        if raw & (1u64 << bit) == 0 {
            continue;
        }
        match VMX_FLAGS.iter().find(|(b, _)| *b == bit) {
            Some((_, name)) => out.push(*name),
            None => {
                if !out.contains(&"RESERVED_BIT") {
                    out.push("RESERVED_BIT");
                }
            }
        }
    }
    if raw > u64::from(u32::MAX) {
        out.push("ABOVE_BIT_31");
    }
    out
}

/// The reason with this numeric code. For VMX the flag bits are masked off (see
/// [`vmx_basic`]); for SVM, -1 as a 32-bit value (older `kvm_exit` layouts) is `SVM_EXIT_ERR`
/// too. Unknown codes give `None`: callers keep the number (see [`unknown_key`]).
pub(crate) fn lookup_code(isa: Isa, code: u64) -> Option<&'static ExitReasonInfo> {
    let code = match isa {
        Isa::Vmx => vmx_basic(code)?,
        Isa::Svm if code == u64::from(u32::MAX) => SVM_EXIT_ERR,
        _ => code,
    };
    let t = table(isa);
    t.binary_search_by_key(&code, |i| i.code)
        .ok()
        .and_then(|i| t.get(i))
}

/// The display key of a code no table knows, keeping the number: `UNKNOWN(0x20000)`.
/// VMX codes whose basic reason is known but that carry flag bits are not unknown: use
/// [`display_key`] for those.
pub(crate) fn unknown_key(isa: Option<Isa>, code: u64) -> String {
    match isa {
        Some(Isa::Svm) if code >= 0xffff_ffff_0000_0000 => {
            // Negative SVM codes (VMEXIT_INVALID and friends) read better signed.
            format!("UNKNOWN({})", code as i64)
        }
        _ => format!("UNKNOWN({code:#x})"),
    }
}

/// The key to show for a raw code: the canonical name, with VMX flag names appended
/// (`EPT_VIOLATION|FAILED_VMENTRY`), or `unknown_key`.
pub fn display_key(isa: Option<Isa>, code: u64) -> String {
    let Some(isa) = isa else {
        return unknown_key(None, code);
    };
    match lookup_code(isa, code) {
        Some(info) if isa == Isa::Vmx => {
            let flags = vmx_flags(code);
            if flags.is_empty() {
                info.name.to_string()
            } else {
                format!("{}|{}", info.name, flags.join("|"))
            }
        }
        Some(info) => info.name.to_string(),
        None => unknown_key(Some(isa), code),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_unique() {
        for isa in Isa::ALL {
            let t = table(isa);
            assert!(
                t.windows(2).all(|w| w[0].code < w[1].code),
                "{isa:?} not sorted"
            );
            for info in t {
                assert_eq!(info.isa, isa);
                assert!(!info.description.is_empty());
                // Every canonical name resolves to itself under its ISA.
                assert_eq!(
                    lookup_name(Some(isa), info.name),
                    Some(info),
                    "{}",
                    info.name
                );
            }
        }
    }

    #[test]
    fn vmx_codes() {
        let get = |c| lookup_code(Isa::Vmx, c).map(|i| i.name);
        assert_eq!(get(0), Some("EXCEPTION_NMI"));
        assert_eq!(get(1), Some("EXTERNAL_INTERRUPT"));
        assert_eq!(get(7), Some("INTERRUPT_WINDOW"));
        assert_eq!(get(12), Some("HLT"));
        assert_eq!(get(30), Some("IO_INSTRUCTION"));
        assert_eq!(get(32), Some("MSR_WRITE"));
        assert_eq!(get(48), Some("EPT_VIOLATION"));
        assert_eq!(get(49), Some("EPT_MISCONFIG"));
        assert_eq!(get(74), Some("BUS_LOCK"));
        assert_eq!(get(75), Some("NOTIFY"));
        assert_eq!(get(77), Some("TDCALL"));
        assert_eq!(get(84), Some("MSR_READ_IMM"));
        assert_eq!(get(85), Some("MSR_WRITE_IMM"));
        assert_eq!(get(35), None);
        assert_eq!(get(200), None);
        // Flag bits are masked; a failed entry keeps its basic reason.
        assert_eq!(get(0x8000_0021), Some("INVALID_STATE"));
        assert_eq!(get(0x0800_0000 | 48), Some("EPT_VIOLATION"));
        // A PVM code in the VMX field is not VMX reason 0.
        assert_eq!(get(0x20000), None);
        assert_eq!(get(1 << 40), None);
    }

    #[test]
    fn vmx_flag_names() {
        assert!(vmx_flags(12).is_empty());
        assert_eq!(vmx_flags(0x8000_0021), vec!["FAILED_VMENTRY"]);
        assert_eq!(vmx_flags(0x0800_0000 | 48), vec!["ENCLAVE_MODE"]);
        assert_eq!(vmx_flags(0x2_0000), vec!["RESERVED_BIT"]);
        assert_eq!(vmx_flags(1 << 33), vec!["ABOVE_BIT_31"]);
        assert_eq!(
            display_key(Some(Isa::Vmx), 0x8000_0021),
            "INVALID_STATE|FAILED_VMENTRY"
        );
        assert_eq!(display_key(Some(Isa::Vmx), 12), "HLT");
        assert_eq!(display_key(Some(Isa::Vmx), 0x20000), "UNKNOWN(0x20000)");
    }

    #[test]
    fn svm_codes() {
        let get = |c| lookup_code(Isa::Svm, c).map(|i| (i.name, i.class));
        assert_eq!(get(0x60), Some(("interrupt", ExitClass::Interrupt)));
        assert_eq!(get(0x64), Some(("vintr", ExitClass::Interrupt)));
        assert_eq!(get(0x78), Some(("hlt", ExitClass::Idle)));
        assert_eq!(get(0x7b), Some(("io", ExitClass::Io)));
        assert_eq!(get(0x7c), Some(("msr", ExitClass::Msr)));
        assert_eq!(get(0x77), Some(("pause", ExitClass::Spin)));
        assert_eq!(get(0x4e), Some(("PF excp", ExitClass::Exception)));
        assert_eq!(get(0x81), Some(("hypercall", ExitClass::Hypercall)));
        assert_eq!(get(0x8c), Some(("mwait_cond", ExitClass::Idle)));
        assert_eq!(get(0xa5), Some(("buslock", ExitClass::Other)));
        assert_eq!(get(0xa6), Some(("idle-halt", ExitClass::Idle)));
        assert_eq!(get(0x400), Some(("npf", ExitClass::Mmu)));
        assert_eq!(get(0x401), Some(("avic_incomplete_ipi", ExitClass::Apic)));
        assert_eq!(
            get(0x402),
            Some(("avic_unaccelerated_access", ExitClass::Apic))
        );
        assert_eq!(get(0x403), Some(("vmgexit", ExitClass::Hypercall)));
        assert_eq!(
            get(0x8000_0001),
            Some(("vmgexit_mmio_read", ExitClass::Mmio))
        );
        assert_eq!(
            get(0x8000_0010),
            Some(("vmgexit_page_state_change", ExitClass::Mmu))
        );
        assert_eq!(
            get(0x8000_fffe),
            Some(("vmgexit_term_request", ExitClass::Other))
        );
        assert_eq!(get(u64::MAX).map(|x| x.0), Some("invalid_guest_state"));
        assert_eq!(get(0xffff_ffff).map(|x| x.0), Some("invalid_guest_state"));
        assert_eq!(get(0x4f), None);
        assert_eq!(get(0x500), None);
    }

    #[test]
    fn pvm_codes() {
        let get = |c| lookup_code(Isa::Pvm, c).map(|i| (i.name, i.class));
        assert_eq!(get(14), Some(("PF excp", ExitClass::Mmu)));
        assert_eq!(get(0x10000), Some(("SYSCALL", ExitClass::Other)));
        assert_eq!(get(0x20000), Some(("HYPERCALL", ExitClass::Hypercall)));
        assert_eq!(get(0x20002), Some(("HC_IRQ_HALT", ExitClass::Idle)));
        assert_eq!(get(0x20009), Some(("HC_WRMSR", ExitClass::Msr)));
        assert_eq!(get(0x40000), Some(("ERETS", ExitClass::Other)));
        assert_eq!(get(0x50000), Some(("INTERRUPT", ExitClass::Interrupt)));
        assert_eq!(get(1025), Some(("FAILED_VMENTRY", ExitClass::Other)));
        assert_eq!(get(0x70000), None);
    }

    #[test]
    fn unknown_codes_stay_numeric() {
        assert_eq!(unknown_key(Some(Isa::Vmx), 0x20000), "UNKNOWN(0x20000)");
        assert_eq!(unknown_key(None, 131_072), "UNKNOWN(0x20000)");
        assert_eq!(unknown_key(Some(Isa::Svm), 0x4f), "UNKNOWN(0x4f)");
        assert_eq!(unknown_key(Some(Isa::Svm), (-2i64) as u64), "UNKNOWN(-2)");
        assert_eq!(display_key(Some(Isa::Svm), 0x4f), "UNKNOWN(0x4f)");
        assert_eq!(display_key(None, 12), "UNKNOWN(0xc)");
    }
}
