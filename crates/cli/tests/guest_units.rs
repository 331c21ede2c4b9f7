//! The guest crate's own checks (statistics, the load's tasks, /proc parsing, the external
//! benchmarks' documents, the CPU kernel): they run in this suite, so the workspace builds one
//! test binary per crate that has integration tests and none for the guest library.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use virtlens_guest::stats::Spread;
use virtlens_guest::testing::{QUEENS_SOLUTIONS as SOLUTIONS, fio_figures, iperf3_figures, queens};
use virtlens_guest::testing::{Work, io_wait};
use virtlens_guest::{
    CpuTicks, SchedStat,
    testing::{anon_huge_kb_in, count_cpu_list, procs_running_in},
};

#[test]
fn median_and_quartiles_interpolate_between_ranks() {
    let s = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap_or_else(|| unreachable!());
    assert_eq!(
        (s.median, s.q1, s.q3, s.min, s.max, s.n),
        (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    );
    assert_eq!(s.band(), (2.0, 4.0));
    let few = Spread::of(&[1.0, 3.0]).unwrap_or_else(|| unreachable!());
    assert_eq!((few.median, few.band()), (2.0, (1.0, 3.0)));
    assert!(Spread::of(&[]).is_none());
    assert!(Spread::of(&[1.0, f64::NAN]).is_none());
}

#[test]
fn a_task_is_deterministic_for_its_seed() {
    let w = Work {
        iterations: 2,
        elements: 1000,
        contention: 0.5,
        io_wait_ms: 0.0,
        io_wait_cv: 0.0,
    };
    let lock = Mutex::new(());
    assert_eq!(w.run(3, 7, &lock), w.run(3, 7, &lock));
    assert_ne!(w.run(3, 7, &lock), w.run(4, 7, &lock));
}

#[test]
fn io_waits_have_the_asked_mean_and_variation() {
    let mut rng = fastrand::Rng::with_seed(1);
    let n = 20_000;
    let v: Vec<f64> = (0..n)
        .map(|_| io_wait(&mut rng, 2.0, 0.5).as_secs_f64() * 1e3)
        .collect();
    let mean = v.iter().sum::<f64>() / n as f64;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    assert!((mean - 2.0).abs() < 0.1, "mean {mean}");
    assert!((sd / mean - 0.5).abs() < 0.05, "cv {}", sd / mean);
    assert_eq!(io_wait(&mut rng, 3.0, 0.0), Duration::from_millis(3));
}

#[test]
fn proc_stat_steal_and_busy() {
    let a = CpuTicks::parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3").unwrap();
    let b = CpuTicks::parse("cpu  200 0 100 850 50 0 0 100 0 0\n").unwrap();
    assert_eq!(a.busy, 150);
    // 150 busy, 50 idle, 100 steal between them
    assert_eq!(a.steal_pct_until(&b), Some(100.0 / 3.0));
    assert_eq!(a.busy_pct_until(&b), Some(50.0));
    assert!(CpuTicks::parse("intr 1 2").is_none());
    assert_eq!(
        procs_running_in("cpu  1 2\nprocs_running 7\nprocs_blocked 0\n"),
        Some(7)
    );
}

#[test]
fn schedstat_and_smaps_and_cpu_lists() {
    let s = SchedStat::parse("2000 500 7\n").unwrap();
    assert_eq!((s.run_ns, s.wait_ns, s.slices), (2000, 500, 7));
    assert!(SchedStat::parse("x").is_none());
    let smaps = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nSize: 4096 kB\nAnonHugePages:   2048 kB\n\
                 7f0000400000-7f0000500000 rw-p 00000000 00:00 0\nAnonHugePages:      0 kB\n";
    assert_eq!(anon_huge_kb_in(smaps, 0x7f00_0020_0000), Some(2048));
    assert_eq!(anon_huge_kb_in(smaps, 0x7f00_0040_0000), Some(0));
    assert_eq!(anon_huge_kb_in(smaps, 0x1000), None);
    assert_eq!(count_cpu_list("0-3,6"), Some(5));
    assert_eq!(count_cpu_list("0"), Some(1));
    assert_eq!(count_cpu_list("3-1"), None);
}

#[test]
fn fio_and_iperf3_documents_give_their_figures() {
    let fio: Value = serde_json::json!({"jobs": [{"jobname": "rw4k",
        "read": {"total_ios": 0, "iops": 0.0},
        "write": {"total_ios": 1000, "iops": 465536.5, "clat_ns": {"mean": 2100.0}}}]});
    assert_eq!(
        fio_figures(&fio),
        vec![
            ("fio.rw4k.write.iops".to_string(), 465536.5),
            ("fio.rw4k.write.clat_mean_us".to_string(), 2.1)
        ]
    );
    let iperf: Value = serde_json::json!({"end": {"sum_received": {"bits_per_second": 8.0e9},
        "cpu_utilization_percent": {"host_total": 12.5}}});
    assert_eq!(iperf3_figures(&iperf), Some((1000.0, Some(12.5))));
    assert_eq!(iperf3_figures(&serde_json::json!({})), None);
}

#[test]
fn queens_counts_match_the_known_sequence() {
    for n in 1..=10 {
        assert_eq!(queens(n), SOLUTIONS[n as usize], "n = {n}");
    }
}
