//! Per host thread pairing state, following `perf kvm stat`'s definitions: an exit lasts until
//! the next entry on the same thread; a port or MSR access from its event to the next entry;
//! an MMIO write from its `kvm_mmio` to the next entry; an MMIO read from the exit before it
//! to its `kvm_mmio`. A new begin replaces an unfinished one; an end before its begin is
//! skipped. The vCPU id comes from the events, or from a `CPU N/KVM` thread name.

/// A begun event waiting for its end: the accumulator slot and the start time.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Pending {
    pub slot: Option<(usize, u64)>,
}

impl Pending {
    /// Starts `slot` at `ts`.
    pub(super) fn begin(&mut self, slot: usize, ts: Option<u64>) {
        self.slot = ts.map(|t| (slot, t));
    }

    /// Ends at `ts`: the slot and duration, if something was pending and time runs forward.
    pub(super) fn end(&mut self, ts: Option<u64>) -> Option<(usize, u64)> {
        let (slot, start) = self.slot.take()?;
        let end = ts?;
        (end >= start).then(|| (slot, end - start))
    }
}

/// What one host thread is in the middle of.
#[derive(Debug, Clone)]
pub(super) struct Thread<K: Copy + Eq> {
    pub vcpu: Option<u32>,
    pub pid: Option<u32>,
    pub exit: Pending,
    pub pio: Pending,
    pub msr: Pending,
    pub mmio_write: Pending,
    /// When the last exit happened, for MMIO reads (exit → `kvm_mmio` read).
    pub last_exit_ts: Option<u64>,
    /// The accumulator slots this thread hit last, so most events skip the hash map.
    pub slots: SlotCache<K>,
    /// The slot counting each event name (by name id) for this thread: a plain index.
    pub by_name: Vec<Option<usize>>,
    /// The thread's name was already looked at for a vCPU id (it is parsed once).
    pub comm_seen: bool,
    /// The guest-RIP slots this thread hit, direct-mapped by (reason, rip): a vCPU exits at a
    /// few hundred places, too many for `slots`. Empty until the thread's first exit with a
    /// RIP, and only for the first [`RIP_CACHED_THREADS`] threads (bounded memory).
    pub rips: Vec<RipSlot>,
}

/// One entry of [`Thread::rips`]: reason id, RIP and accumulator (`u32::MAX`: empty).
#[derive(Debug, Clone, Copy)]
pub(super) struct RipSlot {
    pub rip: u64,
    pub reason: u32,
    pub slot: u32,
}

impl RipSlot {
    const EMPTY: RipSlot = RipSlot {
        rip: 0,
        reason: 0,
        slot: u32::MAX,
    };
}

/// Entries of a thread's RIP cache.
pub(super) const RIP_WAYS: usize = 1024;

/// How many threads (by index) get a RIP cache: 16 KiB each.
pub(super) const RIP_CACHED_THREADS: usize = 256;

impl<K: Copy + Eq> Thread<K> {
    /// The accumulator cached for exit reason `reason` at `rip`.
    #[inline]
    pub(super) fn rip_slot(&self, reason: u32, rip: u64) -> Option<usize> {
        let e = self.rips.get(rip_way(reason, rip))?;
        (e.slot != u32::MAX && e.rip == rip && e.reason == reason).then_some(e.slot as usize)
    }

    /// Remembers `slot` for `reason` at `rip`; `cached`: whether this thread may have a cache.
    pub(super) fn put_rip_slot(&mut self, reason: u32, rip: u64, slot: usize, cached: bool) {
        let Ok(slot) = u32::try_from(slot) else {
            return;
        };
        if self.rips.is_empty() {
            if !cached {
                return;
            }
            self.rips = vec![RipSlot::EMPTY; RIP_WAYS];
        }
        if let Some(e) = self.rips.get_mut(rip_way(reason, rip)) {
            *e = RipSlot { rip, reason, slot };
        }
    }

    /// Forgets every cached slot (the VM or vCPU changed, or the slots were renumbered).
    pub(super) fn forget_slots(&mut self) {
        self.slots.clear();
        self.by_name.clear();
        self.rips.fill(RipSlot::EMPTY);
    }
}

#[inline]
fn rip_way(reason: u32, rip: u64) -> usize {
    ((rip >> 2) ^ (rip >> 12) ^ u64::from(reason).wrapping_mul(0x9e37)) as usize % RIP_WAYS
}

impl<K: Copy + Eq> Default for Thread<K> {
    fn default() -> Self {
        Self {
            vcpu: None,
            pid: None,
            exit: Pending::default(),
            pio: Pending::default(),
            msr: Pending::default(),
            mmio_write: Pending::default(),
            last_exit_ts: None,
            slots: SlotCache::default(),
            by_name: Vec::new(),
            comm_seen: false,
            rips: Vec::new(),
        }
    }
}

/// Recently used `key → slot` pairs in a small direct-mapped table: the caller picks the way
/// (a cheap hash of the key), so a lookup is one compare. Valid while the thread's VM and vCPU
/// stay the same (the owner clears it when they change).
#[derive(Debug, Clone)]
pub(super) struct SlotCache<K: Copy + Eq> {
    entries: [Option<(K, usize)>; SLOT_WAYS],
}

/// How many ways a [`SlotCache`] has.
pub(super) const SLOT_WAYS: usize = 16;

impl<K: Copy + Eq> Default for SlotCache<K> {
    fn default() -> Self {
        Self {
            entries: [None; SLOT_WAYS],
        }
    }
}

