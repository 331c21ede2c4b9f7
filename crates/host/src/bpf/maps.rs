//! The maps the aggregation programs fill, their key and value layouts, and reading them.
//!
//! - `counts` (per-CPU hash, [`Limits::counts`] entries): key [`Key`] (VM process, thread,
//!   event, sub, detail) → u64 count per CPU, summed when read.
//! - `hists` (hash, [`Limits::hists`] entries): key [`Key`] with `event` = the latency
//!   [`Pair`](super::plan::Pair) → [`HIST_BUCKETS`] log2 buckets of ns and their sum, added
//!   atomically (a per-CPU value of 520 bytes would cost 520 bytes × CPUs per key).
//! - `starts` (array of [`STARTS_SLOTS`]): the open pair of a thread, in the slot of its
//!   thread id and pair (`((tid << 2) | pair) & (STARTS_SLOTS - 1)`): the thread id, the
//!   start time and the detail. An array lookup is a bounds check and an address (the
//!   verifier inlines it), where the LRU hash it replaced cost a hash and a bucket walk at
//!   each end of every pair. Two threads whose ids share a slot overwrite each other's open
//!   pair: the end sees another thread's id and drops that one latency sample (counted, with
//!   the samples `hists` had no room for).
//! - `overflow` (per-CPU array): per event, the events counted while `counts` was full (the
//!   `other` bucket), and in slot [`HIST_FULL_SLOT`] the latency samples dropped while
//!   `hists` was full.
//! - `zero`: one zeroed histogram value, the template a program inserts a new key with.
//! - `hotc` and `hoth`, each with its `retire` array (per-CPU arrays): the first keys of each
//!   event ([`Limits::hot_slots`] of them) and the first histograms of each pair (half as
//!   many) on each CPU, kept without a hash lookup; see `hot`.
//!
//! Counts are cumulative and never reset by the programs; keys of processes that are gone
//! are deleted after they were read ([`Maps::prune`]).

use std::collections::HashMap;
use std::io;

use super::hot::HotTable;

use super::sys::Map;

const HASH: u32 = 1;
const ARRAY: u32 = 2;
const PERCPU_HASH: u32 = 5;
pub(crate) const PERCPU_ARRAY: u32 = 6;

/// Log2 buckets of a latency histogram: bucket `b` holds durations in `[2^b, 2^(b+1))` ns
/// (bucket 0 also 0 ns).
pub(crate) const HIST_BUCKETS: usize = 64;
/// Bytes of a histogram value: the buckets and the sum of ns.
pub(crate) const HIST_VALUE: usize = (HIST_BUCKETS + 1) * 8;
/// Offset of the sum in a histogram value.
pub(crate) const HIST_SUM_OFFSET: i16 = (HIST_BUCKETS * 8) as i16;
/// Bytes of a [`Key`].
pub(crate) const KEY_LEN: usize = 24;
/// Slots of the overflow array: one per event and one for dropped latency samples.
pub(crate) const OVERFLOW_SLOTS: u32 = 16;
/// The overflow slot counting latency samples dropped while `hists` was full.
pub(crate) const HIST_FULL_SLOT: u32 = OVERFLOW_SLOTS - 1;

/// Indexes of the histograms' hot slots: one per latency pair, and one spare.
const HOT_PAIRS: u32 = 4;

/// Slots of the `starts` array (a power of two): 2^15 threads × 4 pairs, 3 MiB.
pub(crate) const STARTS_SLOTS: u32 = 1 << 17;
/// Bytes of a `starts` value: thread id (u32, then 4 bytes unused), start ns, detail.
pub(crate) const START_VALUE: usize = 24;

/// How many entries each bounded map holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub counts: u32,
    pub hists: u32,
    /// Hot slots per event and CPU (see `hot`; at most 8, 0 for none): the first keys of
    /// each event on each CPU are counted there instead of in `counts`; each latency pair
    /// has half as many (rounded up) for its first histograms, instead of `hists`.
    pub hot_slots: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            counts: 16_384,
            hists: 4_096,
            hot_slots: 4,
        }
    }
}

