//! The eBPF program of one tracepoint, generated from its [`Plan`]: the tracepoint's payload is
//! the program's context, read at the offsets of the `format` file. Nothing per event reaches
//! user space: the perf event the program is attached to only counts (it has no buffer).
//!
//! Raw tracepoint programs (see `plan::Ctx`) read the tracepoint's arguments instead, 8 bytes
//! each, and their return value is ignored.
//!
//! Every path returns 1. A tracepoint program's return value decides for *every* perf event of
//! that tracepoint whether the record goes on to them: 0 would drop it for all, and a user's
//! `perf record` or `perf kvm stat record` running beside `virtlens serve` would record nothing
//! (the lab host showed it: a `perf kvm stat` of zero samples). ftrace (tracefs) does not go
//! through the program and is unaffected either way.
//!
//! Stack layout (r10 = frame pointer):
//! ```text
//! fp-24 .. fp-0    counts/hists key: tgid u32, tid u32, event u32, sub u32, detail u64
//! fp-32            u64 0 (the value of a new count)
//! fp-36            u32 overflow slot / zero-template index
//! fp-40            u32 index of the event's hot slots
//! fp-48            starts key: the slot u32 of (tid, pair)
//! fp-56            u64 the duration a histogram adds (while the hot slots use r8)
//! ```
//! r6 holds the context, r7 `pid_tgid`, r8/r9 a duration and its detail (the hot slots borrow
//! r8/r9 for their arrays once the key is written; the duration waits at fp-56).

use super::hot::{self, HotFds};
use super::insn::{Alu, Asm, Cond, FP, Helper, Insn, Label, R0, R1, R2, R3, R4, R6, R7, R8, R9};
use super::insn::{Reg, Size};
use super::maps::{HIST_FULL_SLOT, HIST_SUM_OFFSET, STARTS_SLOTS};
use super::plan::{FieldRef, Pair, Plan};

const KEY: i16 = -24;
const ZERO: i16 = -32;
const SLOT: i16 = -36;
const HOT_INDEX: i16 = -40;
const START_KEY: i16 = -48;
const DURATION: i16 = -56;
const HOT_FRAME: hot::Frame = hot::Frame {
    key: KEY,
    index: HOT_INDEX,
};
const BPF_NOEXIST: i32 = 1;
const EEXIST: i32 = -17;

/// The fds of the maps a program refers to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MapFds {
    pub counts: i32,
    pub hists: i32,
    pub starts: i32,
    pub overflow: i32,
    pub zero: i32,
    pub hot_counts: Option<HotFds>,
    pub hot_hists: Option<HotFds>,
}

/// The program for `plan`.
pub(crate) fn generate(plan: &Plan, maps: &MapFds) -> Result<Vec<Insn>, String> {
    let mut a = Asm::new();
    a.mov(R6, R1);
    // A program that only closes a pair on a condition (kvm_fpu: on load=1, not on the
    // unload that fires as often) tests it before anything else.
    let only_end = plan.count.is_none() && plan.begin.is_none() && plan.value.is_none();
    let skip = a.new_label();
    if let (true, Some((_, Some((field, value))))) = (only_end, plan.end) {
        load(&mut a, R1, Some(field));
        a.jump_imm(Cond::Ne, R1, value, skip);
    }
    a.call(Helper::GetCurrentPidTgid);
    a.mov(R7, R0);
    if let Some(c) = plan.count {
        write_key(&mut a, plan.index, c.sub, c.detail.map(Detail::Field));
        count(&mut a, plan.index, maps);
    }
    if let Some((pair, detail)) = plan.begin {
        begin(&mut a, pair, detail, plan.begin_high, maps);
    }
    if let Some((pair, cond)) = plan.end {
        end(&mut a, pair, cond, maps);
    }
    if let Some((pair, value, detail)) = plan.value {
        let done = a.new_label();
        load(&mut a, R8, Some(value));
        load(&mut a, R9, detail);
        hist_add(&mut a, pair, maps, done);
        a.label(done);
    }
    a.label(skip);
    a.mov_imm(R0, 1);
    a.exit();
    a.finish()
}

/// Where a key's detail comes from.
#[derive(Debug, Clone, Copy)]
enum Detail {
    Field(FieldRef),
    Reg(Reg),
}

