//! Intel VMX basic exit reasons (bits 15:0 of the VM-exit reason field), with the names Linux
//! prints today, a class and a plain-English description, plus every older spelling we know of.
//!
//! Numbers follow the Intel SDM (Vol. 3, appendix "VMX Basic Exit Reasons") and Linux's
//! `arch/x86/include/uapi/asm/vmx.h`. Where Linux defines no name (reasons KVM never sees, such as
//! GETSEC or RSM), the name is the SDM's, written in the kernel's style.

use super::exit_reason::{ExitClass, ExitReasonInfo, Isa};
use ExitClass::*;

const fn e(
    code: u64,
    name: &'static str,
    class: ExitClass,
    description: &'static str,
) -> ExitReasonInfo {
    ExitReasonInfo::of(Isa::Vmx, code, name, class, description)
}

/// Every VMX basic exit reason, sorted by code.
#[rustfmt::skip]
pub(super) static VMX_EXITS: &[ExitReasonInfo] = &[
    e(0, "EXCEPTION_NMI", Exception, "guest took an exception or NMI that the host intercepts"),
    e(1, "EXTERNAL_INTERRUPT", Interrupt, "a host interrupt arrived while the guest ran"),
    e(2, "TRIPLE_FAULT", Exception, "guest triple-faulted (it is being reset or shut down)"),
    e(3, "INIT_SIGNAL", Other, "an INIT signal arrived for the vCPU"),
    e(4, "SIPI_SIGNAL", Other, "a start-up IPI arrived for the vCPU"),
    e(5, "IO_SMI", Other, "an I/O system-management interrupt arrived"),
    e(6, "OTHER_SMI", Other, "a system-management interrupt arrived"),
    e(7, "INTERRUPT_WINDOW", Interrupt, "guest opened an interrupt window so a pending interrupt can be injected"),
    e(8, "NMI_WINDOW", Interrupt, "guest can now take a pending NMI"),
    e(9, "TASK_SWITCH", Other, "guest attempted a hardware task switch"),
    e(10, "CPUID", Cpuid, "guest executed CPUID"),
    e(11, "GETSEC", Other, "guest executed GETSEC (SMX)"),
    e(12, "HLT", Idle, "guest executed HLT (idle)"),
    e(13, "INVD", Other, "guest executed INVD (invalidate caches)"),
    e(14, "INVLPG", Mmu, "guest executed INVLPG (TLB entry invalidation)"),
    e(15, "RDPMC", Other, "guest read a performance counter with RDPMC"),
    e(16, "RDTSC", Other, "guest executed RDTSC while TSC reads are intercepted"),
    e(17, "RSM", Other, "guest executed RSM (return from SMM)"),
    e(18, "VMCALL", Hypercall, "guest made a hypercall (VMCALL)"),
    e(19, "VMCLEAR", Other, "guest executed VMCLEAR (nested VMX)"),
    e(20, "VMLAUNCH", Other, "guest executed VMLAUNCH (nested VMX)"),
    e(21, "VMPTRLD", Other, "guest executed VMPTRLD (nested VMX)"),
    e(22, "VMPTRST", Other, "guest executed VMPTRST (nested VMX)"),
    e(23, "VMREAD", Other, "guest executed VMREAD (nested VMX)"),
    e(24, "VMRESUME", Other, "guest executed VMRESUME (nested VMX)"),
    e(25, "VMWRITE", Other, "guest executed VMWRITE (nested VMX)"),
    e(26, "VMOFF", Other, "guest executed VMXOFF (nested VMX)"),
    e(27, "VMON", Other, "guest executed VMXON (nested VMX)"),
    e(28, "CR_ACCESS", Other, "guest read or wrote a control register (CR0/CR3/CR4/CR8)"),
    e(29, "DR_ACCESS", Other, "guest accessed a debug register"),
    e(30, "IO_INSTRUCTION", Io, "guest executed an IN/OUT port instruction"),
    e(31, "MSR_READ", Msr, "guest read an MSR (RDMSR)"),
    e(32, "MSR_WRITE", Msr, "guest wrote an MSR (WRMSR)"),
    e(33, "INVALID_STATE", Other, "VM entry failed: invalid guest state"),
    e(34, "MSR_LOAD_FAIL", Other, "VM entry failed while loading guest MSRs"),
    e(36, "MWAIT_INSTRUCTION", Idle, "guest executed MWAIT (idle)"),
    e(37, "MONITOR_TRAP_FLAG", Other, "monitor trap flag single-step exit (debugging)"),
    e(39, "MONITOR_INSTRUCTION", Other, "guest executed MONITOR"),
    e(40, "PAUSE_INSTRUCTION", Spin, "guest spun in a PAUSE loop (pause-loop exiting)"),
    e(41, "MCE_DURING_VMENTRY", Exception, "VM entry failed: machine check during entry"),
    e(43, "TPR_BELOW_THRESHOLD", Apic, "guest lowered its task priority below the threshold"),
    e(44, "APIC_ACCESS", Apic, "guest accessed the APIC page (not accelerated)"),
    e(45, "EOI_INDUCED", Apic, "guest EOI for a level-triggered or host-watched vector"),
    e(46, "GDTR_IDTR", Other, "guest accessed GDTR or IDTR (descriptor-table exiting)"),
    e(47, "LDTR_TR", Other, "guest accessed LDTR or TR (descriptor-table exiting)"),
    e(48, "EPT_VIOLATION", Mmu, "guest touched memory not mapped in EPT (page fault in the host)"),
    e(49, "EPT_MISCONFIG", Mmio, "guest accessed emulated MMIO (EPT misconfiguration trap)"),
    e(50, "INVEPT", Mmu, "guest executed INVEPT (nested VMX)"),
    e(51, "RDTSCP", Other, "guest executed RDTSCP while intercepted"),
    e(52, "PREEMPTION_TIMER", Apic, "VMX preemption timer fired (KVM emulates the guest LAPIC timer with it)"),
    e(53, "INVVPID", Mmu, "guest executed INVVPID (nested VMX)"),
    e(54, "WBINVD", Other, "guest executed WBINVD (write back and invalidate caches)"),
    e(55, "XSETBV", Other, "guest wrote XCR0 (XSETBV)"),
    e(56, "APIC_WRITE", Apic, "guest wrote an APIC register that needs host emulation"),
    e(57, "RDRAND", Other, "guest executed RDRAND while intercepted"),
    e(58, "INVPCID", Mmu, "guest executed INVPCID"),
    e(59, "VMFUNC", Other, "guest VMFUNC failed or is intercepted"),
    e(60, "ENCLS", Other, "guest executed an SGX ENCLS leaf"),
    e(61, "RDSEED", Other, "guest executed RDSEED while intercepted"),
    e(62, "PML_FULL", Mmu, "page-modification log full (dirty tracking for migration)"),
    e(63, "XSAVES", Other, "guest executed XSAVES while intercepted"),
    e(64, "XRSTORS", Other, "guest executed XRSTORS while intercepted"),
    e(65, "PCONFIG", Other, "guest executed PCONFIG"),
    e(66, "SPP", Mmu, "sub-page write protection violation"),
    e(67, "UMWAIT", Idle, "guest executed UMWAIT (user-level wait)"),
    e(68, "TPAUSE", Idle, "guest executed TPAUSE (timed pause)"),
    e(69, "LOADIWKEY", Other, "guest executed LOADIWKEY (Key Locker)"),
    e(70, "ENCLV", Other, "guest executed an SGX ENCLV leaf"),
    e(71, "SGX_CONFLICT", Other, "SGX conflict"),
    e(72, "ENQCMD_PASID_FAIL", Other, "ENQCMD PASID translation failed"),
    e(73, "ENQCMDS_PASID_FAIL", Other, "ENQCMDS PASID translation failed"),
    e(74, "BUS_LOCK", Other, "guest caused a bus lock (split lock or uncached atomic)"),
    e(75, "NOTIFY", Other, "guest stayed too long in a window without interrupts (notify VM exit)"),
    e(76, "SEAMCALL", Other, "guest executed SEAMCALL"),
    e(77, "TDCALL", Hypercall, "TDX guest made a TDCALL (TDVMCALL hypercall)"),
    e(78, "RDMSRLIST", Msr, "guest read a list of MSRs (RDMSRLIST)"),
    e(79, "WRMSRLIST", Msr, "guest wrote a list of MSRs (WRMSRLIST)"),
    e(80, "URDMSR", Msr, "guest user-mode MSR read (URDMSR)"),
    e(81, "UWRMSR", Msr, "guest user-mode MSR write (UWRMSR)"),
    e(84, "MSR_READ_IMM", Msr, "guest read an MSR (RDMSR with immediate)"),
    e(85, "MSR_WRITE_IMM", Msr, "guest wrote an MSR (WRMSRNS with immediate)"),
];

