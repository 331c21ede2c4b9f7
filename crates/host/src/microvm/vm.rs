//! [`MicroVm`]: one VM with one vCPU and a block of RAM at guest-physical 0, optionally an
//! in-kernel irqchip and PIT, MSR exits to userspace, hypercall exits, ioeventfds and a
//! coalesced-MMIO zone ([`VmConfig`] and the `add_*` methods); a loader that sets the vCPU up
//! in any [`Mode`] (tables from `tables`, memory map in `layout`); and accessors for its fds
//! and binary statistics. The run loop is in `run`.

use std::io;

use kvm_bindings::{KVM_MAX_CPUID_ENTRIES, kvm_enable_cap, kvm_pit_config, kvm_regs, kvm_sregs};
use kvm_ioctls::{Cap, IoEventAddress, Kvm, NoDatamatch, VcpuFd, VmFd};
use virtlens_core::measure::Mode;
use vmm_sys_util::eventfd::EventFd;

use super::error::Error;
use super::layout::{CODE_ADDR, CODE_MAX, STACK_TOP, USER_STACK_TOP};
use super::sys::{self, GuestMemory};
use super::tables;
use crate::kvm_stats::StatsFd;

/// `KVM_CAP_X86_USER_SPACE_MSR`.
const CAP_USER_SPACE_MSR: u32 = 188;
/// `KVM_CAP_EXIT_HYPERCALL`.
const CAP_EXIT_HYPERCALL: u32 = 201;
/// `KVM_MSR_EXIT_REASON_INVAL | _UNKNOWN | _FILTER`: every MSR KVM would refuse goes to us.
const MSR_EXIT_REASONS: u64 = 0x7;
/// `KVM_HC_MAP_GPA_RANGE`, the one hypercall KVM can send to userspace.
pub const HC_MAP_GPA_RANGE: u64 = 12;
/// Where KVM may put the real-mode TSS it needs on VMX without unrestricted guest (above RAM
/// and the lab's MMIO, below the LAPIC).
const TSS_ADDR_VMX: usize = 0xfffb_d000;

/// What a [`MicroVm`] is made with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmConfig {
    /// Guest RAM in bytes (rounded up to pages, at least 64 KiB).
    pub mem_bytes: usize,
    /// KVM_CREATE_IRQCHIP: in-kernel PIC, IOAPIC and LAPIC.
    pub irqchip: bool,
    /// KVM_CREATE_PIT2 (implies `irqchip`).
    pub pit: bool,
    /// KVM_CAP_X86_USER_SPACE_MSR: MSRs KVM does not handle exit to userspace.
    pub user_space_msr: bool,
    /// KVM_CAP_EXIT_HYPERCALL for KVM_HC_MAP_GPA_RANGE.
    pub exit_hypercall: bool,
}

/// A minimal VM: guest RAM at GPA 0, one vCPU. See the module doc of `microvm`.
///
/// Field order matters: the vCPU and VM are dropped (closed) before the memory they use is
/// unmapped.
#[derive(Debug)]
pub struct MicroVm {
    pub(super) vcpu: VcpuFd,
    vm: VmFd,
    eventfds: Vec<EventFd>,
    mem: GuestMemory,
    pub(super) mode: Mode,
    pub(super) coalesced_ring: bool,
    initial: Option<(kvm_regs, kvm_sregs)>,
}

impl MicroVm {
    /// A VM with `mem_bytes` of RAM and one vCPU whose CPUID is what KVM supports.
    pub fn new(mem_bytes: usize) -> Result<MicroVm, Error> {
        Self::with_config(&VmConfig {
            mem_bytes,
            ..VmConfig::default()
        })
    }