/// `dst = payload field` (0 when the kernel has no such field).
fn load(a: &mut Asm, dst: Reg, field: Option<FieldRef>) {
    match field {
        Some(f) => a.load(f.size, dst, R6, f.offset),
        None => a.mov_imm(dst, 0),
    }
}

/// Writes the counts/hists key at `KEY`.
fn write_key(a: &mut Asm, event: u32, sub: Option<FieldRef>, detail: Option<Detail>) {
    a.mov(R1, R7);
    a.alu_imm(Alu::Rsh, R1, 32);
    a.store(Size::W, FP, KEY, R1);
    a.store(Size::W, FP, KEY + 4, R7);
    a.store_imm(Size::W, FP, KEY + 8, event as i32);
    load(a, R1, sub);
    a.store(Size::W, FP, KEY + 12, R1);
    match detail {
        Some(Detail::Field(f)) => load(a, R1, Some(f)),
        Some(Detail::Reg(r)) => a.mov(R1, r),
        None => a.mov_imm(R1, 0),
    }
    a.store(Size::DW, FP, KEY + 16, R1);
}

/// `r0 = lookup(map, fp + key)`.
pub(crate) fn lookup(a: &mut Asm, map: i32, key: i16) {
    a.load_map_fd(R1, map);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, i32::from(key));
    a.call(Helper::MapLookupElem);
}

/// `r0 = update(map, fp + key, value, flags)`; the value is at `fp + off`, or already in r3.
fn update(a: &mut Asm, map: i32, key: i16, value: Option<i16>, flags: i32) {
    if let Some(off) = value {
        a.mov(R3, FP);
        a.alu_imm(Alu::Add, R3, i32::from(off));
    }
    a.load_map_fd(R1, map);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, i32::from(key));
    a.mov_imm(R4, flags);
    a.call(Helper::MapUpdateElem);
}

/// `*(u64 *)r0 += 1` (a per-CPU value: no other CPU writes it).
fn increment_r0(a: &mut Asm) {
    a.load(Size::DW, R1, R0, 0);
    a.alu_imm(Alu::Add, R1, 1);
    a.store(Size::DW, R0, 0, R1);
}

/// Adds 1 to `overflow[slot]`.
fn overflow(a: &mut Asm, slot: u32, maps: &MapFds, done: Label) {
    a.store_imm(Size::W, FP, SLOT, slot as i32);
    lookup(a, maps.overflow, SLOT);
    a.jump_imm(Cond::Eq, R0, 0, done);
    increment_r0(a);
}

/// Inserts the key at `KEY` into `map` with the value at `fp + value` (or in r3), then
/// looks it up into r0 (also when another CPU inserted it first); when the map is full,
/// counts in `overflow[slot]` and goes to `done`.
fn insert_then_lookup(
    a: &mut Asm,
    map: i32,
    value: Option<i16>,
    slot: u32,
    maps: &MapFds,
    done: Label,
) {
    let found = a.new_label();
    update(a, map, KEY, value, BPF_NOEXIST);
    a.jump_imm(Cond::Eq, R0, 0, found);
    a.jump_imm(Cond::Eq, R0, EEXIST, found);
    overflow(a, slot, maps, done);
    a.jump(done);
    a.label(found);
    lookup(a, map, KEY);
    a.jump_imm(Cond::Eq, R0, 0, done);
}

/// `counts[key] += 1` (in a hot slot of this CPU when the key has or can take one), inserting
/// the key (at 0) when new; a full map counts in `overflow[event]`.
fn count(a: &mut Asm, event: u32, maps: &MapFds) {
    let have = a.new_label();
    let done = a.new_label();
    if let Some(hot) = &maps.hot_counts {
        let miss = a.new_label();
        hot::find_or_take(a, hot, event, HOT_FRAME, miss, &hot::add_one, done);
        a.label(miss);
    }
    lookup(a, maps.counts, KEY);
    a.jump_imm(Cond::Ne, R0, 0, have);
    a.store_imm(Size::DW, FP, ZERO, 0);
    insert_then_lookup(a, maps.counts, Some(ZERO), event, maps, done);
    a.label(have);
    increment_r0(a);
    a.label(done);
}

