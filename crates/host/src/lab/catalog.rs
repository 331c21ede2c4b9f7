//! The exit tests of `virtlens exitcost`, after kvm-unit-tests' `x86/vmexit.c` (one
//! instruction that exits, in a loop, timed over many iterations) but with the VMM in
//! this process: each test is one guest operation, where it is handled (the VMM in
//! userspace, the kernel, or nobody), the VM it needs, the modes where it cannot work and why.

use kvm_ioctls::IoEventAddress;
use virtlens_core::measure::{Mode, Status};

use super::asm::{Prog, looped};
use super::bench::Item;
use super::devices;
use super::io_path::guest;
use crate::microvm::layout::DATA_PAGE;
use crate::microvm::{Error, HC_MAP_GPA_RANGE, VmConfig};
use iced_x86::code_asm::{al, dword_ptr, dx, eax, ebx, ecx, edx, esi, rcx};

/// A port no device claims: its accesses go to the VMM.
pub(crate) const USER_PORT: u16 = 0x510;
/// A port with an ioeventfd.
pub(crate) const IOEVENTFD_PORT: u16 = 0x600;
/// Unbacked guest-physical memory: accesses go to the VMM.
pub(crate) const USER_MMIO: u64 = 0xd_0000;
/// An MMIO address with an ioeventfd.
pub(crate) const IOEVENTFD_MMIO: u64 = 0xd_1000;
/// A coalesced-MMIO zone (one page).
pub(crate) const COALESCED_MMIO: u64 = 0xd_2000;
/// An MSR KVM does not know: with KVM_CAP_X86_USER_SPACE_MSR it goes to the VMM.
pub(crate) const USER_MSR: u32 = 0x1234;
/// IA32_SYSENTER_CS: handled in the kernel.
pub(crate) const KERNEL_MSR: u32 = 0x174;
/// A hypercall number KVM does not implement (answered -KVM_ENOSYS in the kernel).
pub(crate) const UNKNOWN_HYPERCALL: u32 = 0xffff;
/// A port whose ioeventfd is also an irqfd (an MSI of the lab's vector): a write to it
/// raises an interrupt entirely in the kernel.
pub(crate) const IRQFD_PORT: u16 = 0x530;
/// Where the interrupt tests' handler counts the interrupts it took.
const IRQ_COUNT: u64 = DATA_PAGE + 0x40;

/// One exit test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    NopLoop,
    Rdtsc,
    RamStore,
    PioOutUser,
    PioInUser,
    MmioWriteUser,
    MmioReadUser,
    HltUser,
    Cpuid,
    RdmsrKernel,
    WrmsrKernel,
    RdmsrUser,
    WrmsrUser,
    VmcallKernel,
    VmcallUser,
    IoeventfdPio,
    IoeventfdMmio,
    CoalescedMmio,
    PicIn,
    PicOut,
    PitIn,
    LapicRead,
    IrqInjectUser,
    IrqInjectIrqfd,
    EoiXapic,
    EoiX2apic,
}

impl Exit {
    /// Every test, the baseline first.
    pub(crate) const ALL: [Exit; 26] = [
        Exit::NopLoop,
        Exit::Rdtsc,
        Exit::RamStore,
        Exit::PioOutUser,
        Exit::PioInUser,
        Exit::MmioWriteUser,
        Exit::MmioReadUser,
        Exit::HltUser,
        Exit::Cpuid,
        Exit::RdmsrKernel,
        Exit::WrmsrKernel,
        Exit::RdmsrUser,
        Exit::WrmsrUser,
        Exit::VmcallKernel,
        Exit::VmcallUser,
        Exit::IoeventfdPio,
        Exit::IoeventfdMmio,
        Exit::CoalescedMmio,
        Exit::PicIn,
        Exit::PicOut,
        Exit::PitIn,
        Exit::LapicRead,
        Exit::IrqInjectUser,
        Exit::IrqInjectIrqfd,
        Exit::EoiXapic,
        Exit::EoiX2apic,
    ];

