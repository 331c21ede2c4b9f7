//! The unsafe boundary of the micro-VM, kept in one place: the anonymous mapping that backs
//! guest memory and its registration with KVM, the thread handle and signal the watchdog uses
//! to interrupt a hung `KVM_RUN`, the union read behind KVM_EXIT_INTERNAL_ERROR, and the
//! borrow of a KVM object's fd for its binary statistics. Every
//! `unsafe` block carries its SAFETY argument; nothing outside this file needs `unsafe`.

use std::io;
use std::ptr::NonNull;
use std::sync::OnceLock;

use kvm_bindings::{kvm_run, kvm_userspace_memory_region};
use kvm_ioctls::VmFd;

/// Anonymous, private, zero-filled memory that backs the guest's RAM. Unmapped on drop; the
/// owner must drop the VM that uses it first (see `MicroVm`'s field order).
#[derive(Debug)]
pub(super) struct GuestMemory {
    ptr: NonNull<u8>,
    len: usize,
}

impl GuestMemory {
    /// Maps `len` bytes (a non-zero multiple of the page size).
    pub(super) fn new(len: usize) -> io::Result<Self> {
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches
        // no existing memory; the result is checked before use.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(addr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        Ok(Self { ptr, len })
    }

    /// The size in bytes.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The host address the guest's RAM starts at (to find it in /proc/self/smaps).
    pub(super) fn host_addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Asks for transparent huge pages to back the guest's RAM (before it is touched).
    pub(super) fn advise_huge(&self) -> io::Result<()> {
        // SAFETY: the range is exactly this live mapping; madvise changes no contents.
        let rc = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_HUGEPAGE) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The guest's RAM, read-only.
    pub(super) fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is a live mapping of `len` readable bytes owned by `self`. The guest only
        // writes to it while `MicroVm::run` holds `&mut` of the VM (and so of `self`), so no
        // shared borrow overlaps a guest write.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The guest's RAM, writable.
    pub(super) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only host-side borrow, and the
        // vCPU is not running while it exists.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Makes this memory the guest-physical range `gpa..gpa + len` in memory slot `slot`.
    pub(super) fn register(&self, vm: &VmFd, slot: u32, gpa: u64) -> Result<(), kvm_ioctls::Error> {
        let region = kvm_userspace_memory_region {
            slot,
            flags: 0,
            guest_phys_addr: gpa,
            memory_size: self.len as u64,
            userspace_addr: self.ptr.as_ptr() as u64,
        };
        // SAFETY: the region is a live mapping of exactly `memory_size` bytes, and `MicroVm`
        // declares its VM and vCPU fields before its memory field, so they are dropped (and the
        // VM closed) before this mapping is unmapped: KVM never sees a dangling host address.
        unsafe { vm.set_user_memory_region(region) }
    }
}

impl Drop for GuestMemory {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `new`, unmapped only here; no
        // slice borrowed from it can outlive `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A thread the watchdog can interrupt (a `pthread_t`).
#[derive(Debug, Clone, Copy)]
pub(super) struct ThreadHandle(libc::pthread_t);

impl ThreadHandle {
    /// The calling thread.
    pub(super) fn current() -> Self {
        // SAFETY: pthread_self has no preconditions and cannot fail.
        Self(unsafe { libc::pthread_self() })
    }

    /// Sends `signal` to the thread. The thread must still be alive: the watchdog only kicks
    /// the vCPU thread while that thread is inside `MicroVm::run`, which joins the watchdog
    /// before returning.
    pub(super) fn kick(self, signal: libc::c_int) -> io::Result<()> {
        // SAFETY: the handle names a live thread (see above), and `signal` has a handler
        // installed by `kick_signal`, so delivery cannot terminate the process.
        let rc = unsafe { libc::pthread_kill(self.0, signal) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(rc))
        }
    }
}