/// Other spellings of VMX reasons (matched exactly first, then ignoring case).
///
/// - the names from before Linux 5.6 and in libtraceevent's plugin (`PENDING_INTERRUPT`);
/// - the lowercase names of the ~2010 kernels (`vmx_exit_reasons_str`: `ext_irq`, `halt`, …);
/// - SDM spellings (`VMXON`, `INSTRUCTION_TIMEOUT`) and a few other tools' names;
/// - bcc's `TPAUSEN/A` (a missing comma in its table glued two entries together).
///
/// bcc's `EXIT_REASON_` prefix is handled by the lookup for every name and alias.
#[rustfmt::skip]
pub(super) static VMX_ALIASES: &[(&str, u64)] = &[
    ("PENDING_INTERRUPT", 7),
    ("SIPI", 4),
    ("STARTUP_IPI", 4),
    ("VMXOFF", 26),
    ("VMXON", 27),
    ("INSTRUCTION_TIMEOUT", 75),
    ("BUSLOCK", 74),
    ("EXCEPTION_OR_NMI", 0),
    ("EXTERNAL_INT", 1),
    ("PAUSE_LOOP", 40),
    ("RDMSR_IMM", 84),
    ("WRMSRNS_IMM", 85),
    ("SPP_EVENT", 66),
    ("TPAUSEN/A", 68),
    // Linux ~2.6.3x `vmx_exit_reasons_str`.
    ("exception", 0),
    ("ext_irq", 1),
    ("triple_fault", 2),
    ("interrupt_window", 7),
    ("nmi_window", 8),
    ("task_switch", 9),
    ("cpuid", 10),
    ("halt", 12),
    ("invlpg", 14),
    ("hypercall", 18),
    ("cr_access", 28),
    ("dr_access", 29),
    ("io_instruction", 30),
    ("rdmsr", 31),
    ("wrmsr", 32),
    ("tpr_below_thres", 43),
    ("apic_access", 44),
    ("ept_violation", 48),
    ("wbinvd", 54),
];

/// Prefixes that other tools put in front of VMX names (bcc, kernel `#define`s).
pub(super) static VMX_PREFIXES: &[&str] = &["EXIT_REASON_", "VMX_EXIT_REASON_"];
