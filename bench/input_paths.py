#!/usr/bin/env python3
"""Memory and speed of the ways `virtlens report` takes its input, and the input caps.

1. Peak RSS of `report FILE`, `report - < FILE` and `cat FILE | report -` on one large
   `perf script` kvm trace (bench/gen_trace_text.py): standard input is streamed, so the three
   must be the same (before the fix, `report -` read stdin whole: RSS grew with the input).
2. Parse time of `report FILE` and `cat FILE | report -`, interleaved with `wc -l FILE` (the
   anchor: the cost of reading the bytes) and, with --baseline BINARY, with an older build of
   virtlens on the same file (A/B): medians, min-max spread, ratios to the anchor.
3. Time of `lint /dev/zero` (refused at the 16 MiB configuration cap) and of
   `report --format trace-text /dev/zero` (refused at the 1 MiB line cap).

The machine these numbers come from is shared and noisy: re-run on a quiet one.

Usage: bench/input_paths.py [--size-mb 500] [--runs 5] [--baseline PATH] [--keep]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(ROOT, "bench", "gen_trace_text.py")
TIME = "/usr/bin/time"


def run(shell_cmd):
    """Runs a shell command line; returns (seconds, peak RSS KiB of its last process)."""
    t0 = time.perf_counter()
    out = subprocess.run([TIME, "-v", "sh", "-c", shell_cmd], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    return elapsed, int(m.group(1)) if m else 0, out.returncode


def rss_of_report(shell_cmd):
    """Peak RSS (KiB) of the virtlens process alone, measured with /usr/bin/time inside."""
    out = subprocess.run(["sh", "-c", shell_cmd], capture_output=True, text=True)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stdout + out.stderr)
    if out.returncode != 0 or not m:
        sys.exit(f"failed: {shell_cmd}\n{(out.stdout + out.stderr)[-2000:]}")
    return int(m.group(1))


def summary(xs):
    return f"median {statistics.median(xs):.3f} s (min {min(xs):.3f}, max {max(xs):.3f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=float, default=500)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", help="another virtlens binary to compare with (A/B)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(TIME):
        sys.exit(f"{TIME} is needed (Debian: apt-get install time)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "virtlens"], cwd=ROOT, check=True)
    exe = os.path.join(ROOT, "target", "release", "virtlens")
    tmp = tempfile.mkdtemp(prefix="virtlens-input-bench-")
    path = os.path.join(tmp, "trace.txt")
    subprocess.run([sys.executable, GEN, path, str(a.size_mb)], check=True)
    mb = os.path.getsize(path) / 1e6
    q = lambda s: "'" + s.replace("'", "'\\''") + "'"  # noqa: E731
    e, p = q(exe), q(path)

    # 1. Peak RSS of the virtlens process in each way of giving it the input.
    ways = {
        "report FILE": f"{TIME} -v {e} report {p}",
        "report - < FILE": f"{TIME} -v {e} report - < {p}",
        "cat FILE | report -": f"cat {p} | {TIME} -v {e} report -",
    }
    if a.baseline:
        b = q(a.baseline)
        ways["baseline: report FILE"] = f"{TIME} -v {b} report {p}"
        ways["baseline: cat FILE | report -"] = f"cat {p} | {TIME} -v {b} report -"
    subprocess.run(["sh", "-c", f"{e} report {p} > /dev/null"], check=True)  # warm the cache
    rss = {name: [] for name in ways}
    for _ in range(max(1, a.runs // 2)):
        for name, cmd in ways.items():
            rss[name].append(rss_of_report(cmd + " 2>&1 >/dev/null"))
    print(f"input: {mb:.0f} MB perf script kvm trace")
    print("peak RSS of the virtlens process (/usr/bin/time -v), median of "
          f"{max(1, a.runs // 2)} runs:")
    for name, xs in rss.items():
        print(f"  {name:32} {statistics.median(xs) / 1024:8.1f} MiB "
              f"(min {min(xs) / 1024:.1f}, max {max(xs) / 1024:.1f})")

    # 2. Parse time, interleaved with the anchor (and the baseline).
    cmds = {
        "wc -l FILE (anchor)": f"wc -l {p}",
        "report FILE": f"{e} report {p}",
        "cat FILE | report -": f"cat {p} | {e} report -",
    }
    if a.baseline:
        cmds["baseline: report FILE"] = f"{q(a.baseline)} report {p}"
    times = {name: [] for name in cmds}
    for _ in range(a.runs):
        for name, cmd in cmds.items():
            times[name].append(run(cmd + " > /dev/null")[0])
    anchor = statistics.median(times["wc -l FILE (anchor)"])
    print(f"parse time, {a.runs} interleaved runs:")
    for name, xs in times.items():
        med = statistics.median(xs)
        print(f"  {name:32} {summary(xs)} = {mb / med:.0f} MB/s, {med / anchor:.2f}× the anchor")
    if a.baseline:
        ours = statistics.median(times["report FILE"])
        base = statistics.median(times["baseline: report FILE"])
        print(f"  report FILE / baseline: {ours / base:.2f}")

    # 3. The caps on /dev/zero.
    for name, cmd in {
        "lint /dev/zero": f"{e} lint /dev/zero",
        "report --format trace-text /dev/zero": f"{e} report --format trace-text /dev/zero",
    }.items():
        xs, codes = [], set()
        for _ in range(a.runs):
            s, _, code = run(cmd + " 2>/dev/null")
            xs.append(s)
            codes.add(code)
        print(f"{name}: exit {sorted(codes)}, {summary(xs)}")
    if a.keep:
        print(f"kept: {path}")
    else:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
