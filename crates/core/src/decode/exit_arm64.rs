//! arm64 (AArch64) KVM exits as `kvm_exit`, `perf kvm stat` and `kvm_stat` report them.
//!
//! An arm64 exit is first an exception *type* (`ret` in `kvm_exit`: IRQ, SERROR, TRAP, ILLEGAL,
//! HYP_GONE, from `ARM_EXCEPTION_*` in `arch/arm64/include/asm/kvm_asm.h`); only a TRAP carries an
//! exception *class* (`esr_ec`, bits 31:26 of ESR_EL2, `ESR_ELx_EC_*` in
//! `arch/arm64/include/asm/esr.h`), printed by name (`WFx`, `DABT_LOW`, `SYS64`, …). `perf kvm stat`
//! keys a TRAP by its class and any other exit by its type ("perf kvm: add kvm-stat for arm64",
//! <20200917100225.208794-1-sergey.senozhatsky@gmail.com>); `kvm_stat` splits `kvm_exit` by `esr_ec` alone, so IRQ exits (whose
//! `esr_ec` the tracepoint sets to 0) appear there as `kvm_exit(UNKNOWN)`.
//!
//! Codes: a trap is its exception class (0x00–0x3f); the other exception types have no class and
//! get `0x100 + type` (IRQ 0x100, SERROR 0x101, ILLEGAL 0x103) and 0x1ff for HYP_GONE, so one code
//! space holds both.

use super::exit_reason::{ExitClass, ExitReasonInfo, Isa};
use ExitClass::*;

const fn e(
    code: u64,
    name: &'static str,
    class: ExitClass,
    description: &'static str,
) -> ExitReasonInfo {
    ExitReasonInfo::of(Isa::Arm64, code, name, class, description)
}

/// Where the exception types that carry no class start in the code space.
pub(super) const TYPE_BASE: u64 = 0x100;

/// The `ret` of `kvm_exit` for a trap (`ARM_EXCEPTION_TRAP`): its `esr_ec` names the exit.
const TYPE_TRAP: u64 = 2;

/// `ARM_EXCEPTION_HYP_GONE` (`HVC_STUB_ERR`, 0xbadca11), stored at 0x1ff.
pub(super) const HYP_GONE: u64 = 0x1ff;

