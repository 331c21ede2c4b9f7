//! Issue 21's timeline from real traces: every timestamped exit on it (as many as the report
//! counts), buckets in order and covering the trace, bounded on a generated day-long input of
//! many vCPUs and reasons, and the vCPU threads' scheduling from `sched_switch` /
//! `sched_wakeup` in trace text.

use virtlens_core::analysis::{self, ReportOptions};
use virtlens_core::decode::Decoder;
use virtlens_core::events::{Event, EventKind, ProfileBuilder, Reason};
use virtlens_core::profile::{Origin, Profile, TableKind, Timeline};
use virtlens_core::sources::{self, Format};
use virtlens_testkit::files::testdata;

fn timeline(p: &Profile) -> &Timeline {
    p.timeline
        .as_ref()
        .unwrap_or_else(|| panic!("{:?}: no timeline", p.origin.path))
}

/// The report's count of exits, over every vmexit table.
fn reported_exits(p: &Profile) -> u64 {
    let r = analysis::report(
        std::slice::from_ref(p),
        &Decoder::builtin(),
        &ReportOptions::default(),
    );
    r.tables
        .iter()
        .filter(|t| t.kind == TableKind::Vmexit)
        .flat_map(|t| t.rows.iter())
        .map(|r| r.count)
        .sum()
}

/// Buckets in order and covering every exit; every lane's series as long as the buckets
/// and adding up to its exits.
fn well_formed(t: &Timeline) {
    assert!(t.buckets >= 1 && t.buckets <= 120, "{} buckets", t.buckets);
    assert!((t.bucket_ns / 1_000).is_power_of_two() && t.bucket_ns.is_multiple_of(1_000));
    assert_eq!(
        t.start_ns % t.bucket_ns,
        0,
        "buckets aligned to their width"
    );
    let starts: Vec<u64> = (0..=t.buckets).map(|i| t.bucket_start(i)).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "buckets in order");
    assert!(t.start_ns <= t.first_ns && t.first_ns <= t.last_ns);
    assert!(
        t.last_ns < t.bucket_start(t.buckets),
        "the last exit is in the last bucket"
    );
    for l in &t.lanes {
        assert!(l.series.iter().all(|s| s.counts.len() == t.buckets));
        assert!(l.series.iter().all(|s| s.reason < t.reasons.len()));
        let sum: u64 = l.series.iter().flat_map(|s| &s.counts).sum();
        assert_eq!(sum, l.exits);
    }
    let lanes: Vec<u64> = t.lanes.iter().map(|l| l.exits).collect();
    let own = t.lanes.iter().filter(|l| l.folded == 0).count();
    assert!(lanes[..own].windows(2).all(|w| w[0] >= w[1]), "{lanes:?}");
}

/// The lab's over-committed spinlock guest under `perf kvm stat record` (AMD SVM, 4 vCPUs).
#[test]
fn perf_data_of_a_lab_case_puts_every_exit_on_the_timeline() {
    let path = testdata("lab-cases/linux-overcommit-spinlock/perf.data");
    let p = sources::read_path(&path, None).unwrap();
    let t = timeline(&p);
    well_formed(t);
    assert_eq!(t.exits(), reported_exits(&p));
    assert_eq!(t.exits(), 1397);
    let mut vcpus: Vec<Option<u32>> = t.lanes.iter().map(|l| l.vcpu).collect();
    vcpus.sort();
    assert_eq!(vcpus, [Some(0), Some(1), Some(2), Some(3)]);
    assert!(t.reasons.iter().any(|r| r == "msr"), "{:?}", t.reasons);
    assert!(
        t.lanes.iter().all(|l| l.sched.is_none()),
        "no sched_switch in it"
    );
}

/// ftrace text of a nested guest's vCPU (a public bug report's trace) and perf script text.
#[test]
fn trace_text_puts_every_exit_on_the_timeline() {
    for rel in [
        "cases/ml-06-nested-vmx-dr6-preemption-timer-trace/input.txt",
        "cases/ml-30-ps2-controller-port-60-64-isr-trace/input.txt",
        "cases/ml-19-amd-idle-hlt-selfipi-timestamp-trace/before.txt",
    ] {
        let p = sources::read_path(&testdata(rel), None).unwrap();
        let t = timeline(&p);
        well_formed(t);
        assert_eq!(t.exits(), reported_exits(&p), "{rel}");
    }
}

/// A perf kvm stat report has no timestamps: no timeline, and the JSON has no field for it.
#[test]
fn a_summary_table_has_no_timeline() {
    let path = testdata("lab-cases/linux-overcommit-spinlock/perf-kvm-stat.txt");
    let p = sources::read_path(&path, None).unwrap();
    assert!(p.timeline.is_none());
    let json = serde_json::to_value(&p).unwrap();
    assert!(json.get("timeline").is_none());
}

