#!/usr/bin/env python3
"""Writes a large `perf kvm stat live` transcript: one screen per second, 40-character name
column (perf >= 6.3), a dozen VMX exit reasons with varying counts, the occasional UNKNOWN row
with perf's stderr note before it. Used by bench/parse_throughput.py and the criterion bench's
smaller twin. Usage: gen_perf_kvm_stat_live.py OUT SIZE_MB"""
import random
import sys

REASONS = ["MSR_WRITE", "HLT", "EXTERNAL_INTERRUPT", "EPT_MISCONFIG", "IO_INSTRUCTION",
           "APIC_WRITE", "PREEMPTION_TIMER", "EPT_VIOLATION", "MSR_READ", "PAUSE_INSTRUCTION",
           "CPUID", "EOI_INDUCED"]


def screen(rng, t):
    rows = []
    for name in REASONS:
        n = rng.randint(1, 50000)
        avg = rng.uniform(0.4, 20.0)
        rows.append((name, n, min(avg, rng.uniform(0.3, 0.5)), avg * rng.uniform(1, 30), avg))
    total = sum(r[1] for r in rows)
    ttime = sum(r[1] * r[4] for r in rows)
    out = [f"{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}.000123", "",
           "Analyze events for all VMs, all VCPUs:", "",
           f"{'VM-EXIT':>40} {'Samples':>10} {'Samples%':>9} {'Time%':>9} {'Min Time':>11} "
           f"{'Max Time':>11} {'Avg time':>16} ", ""]
    if t % 7 == 0:
        out.insert(6, "unknown kvm exit code:131072 on VMX")
        rows[-1] = ("UNKNOWN",) + rows[-1][1:]
    for name, n, lo, hi, avg in sorted(rows, key=lambda r: -r[1]):
        out.append(f"{name:>40} {n:10d} {100 * n / total:8.2f}% {100 * n * avg / ttime:8.2f}% "
                   f"{lo:9.2f}us {hi:9.2f}us {avg:9.2f}us ( +-{rng.uniform(0, 5):7.2f}% )")
    out += ["", f"Total Samples:{total}, Total events handled time:{ttime:.2f}us.", "", ""]
    return "\n".join(out)


def main():
    path, size_mb = sys.argv[1], float(sys.argv[2])
    rng = random.Random(42)
    limit = int(size_mb * 1024 * 1024)
    written, t = 0, 36000
    with open(path, "w") as f:
        while written < limit:
            s = screen(rng, t)
            f.write(s)
            written += len(s)
            t += 1


if __name__ == "__main__":
    main()