/// Every arm64 exit we can name, sorted by code.
#[rustfmt::skip]
pub(super) static ARM64_EXITS: &[ExitReasonInfo] = &[
    e(0x00, "UNKNOWN", Interrupt, "exception class 0: in kvm_stat and kvm_exit these are mostly IRQ exits (a host interrupt arrived; the tracepoint gives non-trap exits class 0), rarely an unknown trapped instruction"),
    e(0x01, "WFx", Idle, "guest ran WFI (idle: the vCPU waits for an interrupt) or WFE (spinning on a lock or event)"),
    e(0x03, "CP15_32", Msr, "AArch32 guest accessed a 32-bit CP15 system register that traps"),
    e(0x04, "CP15_64", Msr, "AArch32 guest accessed a 64-bit CP15 system register that traps"),
    e(0x05, "CP14_MR", Msr, "AArch32 guest accessed a CP14 debug register (MCR/MRC)"),
    e(0x06, "CP14_LS", Msr, "AArch32 guest ran a CP14 load/store (LDC/STC)"),
    e(0x07, "FP_ASIMD", Exception, "guest used FP/SIMD while its state was not loaded (lazy switch)"),
    e(0x08, "CP10_ID", Msr, "AArch32 guest read an FP/SIMD ID register (VMRS)"),
    e(0x09, "PAC", Other, "guest used pointer authentication while it was trapped (lazy enable)"),
    e(0x0c, "CP14_64", Msr, "AArch32 guest accessed a 64-bit CP14 register (MCRR/MRRC)"),
    e(0x0d, "BTI", Exception, "branch target identification exception"),
    e(0x0e, "ILL", Exception, "illegal execution state"),
    e(0x11, "SVC32", Other, "AArch32 supervisor call (not normally trapped to EL2)"),
    e(0x12, "HVC32", Hypercall, "AArch32 guest hypercall (HVC): PSCI and other firmware calls"),
    e(0x13, "SMC32", Hypercall, "AArch32 guest secure monitor call (SMC), handled as a firmware call"),
    e(0x15, "SVC64", Other, "AArch64 supervisor call (not normally trapped to EL2)"),
    e(0x16, "HVC64", Hypercall, "guest hypercall (HVC): PSCI (CPU on/off, suspend), SMCCC firmware calls, PV time"),
    e(0x17, "SMC64", Hypercall, "guest secure monitor call (SMC), handled as a firmware call"),
    e(0x18, "SYS64", Msr, "guest accessed a system register that traps (MSR/MRS): timers, PMU, debug, ID or cache-maintenance registers"),
    e(0x19, "SVE", Exception, "guest used SVE while its state was not loaded (lazy switch)"),
    e(0x1a, "ERET", Other, "ERET trapped (nested virtualization)"),
    e(0x1c, "FPAC", Exception, "pointer authentication failure"),
    e(0x1d, "SME", Exception, "guest used SME while it was trapped"),
    e(0x1f, "IMP_DEF", Other, "implementation-defined exception"),
    e(0x20, "IABT_LOW", Mmu, "instruction abort from the guest: stage-2 fault on code (memory not yet mapped, or being migrated)"),
    e(0x21, "IABT_CUR", Exception, "instruction abort at the host's own level"),
    e(0x22, "PC_ALIGN", Exception, "PC alignment fault"),
    e(0x24, "DABT_LOW", Mmio, "data abort from the guest: emulated MMIO (a device register), or a stage-2 fault on memory not yet mapped"),
    e(0x25, "DABT_CUR", Exception, "data abort at the host's own level"),
    e(0x26, "SP_ALIGN", Exception, "stack pointer alignment fault"),
    e(0x27, "MOPS", Exception, "memory copy/set instruction exception"),
    e(0x28, "FP_EXC32", Exception, "AArch32 floating-point exception"),
    e(0x2c, "FP_EXC64", Exception, "AArch64 floating-point exception"),
    e(0x2d, "GCS", Exception, "guarded control stack exception"),
    e(0x2f, "SERROR", Exception, "SError interrupt (asynchronous external abort)"),
    e(0x30, "BREAKPT_LOW", Exception, "guest hit a hardware breakpoint (debugging the guest)"),
    e(0x31, "BREAKPT_CUR", Exception, "hardware breakpoint at the host's own level"),
    e(0x32, "SOFTSTP_LOW", Exception, "guest single step (debugging the guest)"),
    e(0x33, "SOFTSTP_CUR", Exception, "single step at the host's own level"),
    e(0x34, "WATCHPT_LOW", Exception, "guest hit a watchpoint (debugging the guest)"),
    e(0x35, "WATCHPT_CUR", Exception, "watchpoint at the host's own level"),
    e(0x38, "BKPT32", Exception, "AArch32 BKPT instruction"),
    e(0x3a, "VECTOR32", Exception, "AArch32 vector catch"),
    e(0x3c, "BRK64", Exception, "AArch64 BRK instruction (guest debugging)"),
    e(TYPE_BASE, "IRQ", Interrupt, "a host interrupt arrived while the guest ran (timer, IPI, device): the exit returns to the host to take it"),
    e(TYPE_BASE + 1, "SERROR_EXIT", Exception, "an SError interrupt ended the guest's run"),
    e(TYPE_BASE + 3, "ILLEGAL", Other, "illegal exception return to the guest (a KVM or hardware problem)"),
    e(HYP_GONE, "HYP_GONE", Other, "the hypervisor stub answered instead of KVM (KVM not initialised at EL2)"),
];

/// Other spellings: `kvm_stat`'s older names, the `EC_` names of the bcc aarch64 exit script,
/// and the type names `kvm_exit` prints for non-trap exits (`SERROR` is also a class).
pub(super) static ARM64_ALIASES: &[(&str, u64)] = &[
    ("WFI", 0x01),
    ("HVC", 0x16),
    ("SMC", 0x17),
    ("SYS", 0x18),
    ("DABT", 0x24),
    ("IABT", 0x20),
    ("EXCEPTION_IRQ", TYPE_BASE),
];

/// Prefixes seen before a class name: the kernel's `ESR_ELx_EC_` defines, the bcc script's `EC_`,
/// and the `ARM_EXCEPTION_` defines of the types.
pub(super) static ARM64_PREFIXES: &[&str] = &["ESR_ELx_EC_", "EC_", "ARM_EXCEPTION_"];

/// The code of an arm64 `kvm_exit` from its exception type (`ret`) and class (`esr_ec`): the
/// class for a trap, `0x100 + type` for the other types (see the module docs).
pub fn arm64_code(ret: u64, esr_ec: u64) -> u64 {
    match ret {
        TYPE_TRAP => esr_ec & 0x3f,
        r if r < 0xff => TYPE_BASE + r,
        _ => HYP_GONE,
    }
}