/// A day at 20 exits a second on 300 vCPUs of 30 VMs, 60 reasons: the timeline keeps at
/// most 120 buckets, 16 lanes and the rest folded, 8 reasons and `other`, and every exit.
#[test]
fn a_long_input_stays_bounded() {
    let names: Vec<String> = (0..60).map(|i| format!("REASON_{i}")).collect();
    let mut b = ProfileBuilder::new(Origin::new("test", None));
    let n: u64 = 86_400 * 20;
    for i in 0..n {
        let vcpu = (i % 300) as u32;
        let ev = Event {
            ts_ns: Some(1_000_000_000 + i * 50_000_000),
            tid: Some(10_000 + vcpu),
            pid: Some(1000 + vcpu / 10),
            ..Event::new(EventKind::Exit {
                reason: Reason::Name(&names[(i * 7 % 60) as usize]),
                isa: None,
                vcpu: Some(vcpu % 10),
                rip: None,
            })
        };
        b.push(&ev);
    }
    let p = b.finish();
    let t = timeline(&p);
    well_formed(t);
    assert_eq!(t.exits(), n);
    assert_eq!(t.lanes.len(), 17);
    assert_eq!(t.lanes[16].folded, 284);
    assert_eq!(t.reasons.len(), 9);
    assert_eq!(t.reasons[8], "other");
    assert!(
        t.buckets > 60,
        "{} buckets: the width doubled no more than needed",
        t.buckets
    );
    let json = serde_json::to_string(&p).unwrap();
    assert!(json.len() < 400_000, "{} bytes of JSON", json.len());
}

/// One trace-cmd line of `comm-tid` at `t` seconds.
fn line(comm_tid: &str, t: f64, event: &str, text: &str) -> String {
    format!("{comm_tid:>16} [003] .....  {t:.6}: {event}: {text}\n")
}

/// trace-cmd text with the scheduler's events: vCPU 0's thread runs 0–4 ms, is preempted by
/// a kworker until 6 ms (ready), runs until 10 ms, blocks in HLT until a wakeup at 15 ms,
/// waits for a CPU until 16 ms and runs on.
#[test]
fn sched_switch_gives_the_vcpu_threads_states() {
    let vcpu = "CPU 0/KVM-4242";
    let exit = "vcpu 0 reason HLT rip 0xffffffff81000000 info 0 0";
    let t0 = 100.0;
    let mut s = String::new();
    s += &line(vcpu, t0, "kvm_exit", exit);
    s += &line(
        vcpu,
        t0 + 0.004,
        "sched_switch",
        "prev_comm=CPU 0/KVM prev_pid=4242 prev_prio=120 prev_state=R+ ==> next_comm=kworker/3:1 \
         next_pid=77 next_prio=120",
    );
    s += &line(
        "kworker/3:1-77",
        t0 + 0.006,
        "sched_switch",
        "prev_comm=kworker/3:1 prev_pid=77 prev_prio=120 prev_state=I ==> next_comm=CPU 0/KVM \
         next_pid=4242 next_prio=120",
    );
    s += &line(vcpu, t0 + 0.008, "kvm_exit", exit);
    s += &line(
        vcpu,
        t0 + 0.010,
        "sched_switch",
        "prev_comm=CPU 0/KVM prev_pid=4242 prev_prio=120 prev_state=S ==> next_comm=swapper/3 \
         next_pid=0 next_prio=120",
    );
    s += &line(
        "<idle>-0",
        t0 + 0.015,
        "sched_wakeup",
        "comm=CPU 0/KVM pid=4242 prio=120 target_cpu=003",
    );
    s += &line(
        "<idle>-0",
        t0 + 0.016,
        "sched_switch",
        "prev_comm=swapper/3 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=CPU 0/KVM \
         next_pid=4242 next_prio=120",
    );
    s += &line(vcpu, t0 + 0.0161, "kvm_exit", exit);
    let p = sources::read_bytes(s.as_bytes(), "trace", Some(Format::TraceText)).unwrap();
    let t = timeline(&p);
    well_formed(t);
    assert_eq!(t.exits(), 3);
    assert_eq!(t.lanes.len(), 1, "{:?}", t.lanes);
    let sched = t.lanes[0].sched.as_ref().expect("the strip");
    // The running since 16 ms has not ended when the trace does: not counted.
    let ms = |v: &[u64]| v.iter().sum::<u64>() / 1_000_000;
    assert_eq!(ms(&sched.running_ns), 4 + 4);
    assert_eq!(ms(&sched.ready_ns), 2 + 1);
    assert_eq!(ms(&sched.sleeping_ns), 5);
    for i in 0..t.buckets {
        let known = sched.running_ns[i] + sched.ready_ns[i] + sched.sleeping_ns[i];
        assert!(
            known <= t.bucket_ns,
            "bucket {i}: {known} ns of {}",
            t.bucket_ns
        );
    }
}
