//! Hot slots: each CPU counts the first few keys of each event (and keeps the first few latency
//! histograms of each pair) in slots of a per-CPU array, so the common case (one VMM thread
//! hitting the same port, reason or MSR again and again) costs an inlined array lookup and
//! three compares instead of a hash lookup, and a histogram's adds need no atomics. Keys that
//! find no slot go to the `counts` and `hists` hashes as before.
//!
//! Layout: a table's slots are a per-CPU array indexed by event (counts) or pair (histograms);
//! each element holds [`Limits::hot_slots`] slots (histograms half as many): generation (u64), count (u64: events, or
//! samples of the histogram), key (24 bytes, as in [`Key`]), then the histogram's value (none
//! for counts). Its `retire` is a per-CPU array of the same index whose element holds one
//! generation per slot, written only by user space.
//!
//! - A slot whose count is 0 is empty. Slots fill in order and never empty again, so the first
//!   empty slot ends the search; the program writes the key, then the count (1).
//! - A slot is live when its generation equals `retire`'s for it. When the VMM of a slot's key
//!   exits, user space bumps `retire`'s generation ([`HotTable::retire`]): the slot no longer
//!   counts, is no longer read, and the next key that finds no slot of its own takes it over
//!   (key, zeroed value and count, then the new generation, in that order), also when it is
//!   the same key again (a pid used again).
//! - Values are cumulative, like the hashes': a key's count is the hash's plus its slots' on
//!   every CPU, and so are a histogram's buckets and sum.
//!
//! Reading and writing race only where a slot is taken: the program writes the key, then the
//! count, then (taking over a retired slot) the generation, but on weakly ordered CPUs
//! (arm64) nothing orders those stores for a reader. So user space reads each element twice
//! and counts a slot only when both reads show it live with the same generation and key; a
//! slot being taken was not live before, so leaving it to the next read loses nothing.
//!
//! [`Limits::hot_slots`]: super::maps::Limits::hot_slots

use std::io;

use super::insn::{Alu, Asm, Cond, FP, Label, R0, R1, R2, R3, R8, R9, Size};
use super::maps::{KEY_LEN, Key, PERCPU_ARRAY, u64_at};
use super::sys::Map;

/// Bytes of a slot before its value: generation, count, key.
const HEAD: usize = 16 + KEY_LEN;
/// The most slots per index and CPU (the program compares them in turn).
pub(crate) const MAX_SLOTS: u32 = 8;
const GEN: i16 = 0;
const COUNT: i16 = 8;
const KEY_AT: i16 = 16;
/// Offset of the value in a slot.
pub(crate) const VALUE_AT: i16 = HEAD as i16;

/// The slots and `retire` maps of one kind of value.
#[derive(Debug)]
pub(crate) struct HotTable {
    slots: Map,
    retire: Map,
    fds: HotFds,
    cpus: usize,
}

/// What a program needs of a table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HotFds {
    pub slots: i32,
    pub retire: i32,
    pub per_index: u32,
    /// Bytes of the value after a slot's head, zeroed when a slot is taken.
    pub value_bytes: usize,
}

impl HotFds {
    /// Bytes of a slot: the head and the value.
    pub(crate) fn slot_bytes(&self) -> usize {
        HEAD + self.value_bytes
    }
}

impl HotTable {
    /// The maps for `per_index` slots (at most [`MAX_SLOTS`]) of `value_bytes` after the head
    /// for each of `indexes` and CPU; `None` for 0 slots.
    pub(crate) fn create(
        per_index: u32,
        indexes: u32,
        value_bytes: usize,
        cpus: usize,
        name: &str,
    ) -> io::Result<Option<HotTable>> {
        let per_index = per_index.min(MAX_SLOTS);
        if per_index == 0 {
            return Ok(None);
        }
        let slot_bytes = (HEAD + value_bytes) as u32;
        let slots = Map::create(PERCPU_ARRAY, 4, per_index * slot_bytes, indexes, cpus, name)?;
        let retire_name = format!("{name}_r");
        let retire = Map::create(PERCPU_ARRAY, 4, per_index * 8, indexes, cpus, &retire_name)?;
        let fds = HotFds {
            slots: slots.raw_fd(),
            retire: retire.raw_fd(),
            per_index,
            value_bytes,
        };
        Ok(Some(HotTable {
            slots,
            retire,
            fds,
            cpus,
        }))
    }

    pub(crate) fn fds(&self) -> HotFds {
        self.fds
    }

    /// Calls `f(key, count, value)` for every live slot.
    pub(crate) fn each(&self, mut f: impl FnMut(Key, u64, &[u8])) -> io::Result<()> {
        self.walk(|k, n, v| {
            f(k, n, v);
            false
        })
        .map(|_| ())
    }

    /// Retires the live slots whose key's process `gone` says is gone; returns how many.
    pub(crate) fn retire(&self, gone: &dyn Fn(u32) -> bool) -> io::Result<usize> {
        self.walk(|key, _, _| gone(key.tgid))
    }