/// Writes the thread's `starts` slot of `pair` at `START_KEY`:
/// `((tid << 2) | pair) & (STARTS_SLOTS - 1)` (the mask drops the tgid the shift moved up).
fn start_key(a: &mut Asm, pair: Pair) {
    a.mov(R1, R7);
    a.alu_imm(Alu::Lsh, R1, 2);
    a.alu_imm(Alu::Or, R1, pair as i32);
    a.alu_imm(Alu::And, R1, (STARTS_SLOTS - 1) as i32);
    a.store(Size::W, FP, START_KEY, R1);
}

/// `r0` = the thread's `starts` slot of `pair` (goes to `done` if the lookup failed, which an
/// index below the array's size never does).
fn start_slot(a: &mut Asm, pair: Pair, maps: &MapFds, done: Label) {
    start_key(a, pair);
    lookup(a, maps.starts, START_KEY);
    a.jump_imm(Cond::Eq, R0, 0, done);
}

/// Jumps to `target` when the thread id in the slot at `slot` is ours (`Cond::Eq`) or is not
/// (`Cond::Ne`); ours is the low half of r7. Clobbers r1 and r2.
fn slot_is_ours(a: &mut Asm, slot: Reg, cond: Cond, target: Label) {
    a.load(Size::W, R1, slot, 0);
    a.store(Size::W, FP, SLOT, R7);
    a.load(Size::W, R2, FP, SLOT);
    a.alu_reg(Alu::Sub, R1, R2);
    a.jump_imm(cond, R1, 0, target);
}

/// starts[slot] = (tid, now, detail | high << 32). A start of another thread still open in
/// the slot is overwritten and counted as a dropped latency sample.
fn begin(a: &mut Asm, pair: Pair, detail: Option<FieldRef>, high: Option<FieldRef>, maps: &MapFds) {
    let write = a.new_label();
    let done = a.new_label();
    load(a, R8, detail);
    if let Some(high) = high {
        load(a, R1, Some(high));
        a.alu_imm(Alu::Lsh, R1, 32);
        a.alu_reg(Alu::Or, R8, R1);
    }
    start_slot(a, pair, maps, done);
    a.mov(R9, R0);
    // Another thread's open start is overwritten: one sample dropped.
    slot_is_ours(a, R9, Cond::Eq, write);
    a.load(Size::DW, R1, R9, 8);
    a.jump_imm(Cond::Eq, R1, 0, write);
    overflow(a, HIST_FULL_SLOT, maps, write);
    a.label(write);
    a.store(Size::W, R9, 0, R7);
    a.call(Helper::KtimeGetNs);
    a.store(Size::DW, R9, 8, R0);
    a.store(Size::DW, R9, 16, R8);
    a.label(done);
}

/// Closes the thread's open `pair` (if any, and if `cond` holds): its duration goes to the
/// pair's histogram under the detail remembered at the start.
fn end(a: &mut Asm, pair: Pair, cond: Option<(FieldRef, i32)>, maps: &MapFds) {
    let done = a.new_label();
    if let Some((field, value)) = cond {
        load(a, R1, Some(field));
        a.jump_imm(Cond::Ne, R1, value, done);
    }
    start_slot(a, pair, maps, done);
    // The slot holds another thread's start (or none): nothing to close.
    slot_is_ours(a, R0, Cond::Ne, done);
    a.load(Size::DW, R8, R0, 8);
    a.jump_imm(Cond::Eq, R8, 0, done);
    a.load(Size::DW, R9, R0, 16);
    a.store_imm(Size::DW, R0, 8, 0);
    a.call(Helper::KtimeGetNs);
    a.alu_reg(Alu::Sub, R0, R8);
    a.mov(R8, R0);
    hist_add(a, pair, maps, done);
    a.label(done);
}

