//! Tests of the timeline accumulator: merging consecutive chunks gives the whole, the layout
//! stays bounded, scheduler states are spread over the buckets they cover.

use super::*;
use crate::events::Reason;

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
fn merging_two_halves_gives_the_whole() {
    let evs = stream(50_000);
    for cut in [1, 17, 25_000, 49_999] {
        let mut reasons = Reasons::default();
        let mut whole = TimelineAcc::default();
        fill(&mut whole, &mut reasons, &evs);
        // Each chunk with its own reason ids, as a parallel reader's partial builders have.
        let (mut r1, mut r2) = (Reasons::default(), Reasons::default());
        let (mut a, mut b) = (TimelineAcc::default(), TimelineAcc::default());
        fill(&mut b, &mut r2, &evs[cut..]);
        fill(&mut a, &mut r1, &evs[..cut]);
        a.merge(b);
        let (whole, merged) = (whole.finish(Some(Isa::Vmx)), a.finish(Some(Isa::Vmx)));
        assert_eq!(merged, whole, "cut at {cut}");
        assert_eq!(whole.map(|t| t.exits()), Some(50_000));
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
