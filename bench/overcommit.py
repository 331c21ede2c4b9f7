#!/usr/bin/env python3
"""Over-commit measured against the model, on this host:

1. k busy micro-VM vCPUs (the ring-3 queens kernel, native speed on every KVM backend) on this
   host's pCPUs for k = 1..K, every round starting from k = 1 (the anchor), via
   `virtlens model overcommit --measure` (predicted and measured stretch and ready %, the
   model's error, the host's other load fed to the model as background);
2. `virtlens load` with 1..K workers, each worker doing the same fixed work (so elapsed stays
   flat while workers <= pCPUs and grows beyond), interleaved with the 1-worker anchor every
   round; its workers' ready % from schedstat; the model's prediction beside it.

Prints both tables in Markdown for the README. The machine is shared and noisy: the numbers are
preliminary unless re-run on a quiet host. Usage:
  bench/overcommit.py [--max 8] [--rounds 3] [--no-build]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VIRTLENS = os.path.join(ROOT, "target", "release", "virtlens")


def run_json(*args):
    out = subprocess.run([VIRTLENS, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def procs_running():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running "):
                return int(line.split()[1])
    return 0


def busy_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6]


def load_run(w, tasks, seed):
    """One `virtlens load` run with w workers; also the other load meanwhile: the CPU time
    other work took (host busy time less the load's own user+sys time, in CPUs), and the mean
    number of other runnable threads (procs_running, less this sampler and the w workers)."""
    args = [VIRTLENS, "load", "--workers", str(w), "--tasks", str(tasks * w), "--iterations", "4",
            "--footprint-mb", "8", "--seed", str(seed), "--json"]
    t0, b0 = time.monotonic(), busy_ticks()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    samples = []
    while proc.poll() is None:
        samples.append(max(0, procs_running() - 1 - w))
        time.sleep(0.02)
    out, _ = proc.communicate()
    wall, busy = time.monotonic() - t0, (busy_ticks() - b0) / 100.0
    if proc.returncode != 0:
        raise SystemExit(f"virtlens load failed ({proc.returncode})")
    r = json.loads(out)
    other_cpus = max(0.0, (busy - r["cpu"]["user_s"] - r["cpu"]["sys_s"]) / wall)
    return r, other_cpus, (statistics.mean(samples) if samples else 0.0)


def fmt_spread(s, unit=""):
    if not s:
        return "-"
    lo, hi = (s["q1"], s["q3"]) if s["n"] >= 4 else (s["min"], s["max"])
    return f"{s['median']:.2f}{unit} [{lo:.2f}–{hi:.2f}]"


def vcpu_table(args):
    t = run_json("model", "overcommit", "--measure", "--max-vcpus", str(args.max), "--runs", str(args.rounds))
    print(f"### k busy micro-VM vCPUs on {t['pcpus']} pCPUs ({args.rounds} rounds)\n")
    print("| k | other load: CPUs (runnable threads) | predicted stretch | idle-host model | measured stretch [band] | error | predicted ready | measured ready [band] | ready error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in t["rows"]:
        err = r["stretch_error_pct"]
        rerr = r["ready_error_pp"]
        print(f"| {r['k']} | {r['background_cpus']:.2f} ({r['background_runnable']:.1f}) | {r['predicted_stretch_erlang']:.2f}× | {r['idle_host_stretch']:.2f}× "
              f"| {fmt_spread(r['measured_stretch'], '×')} | {'-' if err is None else f'{err:+.1f} %'} "
              f"| {r['predicted_ready_pct']:.1f} % | {fmt_spread(r['measured_ready_pct'], ' %')} "
              f"| {'-' if rerr is None else f'{rerr:+.1f} pp'} |")
    e = t.get("mean_abs_stretch_error_pct")
    print(f"\nmean |stretch error|: {e:.1f} %\n" if e is not None else "")
    return t["pcpus"]


def load_table(args, pcpus):
    ws = range(1, args.max + 1)
    elapsed = {w: [] for w in ws}
    ready = {w: [] for w in ws}
    others = {w: [] for w in ws}
    threads = {w: [] for w in ws}
    for rnd in range(args.rounds):
        rest = [w for w in ws if w != 1]
        shift = rnd % max(1, len(rest))
        for w in [1] + rest[shift:] + rest[:shift]:
            r, bg, n = load_run(w, args.tasks, rnd + 1)
            elapsed[w].append(r["elapsed_s"])
            others[w].append(bg)
            threads[w].append(n)
            if r.get("run_queue"):
                ready[w].append(r["run_queue"]["ready_pct"])
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)

    def model(w, bg):
        return run_json("model", "overcommit", "--pcpus", str(pcpus), "--vcpus", str(w), "--util", "1",
                        "--background", f"{bg:.3f}")["erlang_c"]

    print(f"### `virtlens load`: 1..{args.max} workers, {args.tasks} tasks of 4 iterations each per worker ({args.rounds} rounds)\n")
    print("| workers | other load: CPUs (runnable threads) | elapsed s (median) | measured stretch | predicted stretch | error | measured ready | predicted ready |")
    print("|---|---|---|---|---|---|---|---|")
    base = statistics.median(elapsed[1])
    for w in ws:
        bg = statistics.median(others[w])
        med = statistics.median(elapsed[w])
        pred = model(w, bg)["stretch"] / model(1, bg)["stretch"]
        stretch = med / base
        rd = statistics.median(ready[w]) if ready[w] else float("nan")
        print(f"| {w} | {bg:.2f} ({statistics.median(threads[w]):.1f}) | {med:.2f} | {stretch:.2f}× | {pred:.2f}× | {100 * (pred - stretch) / stretch:+.1f} % "
              f"| {rd:.1f} % | {model(w, bg)['ready_pct']:.1f} % |")
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--max", type=int, default=8, help="largest k / worker count")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tasks", type=int, default=16, help="load tasks per worker")
    p.add_argument("--no-build", action="store_true")
    args = p.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "virtlens"], cwd=ROOT, check=True)
    pcpus = vcpu_table(args)
    load_table(args, pcpus)


if __name__ == "__main__":
    main()