    /// The test's name in output.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Exit::NopLoop => "nop_loop",
            Exit::Rdtsc => "rdtsc",
            Exit::RamStore => "ram_store",
            Exit::PioOutUser => "pio_out_user",
            Exit::PioInUser => "pio_in_user",
            Exit::MmioWriteUser => "mmio_write_user",
            Exit::MmioReadUser => "mmio_read_user",
            Exit::HltUser => "hlt_user",
            Exit::Cpuid => "cpuid_kernel",
            Exit::RdmsrKernel => "rdmsr_kernel",
            Exit::WrmsrKernel => "wrmsr_kernel",
            Exit::RdmsrUser => "rdmsr_user",
            Exit::WrmsrUser => "wrmsr_user",
            Exit::VmcallKernel => "vmcall_kernel",
            Exit::VmcallUser => "vmcall_user",
            Exit::IoeventfdPio => "ioeventfd_pio",
            Exit::IoeventfdMmio => "ioeventfd_mmio",
            Exit::CoalescedMmio => "coalesced_mmio",
            Exit::PicIn => "pic_in_kernel",
            Exit::PicOut => "pic_out_kernel",
            Exit::PitIn => "pit_in_kernel",
            Exit::LapicRead => "lapic_read_kernel",
            Exit::IrqInjectUser => "irq_inject_user",
            Exit::IrqInjectIrqfd => "irq_inject_irqfd",
            Exit::EoiXapic => "eoi_xapic_kernel",
            Exit::EoiX2apic => "eoi_x2apic_kernel",
        }
    }

    /// The test named `name`.
    pub(crate) fn from_name(name: &str) -> Option<Exit> {
        Exit::ALL.into_iter().find(|e| e.name() == name)
    }

    /// One operation, and who handles it.
    pub(crate) fn what(self) -> &'static str {
        match self {
            Exit::NopLoop => "nop: the loop itself (baseline, gross ns per iteration)",
            Exit::Rdtsc => "rdtsc: no exit where the TSC is not intercepted",
            Exit::RamStore => "mov [ram], al: a store to guest RAM, no exit",
            Exit::PioOutUser => "out 0x510, al: port write answered by the VMM (KVM_EXIT_IO)",
            Exit::PioInUser => "in al, 0x510: port read answered by the VMM (KVM_EXIT_IO)",
            Exit::MmioWriteUser => "mov [0xd0000], al: MMIO write to the VMM (KVM_EXIT_MMIO)",
            Exit::MmioReadUser => "mov al, [0xd0000]: MMIO read from the VMM (KVM_EXIT_MMIO)",
            Exit::HltUser => "hlt without an in-kernel irqchip (KVM_EXIT_HLT to the VMM)",
            Exit::Cpuid => "xor eax, eax; cpuid: handled in the kernel",
            Exit::RdmsrKernel => "rdmsr 0x174 (SYSENTER_CS): handled in the kernel",
            Exit::WrmsrKernel => "wrmsr 0x174 (SYSENTER_CS): handled in the kernel",
            Exit::RdmsrUser => "rdmsr 0x1234: unknown MSR sent to the VMM (KVM_EXIT_X86_RDMSR)",
            Exit::WrmsrUser => "wrmsr 0x1234: unknown MSR sent to the VMM (KVM_EXIT_X86_WRMSR)",
            Exit::VmcallKernel => "vmcall, unknown hypercall: answered -KVM_ENOSYS by the kernel",
            Exit::VmcallUser => "vmcall KVM_HC_MAP_GPA_RANGE: sent to the VMM (KVM_EXIT_HYPERCALL)",
            Exit::IoeventfdPio => "out 0x600, al: port write caught in the kernel by an ioeventfd",
            Exit::IoeventfdMmio => "mov [0xd1000], al: MMIO write caught by an ioeventfd",
            Exit::CoalescedMmio => "mov [0xd2000], al: MMIO write into a coalesced-MMIO ring",
            Exit::PicIn => "in al, 0x21: in-kernel PIC (KVM_CREATE_IRQCHIP)",
            Exit::PicOut => "out 0x21, al: in-kernel PIC (KVM_CREATE_IRQCHIP)",
            Exit::PitIn => "in al, 0x40: in-kernel PIT (KVM_CREATE_PIT2)",
            Exit::LapicRead => "mov eax, [0xfee00030]: in-kernel LAPIC version register",
            Exit::IrqInjectUser => {
                "out 0x520, al to the VMM, which injects vector 0x40 with KVM_INTERRUPT on the way \
                 back; the handler returns (the VMM is the interrupt controller: no EOI)"
            }
            Exit::IrqInjectIrqfd => {
                "out 0x530, al caught by an ioeventfd that is also an irqfd (MSI, vector 0x40), \
                 then wait (hlt) for it: the in-kernel LAPIC delivers it, the handler EOIs \
                 (xAPIC) and returns"
            }
            Exit::EoiXapic => "mov [0xfee000b0], eax: EOI to the in-kernel LAPIC's xAPIC page",
            Exit::EoiX2apic => "wrmsr 0x80b: EOI to the in-kernel LAPIC in x2APIC mode",
        }
    }

    fn config(self) -> VmConfig {
        let mut c = VmConfig {
            mem_bytes: crate::microvm::layout::DEFAULT_MEMORY,
            ..VmConfig::default()
        };
        match self {
            Exit::RdmsrUser | Exit::WrmsrUser => c.user_space_msr = true,
            Exit::VmcallUser => c.exit_hypercall = true,
            Exit::PicIn
            | Exit::PicOut
            | Exit::LapicRead
            | Exit::IrqInjectIrqfd
            | Exit::EoiXapic
            | Exit::EoiX2apic => c.irqchip = true,
            Exit::PitIn => c.pit = true,
            _ => {}
        }
        c
    }

    /// Why the test cannot run in `mode`, when it cannot.
    pub(crate) fn unsupported(self, mode: Mode) -> Option<&'static str> {
        if matches!(self, Exit::IrqInjectUser | Exit::IrqInjectIrqfd) && mode != Mode::Long64 {
            return Some("the lab's interrupt handler is a 64-bit ring-0 IDT gate");
        }
        if !mode.is_user() {
            return None;
        }
        match self {
            Exit::HltUser => Some("HLT at CPL3 raises #GP (a privileged instruction)"),
            Exit::RdmsrKernel
            | Exit::WrmsrKernel
            | Exit::RdmsrUser
            | Exit::WrmsrUser
            | Exit::EoiX2apic => Some("RDMSR/WRMSR at CPL3 raise #GP (privileged instructions)"),
            Exit::VmcallUser => {
                Some("KVM refuses hypercalls from CPL3 (-KVM_EPERM) without an exit to the VMM")
            }
            _ => None,
        }
    }

    /// Returns to userspace per operation, when exactly known.
    fn expect_user_exits(self) -> Option<u64> {
        match self {
            Exit::PioOutUser
            | Exit::PioInUser
            | Exit::MmioWriteUser
            | Exit::MmioReadUser
            | Exit::HltUser
            | Exit::RdmsrUser
            | Exit::WrmsrUser
            | Exit::VmcallUser
            | Exit::IrqInjectUser => Some(1),
            Exit::CoalescedMmio => None, // a full ring falls back to KVM_EXIT_MMIO
            _ => Some(0),
        }
    }

    fn setup(self, p: &mut Prog, amd: bool) -> Result<(), Error> {
        let _ = amd;
        match self {
            Exit::RamStore => p.point_at(DATA_PAGE)?,
            Exit::PioOutUser | Exit::PioInUser => p.a.mov(dx, u32::from(USER_PORT))?,
            Exit::IoeventfdPio => p.a.mov(dx, u32::from(IOEVENTFD_PORT))?,
            Exit::MmioWriteUser | Exit::MmioReadUser => p.point_at(USER_MMIO)?,
            Exit::IoeventfdMmio => p.point_at(IOEVENTFD_MMIO)?,
            Exit::CoalescedMmio => p.point_at(COALESCED_MMIO)?,
            Exit::LapicRead => p.point_at(0xfee0_0030)?,
            Exit::RdmsrKernel | Exit::WrmsrKernel => p.a.mov(ecx, KERNEL_MSR)?,
            Exit::RdmsrUser | Exit::WrmsrUser => p.a.mov(ecx, USER_MSR)?,
            Exit::VmcallUser => {
                p.a.mov(ebx, 0x10_0000u32)?; // gpa
                p.a.mov(ecx, 1u32)?; // pages
            }
            Exit::PicOut => p.a.mov(al, 0xffu32)?, // keep every IRQ masked
            Exit::IrqInjectUser | Exit::IrqInjectIrqfd => {
                let irqfd = self == Exit::IrqInjectIrqfd;
                guest::interrupt_handler(p, &|p| {
                    p.a.mov(rcx, IRQ_COUNT)?;
                    p.a.add(dword_ptr(rcx), 1u32)?;
                    if irqfd { guest::eoi(p, false) } else { Ok(()) }
                })?;
                if irqfd {
                    guest::enable_apic(p, false)?;
                }
                p.point_at(IRQ_COUNT)?;
                p.a.mov(esi, p.dword(0))?;
                p.a.sti()?;
                p.a.mov(
                    dx,
                    u32::from(if irqfd { IRQFD_PORT } else { devices::IRQ_PORT }),
                )?;
            }
            Exit::EoiXapic => {
                p.point_at(guest::APIC_BASE)?;
                let svr = p.dword(0xf0);
                p.a.mov(svr, 0x1ffu32)?;
                p.a.xor(eax, eax)?;
            }
            Exit::EoiX2apic => {
                p.a.mov(ecx, 0x1bu32)?; // IA32_APIC_BASE: EN | EXTD
                p.a.rdmsr()?;
                p.a.or(eax, 0xc00u32)?;
                p.a.wrmsr()?;
                p.a.mov(ecx, 0x80fu32)?; // spurious-vector register: APIC on
                p.a.mov(eax, 0x1ffu32)?;
                p.a.xor(edx, edx)?;
                p.a.wrmsr()?;
                p.a.mov(ecx, guest::X2APIC_EOI)?;
                p.a.xor(eax, eax)?;
            }
            _ => {}
        }
        if matches!(self, Exit::WrmsrKernel | Exit::WrmsrUser) {
            p.a.xor(eax, eax)?;
            p.a.xor(edx, edx)?;
        }
        Ok(())
    }

    fn body(self, p: &mut Prog, amd: bool) -> Result<(), Error> {
        let vmcall = |p: &mut Prog| if amd { p.a.vmmcall() } else { p.a.vmcall() };
        match self {
            Exit::NopLoop => p.a.nop()?,
            Exit::Rdtsc => p.a.rdtsc()?,
            Exit::RamStore | Exit::MmioWriteUser | Exit::IoeventfdMmio | Exit::CoalescedMmio => {
                let m = p.byte(0);
                p.a.mov(m, al)?;
            }
            Exit::MmioReadUser => {
                let m = p.byte(0);
                p.a.mov(al, m)?;
            }
            Exit::LapicRead => {
                let m = p.dword(0);
                p.a.mov(eax, m)?;
            }
            Exit::PioOutUser | Exit::IoeventfdPio | Exit::IrqInjectUser => p.a.out(dx, al)?,
            Exit::IrqInjectIrqfd => {
                // Wait for the interrupt (it may be delivered only at the next event check,
                // as on an emulating backend): halt until the handler has counted it.
                let (mut wait, mut ok) = (p.a.create_label(), p.a.create_label());
                p.a.inc(esi)?;
                p.a.out(dx, al)?;
                p.a.set_label(&mut wait)?;
                p.a.cli()?;
                p.a.cmp(p.dword(0), esi)?;
                p.a.je(ok)?;
                p.a.sti()?;
                p.a.hlt()?;
                p.a.jmp(wait)?;
                p.a.set_label(&mut ok)?;
                p.a.sti()?;
            }
            Exit::EoiXapic => {
                let eoi = p.dword(0xb0);
                p.a.mov(eoi, eax)?;
            }
            Exit::EoiX2apic => p.a.wrmsr()?,
            Exit::PioInUser => p.a.in_(al, dx)?,
            Exit::HltUser => p.a.hlt()?,
            Exit::Cpuid => {
                p.a.xor(eax, eax)?;
                p.a.cpuid()?;
            }
            Exit::RdmsrKernel | Exit::RdmsrUser => p.a.rdmsr()?,
            Exit::WrmsrKernel | Exit::WrmsrUser => p.a.wrmsr()?,
            Exit::VmcallKernel => {
                p.a.mov(eax, UNKNOWN_HYPERCALL)?;
                vmcall(p)?;
            }
            Exit::VmcallUser => {
                p.a.mov(eax, HC_MAP_GPA_RANGE as u32)?;
                p.a.xor(edx, edx)?; // attributes
                vmcall(p)?;
            }
            Exit::PicIn => p.a.in_(al, 0x21)?,
            Exit::PicOut => p.a.out(0x21, al)?,
            Exit::PitIn => p.a.in_(al, 0x40)?,
        }
        Ok(())
    }

    /// The bench item of this test in `mode` (`amd`: use VMMCALL, the AMD encoding).
    pub(crate) fn item(self, mode: Mode, amd: bool) -> Item {
        let program = looped(mode, &|p| self.setup(p, amd), &|p| self.body(p, amd));
        let ioeventfds = match self {
            Exit::IoeventfdPio => vec![IoEventAddress::Pio(u64::from(IOEVENTFD_PORT))],
            Exit::IoeventfdMmio => vec![IoEventAddress::Mmio(IOEVENTFD_MMIO)],
            _ => Vec::new(),
        };
        Item {
            name: self.name().to_string(),
            mode,
            what: self.what().to_string(),
            config: self.config(),
            program: program.map_err(program_error),
            unsupported: self.unsupported(mode).map(str::to_string),
            ioeventfds,
            coalesced: (self == Exit::CoalescedMmio).then_some((COALESCED_MMIO, 0x1000)),
            irqfd_port: (self == Exit::IrqInjectIrqfd).then_some(IRQFD_PORT),
            data: Vec::new(),
            expect_user_exits: self.expect_user_exits(),
            baseline: self == Exit::NopLoop,
            fault_is_unsupported: matches!(self, Exit::VmcallKernel | Exit::VmcallUser),
        }
    }

    /// A remark on what the number means in `mode`, when it needs one.
    pub(crate) fn note(self, mode: Mode) -> Option<&'static str> {
        match (self, mode.is_user()) {
            (Exit::VmcallKernel, true) => {
                Some("at CPL3 KVM refuses the hypercall (-KVM_EPERM): the cost of the refusal")
            }
            (Exit::IrqInjectUser, _) => Some(
                "pio_out_user plus the injection: the difference is what injecting from the VMM \
                 and taking the interrupt cost",
            ),
            (Exit::IrqInjectIrqfd, _) => Some(
                "ioeventfd_pio plus the interrupt and the HLT that waits for it (with the interrupt \
                 pending, it does not block): the irqfd's MSI, its delivery and the handler's \
                 EOI, all in the kernel",
            ),
            (Exit::CoalescedMmio, _) => Some(
                "writes land in a ring drained at every exit; a full ring falls back to \
                 KVM_EXIT_MMIO",
            ),
            _ => None,
        }
    }
}

/// How a program that could not be assembled shows in results.
pub(crate) fn program_error(e: Error) -> (Status, String) {
    match e {
        Error::Unsupported(why) => (Status::Unsupported, why),
        other => (Status::Failed, other.to_string()),
    }
}

/// The items of every test in `mode`.
pub(crate) fn items(mode: Mode, amd: bool) -> Vec<Item> {
    Exit::ALL.into_iter().map(|e| e.item(mode, amd)).collect()
}
