//! The accumulators a [`super::ProfileBuilder`] counts into — one per (table, key, VM, vCPU) —
//! and the bound on how many one table may hold.
//!
//! A stream can name endless distinct keys (every event to a new MMIO address, port or MSR, new
//! event names, new VMs). When a table reaches [`TABLE_CAP`] accumulators, the rarest half of it
//! (by count so far) is folded into one `other` accumulator of that table, with the range of
//! the addresses it holds: memory stays bounded and time linear, every total stays exact, and
//! the profile says what was folded. Compacting renumbers the accumulators; the caller maps its
//! own references (pending begins, thread caches) through the returned table.

use rustc_hash::FxHashMap as HashMap;

use crate::profile::fold::{folded_note, other_key};
use crate::profile::{Access, Key, Latency, Note, TableKind, Welford};

pub(super) use crate::profile::fold::TABLE_CAP;

/// The tables a builder fills, in output order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Slot {
    Vmexit,
    Ioport,
    Mmio,
    Msr,
    UserspaceExit,
    Hypercall,
    ApicvInhibit,
    GuestRip,
    Events,
}

impl Slot {
    const COUNT: usize = 9;

    pub(super) fn kind(self) -> TableKind {
        match self {
            Slot::Vmexit => TableKind::Vmexit,
            Slot::Ioport => TableKind::Ioport,
            Slot::Mmio => TableKind::Mmio,
            Slot::Msr => TableKind::Msr,
            Slot::UserspaceExit => TableKind::UserspaceExit,
            Slot::Hypercall => TableKind::Hypercall,
            Slot::ApicvInhibit => TableKind::ApicvInhibit,
            Slot::GuestRip => TableKind::GuestRip,
            Slot::Events => TableKind::Events,
        }
    }
}

/// A compact key: names are interned, so lookups per event allocate nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum CKey {
    Reason(u32),
    Addr(u64, Option<Access>),
    Name(u32),
    /// An exit reason (by id) and the guest RIP of the exit.
    Rip(u32, u64),
    /// The `other` row: the rarest keys of the table, folded (see the module doc).
    Folded,
}

/// The way of a slot key in a thread's slot cache (`threads::SlotCache`): a cheap mix of its parts.
#[inline]
pub(super) fn way(slot: Slot, key: CKey) -> usize {
    let k = match key {
        CKey::Reason(i) | CKey::Name(i) => u64::from(i),
        CKey::Addr(n, a) => n ^ a.map_or(0, |a| a as u64 + 1) << 40,
        CKey::Rip(r, n) => n ^ u64::from(r) << 48,
        CKey::Folded => u64::MAX,
    };
    ((slot as u64 + 1).wrapping_mul(0x9e37_79b9) ^ k.wrapping_mul(0x85eb_ca6b)) as usize >> 7
}

/// Where one accumulator counts: its table, key, VM and vCPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct SlotKey {
    pub slot: Slot,
    pub key: CKey,
    pub pid: Option<u32>,
    pub vcpu: Option<u32>,
}

/// Count, duration stats and latency histogram of one accumulator.
#[derive(Debug, Default)]
pub(super) struct Acc {
    pub count: u64,
    pub durations: Welford,
    pub latency: Option<Latency>,
}

impl Acc {
    fn absorb(&mut self, other: Acc) {
        self.count += other.count;
        self.durations.merge(&other.durations);
        match (&mut self.latency, other.latency) {
            (Some(a), Some(b)) => a.merge(&b),
            (a @ None, b) => *a = b,
            (Some(_), None) => {}
        }
    }
}

/// What one table folded into its `other` row.
#[derive(Debug, Default, Clone, Copy)]
struct Folded {
    rows: u64,
    events: u64,
    /// The lowest and highest address folded, for address tables.
    range: Option<(u64, u64)>,
}

/// Every accumulator of a builder, indexed by [`SlotKey`], each table bounded by [`TABLE_CAP`].
#[derive(Debug)]
pub(super) struct Accumulators {
    index: HashMap<SlotKey, usize>,
    accs: Vec<(SlotKey, Acc)>,
    /// The count of each accumulator, apart from the rest of it: every event bumps one, and
    /// eight bytes each stay in cache where a whole accumulator would not (`Acc::count` is
    /// set from here when the table folds or the accumulators are handed out).
    counts: Vec<u64>,
    per_table: [usize; Slot::COUNT],
    folded: [Folded; Slot::COUNT],
    cap: usize,
}

