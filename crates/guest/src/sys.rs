//! The unsafe boundary of the guest side, in one place: CPUID, the thread id, futex wait/wake,
//! CPU pinning, getrusage, a raw system call, and anonymous memory mappings with a chosen page
//! size. Every `unsafe` block carries its SAFETY argument; nothing else in the crate needs one.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU32;

/// CPUID `leaf`/`subleaf`: `[eax, ebx, ecx, edx]`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn cpuid(leaf: u32, subleaf: u32) -> [u32; 4] {
    #[allow(unused_unsafe)]
    // SAFETY: CPUID exists on every x86-64 CPU and has no side effects.
    let r = unsafe { std::arch::x86_64::__cpuid_count(leaf, subleaf) };
    [r.eax, r.ebx, r.ecx, r.edx]
}

/// Sleeps while `word` holds `expected` (FUTEX_WAIT, private). Returns on wake-up, on a
/// changed value (EAGAIN) or on a signal; the caller re-checks the word.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a live, aligned u32 for the duration of the call; a null timeout means
    // wait without a limit; the kernel only reads the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes up to `n` threads sleeping on `word` (FUTEX_WAKE, private).
pub(crate) fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE does not touch memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        );
    }
}

/// Pins the calling thread to CPU `cpu`.
pub(crate) fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it (cpu is checked
    // against the set's size first); sched_setaffinity reads `size_of` bytes of it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::other(format!("CPU {cpu} is beyond the CPU set")));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The process's CPU time and context switches so far.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub user_s: f64,
    pub sys_s: f64,
    pub voluntary: u64,
    pub involuntary: u64,
}

/// getrusage(RUSAGE_SELF): all threads of the process.
pub(crate) fn usage() -> Usage {
    // SAFETY: a zeroed rusage is valid; getrusage fills it and cannot fail for RUSAGE_SELF.
    let r = unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut r);
        r
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Usage {
        user_s: secs(r.ru_utime),
        sys_s: secs(r.ru_stime),
        voluntary: r.ru_nvcsw as u64,
        involuntary: r.ru_nivcsw as u64,
    }
}

/// One raw `getppid` system call (no libc caching): the cheapest real kernel entry.
pub(crate) fn raw_getppid() -> i64 {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getppid) as i64 }
}

/// The page size asked of a [`Mapping`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// 4 KiB pages: transparent huge pages refused (MADV_NOHUGEPAGE).
    Small,
    /// 2 MiB pages: hugetlbfs (MAP_HUGETLB) when the pool has pages, else transparent huge
    /// pages asked for with MADV_HUGEPAGE on a 2 MiB-aligned range.
    Huge,
}

/// How the pages of a [`Mapping`] were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Obtained {
    Small,
    HugeTlb,
    /// Transparent huge pages were asked for; whether the kernel gave them is in smaps.
    ThpAdvised,
}

const HUGE: usize = 2 << 20;

/// Anonymous private memory, zero-filled, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    base: NonNull<u8>,
    base_len: usize,
    /// The usable, aligned part.
    start: usize,
    len: usize,
    pub obtained: Obtained,
}

fn map(len: usize, flags: libc::c_int) -> Option<NonNull<u8>> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
    // existing memory; the result is checked.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    NonNull::new(addr.cast::<u8>())
}

impl Mapping {
    /// `len` bytes (rounded up to 2 MiB) with the page size `pages` asks for.
    pub fn new(len: usize, pages: Pages) -> io::Result<Mapping> {
        let len = len.max(1).next_multiple_of(HUGE);
        if pages == Pages::Huge
            && let Some(base) = map(len, libc::MAP_HUGETLB)
        {
            return Ok(Mapping {
                base,
                base_len: len,
                start: 0,
                len,
                obtained: Obtained::HugeTlb,
            });
        }
        let base_len = len + HUGE;
        let base = map(base_len, 0).ok_or_else(io::Error::last_os_error)?;
        let addr = base.as_ptr() as usize;
        let start = addr.next_multiple_of(HUGE) - addr;
        let advice = match pages {
            Pages::Small => libc::MADV_NOHUGEPAGE,
            Pages::Huge => libc::MADV_HUGEPAGE,
        };
        // SAFETY: the range lies inside the mapping just made; madvise changes no contents.
        // A refusal (THP compiled out) leaves the default pages, which smaps will show.
        unsafe {
            libc::madvise(base.as_ptr().add(start).cast(), len, advice);
        }
        Ok(Mapping {
            base,
            base_len,
            start,
            len,
            obtained: match pages {
                Pages::Small => Obtained::Small,
                Pages::Huge => Obtained::ThpAdvised,
            },
        })
    }

    /// The address of the usable part (for /proc/self/smaps).
    pub fn addr(&self) -> usize {
        self.base.as_ptr() as usize + self.start
    }

    /// The memory as 64-bit words.
    pub fn words(&mut self) -> &mut [u64] {
        // SAFETY: `start..start + len` lies in the live mapping owned by `self`, is 2 MiB
        // aligned (so u64-aligned), zero-initialised and borrowed mutably through `&mut self`.
        unsafe {
            std::slice::from_raw_parts_mut(self.base.as_ptr().add(self.start).cast(), self.len / 8)
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in `new`, unmapped once; no borrow outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.base_len);
        }
    }
}

/// RTC_IRQP_SET: `_IOW('p', 0x0c, unsigned long)`.
const RTC_IRQP_SET: libc::c_ulong = 0x4008_700c;
/// RTC_PIE_ON / RTC_PIE_OFF: `_IO('p', 0x05)` / `_IO('p', 0x06)`.
const RTC_PIE_ON: libc::c_ulong = 0x7005;
const RTC_PIE_OFF: libc::c_ulong = 0x7006;

/// Sets an RTC's periodic interrupt rate (a power of two, 2..=8192 Hz; above the device's
/// `max_user_freq` only with CAP_SYS_RESOURCE) and turns the periodic interrupt on.
pub(crate) fn rtc_periodic(fd: std::os::fd::RawFd, hz: u64) -> io::Result<()> {
    let hz = libc::c_ulong::try_from(hz).map_err(io::Error::other)?;
    // SAFETY: RTC_IRQP_SET takes the rate by value and RTC_PIE_ON takes no argument; neither
    // touches memory of this process; an fd that is not an RTC makes them fail with ENOTTY.
    unsafe {
        if libc::ioctl(fd, RTC_IRQP_SET, hz) != 0 || libc::ioctl(fd, RTC_PIE_ON, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Turns an RTC's periodic interrupt off.
pub(crate) fn rtc_periodic_off(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: as in `rtc_periodic`: no memory is passed.
    if unsafe { libc::ioctl(fd, RTC_PIE_OFF, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
