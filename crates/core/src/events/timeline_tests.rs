//! Tests of the timeline accumulator: every exit is kept whatever the order of the stamps, the
//! layout stays bounded, scheduler states are spread over the buckets they cover.

use super::*;
use crate::decode::Isa;
use crate::events::Reason;
use crate::profile::{LaneSched, OTHER_REASONS};

/// A stream of exits: (ts, tid, pid, vcpu, reason name).
fn stream(n: u64) -> Vec<(u64, u32, u32, u32, &'static str)> {
    const NAMES: [&str; 5] = [
        "HLT",
        "MSR_WRITE",
        "EPT_VIOLATION",
        "IO_INSTRUCTION",
        "CPUID",
    ];
    (0..n)
        .map(|i| {
            // Uneven gaps, a few out of order as perf's per-CPU buffers give them.
            let ts = 5_000_000 + i * 7_919 + (i % 13) * 1_000 - if i % 97 == 5 { 3_000 } else { 0 };
            let vcpu = (i % 3) as u32;
            (ts, 100 + vcpu, 42, vcpu, NAMES[(i * i % 5) as usize])
        })
        .collect()
}

fn fill(acc: &mut TimelineAcc, reasons: &mut Reasons, evs: &[(u64, u32, u32, u32, &str)]) {
    for &(ts, tid, pid, vcpu, name) in evs {
        let id = reasons.id(Reason::Name(name), None);
        acc.exit(ts, Some(tid), (Some(pid), Some(vcpu)), id, reasons);
    }
}

#[test]
fn stamps_out_of_order_keep_every_exit_in_its_lane() {
    let evs = stream(50_000);
    let mut reasons = Reasons::default();
    let mut acc = TimelineAcc::default();
    fill(&mut acc, &mut reasons, &evs);
    let t = acc.finish(Some(Isa::Vmx));
    assert_eq!(t.as_ref().map(|t| t.exits()), Some(50_000));
    let lanes = t.map(|t| t.lanes).unwrap_or_default();
    assert_eq!(lanes.len(), 3);
    for l in &lanes {
        let summed: u64 = l.series.iter().flat_map(|s| &s.counts).sum();
        assert_eq!(summed, l.exits, "{:?}", l.vcpu);
    }
}

#[test]
fn a_long_input_keeps_its_bucket_count_and_every_exit() {
    let mut reasons = Reasons::default();
    let mut acc = TimelineAcc::default();
    let mut n = 0u64;
    // A day at one exit per 100 ms, on 200 lanes with 40 reasons each.
    let names: Vec<String> = (0..40).map(|i| format!("R{i}")).collect();
    for i in 0..864_000u64 {
        let vcpu = (i % 200) as u32;
        let name = &names[(i % 40) as usize];
        let id = reasons.id(Reason::Name(name), None);
        acc.exit(i * 100_000_000, None, (Some(1), Some(vcpu)), id, &reasons);
        n += 1;
    }
    assert!(acc.lanes.len() <= HELD_LANES);
    assert!(acc.lanes.iter().all(|l| l.series.len() <= HELD_SERIES + 1));
    let Some(t) = acc.finish(None) else {
        panic!("no timeline")
    };
    assert_eq!(t.exits(), n);
    assert!(
        t.buckets <= BUCKETS && t.buckets > BUCKETS / 2,
        "{}",
        t.buckets
    );
    assert_eq!(t.lanes.len(), SHOWN_LANES + 1);
    assert_eq!(
        t.lanes.last().map(|l| l.folded),
        Some(200 - SHOWN_LANES as u32)
    );
    assert_eq!(t.reasons.len(), SHOWN_REASONS + 1);
    assert_eq!(t.reasons.last().map(String::as_str), Some(OTHER_REASONS));
    assert!(t.bucket_start(t.buckets) > t.last_ns);
    assert!(t.start_ns <= t.first_ns);
    for l in &t.lanes {
        let sum: u64 = l.series.iter().flat_map(|s| s.counts.iter()).sum();
        assert_eq!(sum, l.exits);
        assert!(l.series.iter().all(|s| s.counts.len() == t.buckets));
    }
}

