#!/usr/bin/env python3
"""Records the causal lab's cases: runs each scenario of testdata/lab-cases/*/cause.json in its
own boot of the lab host (lab/host.sh, lab/inside.py), and writes every format a user of a KVM
host would have of it:

    capture.parquet             virtlens record
    perf.data                   perf kvm stat record -a
    perf-kvm-stat.txt           perf kvm stat report for --event=vmexit (the default), ioport
                                and mmio, one after the other, as a user pastes them
    perf-script.txt             perf script
    kvm_stat.txt                kvm_stat -1
    qmp-query-stats.json        QEMU's QMP replies to query-stats for the VM and its vCPUs
                                (Linux guests only)
    run.json                    what the lab saw of the guest (its clocksource, its workload's
                                start line), the window and the time each step took

`perf kvm stat report` and `perf script` run here, on the perf.data the lab host wrote (they
need no KVM host).

    bench/lab_cases.py [ID…] [--out DIR] [--save] [--seconds S] [--attempts N]

One boot per scenario, because the lab host is itself emulated and not perfectly so: now and
then an exit-heavy guest hangs, or takes the host down with it (a triple fault of the host, or a
host that stops scheduling). Such a run is retried, up to --attempts boots; run.json records how many it
took. A scenario that fails on its own (its guest never starts, a tool fails) is not retried.

--save copies the formats into testdata/lab-cases/<id>/ (what the tests replay). At the end it
prints how long each boot and scenario took. Needs what lab/host.sh needs.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "testdata", "lab-cases")
FORMATS = ["capture.parquet", "perf.data", "perf-kvm-stat.txt", "kvm_stat.txt", "run.json"]
# Formats only some scenarios have (a micro-VM has no QMP).
SOME_FORMATS = ["qmp-query-stats.json"]
# lab/host.sh's statuses for a host that hung or died (124, 125), and inside.py's for a guest
# that did (75): not the scenario's own failure, so tried again.
HOST_FAILED = (75, 124, 125)


def cargo_build():
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "virtlens", "-p", "virtlens-guest"],
                   cwd=ROOT, check=True)


def perf_reports(d):
    """perf kvm stat report of each event class, as the terminal shows them (the table is on
    stderr), one after the other."""
    data = os.path.join(d, "perf.data")
    with open(os.path.join(d, "perf-kvm-stat.txt"), "w") as f:
        for event in ("vmexit", "ioport", "mmio"):
            f.flush()
            subprocess.run(["perf", "kvm", "-i", data, "stat", "report", f"--event={event}"],
                           stdout=f, stderr=subprocess.STDOUT, check=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ids", nargs="*", help="scenario ids (default: all)")
    p.add_argument("--out", default=os.path.join(ROOT, "target", "lab-cases"))
    p.add_argument("--save", action="store_true", help="copy the formats into testdata/lab-cases")
    p.add_argument("--seconds", type=float, help="recording window (default: each case's)")
    p.add_argument("--attempts", type=int, default=3,
                   help="boots to try a scenario in before giving up (default 3)")
    p.add_argument("--reuse", action="store_true",
                   help="do not record: redo the perf reports of the recordings already in --out")
    args = p.parse_args()
    # The micro-VMs first: they are quick and never take the host down.
    ids = args.ids or sorted((d for d in os.listdir(CASES)
                              if os.path.exists(os.path.join(CASES, d, "cause.json"))),
                             key=lambda d: (not d.startswith("microvm-"), d))
    for i in ids:
        if not os.path.exists(os.path.join(CASES, i, "cause.json")):
            sys.exit(f"no scenario {i} (no {CASES}/{i}/cause.json)")
    out = os.path.abspath(args.out)
    if args.reuse:
        return report(ids, out, args.save)
    cargo_build()
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    # Copies, so that a rebuild while the host runs does not change what it runs.
    virtlens = os.path.join(out, "virtlens")
    shutil.copy2(os.path.join(ROOT, "target", "release", "virtlens"), virtlens)
    guest_bin = os.path.join(out, "virtlens-guest")
    shutil.copy2(os.path.join(ROOT, "target", "release", "virtlens-guest"), guest_bin)
    env = dict(os.environ, GUEST_BIN=guest_bin, QEMU_LOG="1", TIMEOUT="300")
    failed = [i for i in ids if not record(i, out, virtlens, env, args)]
    report([i for i in ids if i not in failed], out, args.save)
    if failed:
        sys.exit(f"not recorded (the lab host failed every time): {' '.join(failed)}")


def record(i, out, virtlens, env, args):
    """One scenario, in boots of its own until the host lives through it."""
    d = os.path.join(out, i)
    cmd = ["python3", os.path.join(ROOT, "lab", "inside.py"), "scenario",
           os.path.join(CASES, i), d, "--virtlens", virtlens]
    if args.seconds:
        cmd += ["--seconds", str(args.seconds)]
    failures = []
    for attempt in range(1, args.attempts + 1):
        shutil.rmtree(d, ignore_errors=True)
        t0 = time.monotonic()
        r = subprocess.run([os.path.join(ROOT, "lab", "host.sh"), "run", d] + cmd, env=env)
        wall = time.monotonic() - t0
        if r.returncode == 0:
            break
        console = os.path.join(d, "console.log")
        if r.returncode not in HOST_FAILED:
            sys.exit(f"{i}: the scenario failed ({r.returncode}); console: {console}")
        with open(console, errors="replace") as f:
            tail = [line for line in f.read().splitlines() if line.strip()][-3:]
        failures.append({"attempt": attempt, "status": r.returncode, "console_tail": tail})
        # Kept for whoever looks into it: the host's console, its QEMU log, the guest's console.
        kept = f"{d}.failed-{attempt}"
        shutil.rmtree(kept, ignore_errors=True)
        shutil.move(d, kept)
        print(f"{i}: the lab host failed on attempt {attempt} ({r.returncode}): {tail}",
              flush=True)
    else:
        print(f"{i}: the lab host failed {args.attempts} times; not recorded", flush=True)
        return False
    with open(os.path.join(d, "console.log"), errors="replace") as f:
        boot = next((float(line.split()[-2]) for line in f.read().splitlines()
                     if line.startswith("lab-host: up after")), None)
    run_json = os.path.join(d, "run.json")
    with open(run_json) as f:
        run = json.load(f)
    run["lab_host"] = {"boot_s": boot, "wall_s": round(wall, 1), "failed_boots": failures}
    with open(run_json, "w") as f:
        json.dump(run, f, indent=2)
        f.write("\n")
    return True


def report(ids, out, save):
    """The perf reports of each recording, its timings, and (--save) the copy into testdata."""
    print(f"{'scenario':40} {'wall s':>7} {'boot s':>7} {'failed':>6}  steps (s)")
    for i in ids:
        d = os.path.join(out, i)
        perf_reports(d)
        with open(os.path.join(d, "run.json")) as f:
            run = json.load(f)
        host = run.get("lab_host", {})
        print(f"{i:40} {host.get('wall_s', 0):7.1f} {host.get('boot_s') or 0:7.1f} "
              f"{len(host.get('failed_boots', [])):6}  {run['steps_s']}")
        print(f"{'':40} {'':23}  guest: {'; '.join(run['guest_lines'][:2])}")
        if save:
            for name in FORMATS + [f for f in SOME_FORMATS if os.path.exists(os.path.join(d, f))]:
                shutil.copyfile(os.path.join(d, name), os.path.join(CASES, i, name))
    if save:
        print(f"saved into {CASES}")


if __name__ == "__main__":
    main()
