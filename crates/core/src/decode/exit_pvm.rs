//! PVM (Pagetable-based Virtual Machine, `kvm_pvm`) exit reasons as reported in `kvm_exit`.
//!
//! PVM is not in mainline Linux; its exit reasons live in the virt-pvm trees
//! (`arch/x86/kvm/pvm/pvm.h`, `PVM_EXIT_REASONS`). An exit is either the guest's exception
//! vector (0–31, printed `PF excp` and so on), 1025 for a failed entry, or a synthetic reason in
//! bits 16 and up: `SYSCALL`, `HYPERCALL`, `ERETU`, `ERETS`, `INTERRUPT`, `INT80`. The perf
//! support proposed for PVM (virt-pvm/linux PR #9, issue #10) splits `HYPERCALL` into one reason
//! per hypercall (`HC_IRQ_HALT` = `HYPERCALL` + 2, …).
//!
//! Not every PVM tree numbers the synthetic reasons the same way. The layout here (with `ERETS`
//! at 4 << 16) is the one of the virt-pvm trees that carry the perf support and of the public
//! `perf kvm stat` output in virt-pvm issue #10; it is also the only one consistent with the codes
//! 0x10000–0x50000 (and no 0x60000) that perf reported in issue #8. At least one fork drops
//! `ERETS` and moves `INTERRUPT`/`INT80` down to 0x40000/0x50000; its codes would be named wrongly
//! here, so callers should prefer the names a capture prints over its numbers when both exist.

use super::exit_reason::{ExitClass, ExitReasonInfo, Isa};
use ExitClass::*;

const fn e(
    code: u64,
    name: &'static str,
    class: ExitClass,
    description: &'static str,
) -> ExitReasonInfo {
    ExitReasonInfo::of(Isa::Pvm, code, name, class, description)
}

const SYNTHETIC: u64 = 1 << 16;
const HYPERCALL: u64 = 2 * SYNTHETIC;

/// Every PVM exit reason we can name, sorted by code.
#[rustfmt::skip]
pub(super) static PVM_EXITS: &[ExitReasonInfo] = &[
    e(0, "DE excp", Exception, "guest divide error (#DE) went to the hypervisor"),
    e(1, "DB excp", Exception, "guest debug exception (#DB) went to the hypervisor"),
    e(2, "NMI excp", Interrupt, "an NMI arrived while the guest ran"),
    e(3, "BP excp", Exception, "guest breakpoint (#BP) went to the hypervisor"),
    e(4, "OF excp", Exception, "guest overflow (#OF) went to the hypervisor"),
    e(5, "BR excp", Exception, "guest bound-range (#BR) went to the hypervisor"),
    e(6, "UD excp", Exception, "guest invalid opcode (#UD): usually a privileged instruction to emulate"),
    e(7, "NM excp", Exception, "guest device-not-available (#NM) went to the hypervisor"),
    e(8, "DF excp", Exception, "guest double fault (#DF)"),
    e(10, "TS excp", Exception, "guest invalid TSS (#TS) went to the hypervisor"),
    e(11, "NP excp", Exception, "guest segment-not-present (#NP) went to the hypervisor"),
    e(12, "SS excp", Exception, "guest stack fault (#SS) went to the hypervisor"),
    e(13, "GP excp", Exception, "guest general protection fault (#GP): usually an instruction to emulate"),
    e(14, "PF excp", Mmu, "guest page fault handled by PVM's shadow paging"),
    e(16, "MF excp", Exception, "guest x87 floating-point error (#MF) went to the hypervisor"),
    e(17, "AC excp", Exception, "guest alignment check (#AC) went to the hypervisor"),
    e(18, "MC excp", Exception, "machine check (#MC) during guest execution"),
    e(19, "XM excp", Exception, "guest SIMD floating-point exception (#XM) went to the hypervisor"),
    e(20, "VE excp", Exception, "virtualization exception (#VE) went to the hypervisor"),
    e(1025, "FAILED_VMENTRY", Other, "PVM refused to enter the guest"),
    e(SYNTHETIC, "SYSCALL", Other, "guest user-mode SYSCALL that the switcher passed to the hypervisor"),
    e(HYPERCALL, "HYPERCALL", Hypercall, "guest kernel made a hypercall"),
    e(HYPERCALL + 1, "HC_IRQ_WIN", Interrupt, "guest hypercall: open the interrupt window"),
    e(HYPERCALL + 2, "HC_IRQ_HALT", Idle, "guest hypercall: enable interrupts and halt (idle)"),
    e(HYPERCALL + 3, "HC_LOAD_PGTBL", Mmu, "guest hypercall: load page tables"),
    e(HYPERCALL + 4, "HC_TLB_FLUSH", Mmu, "guest hypercall: flush the TLB"),
    e(HYPERCALL + 5, "HC_TLB_FLUSH_CURRENT", Mmu, "guest hypercall: flush the current address space's TLB"),
    e(HYPERCALL + 6, "HC_TLB_INVLPG", Mmu, "guest hypercall: invalidate one TLB entry"),
    e(HYPERCALL + 7, "HC_LOAD_GS", Other, "guest hypercall: load the GS segment"),
    e(HYPERCALL + 8, "HC_RDMSR", Msr, "guest hypercall: read an MSR"),
    e(HYPERCALL + 9, "HC_WRMSR", Msr, "guest hypercall: write an MSR"),
    e(HYPERCALL + 10, "HC_LOAD_TLS", Other, "guest hypercall: load TLS descriptors"),
    e(3 * SYNTHETIC, "ERETU", Other, "guest kernel returned to user mode through the hypervisor"),
    e(4 * SYNTHETIC, "ERETS", Other, "guest kernel returned to supervisor mode through the hypervisor"),
    e(5 * SYNTHETIC, "INTERRUPT", Interrupt, "a host interrupt arrived while the guest ran"),
    e(6 * SYNTHETIC, "INT80", Other, "guest made a 32-bit int 0x80 system call"),
];

/// Prefixes of the kernel `#define`s (`PVM_EXIT_REASONS_HC_IRQ_HALT`).
pub(super) static PVM_PREFIXES: &[&str] = &["PVM_EXIT_REASONS_"];
