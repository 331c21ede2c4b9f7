//! Per host thread pairing state, following `perf kvm stat`'s definitions: an exit lasts until
//! the next entry on the same thread; a port or MSR access from its event to the next entry;
//! an MMIO write from its `kvm_mmio` to the next entry; an MMIO read from the exit before it
//! to its `kvm_mmio`. A new begin replaces an unfinished one; an end before its begin is
//! skipped. The vCPU id comes from the events, or from a `CPU N/KVM` thread name.

/// A begun event waiting for its end: the accumulator slot and the start time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pending {
    pub slot: Option<(usize, u64)>,
}

impl Pending {
    /// Starts `slot` at `ts`.
    pub fn begin(&mut self, slot: usize, ts: Option<u64>) {
        self.slot = ts.map(|t| (slot, t));
    }

    /// Ends at `ts`: the slot and duration, if something was pending and time runs forward.
    pub fn end(&mut self, ts: Option<u64>) -> Option<(usize, u64)> {
        let (slot, start) = self.slot.take()?;
        let end = ts?;
        (end >= start).then(|| (slot, end - start))
    }
}

/// What one host thread is in the middle of.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    pub vcpu: Option<u32>,
    pub pid: Option<u32>,
    pub exit: Pending,
    pub pio: Pending,
    pub msr: Pending,
    pub mmio_write: Pending,
    /// When the last exit happened, for MMIO reads (exit → `kvm_mmio` read).
    pub last_exit_ts: Option<u64>,
}

/// The vCPU index in a QEMU vCPU thread name: `CPU 3/KVM` → 3.
pub fn vcpu_from_comm(comm: &str) -> Option<u32> {
    let rest = comm.strip_prefix("CPU ")?;
    let (n, kind) = rest.split_once('/')?;
    (kind == "KVM").then(|| n.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_pairs_forward_only() {
        let mut p = Pending::default();
        p.begin(3, Some(100));
        assert_eq!(p.end(Some(250)), Some((3, 150)));
        assert_eq!(p.end(Some(300)), None, "already ended");
        p.begin(1, Some(500));
        assert_eq!(p.end(Some(400)), None, "end before begin is skipped");
        p.begin(1, None);
        assert_eq!(p.end(Some(400)), None, "no timestamps, no duration");
    }

    #[test]
    fn qemu_vcpu_thread_names() {
        assert_eq!(vcpu_from_comm("CPU 3/KVM"), Some(3));
        assert_eq!(vcpu_from_comm("CPU 12/KVM"), Some(12));
        assert_eq!(vcpu_from_comm("CPU x/KVM"), None);
        assert_eq!(vcpu_from_comm("qemu-system-x86"), None);
    }
}