impl Default for Accumulators {
    fn default() -> Self {
        Self::with_cap(TABLE_CAP)
    }
}

/// Old accumulator index → new one, after a compaction.
pub(super) type Renumbering = Vec<usize>;

impl Accumulators {
    /// Accumulators whose tables fold past `cap` (at least 2) rows.
    pub(super) fn with_cap(cap: usize) -> Self {
        Self {
            index: HashMap::default(),
            accs: Vec::new(),
            counts: Vec::new(),
            per_table: [0; Slot::COUNT],
            folded: [Folded::default(); Slot::COUNT],
            cap: cap.max(2),
        }
    }

    /// The index of `sk`'s accumulator, created on first sight. Creating it in a full table
    /// folds that table first: then the renumbering of every earlier index is returned too.
    pub(super) fn index_of(&mut self, sk: SlotKey) -> (usize, Option<Renumbering>) {
        if let Some(&i) = self.index.get(&sk) {
            return (i, None);
        }
        let table = sk.slot as usize;
        let renumbering = (self.per_table[table] >= self.cap).then(|| self.fold(sk.slot));
        // Folding never removes `sk` (it was not there), so it is new either way.
        let i = self.accs.len();
        self.accs.push((sk, Acc::default()));
        self.counts.push(0);
        self.index.insert(sk, i);
        self.per_table[table] += 1;
        (i, renumbering)
    }

    /// Counts one event in the accumulator at `i`.
    #[inline]
    pub(super) fn bump(&mut self, i: usize) {
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
    }

    /// Sets each accumulator's count from `counts`.
    fn settle_counts(&mut self) {
        for ((_, acc), &c) in self.accs.iter_mut().zip(&self.counts) {
            acc.count = c;
        }
    }

    /// The accumulator at `i` (its count is kept apart: see [`Accumulators::bump`]).
    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut Acc> {
        self.accs.get_mut(i).map(|(_, a)| a)
    }

    /// Folds the rarest half of `slot`'s table into its `other` accumulator.
    fn fold(&mut self, slot: Slot) -> Renumbering {
        self.settle_counts();
        let renumbering = self.fold_settled(slot);
        self.counts = self.accs.iter().map(|(_, a)| a.count).collect();
        renumbering
    }

    /// [`Accumulators::fold`] once every `Acc::count` is set.
    fn fold_settled(&mut self, slot: Slot) -> Renumbering {
        let mut counts: Vec<u64> = self
            .accs
            .iter()
            .filter(|(k, _)| k.slot == slot && k.key != CKey::Folded)
            .map(|(_, a)| a.count)
            .collect();
        let half = counts.len() / 2;
        if half == 0 {
            return (0..self.accs.len()).collect();
        }
        // Fold the rows below the median count, then rows at it until half are folded.
        let (_, &mut median, _) = counts.select_nth_unstable(half);
        let mut at_median = half - counts[..half].iter().filter(|&&c| c < median).count();
        let other = SlotKey {
            slot,
            key: CKey::Folded,
            pid: None,
            vcpu: None,
        };
        let mut bucket = Acc::default();
        let mut record = self.folded[slot as usize];
        let mut kept: Vec<(SlotKey, Acc)> = Vec::with_capacity(self.accs.len() - half + 1);
        // Folded rows point at `usize::MAX` until the `other` row's index is known.
        let mut renumbering = Vec::with_capacity(self.accs.len());
        for (k, acc) in self.accs.drain(..) {
            let fold = k.slot == slot
                && k != other
                && (acc.count < median
                    || (acc.count == median && at_median > 0 && {
                        at_median -= 1;
                        true
                    }));
            if fold {
                record.rows += 1;
                record.events += acc.count;
                if let CKey::Addr(a, _) | CKey::Rip(_, a) = k.key {
                    record.range = Some(record.range.map_or((a, a), |(l, h)| (l.min(a), h.max(a))));
                }
                bucket.absorb(acc);
                renumbering.push(usize::MAX);
            } else {
                renumbering.push(kept.len());
                kept.push((k, acc));
            }
        }
        let other_at = match kept.iter().position(|(k, _)| *k == other) {
            Some(i) => i,
            None => {
                kept.push((other, Acc::default()));
                kept.len() - 1
            }
        };
        if let Some((_, acc)) = kept.get_mut(other_at) {
            acc.absorb(bucket);
        }
        for r in &mut renumbering {
            if *r == usize::MAX {
                *r = other_at;
            }
        }
        self.folded[slot as usize] = record;
        self.accs = kept;
        self.index = self
            .accs
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (*k, i))
            .collect();
        self.per_table[slot as usize] = self.accs.iter().filter(|(k, _)| k.slot == slot).count();
        renumbering
    }

    /// The accumulators, with the notes on what each table folded.
    pub(super) fn finish(mut self) -> (Vec<(SlotKey, Acc)>, Vec<Note>) {
        self.settle_counts();
        let notes = self
            .folded
            .iter()
            .zip(Slot::ALL)
            .filter(|(f, _)| f.rows > 0)
            .map(|(f, slot)| {
                let mut note = folded_note(
                    &slot.kind(),
                    self.cap,
                    &self.other_key(slot),
                    f.rows,
                    f.events,
                );
                note.message.push_str(
                    " (folded as the input was read: a key folded early that came back later \
                     counts only what came after)",
                );
                note
            })
            .collect();
        (self.accs, notes)
    }

    /// The key of `slot`'s `other` row.
    pub(super) fn other_key(&self, slot: Slot) -> Key {
        other_key(&slot.kind(), self.folded[slot as usize].range)
    }
}

