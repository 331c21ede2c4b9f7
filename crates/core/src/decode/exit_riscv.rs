//! RISC-V KVM exits (the hypervisor extension's trap causes) as `perf kvm stat` reports them.
//!
//! An exit is the `scause` of the trap that left the guest: an exception cause (`EXC_*` in
//! `arch/riscv/include/asm/csr.h`) or, with the top bit set, an interrupt cause (`IRQ_*`).
//! `perf kvm stat` printed exceptions only, by their bare names (`STORE_GUEST_PAGE_FAULT`), and
//! every interrupt as `UNKNOWN`, until Linux 6.17 (commit 3b7270c76622, "RISC-V: perf/kvm: Add
//! reporting of interrupt events") which prints `EXC_…` and `IRQ_…` names.
//!
//! Codes: an exception is its cause number; an interrupt is `IRQ_FLAG | cause`.

use super::exit_reason::{ExitClass, ExitReasonInfo, Isa};
use ExitClass::*;

const fn e(
    code: u64,
    name: &'static str,
    class: ExitClass,
    description: &'static str,
) -> ExitReasonInfo {
    ExitReasonInfo::of(Isa::Riscv, code, name, class, description)
}

/// The interrupt bit of `scause` on a 64-bit hart.
pub(super) const IRQ_FLAG: u64 = 1 << 63;

/// Every RISC-V exit we can name, sorted by code.
#[rustfmt::skip]
pub(super) static RISCV_EXITS: &[ExitReasonInfo] = &[
    e(0, "EXC_INST_MISALIGNED", Exception, "misaligned instruction fetch"),
    e(1, "EXC_INST_ACCESS", Exception, "instruction access fault"),
    e(2, "EXC_INST_ILLEGAL", Exception, "illegal instruction (redirected to the guest)"),
    e(3, "EXC_BREAKPOINT", Exception, "breakpoint (EBREAK)"),
    e(4, "EXC_LOAD_MISALIGNED", Exception, "misaligned load, emulated for the guest"),
    e(5, "EXC_LOAD_ACCESS", Exception, "load access fault"),
    e(6, "EXC_STORE_MISALIGNED", Exception, "misaligned store, emulated for the guest"),
    e(7, "EXC_STORE_ACCESS", Exception, "store access fault"),
    e(8, "EXC_SYSCALL", Other, "environment call from user mode"),
    e(9, "EXC_HYPERVISOR_SYSCALL", Other, "environment call from HS mode"),
    e(10, "EXC_SUPERVISOR_SYSCALL", Hypercall, "SBI call from the guest kernel (ECALL from VS mode): timer programming without Sstc, IPIs, remote fences, console"),
    e(12, "EXC_INST_PAGE_FAULT", Exception, "instruction page fault"),
    e(13, "EXC_LOAD_PAGE_FAULT", Exception, "load page fault"),
    e(15, "EXC_STORE_PAGE_FAULT", Exception, "store page fault"),
    e(20, "EXC_INST_GUEST_PAGE_FAULT", Mmu, "guest-stage fault on an instruction fetch (memory not yet mapped)"),
    e(21, "EXC_LOAD_GUEST_PAGE_FAULT", Mmio, "guest-stage fault on a load: emulated MMIO read, or memory not yet mapped"),
    e(22, "EXC_VIRTUAL_INST_FAULT", Other, "virtual instruction: WFI (idle, trapped so KVM can block the vCPU) or a CSR KVM emulates"),
    e(23, "EXC_STORE_GUEST_PAGE_FAULT", Mmio, "guest-stage fault on a store: emulated MMIO write, or memory not yet mapped or write-protected (dirty logging)"),
    e(IRQ_FLAG | 1, "IRQ_S_SOFT", Interrupt, "host software interrupt (an IPI to the host CPU)"),
    e(IRQ_FLAG | 2, "IRQ_VS_SOFT", Interrupt, "guest software interrupt"),
    e(IRQ_FLAG | 5, "IRQ_S_TIMER", Interrupt, "host timer interrupt while the guest ran"),
    e(IRQ_FLAG | 6, "IRQ_VS_TIMER", Interrupt, "guest timer interrupt"),
    e(IRQ_FLAG | 9, "IRQ_S_EXT", Interrupt, "host external (device) interrupt while the guest ran"),
    e(IRQ_FLAG | 10, "IRQ_VS_EXT", Interrupt, "guest external interrupt"),
    e(IRQ_FLAG | 12, "IRQ_S_GEXT", Interrupt, "guest external interrupt for a vCPU not running (IMSIC guest file)"),
    e(IRQ_FLAG | 13, "IRQ_PMU_OVF", Interrupt, "performance counter overflow"),
];

/// The prefixes perf (from 6.17) and the kernel's defines put before the bare names that older
/// perf printed (`STORE_GUEST_PAGE_FAULT` is `EXC_STORE_GUEST_PAGE_FAULT`).
pub(super) static RISCV_PREFIXES: &[&str] = &["EXC_", "IRQ_"];
