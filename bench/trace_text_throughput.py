#!/usr/bin/env python3
"""Parse throughput and memory of `virtlens report` on a large `perf script` kvm trace.

Anchor: `wc -l` on the same file in the same run (the cost of just reading the bytes).
Runs are interleaved (wc, virtlens, wc, virtlens, ...) because these machines are noisy;
the script prints medians, min-max spread, MB/s, the ratio to the anchor and peak RSS
(benchlib.PEAK_RSS_METHOD) on the big file and on one 1/16 its size (memory must not grow
with input).

With --baseline BINARY (e.g. a build of main), that binary runs interleaved too and the
ratio of the medians is printed (A/B on the same file in the same run).

Correctness (the run exits 1 when one fails, never on a time): the report counts every line
as an event and every `kvm_exit` line as an exit; with --baseline, both reports are the same.

Usage: bench/trace_text_throughput.py [--size-mb 2048] [--runs 5] [--baseline PATH]
       [--binary PATH] [--keep]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import add_binary_args, binaries, check, exit_status, interleaved, report_json
from benchlib import PEAK_RSS_METHOD, page_cache_line, peak_rss_kib, timed
from benchlib import same_reports
from benchlib import table_total

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(ROOT, "bench", "gen_trace_text.py")


CPU = {}  # step ("ours", "baseline", "anchor") -> CPU seconds (user + system) of each run


def timed_cpu(step, cmd):
    """`timed`'s wall time (the input, the command's last argument, wholly cached first); its
    CPU time goes to CPU[step] (keyed by step, not binary: an A/B of a binary against itself
    keeps two lists)."""
    wall, cpu = timed(cmd, reads=cmd[-1])
    CPU.setdefault(step, []).append(cpu)
    return wall


def spread(xs):
    return f"min {min(xs):.3f}, max {max(xs):.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=float, default=2048)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--baseline", help="another virtlens binary, run interleaved (A/B)")
    add_binary_args(ap)
    a = ap.parse_args()
    exe = binaries(a)
    tmp = tempfile.mkdtemp(prefix="virtlens-trace-bench-")
    path = os.path.join(tmp, "trace.txt")
    small = os.path.join(tmp, "small.txt")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, GEN, path, str(a.size_mb)], check=True)
    subprocess.run([sys.executable, GEN, small, str(a.size_mb / 16)], check=True)
    gen_s = time.perf_counter() - t0
    size = os.path.getsize(path)
    lines = exits = 0
    pattern = b" kvm:kvm_exit: "
    with open(path, "rb") as f:
        tail = b""
        for buf in iter(lambda: f.read(1 << 24), b""):
            lines += buf.count(b"\n")
            # The bytes of the last read that could start a match running into this one.
            joined = tail + buf
            exits += joined.count(pattern)
            tail = joined[-(len(pattern) - 1):]
    report = report_json(exe, path)
    check(table_total(report, "events") == lines,
          f"{table_total(report, 'events'):,} events counted, {lines:,} lines")
    check(table_total(report, "vmexit") == exits,
          f"{table_total(report, 'vmexit'):,} exits counted, {exits:,} kvm_exit lines")
    if a.baseline:
        same_reports(exe, a.baseline, path)
    timed([exe, "report", path])  # warm the page cache and the binary once
    anchor, ours, base = [], [], []
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    interleaved(a.runs, [lambda: anchor.append(timed_cpu("anchor", ["wc", "-l", path])),
                         lambda: ours.append(timed_cpu("ours", [exe, "report", path]))]
                + ([lambda: base.append(timed_cpu("baseline", [a.baseline, "report", path]))]
                   if a.baseline else []))
    rss_big = peak_rss_kib([exe, "report", path])
    rss_small = peak_rss_kib([exe, "report", small])
    mb = size / 1e6
    med, med_a = statistics.median(ours), statistics.median(anchor)
    print(f"input: {mb:.0f} MB perf script kvm trace, {lines:,} lines "
          f"(generated in {gen_s:.0f} s; {a.runs} interleaved runs)")
    print(f"virtlens report: median {med:.3f} s ({spread(ours)}) = {mb / med:.0f} MB/s "
          f"(best {mb / min(ours):.0f} MB/s, {lines / med / 1e6:.1f} M lines/s)")
    print(f"wc -l (anchor):  median {med_a:.3f} s ({spread(anchor)}) = {mb / med_a:.0f} MB/s")
    print(f"ratio virtlens/wc: {med / med_a:.2f}")
    # On a shared machine the wall time follows what the others leave free; the CPU time
    # (user + system, all threads) does not.
    cpu = statistics.median(CPU["ours"])
    print(f"virtlens CPU time (user + system): median {cpu:.3f} s = {mb / cpu:.0f} MB per CPU-second")
    print(f"load average (1, 5, 15 min) before the runs: {load_before}; after: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    if base:
        med_b = statistics.median(base)
        print(f"baseline report: median {med_b:.3f} s ({spread(base)}) = {mb / med_b:.0f} MB/s; "
              f"ratio virtlens/baseline: {med / med_b:.2f}")
        cpu_b = statistics.median(CPU["baseline"])
        print(f"baseline CPU time: median {cpu_b:.3f} s = {mb / cpu_b:.0f} MB per CPU-second")
    print(page_cache_line(path))
    print(f"peak RSS ({PEAK_RSS_METHOD}): {rss_big / 1024:.1f} MiB on {mb:.0f} MB, "
          f"{rss_small / 1024:.1f} MiB on {mb / 16:.0f} MB "
          f"(memory does not grow with the input when these match)")
    if a.keep:
        print(f"kept: {path}")
    else:
        shutil.rmtree(tmp)
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