impl Slot {
    /// Every table, in output order.
    pub(super) const ALL: [Slot; Slot::COUNT] = [
        Slot::Vmexit,
        Slot::Ioport,
        Slot::Mmio,
        Slot::Msr,
        Slot::UserspaceExit,
        Slot::Hypercall,
        Slot::ApicvInhibit,
        Slot::GuestRip,
        Slot::Events,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mmio(a: u64) -> SlotKey {
        SlotKey {
            slot: Slot::Mmio,
            key: CKey::Addr(a, Some(Access::Write)),
            pid: None,
            vcpu: None,
        }
    }

    fn count(accs: &mut Accumulators, sk: SlotKey, refs: &mut Vec<usize>) {
        let (i, renumbering) = accs.index_of(sk);
        if let Some(r) = renumbering {
            for x in refs.iter_mut() {
                *x = r[*x];
            }
        }
        accs.bump(i);
        refs.push(i);
    }

    #[test]
    fn a_full_table_folds_its_rarest_half_and_keeps_totals() {
        let mut accs = Accumulators::with_cap(8);
        let mut refs = Vec::new();
        // Four hot addresses, then a stream of new ones.
        for round in 0..10 {
            for hot in 0..4 {
                count(&mut accs, mmio(hot), &mut refs);
            }
            count(&mut accs, mmio(0x1000 + round), &mut refs);
        }
        for r in &refs {
            assert!(
                accs.get_mut(*r).is_some(),
                "every reference still points at a row"
            );
        }
        let (rows, notes) = accs.finish();
        let total: u64 = rows.iter().map(|(_, a)| a.count).sum();
        assert_eq!(total, 50, "totals are exact");
        assert!(rows.len() <= 9, "{} rows", rows.len());
        for hot in 0..4 {
            let n = rows
                .iter()
                .find(|(k, _)| *k == mmio(hot))
                .map(|(_, a)| a.count);
            assert_eq!(n, Some(10), "hot address {hot} is never folded");
        }
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].message.contains("other addresses 0x1000–"),
            "{}",
            notes[0].message
        );
    }

    #[test]
    fn other_tables_are_untouched() {
        let mut accs = Accumulators::with_cap(4);
        let mut refs = Vec::new();
        let exit = SlotKey {
            slot: Slot::Vmexit,
            key: CKey::Reason(1),
            pid: None,
            vcpu: None,
        };
        count(&mut accs, exit, &mut refs);
        for a in 0..100 {
            count(&mut accs, mmio(a), &mut refs);
        }
        let (rows, _) = accs.finish();
        assert_eq!(
            rows.iter().find(|(k, _)| *k == exit).map(|(_, a)| a.count),
            Some(1)
        );
        assert_eq!(rows.iter().map(|(_, a)| a.count).sum::<u64>(), 101);
    }
}