    /// A VM made as `config` says.
    pub fn with_config(config: &VmConfig) -> Result<MicroVm, Error> {
        let len = config
            .mem_bytes
            .max(super::guest::MIN_MEMORY)
            .next_multiple_of(4096);
        let kvm = Kvm::new().map_err(Error::kvm("opening /dev/kvm"))?;
        let vm = kvm.create_vm().map_err(Error::kvm("KVM_CREATE_VM"))?;
        // Only VMX without unrestricted guest needs it; other backends may refuse it harmlessly.
        let _ = vm.set_tss_address(TSS_ADDR_VMX);
        if config.irqchip || config.pit {
            vm.create_irq_chip()
                .map_err(Error::kvm("KVM_CREATE_IRQCHIP"))?;
        }
        if config.pit {
            vm.create_pit2(kvm_pit_config::default())
                .map_err(Error::kvm("KVM_CREATE_PIT2"))?;
        }
        if config.user_space_msr {
            enable(
                &vm,
                CAP_USER_SPACE_MSR,
                MSR_EXIT_REASONS,
                "KVM_CAP_X86_USER_SPACE_MSR",
            )?;
        }
        if config.exit_hypercall {
            let offered = vm.check_extension_raw(libc::c_ulong::from(CAP_EXIT_HYPERCALL));
            if offered < 0 || offered as u64 & (1 << HC_MAP_GPA_RANGE) == 0 {
                return Err(Error::Unsupported(
                    "KVM_CAP_EXIT_HYPERCALL for KVM_HC_MAP_GPA_RANGE".into(),
                ));
            }
            enable(
                &vm,
                CAP_EXIT_HYPERCALL,
                1 << HC_MAP_GPA_RANGE,
                "KVM_CAP_EXIT_HYPERCALL",
            )?;
        }
        let mem = GuestMemory::new(len)
            .map_err(|e| Error::Memory(format!("mmap of {len} bytes: {e}")))?;
        mem.register(&vm, 0, 0)
            .map_err(Error::kvm("KVM_SET_USER_MEMORY_REGION"))?;
        let vcpu = vm.create_vcpu(0).map_err(Error::kvm("KVM_CREATE_VCPU"))?;
        let cpuid = kvm
            .get_supported_cpuid(KVM_MAX_CPUID_ENTRIES)
            .map_err(Error::kvm("KVM_GET_SUPPORTED_CPUID"))?;
        vcpu.set_cpuid2(&cpuid)
            .map_err(Error::kvm("KVM_SET_CPUID2"))?;
        Ok(MicroVm {
            vcpu,
            vm,
            eventfds: Vec::new(),
            mem,
            mode: Mode::Real,
            coalesced_ring: false,
            initial: None,
        })
    }

    /// The VM fd, for set-ups this type does not wrap.
    pub fn vm_fd(&self) -> &VmFd {
        &self.vm
    }

    /// The vCPU fd.
    pub fn vcpu_fd(&self) -> &VcpuFd {
        &self.vcpu
    }

    /// The binary statistics of the VM (a new fd; it keeps the VM alive until dropped).
    pub fn vm_stats(&self) -> io::Result<StatsFd> {
        StatsFd::open(sys::borrow_fd(&self.vm))
    }

    /// The binary statistics of the vCPU.
    pub fn vcpu_stats(&self) -> io::Result<StatsFd> {
        StatsFd::open(sys::borrow_fd(&self.vcpu))
    }

    /// The mode of the loaded program.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The host address of guest-physical 0 (the start of the guest's RAM mapping).
    pub fn host_addr(&self) -> usize {
        self.mem.host_addr()
    }

    /// Asks the host for transparent huge pages behind the guest's RAM; call it before the
    /// RAM is written.
    pub fn advise_huge_pages(&self) -> io::Result<()> {
        self.mem.advise_huge()
    }

    /// The guest's RAM size in bytes.
    pub fn mem_bytes(&self) -> usize {
        self.mem.len()
    }

    /// Copies `bytes` into guest RAM at `gpa`.
    pub fn write_mem(&mut self, gpa: u64, bytes: &[u8]) -> Result<(), Error> {
        let len = self.mem.len();
        let dest = usize::try_from(gpa)
            .ok()
            .and_then(|start| Some(start..start.checked_add(bytes.len())?))
            .and_then(|range| self.mem.as_mut_slice().get_mut(range))
            .ok_or_else(|| {
                Error::Memory(format!(
                    "{} bytes at {gpa:#x} do not fit in {len:#x} bytes of guest RAM",
                    bytes.len()
                ))
            })?;
        dest.copy_from_slice(bytes);
        Ok(())
    }

    /// Guest RAM at `gpa`, `len` bytes (None when out of range).
    pub fn read_mem(&self, gpa: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(gpa).ok()?;
        self.mem.as_slice().get(start..start.checked_add(len)?)
    }

    /// Loads a 16-bit real-mode program (see [`MicroVm::load`]).
    pub fn load_real_mode(&mut self, code: &[u8]) -> Result<(), Error> {
        self.load(Mode::Real, code)
    }

