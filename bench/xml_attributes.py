#!/usr/bin/env python3
"""How `virtlens lint` scales with XML attributes and repeated elements (issue 10, item 7).

Inputs, generated for each size N:
  one      one element with N attributes (roxmltree's duplicate-attribute check is quadratic
           in the attributes of one element; virtlens now refuses more than 64 in a linear
           pre-scan, so "after" measures the refusal)
  spread   N attributes over N/50 elements of 50 (accepted: the work must grow linearly)
  dups     N duplicate <relaxed state='on'/> elements (one merged finding with a count)

Each binary (--before, e.g. a build of main, and --after) runs `lint --json FILE` on every
input, in a shuffled order every round (the machine is noisy), next to an anchor (a small real
domain XML) in the same round. Prints the median wall time, the min-max spread and the median
of the per-round ratio to the anchor, and the JSON output size.

Usage (build the "before" binary from main first, e.g. with `git worktree add`):
  bench/xml_attributes.py --after target/release/virtlens --before /tmp/virtlens-main \\
      [--sizes 10000,40000,100000] [--rounds 7]
"""
import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANCHOR = os.path.join(ROOT, "testdata", "configs", "01-libvirt-test-hyperv.xml")


def inputs(directory, sizes):
    files = {}
    for n in sizes:
        attrs = " ".join(f"a{i}='x'" for i in range(n))
        one = os.path.join(directory, f"one-{n}.xml")
        with open(one, "w") as f:
            f.write(f"<domain type='kvm'><features {attrs}/></domain>\n")
        spread = os.path.join(directory, f"spread-{n}.xml")
        per = " ".join(f"a{i}='x'" for i in range(50))
        with open(spread, "w") as f:
            f.write("<domain type='kvm'><devices>")
            f.write("".join(f"<x {per}/>" for _ in range(n // 50)))
            f.write("</devices></domain>\n")
        dups = os.path.join(directory, f"dups-{n}.xml")
        with open(dups, "w") as f:
            f.write("<domain type='kvm'><features><hyperv>")
            f.write("<relaxed state='on'/>" * n)
            f.write("</hyperv></features></domain>\n")
        files[("one", n)] = one
        files[("spread", n)] = spread
        files[("dups", n)] = dups
    return files


def run(binary, path, timeout):
    start = time.perf_counter()
    try:
        out = subprocess.run([binary, "lint", "--json", path], capture_output=True,
                             timeout=timeout)
        size, code = len(out.stdout), out.returncode
    except subprocess.TimeoutExpired:
        size, code = 0, "timeout"
    return time.perf_counter() - start, size, code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--after", default=os.path.join(ROOT, "target", "release", "virtlens"))
    ap.add_argument("--before")
    ap.add_argument("--sizes", default="10000,40000,100000")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    bins = {"after": a.after}
    if a.before:
        bins["before"] = a.before
    with tempfile.TemporaryDirectory() as d:
        files = inputs(d, sizes)
        jobs = [(b, k) for b in bins for k in list(files) + [("anchor", 0)]]
        times = {j: [] for j in jobs}
        ratios = {j: [] for j in jobs}
        info = {}
        for _ in range(a.rounds):
            random.shuffle(jobs)
            anchor = {}
            this = {}
            for b, k in jobs:
                path = ANCHOR if k[0] == "anchor" else files[k]
                t, size, code = run(bins[b], path, a.timeout)
                this[(b, k)] = t
                info[(b, k)] = (size, code)
                if k[0] == "anchor":
                    anchor[b] = t
            for (b, k), t in this.items():
                times[(b, k)].append(t)
                ratios[(b, k)].append(t / anchor[b])
        print(f"{'binary':7} {'input':7} {'N':>7} {'median s':>9} {'min-max s':>15} "
              f"{'x anchor':>9} {'json bytes':>11} exit")
        for b in bins:
            for k in sorted(files, key=lambda k: (k[0], k[1])) + [("anchor", 0)]:
                ts = times[(b, k)]
                size, code = info[(b, k)]
                print(f"{b:7} {k[0]:7} {k[1]:>7} {statistics.median(ts):9.3f} "
                      f"{min(ts):7.3f}-{max(ts):<7.3f} {statistics.median(ratios[(b, k)]):9.1f} "
                      f"{size:>11} {code}")


if __name__ == "__main__":
    main()
