//! Parse throughput of the perf kvm stat source on a generated live transcript held in memory
//! (no disk), in bytes per second. The end-to-end figure with disk reads, memory and the
//! `wc -l` anchor is bench/parse_throughput.py.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::fmt::Write;
use virtlens_core::sources::{self, Format};

/// About `bytes` of live screens in perf ≥ 6.3's 40-column layout.
fn transcript(bytes: usize) -> String {
    let reasons = [
        "MSR_WRITE",
        "HLT",
        "EXTERNAL_INTERRUPT",
        "EPT_MISCONFIG",
        "IO_INSTRUCTION",
        "APIC_WRITE",
        "PREEMPTION_TIMER",
        "EPT_VIOLATION",
        "MSR_READ",
        "PAUSE_INSTRUCTION",
        "CPUID",
        "EOI_INDUCED",
    ];
    let mut s = String::with_capacity(bytes + 4096);
    let mut t = 0u64;
    while s.len() < bytes {
        let _ = write!(
            s,
            "10:{:02}:{:02}.000123\n\nAnalyze events for all VMs, all VCPUs:\n\n",
            t / 60 % 60,
            t % 60
        );
        let _ = writeln!(
            s,
            "{:>40}    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n",
            "VM-EXIT"
        );
        let mut total = 0;
        for (i, r) in reasons.iter().enumerate() {
            let n = 1000 + (t as usize * 7 + i * 131) % 40000;
            total += n;
            let _ = writeln!(
                s,
                "{r:>40} {n:>10}    {:>5}.{:02}%    {:>5}.{:02}%      0.{:02}us     {:>3}.{:02}us      {}.{:02}us ( +-   0.{:02}% )",
                i,
                i * 3 % 100,
                i,
                i * 7 % 100,
                30 + i,
                10 + i,
                i * 5 % 100,
                1 + i,
                i * 11 % 100,
                i * 13 % 100
            );
        }
        let _ = write!(
            s,
            "\nTotal Samples:{total}, Total events handled time:123456.78us.\n\n"
        );
        t += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let text = transcript(8 << 20);
    let mut g = c.benchmark_group("perf_kvm_stat");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10);
    g.bench_function("live_transcript_8MiB", |b| {
        b.iter(|| {
            sources::read_bytes(text.as_bytes(), "bench", Some(Format::PerfKvmStat))
                .map(|p| p.tables.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