impl<K: Copy + Eq> SlotCache<K> {
    /// The slot cached for `key` in `way` (taken modulo [`SLOT_WAYS`]).
    #[inline]
    pub(super) fn get(&self, way: usize, key: K) -> Option<usize> {
        match self.entries[way % SLOT_WAYS] {
            Some((k, slot)) if k == key => Some(slot),
            _ => None,
        }
    }

    /// Remembers `key → slot` in `way`, replacing what was there.
    #[inline]
    pub(super) fn put(&mut self, way: usize, key: K, slot: usize) {
        self.entries[way % SLOT_WAYS] = Some((key, slot));
    }

    /// Forgets everything.
    pub(super) fn clear(&mut self) {
        *self = Self::default();
    }
}

/// The most threads followed at once. A host has one thread per vCPU (thousands at most); a
/// stream with endless new thread ids would otherwise grow without bound.
pub(super) const MAX_THREADS: usize = 16_384;

/// Every host thread seen, by tid, with a shortcut for the thread of the previous event
/// (events come in runs from one thread). Past [`MAX_THREADS`] the pairing state is dropped
/// and begun again (counts are unaffected; an exit open at that moment gets no duration).
#[derive(Debug, Clone)]
pub(super) struct Threads<K: Copy + Eq> {
    list: Vec<Thread<K>>,
    index: rustc_hash::FxHashMap<u32, usize>,
    last: Option<(u32, usize)>,
    cap: usize,
    resets: u64,
}

impl<K: Copy + Eq> Default for Threads<K> {
    fn default() -> Self {
        Self::with_cap(MAX_THREADS)
    }
}

impl<K: Copy + Eq> Threads<K> {
    /// Threads followed up to `cap` at once.
    pub(super) fn with_cap(cap: usize) -> Self {
        Self {
            list: Vec::new(),
            index: rustc_hash::FxHashMap::default(),
            last: None,
            cap: cap.max(1),
            resets: 0,
        }
    }

    /// The index of thread `tid`, created on first sight.
    // Inlined for the common case, the same thread as last time: a call cost more than the check.
    #[inline]
    pub(super) fn index(&mut self, tid: u32) -> usize {
        if let Some((t, i)) = self.last
            && t == tid
        {
            return i;
        }
        self.index_looked_up(tid)
    }

    /// [`Threads::index`] for a thread other than the last one.
    #[inline(never)]
    fn index_looked_up(&mut self, tid: u32) -> usize {
        if self.list.len() >= self.cap && !self.index.contains_key(&tid) {
            self.list.clear();
            self.index.clear();
            self.resets += 1;
        }
        let list = &mut self.list;
        let i = *self.index.entry(tid).or_insert_with(|| {
            list.push(Thread::default());
            list.len() - 1
        });
        self.last = Some((tid, i));
        i
    }

    /// The thread at `i` (from [`Threads::index`]).
    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut Thread<K>> {
        self.list.get_mut(i)
    }

    /// The accumulators were renumbered (old index → new): pending begins follow, caches go.
    pub(super) fn renumber(&mut self, renumbering: &[usize]) {
        for t in &mut self.list {
            for p in [&mut t.exit, &mut t.pio, &mut t.msr, &mut t.mmio_write] {
                if let Some((slot, ts)) = p.slot {
                    p.slot = renumbering.get(slot).map(|&s| (s, ts));
                }
            }
            t.forget_slots();
        }
    }

    /// What the caller should say about the threads: whether the cap was met.
    pub(super) fn notes(&self) -> Vec<crate::profile::Note> {
        if self.resets == 0 {
            return Vec::new();
        }
        vec![crate::profile::Note {
            line: None,
            message: format!(
                "more than {} threads at once: the pairing of exits with entries was begun \
                 again {} time(s), so an exit open at those moments has no duration (counts \
                 are exact)",
                self.cap, self.resets
            ),
        }]
    }
}

/// The vCPU index in a QEMU vCPU thread name: `CPU 3/KVM` → 3.
pub(super) fn vcpu_from_comm(comm: &str) -> Option<u32> {
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
    fn slot_cache_is_direct_mapped() {
        let mut c = SlotCache::<u32>::default();
        c.put(3, 7, 70);
        assert_eq!(c.get(3, 7), Some(70));
        assert_eq!(c.get(3, 8), None, "another key in the same way");
        c.put(3 + SLOT_WAYS, 8, 80);
        assert_eq!(c.get(3, 7), None, "replaced");
        assert_eq!(c.get(3, 8), Some(80));
        c.clear();
        assert_eq!(c.get(3, 8), None);
    }

    #[test]
    fn threads_are_indexed_once() {
        let mut t = Threads::<u32>::default();
        let a = t.index(7);
        let b = t.index(9);
        assert_ne!(a, b);
        assert_eq!(t.index(7), a);
        assert_eq!(t.index(7), a);
        assert!(t.get_mut(b).is_some());
    }

    #[test]
    fn endless_new_threads_stay_bounded() {
        let mut t = Threads::<u32>::with_cap(4);
        for tid in 0..1000 {
            let i = t.index(tid);
            assert!(i < 4, "index {i}");
        }
        assert_eq!(t.notes().len(), 1);
        assert!(t.list.len() <= 4);
    }

    #[test]
    fn qemu_vcpu_thread_names() {
        assert_eq!(vcpu_from_comm("CPU 3/KVM"), Some(3));
        assert_eq!(vcpu_from_comm("CPU 12/KVM"), Some(12));
        assert_eq!(vcpu_from_comm("CPU x/KVM"), None);
        assert_eq!(vcpu_from_comm("qemu-system-x86"), None);
    }
}