#[test]
fn scheduler_states_fill_the_buckets_they_cover() {
    let mut reasons = Reasons::default();
    let id = reasons.id(Reason::Name("HLT"), None);
    let mut acc = TimelineAcc::default();
    let lane = (Some(1), Some(0));
    acc.exit(0, Some(7), lane, id, &reasons);
    // Running 0–40 µs, preempted (ready) to 60 µs, running to 100 µs, blocked to 119 µs.
    acc.switch(40_000, 7, true, 9);
    acc.switch(60_000, 9, false, 7);
    acc.switch(100_000, 7, false, 9);
    acc.wakeup(119_000, 7);
    acc.exit(119_500, Some(7), lane, id, &reasons);
    let Some(t) = acc.finish(None) else {
        panic!("no timeline")
    };
    assert_eq!(t.bucket_ns, 1_000);
    let s = t.lanes[0].sched.clone().unwrap_or_default();
    let sum = |v: &[u64]| v.iter().sum::<u64>();
    assert_eq!(sum(&s.running_ns), 80_000);
    assert_eq!(sum(&s.ready_ns), 20_000 + 500);
    assert_eq!(sum(&s.sleeping_ns), 19_000);
    assert_eq!(s.ready_ns[50], 1_000);
    assert_eq!(s.running_ns[50], 0);
}

#[test]
fn three_threads_over_many_cycles_sum_their_states() {
    // Cycles of 1 ms: each of three vCPU threads exits, then 0 is preempted by 9 and gets the
    // CPU back, 1 blocks and is woken, 2 runs on.
    enum E {
        Exit(u64, u32),
        Switch(u64, u32, bool, u32),
        Wake(u64, u32),
    }
    let mut evs = Vec::new();
    for c in 0..2_000u64 {
        let t = 1_000_000 + c * 1_000_000;
        for tid in 0..3 {
            evs.push(E::Exit(t + u64::from(tid) * 10_000, tid));
        }
        evs.push(E::Switch(t + 100_000, 0, true, 9));
        evs.push(E::Switch(t + 300_000, 1, false, 8));
        evs.push(E::Switch(t + 400_000, 9, false, 0));
        evs.push(E::Wake(t + 700_000, 1));
        evs.push(E::Switch(t + 800_000, 8, false, 1));
    }
    let mut reasons = Reasons::default();
    let id = reasons.id(Reason::Name("HLT"), None);
    let fill = |acc: &mut TimelineAcc, evs: &[E]| {
        for e in evs {
            match *e {
                E::Exit(ts, tid) => acc.exit(ts, Some(tid), (Some(1), Some(tid)), id, &reasons),
                E::Switch(ts, prev, r, next) => acc.switch(ts, prev, r, next),
                E::Wake(ts, tid) => acc.wakeup(ts, tid),
            }
        }
    };
    let mut whole = TimelineAcc::default();
    fill(&mut whole, &evs);
    let whole = whole.finish(None);
    let lanes = whole.map(|t| t.lanes).unwrap_or_default();
    let sum = |l: usize, f: fn(&LaneSched) -> &Vec<u64>| -> u64 {
        lanes[l].sched.as_ref().map_or(0, |s| f(s).iter().sum())
    };
    // vCPU 0 waits 300 µs of each cycle preempted, vCPU 1 sleeps 400 µs and waits 100 µs.
    assert_eq!(lanes[0].vcpu, Some(0));
    assert_eq!(sum(0, |s| &s.ready_ns), 2_000 * 300_000);
    assert_eq!(sum(1, |s| &s.sleeping_ns), 2_000 * 400_000);
    assert_eq!(sum(1, |s| &s.ready_ns), 2_000 * 100_000);
    assert_eq!(
        sum(2, |s| &s.running_ns),
        0,
        "never switched: still running, not counted"
    );
}
