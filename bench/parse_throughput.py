#!/usr/bin/env python3
"""Parse throughput and memory of `virtlens report` on a large perf kvm stat live transcript.

Anchor: `wc -l` on the same file in the same run (the cost of just reading the bytes).
Runs are interleaved (wc, virtlens, wc, virtlens, ...) because these machines are noisy;
the script prints medians, min-max spread, MB/s, the ratio to the anchor and peak RSS
(benchlib.PEAK_RSS_METHOD) on the big file and on one 1/16 its size.

With --baseline BINARY (e.g. a build of main), that binary runs interleaved too and the
ratio of the medians is printed (A/B on the same file in the same run).

Correctness (the run exits 1 when one fails, never on a time): the report's exits are the
sum of the transcript's `Total Samples:` lines; with --baseline, both reports are the same.

Usage: bench/parse_throughput.py [--size-mb 1024] [--runs 5] [--baseline PATH] [--binary PATH]
       [--keep]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import add_binary_args, binaries, check, exit_status, interleaved, report_json
from benchlib import same_reports
from benchlib import PEAK_RSS_METHOD, page_cache_line, peak_rss_kib, table_total, timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=float, default=1024)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--baseline", help="another virtlens binary, run interleaved (A/B)")
    add_binary_args(ap)
    a = ap.parse_args()
    exe = binaries(a)
    tmp = tempfile.mkdtemp(prefix="virtlens-bench-")
    path = os.path.join(tmp, "live.txt")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_perf_kvm_stat_live.py"),
                    path, str(a.size_mb)], check=True)
    size = os.path.getsize(path)
    samples = 0
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"Total Samples:"):
                samples += int(line[len(b"Total Samples:"):].split(b",")[0])
    counted = table_total(report_json(exe, path), "vmexit")
    check(counted == samples, f"{counted:,} exits counted, {samples:,} in `Total Samples:` lines")
    if a.baseline:
        same_reports(exe, a.baseline, path)
    anchor, ours, base, cpu_ours, cpu_base = [], [], [], [], []
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())

    def ours_step():
        wall, cpu = timed([exe, "report", path], reads=path)
        ours.append(wall)
        cpu_ours.append(cpu)

    def base_step():
        wall, cpu = timed([a.baseline, "report", path], reads=path)
        base.append(wall)
        cpu_base.append(cpu)

    interleaved(a.runs, [lambda: anchor.append(timed(["wc", "-l", path], reads=path)[0]), ours_step]
                + ([base_step] if a.baseline else []))
    rss_small_path = os.path.join(tmp, "small.txt")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_perf_kvm_stat_live.py"),
                    rss_small_path, str(a.size_mb / 16)], check=True)
    rss_big = peak_rss_kib([exe, "report", path])
    rss_small = peak_rss_kib([exe, "report", rss_small_path])
    mb = size / 1e6
    med, med_a = statistics.median(ours), statistics.median(anchor)
    print(f"input: {mb:.0f} MB perf kvm stat live transcript ({a.runs} interleaved runs)")
    print(f"virtlens report: median {med:.3f} s (min {min(ours):.3f}, max {max(ours):.3f})"
          f" = {mb / med:.0f} MB/s (best {mb / min(ours):.0f} MB/s)")
    print(f"wc -l (anchor):  median {med_a:.3f} s (min {min(anchor):.3f}, max {max(anchor):.3f})"
          f" = {mb / med_a:.0f} MB/s")
    print(f"ratio virtlens/wc: {med / med_a:.2f}")
    print(f"virtlens CPU time (user + system): median {statistics.median(cpu_ours):.3f} s"
          + (f"; baseline {statistics.median(cpu_base):.3f} s" if cpu_base else ""))
    print(f"load average (1, 5, 15 min) before the runs: {load_before}; after: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    if base:
        med_b = statistics.median(base)
        print(f"baseline report: median {med_b:.3f} s (min {min(base):.3f}, max {max(base):.3f})"
              f" = {mb / med_b:.0f} MB/s; ratio virtlens/baseline: {med / med_b:.2f}")
    print(page_cache_line(path))
    print(f"peak RSS ({PEAK_RSS_METHOD}): {rss_big / 1024:.1f} MiB on {mb:.0f} MB, "
          f"{rss_small / 1024:.1f} MiB on "
          f"{mb / 16:.0f} MB (memory does not grow with the input when these match)")
    if not a.keep:
        os.remove(path)
        os.remove(rss_small_path)
        os.rmdir(tmp)
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
