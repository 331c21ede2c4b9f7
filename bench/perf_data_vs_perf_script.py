#!/usr/bin/env python3
"""`virtlens report FILE` against `perf script -i FILE` on a real perf.data of >= 5 million kvm
events, recorded here with the micro-VM example guest (`perf record -e 'kvm:*' -- pio_guest N`;
on the PVM development machines each port write gives 7 kvm events).

Runs are interleaved (perf script, virtlens, cat, perf script, virtlens, cat, ...) because these
machines are noisy; `cat FILE > /dev/null` is the second anchor: the cost of reading the bytes.
The script prints the recording's size and time, the medians, the min-max spread, the ratios
(targets: virtlens <= 1/50 of perf script's time and <= 2x cat's), virtlens's CPU time (user +
system, the steadier measure on a shared machine; with --baseline, the baseline's too and the
ratio), virtlens's peak RSS, the load average, and checks that virtlens counted as many events
as perf script printed.

Correctness (the run exits 1 when one fails, never on a time): virtlens counts as many events
as perf script prints; with --baseline BINARY (another virtlens, run interleaved too: A/B),
both reports are the same.

Needs root, /dev/kvm and perf. Usage:
  bench/perf_data_vs_perf_script.py [--events 5000000] [--runs 3] [--file F] [--keep]
      [--no-build] [--baseline PATH] [--binary PATH] [--guest PATH]
(--file reuses an existing recording instead of making one.)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import PEAK_RSS_METHOD, page_cache_line, peak_rss_kib, timed
from benchlib import add_binary_args, binaries, check, exit_status, interleaved, same_reports

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENTS_PER_WRITE = 7  # kvm_pio, kvm_userspace_exit, 2 kvm_fpu, 3 kvm_emulate_insn (PVM)


def record(guest, path, events):
    writes = -(-events // EVENTS_PER_WRITE)
    t0 = time.perf_counter()
    out = subprocess.run(["perf", "record", "-q", "-e", "kvm:*", "-o", path, "--", guest,
                          str(writes)], check=True, capture_output=True, text=True)
    took = time.perf_counter() - t0
    return writes, took, out.stdout.strip()


def event_counts(virtlens, path):
    out = subprocess.run([virtlens, "report", "--json", path], check=True,
                         capture_output=True, text=True)
    total = 0
    for t in json.loads(out.stdout)["tables"]:
        if t["kind"] == "events":
            total += t["total"]["count"]
    lines = 0
    with subprocess.Popen(["perf", "script", "-i", path, "-F", "event"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as p:
        for _ in p.stdout:
            lines += 1
    return total, lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--file")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-build", action="store_true", help="use the release binaries as built")
    ap.add_argument("--baseline", help="another virtlens binary, run interleaved (A/B)")
    add_binary_args(ap, guest=True)
    a = ap.parse_args()
    if not shutil.which("perf"):
        sys.exit("perf is not installed (Debian: apt-get install linux-perf)")
    virtlens, guest = binaries(a, guest=True)
    tmp = None
    if a.file:
        path = a.file
        print(f"file: {path} (given)")
    else:
        tmp = tempfile.mkdtemp(prefix="virtlens-bench-")
        path = os.path.join(tmp, "kvm.data")
        writes, took, guest_out = record(guest, path, a.events)
        print(f"recorded: perf record -e 'kvm:*' -- pio_guest {writes}  "
              f"({took:.1f} s; guest: {guest_out.splitlines()[0] if guest_out else '?'})")
    size = os.path.getsize(path)
    ours, perfs = event_counts(virtlens, path)
    print(f"file: {size / 1e6:.1f} MB")
    check(ours == perfs, f"{ours:,} events counted, {perfs:,} printed by perf script")
    if a.baseline:
        same_reports(virtlens, a.baseline, path)

    perf_cmd = ["perf", "script", "-i", path]
    vl_cmd = [virtlens, "report", path]
    cat_cmd = ["cat", path]
    timed(vl_cmd)  # warm the page cache
    perf_t, vl_t, cat_t, base_t = [], [], [], []
    vl_cpu, base_cpu = [], []

    def run(cmd, walls, cpus=None):
        wall, cpu = timed(cmd, reads=path)
        walls.append(wall)
        if cpus is not None:
            cpus.append(cpu)
    print(f"load average before: {os.getloadavg()[0]:.2f}")

    def said():
        timings = [perf_t, vl_t, cat_t] + ([base_t] if a.baseline else [])
        if len({len(t) for t in timings}) == 1:
            print(f"  run {len(vl_t)}: perf script {perf_t[-1]:.3f} s, virtlens {vl_t[-1]:.3f} s, "
                  f"cat {cat_t[-1]:.3f} s"
                  + (f", baseline {base_t[-1]:.3f} s" if base_t else ""), flush=True)

    steps = [lambda: run(perf_cmd, perf_t), lambda: run(vl_cmd, vl_t, vl_cpu),
             lambda: run(cat_cmd, cat_t)]
    if a.baseline:
        steps.append(lambda: run([a.baseline, "report", path], base_t, base_cpu))
    interleaved(a.runs, [lambda s=s: (s(), said()) for s in steps])
    pm, vm, cm = (statistics.median(perf_t), statistics.median(vl_t),
                  statistics.median(cat_t))
    print(f"perf script -i FILE > /dev/null:      median {pm:.3f} s "
          f"(min {min(perf_t):.3f}, max {max(perf_t):.3f}), {perfs / pm / 1e6:.2f} M events/s")
    print(f"virtlens report FILE > /dev/null:     median {vm:.3f} s "
          f"(min {min(vl_t):.3f}, max {max(vl_t):.3f}), {ours / vm / 1e6:.2f} M events/s")
    print(f"cat FILE > /dev/null:                 median {cm:.3f} s "
          f"(min {min(cat_t):.3f}, max {max(cat_t):.3f}), {size / cm / 1e6:.0f} MB/s")
    if base_t:
        bm = statistics.median(base_t)
        print(f"baseline report FILE > /dev/null:     median {bm:.3f} s "
              f"(min {min(base_t):.3f}, max {max(base_t):.3f}); ratio virtlens/baseline: "
              f"{vm / bm:.2f}")
    # The wall time follows what the machine's other tenants leave free; the CPU time is the
    # steadier measure of the work (both threads).
    vc = statistics.median(vl_cpu)
    print(f"virtlens CPU time (user + system): median {vc:.3f} s "
          f"(min {min(vl_cpu):.3f}, max {max(vl_cpu):.3f})"
          + (f"; baseline {statistics.median(base_cpu):.3f} s "
             f"(min {min(base_cpu):.3f}, max {max(base_cpu):.3f}); ratio "
             f"{vc / statistics.median(base_cpu):.2f}" if base_cpu else ""))
    print(f"virtlens peak RSS ({PEAK_RSS_METHOD}): {peak_rss_kib(vl_cmd) / 1024:.1f} MiB")
    ratio = vm / pm
    print(f"ratio virtlens/perf script: {ratio:.3f} (1/{pm / vm:.1f}); target <= 1/50: "
          f"{'met' if ratio <= 0.02 else 'NOT met'}")
    print(f"ratio virtlens/cat: {vm / cm:.2f}; target <= 2: {'met' if vm / cm <= 2 else 'NOT met'}")
    print(page_cache_line(path))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if tmp and not a.keep:
        shutil.rmtree(tmp)
    elif tmp:
        print(f"kept {path}")
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
