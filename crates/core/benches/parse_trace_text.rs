//! Parse throughput of the trace-text source on a generated `perf script` trace held in memory
//! (no disk), in bytes per second: several vCPU threads, kvm_exit / kvm_msr / kvm_pio /
//! kvm_mmio / kvm_userspace_exit / kvm_entry interleaved, 2020+ text with some legacy lines.
//! The end-to-end figure with disk reads, peak memory and the `wc -l` anchor is
//! bench/trace_text_throughput.py (its generator is bench/gen_trace_text.py).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::fmt::Write;
use virtlens_core::sources::{self, Format};

/// A tiny deterministic generator (xorshift), so the input is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// About `bytes` of perf script text: 8 vCPUs of 3 VMs taking turns, each exit followed by
/// the events KVM emits for it and the entry; one VM prints the 2015–2020 text.
fn trace(bytes: usize) -> String {
    let reasons = [
        ("MSR_WRITE", "msr"),
        ("EXTERNAL_INTERRUPT", ""),
        ("HLT", ""),
        ("IO_INSTRUCTION", "pio"),
        ("EPT_MISCONFIG", "mmio"),
        ("EPT_VIOLATION", ""),
        ("APIC_WRITE", ""),
        ("PAUSE_INSTRUCTION", ""),
    ];
    let ports = [0x70u32, 0x71, 0x608, 0x3f8, 0xcfc];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut s = String::with_capacity(bytes + 4096);
    let mut t_ns: u64 = 7_000_000_000_000;
    while s.len() < bytes {
        let vcpu = rng.below(8) as u32;
        let (pid, legacy) = match vcpu {
            0..=3 => (4101, false),
            4..=5 => (5202, false),
            _ => (6303, true),
        };
        let tid = pid + 20 + vcpu;
        let p = format!(
            "{:>16} {tid:>6} [{:03}] ",
            format!("CPU {}/KVM", vcpu % 4),
            vcpu
        );
        let (reason, follow) = reasons[rng.below(reasons.len() as u64) as usize];
        let rip = 0xffff_ffff_8100_0000u64 + rng.below(1 << 20) * 4;
        let ts = |t: u64| format!("{}.{:06}", t / 1_000_000_000, t % 1_000_000_000 / 1_000);
        if legacy {
            let _ = writeln!(
                s,
                "{p}{}: {:>22}: reason {reason} rip {rip:#x} info 0 0",
                ts(t_ns),
                "kvm:kvm_exit"
            );
        } else {
            let _ = writeln!(
                s,
                "{p}{}: {:>22}: vcpu {vcpu} reason {reason} rip {rip:#x} info1 0x0000000000000000 \
                 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
                ts(t_ns),
                "kvm:kvm_exit"
            );
        }
        t_ns += 1_000;
        match follow {
            "msr" => {
                let _ = writeln!(
                    s,
                    "{p}{}: {:>22}: msr_write 6e0 = 0x{:x}",
                    ts(t_ns),
                    "kvm:kvm_msr",
                    rng.next() >> 24
                );
            }
            "pio" => {
                let port = ports[rng.below(ports.len() as u64) as usize];
                let _ = writeln!(
                    s,
                    "{p}{}: {:>22}: pio_read at {port:#x} size 1 count 1 val 0x{:x} ",
                    ts(t_ns),
                    "kvm:kvm_pio",
                    rng.below(256)
                );
                let _ = writeln!(
                    s,
                    "{p}{}: {:>22}: reason KVM_EXIT_IO (2)",
                    ts(t_ns),
                    "kvm:kvm_userspace_exit"
                );
            }
            "mmio" => {
                let _ = writeln!(
                    s,
                    "{p}{}: {:>22}: mmio write len 4 gpa 0xfebf1000 val 0x{:x}",
                    ts(t_ns),
                    "kvm:kvm_mmio",
                    rng.below(1 << 32)
                );
            }
            _ => {}
        }
        t_ns += 1_000 + rng.below(20_000);
        if legacy {
            let _ = writeln!(s, "{p}{}: {:>22}: vcpu {vcpu}", ts(t_ns), "kvm:kvm_entry");
        } else {
            let _ = writeln!(
                s,
                "{p}{}: {:>22}: vcpu {vcpu}, rip {rip:#x}",
                ts(t_ns),
                "kvm:kvm_entry"
            );
        }
        t_ns += 1_000;
    }
    s
}

fn bench(c: &mut Criterion) {
    let text = trace(8 << 20);
    let mut g = c.benchmark_group("trace_text");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10);
    g.bench_function("perf_script_8MiB", |b| {
        b.iter(|| {
            sources::read_bytes(text.as_bytes(), "bench", Some(Format::TraceText))
                .map(|p| p.tables.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