extern "C" fn on_kick(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {}

/// The real-time signal used to interrupt `KVM_RUN` (SIGRTMIN), with a do-nothing handler
/// installed once per process *without* `SA_RESTART`, so a blocked `KVM_RUN` returns `EINTR`.
pub(super) fn kick_signal() -> Result<libc::c_int, String> {
    static SIGNAL: OnceLock<Result<libc::c_int, String>> = OnceLock::new();
    SIGNAL
        .get_or_init(|| {
            let signal = vmm_sys_util::signal::SIGRTMIN();
            vmm_sys_util::signal::register_signal_handler(signal, on_kick)
                .map(|()| signal)
                .map_err(|e| format!("installing the handler for signal {signal}: {e}"))
        })
        .clone()
}

/// The suberror and data words of a KVM_EXIT_INTERNAL_ERROR exit.
pub(super) fn internal_error(run: &kvm_run) -> (u32, Vec<u64>) {
    // SAFETY: only called right after KVM_RUN returned KVM_EXIT_INTERNAL_ERROR, for which the
    // kernel fills the `internal` member of the exit union.
    let internal = unsafe { run.__bindgen_anon_1.internal };
    let n = (internal.ndata as usize).min(internal.data.len());
    (internal.suberror, internal.data[..n].to_vec())
}

/// The fd of a KVM object (VM or vCPU), borrowed for as long as the object.
pub(crate) fn borrow_fd<T: std::os::fd::AsRawFd>(owner: &T) -> std::os::fd::BorrowedFd<'_> {
    // SAFETY: `owner` owns the open fd and cannot close it while it is borrowed here: the
    // returned borrow lives no longer than `&owner`.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(owner.as_raw_fd()) }
}

/// A 32-bit word of guest RAM that a host thread reads and writes while the vCPU runs (the
/// IO path's ring indices), always atomically.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RamWord(NonNull<std::sync::atomic::AtomicU32>);

// SAFETY: a `RamWord` points into a `GuestMemory` mapping, is only made by `GuestMemory::word`
// and only used by threads scoped inside the function that owns the VM (and so the mapping),
// and every access is atomic, so sharing it between threads is sound.
unsafe impl Send for RamWord {}
// SAFETY: as above.
unsafe impl Sync for RamWord {}

impl RamWord {
    fn cell(&self) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: the pointer is 4-byte aligned, inside a live mapping (see the Send impl), and
        // AtomicU32 has the layout of u32.
        unsafe { self.0.as_ref() }
    }

    /// The word's value.
    pub(crate) fn load(&self) -> u32 {
        self.cell().load(std::sync::atomic::Ordering::Acquire)
    }

    /// Sets the word.
    pub(crate) fn store(&self, v: u32) {
        self.cell().store(v, std::sync::atomic::Ordering::Release);
    }
}

impl GuestMemory {
    /// The word at byte `offset` (4-byte aligned, inside the mapping); the caller keeps the
    /// memory alive for as long as the word is used.
    pub(super) fn word(&self, offset: usize) -> Option<RamWord> {
        if !offset.is_multiple_of(4) || offset.checked_add(4)? > self.len {
            return None;
        }
        // SAFETY: `offset + 4 <= len`, so the pointer stays inside the mapping.
        let p = unsafe { self.ptr.as_ptr().add(offset) };
        NonNull::new(p.cast::<std::sync::atomic::AtomicU32>()).map(RamWord)
    }
}

/// KVM_INTERRUPT: queues `vector` for injection into a vCPU that has no in-kernel local APIC
/// (the VMM plays the interrupt controller). `_IOW(KVMIO, 0x86, struct kvm_interrupt)`.
pub(super) fn inject_interrupt(
    vcpu: &kvm_ioctls::VcpuFd,
    vector: u32,
) -> Result<(), kvm_ioctls::Error> {
    use std::os::fd::AsRawFd;
    const KVM_INTERRUPT: libc::c_ulong = 0x4004_ae86;
    let irq = kvm_bindings::kvm_interrupt { irq: vector };
    // SAFETY: the fd is a live vCPU fd; the argument is a valid `kvm_interrupt` that the kernel
    // only reads during the call.
    let rc = unsafe { libc::ioctl(vcpu.as_raw_fd(), KVM_INTERRUPT, &raw const irq) };
    if rc == 0 {
        Ok(())
    } else {
        Err(vmm_sys_util::errno::Error::last())
    }
}

/// Waits up to `timeout_ms` for `fd` to become readable; `false` on timeout.
pub(crate) fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, timeout_ms: i32) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, the count says one.
    let rc = unsafe { libc::poll(&raw mut p, 1, timeout_ms) };
    match rc {
        r if r < 0 => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// CPU time the calling thread has used, in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}
