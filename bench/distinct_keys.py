#!/usr/bin/env python3
"""Time and memory of `virtlens report` against the number of distinct keys.

Two inputs of N events, each to a different MMIO address: a `perf script` trace (read as a
stream: its tables fold as they are read) and a pasted `perf kvm stat --event=mmio` table of N
rows (read whole, folded once read). Anchor: `wc -l` on the same file, in the same run,
interleaved with virtlens (wc, virtlens, wc, virtlens, ...) because these machines are noisy.
Prints medians, min-max spread, the ratio to the anchor, and virtlens's peak RSS.

Usage: bench/distinct_keys.py [--keys 2000000] [--runs 3] [--binary target/release/virtlens]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def trace(path, n):
    with open(path, "w") as f:
        for i in range(n):
            a = 1_000_000_000 + i * 17
            f.write(f"     CPU 0/KVM   4330 [001] {a // 1000000}.{a % 1000000:06d}:           "
                    f"kvm:kvm_mmio: mmio write len 4 gpa {0xfe000000 + i * 4:#x} val 0x0\n")


def pasted(path, n):
    with open(path, "w") as f:
        f.write("\n\nAnalyze events for all VMs, all VCPUs:\n\n         MMIO Access    Samples  "
                "Samples%     Time%    Min Time    Max Time         Avg time \n\n")
        for i in range(n):
            f.write(f"       {0xfe000000 + i * 4:#x}:W        1     0.00%     0.00%     64.73us"
                    f"     64.73us     64.73us ( +-   0.00% )\n")
        f.write(f"\nTotal Samples:{n}, Total events handled time:{n * 64.73:.2f}us.\n")


def run(cmd):
    """Seconds and peak RSS (KiB) of `cmd`, measured in a fresh child so that earlier,
    bigger children do not mask its peak."""
    code = ("import resource,subprocess,sys,time;t=time.perf_counter();"
            "subprocess.run(sys.argv[1:],check=True,stdout=subprocess.DEVNULL);"
            "print(time.perf_counter()-t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code] + cmd, check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[0]), int(out[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/virtlens"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("perf script", trace), ("pasted perf kvm stat", pasted)):
            path = os.path.join(tmp, "input.txt")
            make(path, args.keys)
            mb = os.path.getsize(path) / 1e6
            wc, vl, rss = [], [], []
            for _ in range(args.runs):
                wc.append(run(["wc", "-l", path])[0])
                s, kib = run([args.binary, "report", path])
                vl.append(s)
                rss.append(kib)
            m = statistics.median
            print(f"{name}: {args.keys} distinct keys, {mb:.0f} MB, {args.runs} runs interleaved")
            print(f"  virtlens report  median {m(vl):.2f} s (spread {min(vl):.2f}-{max(vl):.2f}),"
                  f" peak RSS median {m(rss) / 1024:.0f} MiB (max {max(rss) / 1024:.0f})")
            print(f"  wc -l (anchor)   median {m(wc):.3f} s; ratio virtlens/wc {m(vl) / m(wc):.1f}")
            os.remove(path)


if __name__ == "__main__":
    main()