/// A `counts`/`hists` key, as the programs write it on the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The process (thread group) of the thread that hit the event: the VMM.
    pub tgid: u32,
    pub tid: u32,
    /// The event's index in `plan::EVENTS` (counts) or the pair (hists).
    pub event: u32,
    pub sub: u32,
    pub detail: u64,
}

impl Key {
    pub fn to_bytes(&self) -> [u8; KEY_LEN] {
        let mut b = [0u8; KEY_LEN];
        b[0..4].copy_from_slice(&self.tgid.to_ne_bytes());
        b[4..8].copy_from_slice(&self.tid.to_ne_bytes());
        b[8..12].copy_from_slice(&self.event.to_ne_bytes());
        b[12..16].copy_from_slice(&self.sub.to_ne_bytes());
        b[16..24].copy_from_slice(&self.detail.to_ne_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; KEY_LEN]) -> Key {
        Key {
            tgid: u32_at(b, 0),
            tid: u32_at(b, 4),
            event: u32_at(b, 8),
            sub: u32_at(b, 12),
            detail: u64_at(b, 16),
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(x)
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(x)
}

/// A latency histogram as read: the buckets and the sum of ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hist {
    pub buckets: [u64; HIST_BUCKETS],
    pub sum_ns: u64,
}

impl Hist {
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// Every map of one aggregation.
#[derive(Debug)]
pub(crate) struct Maps {
    pub counts: Map,
    pub hists: Map,
    pub starts: Map,
    pub overflow: Map,
    pub zero: Map,
    /// Hot slots of counts (by event) and of histograms (by pair).
    pub hot_counts: Option<HotTable>,
    pub hot_hists: Option<HotTable>,
    pub limits: Limits,
    cpus: usize,
}

impl Maps {
    /// Creates the maps; `tag` starts their names (`vl<pid>_`), so a leftover is recognisable.
    pub(crate) fn create(limits: Limits, tag: &str) -> io::Result<Maps> {
        let cpus = possible_cpus()?;
        let name = |n: &str| format!("{tag}{n}");
        let zero = Map::create(ARRAY, 4, HIST_VALUE as u32, 1, 1, &name("zero"))?;
        Ok(Maps {
            counts: Map::create(
                PERCPU_HASH,
                KEY_LEN as u32,
                8,
                limits.counts,
                cpus,
                &name("counts"),
            )?,
            hists: Map::create(
                HASH,
                KEY_LEN as u32,
                HIST_VALUE as u32,
                limits.hists,
                1,
                &name("hists"),
            )?,
            starts: Map::create(
                ARRAY,
                4,
                START_VALUE as u32,
                STARTS_SLOTS,
                1,
                &name("starts"),
            )?,
            overflow: Map::create(PERCPU_ARRAY, 4, 8, OVERFLOW_SLOTS, cpus, &name("ovfl"))?,
            zero,
            hot_counts: HotTable::create(limits.hot_slots, OVERFLOW_SLOTS, 0, cpus, &name("hotc"))?,
            hot_hists: HotTable::create(
                limits.hot_slots.div_ceil(2),
                HOT_PAIRS,
                HIST_VALUE,
                cpus,
                &name("hoth"),
            )?,
            limits,
            cpus,
        })
    }

    /// Every count, summed over CPUs and over the hash and the hot slots, in key order.
    pub(crate) fn counts(&self) -> io::Result<Vec<(Key, u64)>> {
        let mut sum: HashMap<Key, u64> = HashMap::new();
        let mut value = vec![0u8; self.counts.value_len()];
        for k in keys(&self.counts)? {
            if self.counts.lookup(&k, &mut value)? {
                let n: u64 = (0..self.cpus).map(|c| u64_at(&value, c * 8)).sum();
                *sum.entry(Key::from_bytes(&k)).or_insert(0) += n;
            }
        }
        if let Some(hot) = &self.hot_counts {
            hot.each(|k, n, _| *sum.entry(k).or_insert(0) += n)?;
        }
        let mut out: Vec<(Key, u64)> = sum.into_iter().collect();
        out.sort_unstable();
        Ok(out)
    }