/// hists[tgid, tid, pair, 0, r9].bucket(log2 r8) += 1 and .sum += r8, inserting the key
/// from the zero template when new; a full map counts in `overflow[HIST_FULL_SLOT]`.
fn hist_add(a: &mut Asm, pair: Pair, maps: &MapFds, done: Label) {
    let have = a.new_label();
    write_key(a, pair as u32, None, Some(Detail::Reg(R9)));
    if let Some(hot) = &maps.hot_hists {
        // This CPU's slot: no atomics (no other CPU writes it).
        let miss = a.new_label();
        a.store(Size::DW, FP, DURATION, R8);
        let add = |a: &mut Asm, at: i16| {
            hot::add_one(a, at);
            a.load(Size::DW, R4, FP, DURATION);
            bucket_offset(a, R4);
            a.alu_reg(Alu::Add, R2, R8);
            let bucket = at + hot::VALUE_AT;
            a.load(Size::DW, R1, R2, bucket);
            a.alu_imm(Alu::Add, R1, 1);
            a.store(Size::DW, R2, bucket, R1);
            a.load(Size::DW, R1, R8, bucket + HIST_SUM_OFFSET);
            a.alu_reg(Alu::Add, R1, R4);
            a.store(Size::DW, R8, bucket + HIST_SUM_OFFSET, R1);
        };
        hot::find_or_take(a, hot, pair as u32, HOT_FRAME, miss, &add, done);
        a.label(miss);
        a.load(Size::DW, R8, FP, DURATION);
    }
    lookup(a, maps.hists, KEY);
    a.jump_imm(Cond::Ne, R0, 0, have);
    a.store_imm(Size::W, FP, SLOT, 0);
    lookup(a, maps.zero, SLOT);
    a.jump_imm(Cond::Eq, R0, 0, done);
    a.mov(R3, R0);
    insert_then_lookup(a, maps.hists, None, HIST_FULL_SLOT, maps, done);

    a.label(have);
    bucket_offset(a, R8);
    a.mov(R1, R0);
    a.alu_reg(Alu::Add, R1, R2);
    a.mov_imm(R3, 1);
    a.atomic_add64(R1, 0, R3);
    a.atomic_add64(R0, HIST_SUM_OFFSET, R8);
}

/// `r2 = floor(log2(src)) * 8`, the offset of `src`'s bucket (0 and 1 in bucket 0), by
/// halving: r1 = src, and for s in 32, 16, …, 1: if r1 >> s then r1 >>= s and r2 += s.
/// Clobbers r1 and r3.
fn bucket_offset(a: &mut Asm, src: Reg) {
    a.mov(R1, src);
    a.mov_imm(R2, 0);
    for s in [32, 16, 8, 4, 2, 1] {
        let skip = a.new_label();
        a.mov(R3, R1);
        a.alu_imm(Alu::Rsh, R3, s);
        a.jump_imm(Cond::Eq, R3, 0, skip);
        a.mov(R1, R3);
        a.alu_imm(Alu::Add, R2, s);
        a.label(skip);
    }
    a.alu_imm(Alu::And, R2, 63);
    a.alu_imm(Alu::Lsh, R2, 3);
}

#[cfg(test)]
mod tests {
    use super::super::plan::Count;
    use super::*;

    fn plan() -> Plan {
        let f = |offset| {
            Some(FieldRef {
                offset,
                size: Size::W,
            })
        };
        Plan {
            event: "kvm_userspace_exit".into(),
            index: 5,
            id: 42,
            count: Some(Count {
                sub: f(12),
                detail: f(8),
            }),
            begin: Some((Pair::Vmm, f(8))),
            begin_high: None,
            end: None,
            value: None,
        }
    }

    #[test]
    fn programs_start_with_the_prologue_and_always_return_one() {
        let fds = MapFds {
            counts: 3,
            hists: 4,
            starts: 5,
            overflow: 6,
            zero: 7,
            hot_counts: None,
            hot_hists: None,
        };
        let insns = generate(&plan(), &fds).unwrap();
        assert_eq!(insns[0].bytes()[0], 0xbf, "mov r6, r1");
        assert_eq!(insns[1].imm, Helper::GetCurrentPidTgid as i32);
        let n = insns.len();
        // 1: the record goes on to the tracepoint's other perf events (a user's perf).
        assert_eq!((insns[n - 2].code, insns[n - 2].imm), (0xb7, 1), "r0 = 1");
        assert_eq!(insns[n - 1].code, 0x95, "exit");
        // The count key's detail is read from offset 8 of the payload (r6).
        assert!(
            insns
                .iter()
                .any(|i| i.code == 0x61 && i.src == 6 && i.off == 8)
        );
        // Every map is referred to by its fd.
        for fd in [3, 5, 6] {
            assert!(insns.iter().any(|i| i.code == 0x18 && i.imm == fd), "{fd}");
        }
    }
}