    /// Loads `code` (assembled for `mode` at [`CODE_ADDR`]) with the tables and exception
    /// stubs of `mode`, and points the vCPU at it: general registers zero, rflags 2 (no
    /// interrupts, IOPL 0), the stack at `STACK_TOP` (`USER_STACK_TOP` in ring 3).
    pub fn load(&mut self, mode: Mode, code: &[u8]) -> Result<(), Error> {
        if code.len() > CODE_MAX {
            return Err(Error::Memory(format!(
                "a {}-byte program is larger than the {CODE_MAX}-byte code area",
                code.len()
            )));
        }
        for (gpa, bytes) in tables::pieces(mode)? {
            self.write_mem(gpa, &bytes)?;
        }
        self.write_mem(CODE_ADDR, code)?;
        let mut sregs = self.vcpu.get_sregs().map_err(Error::kvm("KVM_GET_SREGS"))?;
        tables::set_sregs(&mut sregs, mode);
        let regs = kvm_regs {
            rip: CODE_ADDR,
            rsp: if mode.is_user() {
                USER_STACK_TOP
            } else {
                STACK_TOP
            },
            rflags: 2,
            ..kvm_regs::default()
        };
        self.mode = mode;
        self.initial = Some((regs, sregs));
        self.restart()
    }

    /// Points the vCPU at the start of the loaded program again, with the registers `load`
    /// gave it, so the same program can run many times in one VM.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.restart_with(|_| {})
    }

    /// [`MicroVm::restart`], with `edit` changing the initial general registers first (e.g. a
    /// loop count in rdi).
    pub fn restart_with(&mut self, edit: impl FnOnce(&mut kvm_regs)) -> Result<(), Error> {
        let Some((regs, sregs)) = &self.initial else {
            return Err(Error::Memory("no program loaded".into()));
        };
        let mut regs = *regs;
        edit(&mut regs);
        self.vcpu
            .set_sregs(sregs)
            .map_err(Error::kvm("KVM_SET_SREGS"))?;
        self.vcpu
            .set_regs(&regs)
            .map_err(Error::kvm("KVM_SET_REGS"))
    }

    /// Registers an ioeventfd (any length, any value) at `addr`; returns its index for
    /// [`MicroVm::ioeventfd_count`].
    pub fn add_ioeventfd(&mut self, addr: IoEventAddress) -> Result<usize, Error> {
        let fd =
            EventFd::new(libc::EFD_NONBLOCK).map_err(|e| Error::Memory(format!("eventfd: {e}")))?;
        self.vm
            .register_ioevent(&fd, &addr, NoDatamatch)
            .map_err(Error::kvm("KVM_IOEVENTFD"))?;
        self.eventfds.push(fd);
        Ok(self.eventfds.len() - 1)
    }

    /// Ioeventfd `index`, for a device thread that waits on it.
    pub fn ioeventfd(&self, index: usize) -> Option<&EventFd> {
        self.eventfds.get(index)
    }

    /// The 32-bit word of guest RAM at `gpa`, shared with a device thread while the vCPU runs;
    /// the caller keeps the VM alive while the word is used.
    pub(crate) fn ram_word(&self, gpa: u64) -> Option<super::sys::RamWord> {
        self.mem.word(usize::try_from(gpa).ok()?)
    }

    /// How many times ioeventfd `index` was signalled since the last call (0 if none).
    pub fn ioeventfd_count(&self, index: usize) -> u64 {
        self.eventfds
            .get(index)
            .and_then(|fd| fd.read().ok())
            .unwrap_or(0)
    }

    /// Makes `gpa..gpa + size` a coalesced-MMIO zone and maps the vCPU's ring, which the run
    /// loop drains after every exit.
    pub fn add_coalesced_mmio(&mut self, gpa: u64, size: u32) -> Result<(), Error> {
        if !self.vm.check_extension(Cap::CoalescedMmio) {
            return Err(Error::Unsupported("KVM_CAP_COALESCED_MMIO".into()));
        }
        self.vm
            .register_coalesced_mmio(IoEventAddress::Mmio(gpa), size)
            .map_err(Error::kvm("KVM_REGISTER_COALESCED_MMIO"))?;
        self.vcpu
            .map_coalesced_mmio_ring()
            .map_err(Error::kvm("mmap of the coalesced MMIO ring"))?;
        self.coalesced_ring = true;
        Ok(())
    }
}

fn enable(vm: &VmFd, cap: u32, arg: u64, name: &str) -> Result<(), Error> {
    if vm.check_extension_raw(libc::c_ulong::from(cap)) <= 0 {
        return Err(Error::Unsupported(name.to_string()));
    }
    let mut c = kvm_enable_cap {
        cap,
        ..kvm_enable_cap::default()
    };
    c.args[0] = arg;
    vm.enable_cap(&c).map_err(|source| Error::Kvm {
        op: "KVM_ENABLE_CAP",
        source,
    })
}
