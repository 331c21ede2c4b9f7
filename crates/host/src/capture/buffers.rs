//! The ring buffers' kernel memory. `--buffer-kb` is per CPU, and the kernel allocates it for
//! every online CPU of its instance, so the memory it takes is the size times the CPUs: a
//! value is refused outside [`MIN_KB`]..=[`MAX_KB`], and when the total would be more than
//! half of the memory available now; what it takes is said at start.

use virtlens_core::render::bytes;

use super::error::CaptureError;

/// The smallest per-CPU buffer (a few pages; the kernel rounds smaller sizes up anyway).
pub(crate) const MIN_KB: u32 = 64;
/// The largest per-CPU buffer: 1 GiB (a CPU filling more than that before the reader, which
/// reads every 25 ms, empties it is not a buffer-size problem).
pub(crate) const MAX_KB: u32 = 1 << 20;

/// The ring buffers a capture asks the kernel for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct BufferPlan {
    pub per_cpu_kb: u32,
    pub cpus: usize,
    /// Kernel memory of all of them, bytes.
    pub total_bytes: u64,
}

impl BufferPlan {
    /// The plan for `per_cpu_kb` on this host's online CPUs, checked against the memory
    /// available now.
    pub fn for_host(per_cpu_kb: u32) -> Result<BufferPlan, CaptureError> {
        BufferPlan::new(per_cpu_kb, online_cpus())?.fits(mem_available())
    }

    /// The plan, when it takes at most half of `available` bytes (or that is unknown).
    fn fits(self, available: Option<u64>) -> Result<BufferPlan, CaptureError> {
        match available {
            Some(avail) if self.total_bytes > avail / 2 => Err(CaptureError::Usage(format!(
                "--buffer-kb {}: {}, more than half of the memory available now ({}); give a \
                 smaller --buffer-kb",
                self.per_cpu_kb,
                self.describe(),
                bytes(avail)
            ))),
            _ => Ok(self),
        }
    }

    /// The plan for `per_cpu_kb` on `cpus` CPUs, the bounds checked.
    pub fn new(per_cpu_kb: u32, cpus: usize) -> Result<BufferPlan, CaptureError> {
        if !(MIN_KB..=MAX_KB).contains(&per_cpu_kb) {
            return Err(CaptureError::Usage(format!(
                "--buffer-kb must be between {MIN_KB} and {MAX_KB} (KiB per CPU), not {per_cpu_kb}"
            )));
        }
        Ok(BufferPlan {
            per_cpu_kb,
            cpus,
            total_bytes: u64::from(per_cpu_kb) * 1024 * cpus as u64,
        })
    }

    /// `8 MiB per CPU × 2 CPUs = 16 MiB of kernel memory`.
    pub fn describe(&self) -> String {
        format!(
            "ring buffers of {} per CPU × {} CPUs = {} of kernel memory",
            bytes(u64::from(self.per_cpu_kb) * 1024),
            self.cpus,
            bytes(self.total_bytes)
        )
    }
}

/// The online CPUs (`/sys/devices/system/cpu/online`: `0-3,8-11`).
fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| cpu_list_len(s.trim()))
        .or_else(|| std::thread::available_parallelism().ok().map(Into::into))
        .unwrap_or(1)
}

fn cpu_list_len(list: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().ok()?.checked_sub(a.parse().ok()?)? + 1,
            None => part.parse::<usize>().map(|_| 1).ok()?,
        };
    }
    (n > 0).then_some(n)
}

/// `MemAvailable` of /proc/meminfo, bytes.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_the_memory_they_imply() {
        assert!(BufferPlan::new(0, 2).is_err());
        assert!(BufferPlan::new(MAX_KB + 1, 2).is_err());
        let p = BufferPlan::new(8192, 2).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.total_bytes, 16 << 20);
        assert_eq!(
            p.describe(),
            "ring buffers of 8 MiB per CPU × 2 CPUs = 16 MiB of kernel memory"
        );
        assert_eq!(p.fits(Some(32 << 20)).ok(), Some(p));
        assert_eq!(p.fits(None).ok(), Some(p));
        let e = p.fits(Some(31 << 20)).unwrap_err().to_string();
        assert!(
            e.contains(
                "16 MiB of kernel memory, more than half of the memory available now (31 MiB)"
            ),
            "{e}"
        );
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list_len("0-1"), Some(2));
        assert_eq!(cpu_list_len("0-3,8-11"), Some(8));
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len(""), None);
    }
}
