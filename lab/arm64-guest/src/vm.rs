//! The VM: one memory slot holding the code, one vCPU started at it, and the run loop.

use kvm_bindings::{KVM_ARM_VCPU_PSCI_0_2, kvm_userspace_memory_region, kvm_vcpu_init};
use kvm_ioctls::{Kvm, VcpuExit};

use crate::code;

/// Where the code is loaded and starts.
const CODE_AT: u64 = 0x8000_0000;
const MEM_SIZE: usize = 0x1_0000;
/// The register id of the program counter (`KVM_REG_ARM64 | KVM_REG_SIZE_U64 |
/// KVM_REG_ARM_CORE | offsetof(kvm_regs, regs.pc) / 4`).
const PC: u64 = 0x6030_0000_0010_0040;
/// `KVM_SYSTEM_EVENT_SHUTDOWN`.
const SHUTDOWN: u32 = 1;

/// Runs the guest; the number of MMIO writes this program was handed.
pub fn run(writes: u32, hvcs: u32) -> Result<u32, String> {
    let words = code::program(writes, hvcs);
    let kvm = Kvm::new().map_err(|e| format!("/dev/kvm: {e}"))?;
    let vm = kvm.create_vm().map_err(|e| format!("KVM_CREATE_VM: {e}"))?;
    // SAFETY: a fresh anonymous private mapping, owned by this process until it exits.
    let mem = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            MEM_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    if bytes.len() > MEM_SIZE {
        return Err("the program does not fit its memory".into());
    }
    // SAFETY: `mem` is MEM_SIZE writable bytes and `bytes` fits in it.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), mem.cast::<u8>(), bytes.len()) };
    let region = kvm_userspace_memory_region {
        slot: 0,
        flags: 0,
        guest_phys_addr: CODE_AT,
        memory_size: MEM_SIZE as u64,
        userspace_addr: mem as u64,
    };
    // SAFETY: the mapping lives as long as the VM (until the process exits).
    unsafe { vm.set_user_memory_region(region) }.map_err(|e| format!("KVM_SET_USER_MEMORY_REGION: {e}"))?;
    let mut vcpu = vm.create_vcpu(0).map_err(|e| format!("KVM_CREATE_VCPU: {e}"))?;
    let mut init = kvm_vcpu_init::default();
    vm.get_preferred_target(&mut init).map_err(|e| format!("KVM_ARM_PREFERRED_TARGET: {e}"))?;
    init.features[0] |= 1 << KVM_ARM_VCPU_PSCI_0_2;
    vcpu.vcpu_init(&init).map_err(|e| format!("KVM_ARM_VCPU_INIT: {e}"))?;
    vcpu.set_one_reg(PC, &CODE_AT.to_le_bytes()).map_err(|e| format!("setting the PC: {e}"))?;
    let mut seen = 0u32;
    loop {
        match vcpu.run().map_err(|e| format!("KVM_RUN: {e}"))? {
            VcpuExit::MmioWrite(addr, _) if addr == code::MMIO_AT => seen += 1,
            VcpuExit::SystemEvent(SHUTDOWN, _) => break,
            other => return Err(format!("unexpected exit {other:?} after {seen} writes")),
        }
    }
    if seen != writes {
        return Err(format!("{seen} MMIO writes reached this program, {writes} were made"));
    }
    Ok(seen)
}