    /// Calls `f(key, count, value)` for every live slot; where it returns true the slot is
    /// retired (its generation in `retire` bumped). Returns how many were.
    fn walk(&self, mut f: impl FnMut(Key, u64, &[u8]) -> bool) -> io::Result<usize> {
        let mut first = vec![0u8; self.slots.value_len()];
        let mut slots = vec![0u8; self.slots.value_len()];
        let mut gens = vec![0u8; self.retire.value_len()];
        let slot_stride = self.slots.value_len() / self.cpus;
        let gen_stride = self.retire.value_len() / self.cpus;
        let bytes = self.fds.slot_bytes();
        let mut retired = 0;
        let mut index = 0u32;
        loop {
            let key = index.to_ne_bytes();
            // An array has every index below its size and none above.
            if !self.slots.lookup(&key, &mut first)?
                || !self.slots.lookup(&key, &mut slots)?
                || !self.retire.lookup(&key, &mut gens)?
            {
                break;
            }
            let mut changed = false;
            for cpu in 0..self.cpus {
                for s in 0..self.fds.per_index as usize {
                    let at = cpu * slot_stride + s * bytes;
                    let gen_at = cpu * gen_stride + s * 8;
                    let count = u64_at(&slots, at + COUNT as usize);
                    let live = u64_at(&gens, gen_at);
                    // Read twice: a slot taken meanwhile (its generation or key changed, or
                    // it was empty) is left to the next read. It was not live before, and
                    // where stores are not ordered (arm64) its key may show half written.
                    let gen_bytes = at + GEN as usize..at + COUNT as usize;
                    let key_bytes = at + KEY_AT as usize..at + HEAD;
                    if count == 0
                        || u64_at(&first, at + COUNT as usize) == 0
                        || u64_at(&slots, at + GEN as usize) != live
                        || first[gen_bytes.clone()] != slots[gen_bytes]
                        || first[key_bytes.clone()] != slots[key_bytes]
                    {
                        continue;
                    }
                    let mut k = [0u8; KEY_LEN];
                    k.copy_from_slice(&slots[at + KEY_AT as usize..at + HEAD]);
                    if f(Key::from_bytes(&k), count, &slots[at + HEAD..at + bytes]) {
                        gens[gen_at..gen_at + 8]
                            .copy_from_slice(&live.wrapping_add(1).to_ne_bytes());
                        changed = true;
                        retired += 1;
                    }
                }
            }
            if changed {
                // Only this process writes `retire`: the whole element is ours to rewrite.
                self.retire.update(&key, &gens)?;
            }
            index += 1;
        }
        Ok(retired)
    }
}

/// Where the program's stack holds what the hot slots read: the key (written, 24 bytes) and a
/// free u32 for the array index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    pub key: i16,
    pub index: i16,
}

/// Finds this CPU's slot of the key at `fp + frame.key` under `index`, taking an empty or
/// retired one when the key has none, and emits `hit(at)` for it with r8 pointing at the slot
/// array (`r8 + at` is the slot); goes to `done` after, to `miss` when no slot had or could
/// take the key. Clobbers r0–r3, r8 and r9 before `hit`.
pub(crate) fn find_or_take(
    a: &mut Asm,
    hot: &HotFds,
    index: u32,
    frame: Frame,
    miss: Label,
    hit: &dyn Fn(&mut Asm, i16),
    done: Label,
) {
    let (key, index_at) = (frame.key, frame.index);
    a.store_imm(Size::W, FP, index_at, index as i32);
    super::program::lookup(a, hot.slots, index_at);
    a.jump_imm(Cond::Eq, R0, 0, miss);
    a.mov(R8, R0);
    super::program::lookup(a, hot.retire, index_at);
    a.jump_imm(Cond::Eq, R0, 0, miss);
    a.mov(R9, R0);
    let slots: Vec<(i16, i16)> = (0..hot.per_index as i16)
        .map(|s| (s * hot.slot_bytes() as i16, s * 8))
        .collect();
    let empty: Vec<Label> = slots.iter().map(|_| a.new_label()).collect();
    // A live slot holding the key.
    for (&(at, gen_at), &empty) in slots.iter().zip(&empty) {
        let next = a.new_label();
        a.load(Size::DW, R1, R8, at + COUNT);
        a.jump_imm(Cond::Eq, R1, 0, empty);
        a.load(Size::DW, R2, R8, at + GEN);
        a.load(Size::DW, R3, R9, gen_at);
        a.jump_reg(Cond::Ne, R2, R3, next);
        for w in 0..3 {
            a.load(Size::DW, R2, R8, at + KEY_AT + 8 * w);
            a.load(Size::DW, R3, FP, key + 8 * w);
            a.jump_reg(Cond::Ne, R2, R3, next);
        }
        hit(a, at);
        a.jump(done);
        a.label(next);
    }
    // Every slot is taken by another key: take over a retired one, else miss.
    for &(at, gen_at) in &slots {
        let next = a.new_label();
        a.load(Size::DW, R2, R8, at + GEN);
        a.load(Size::DW, R3, R9, gen_at);
        a.jump_reg(Cond::Eq, R2, R3, next);
        take(a, hot, at, key);
        a.load(Size::DW, R3, R9, gen_at);
        a.store(Size::DW, R8, at + GEN, R3);
        hit(a, at);
        a.jump(done);
        a.label(next);
    }
    a.jump(miss);
    for (&(at, _), &empty) in slots.iter().zip(&empty) {
        a.label(empty);
        take(a, hot, at, key);
        hit(a, at);
        a.jump(done);
    }
}

/// Writes the key into the slot at `r8 + at`, zeroes its value and count. Clobbers r1.
fn take(a: &mut Asm, hot: &HotFds, at: i16, key: i16) {
    for w in 0..3 {
        a.load(Size::DW, R1, FP, key + 8 * w);
        a.store(Size::DW, R8, at + KEY_AT + 8 * w, R1);
    }
    for w in 0..(hot.value_bytes / 8) as i16 {
        a.store_imm(Size::DW, R8, at + VALUE_AT + 8 * w, 0);
    }
    a.store_imm(Size::DW, R8, at + COUNT, 0);
}

/// `count += 1` of the slot at `r8 + at`: the count of a count slot, the samples of a
/// histogram's. Clobbers r1.
pub(crate) fn add_one(a: &mut Asm, at: i16) {
    a.load(Size::DW, R1, R8, at + COUNT);
    a.alu_imm(Alu::Add, R1, 1);
    a.store(Size::DW, R8, at + COUNT, R1);
}