    /// Every latency histogram, summed over the hash and the hot slots, in key order.
    pub(crate) fn hists(&self) -> io::Result<Vec<(Key, Hist)>> {
        let mut sum: HashMap<Key, Hist> = HashMap::new();
        let mut add = |k: Key, value: &[u8]| {
            let h = sum.entry(k).or_insert(Hist {
                buckets: [0; HIST_BUCKETS],
                sum_ns: 0,
            });
            for (i, b) in h.buckets.iter_mut().enumerate() {
                *b += u64_at(value, i * 8);
            }
            h.sum_ns = h
                .sum_ns
                .wrapping_add(u64_at(value, HIST_SUM_OFFSET as usize));
        };
        let mut value = vec![0u8; self.hists.value_len()];
        for k in keys(&self.hists)? {
            if self.hists.lookup(&k, &mut value)? {
                add(Key::from_bytes(&k), &value);
            }
        }
        if let Some(hot) = &self.hot_hists {
            hot.each(|k, _, v| add(k, v))?;
        }
        let mut out: Vec<(Key, Hist)> = sum.into_iter().collect();
        out.sort_unstable_by_key(|(k, _)| *k);
        Ok(out)
    }

    /// The overflow slots, summed over CPUs.
    pub(crate) fn overflow(&self) -> io::Result<Vec<u64>> {
        let mut value = vec![0u8; self.overflow.value_len()];
        let mut out = Vec::with_capacity(OVERFLOW_SLOTS as usize);
        for slot in 0..OVERFLOW_SLOTS {
            let found = self.overflow.lookup(&slot.to_ne_bytes(), &mut value)?;
            out.push(if found {
                (0..self.cpus).map(|c| u64_at(&value, c * 8)).sum()
            } else {
                0
            });
        }
        Ok(out)
    }

    /// Deletes the count and histogram keys of processes `gone` says are gone, and retires
    /// their hot slots; returns how many keys and slots went.
    pub(crate) fn prune(&self, gone: &dyn Fn(u32) -> bool) -> io::Result<usize> {
        let mut n = 0;
        for hot in [&self.hot_counts, &self.hot_hists].into_iter().flatten() {
            n += hot.retire(gone)?;
        }
        for map in [&self.counts, &self.hists] {
            for k in keys(map)? {
                if gone(Key::from_bytes(&k).tgid) && map.delete(&k)? {
                    n += 1;
                }
            }
        }
        Ok(n)
    }
}

/// Every key of a `counts`/`hists` map (a walk may miss or repeat keys inserted or deleted
/// meanwhile; the next read sees them).
fn keys(map: &Map) -> io::Result<Vec<[u8; KEY_LEN]>> {
    let mut out: Vec<[u8; KEY_LEN]> = Vec::new();
    let mut next = [0u8; KEY_LEN];
    let mut prev: Option<[u8; KEY_LEN]> = None;
    while map.next_key(prev.as_ref().map(|k| &k[..]), &mut next)? {
        out.push(next);
        prev = Some(next);
    }
    Ok(out)
}

/// The number of possible CPUs, as the kernel sizes per-CPU values
/// (`/sys/devices/system/cpu/possible`: `0-3`, `0,2-5`).
pub(crate) fn possible_cpus() -> io::Result<usize> {
    let path = "/sys/devices/system/cpu/possible";
    let text = std::fs::read_to_string(path)?;
    parse_cpu_list(text.trim()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path}: `{}` is not a CPU list", text.trim()),
        )
    })
}

fn parse_cpu_list(text: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_cpu_lists_count() {
        let k = Key {
            tgid: 7,
            tid: 9,
            event: 2,
            sub: 1,
            detail: 0x510,
        };
        assert_eq!(Key::from_bytes(&k.to_bytes()), k);
        assert_eq!(parse_cpu_list("0-1"), Some(2));
        assert_eq!(parse_cpu_list("0,2-5"), Some(5));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list("3-1"), None);
    }
}
