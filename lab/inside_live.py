"""`inside.py live`, inside the lab host: every live path of virtlens on one held micro-VM,
over one window whose exits every tool sees, for tests that compare their counts
(crates/cli/tests/lab_host.rs). The guest, the steps and perf come from inside.py.
"""

import json
import os
import shutil
import signal
import subprocess
import time

from inside import (STEP_TIMEOUT, Guest, PerfKvmStat, Steps, cpu_model, kvm_stat_output,
                    start_kvm_stat_once, stop, wait_stopped)


def debugfs_counters(pid):
    """KVM's debugfs statistics of the VM of `pid` (what `kvm_stat -d` reads): name → value."""
    root = "/sys/kernel/debug/kvm"
    dirs = [d for d in os.listdir(root) if d.split("-")[0] == str(pid)]
    if len(dirs) != 1:
        raise SystemExit(f"expected one debugfs directory of VM {pid} in {root}, found {dirs}")
    out = {}
    for name in os.listdir(os.path.join(root, dirs[0])):
        path = os.path.join(root, dirs[0], name)
        if os.path.isfile(path):
            try:
                with open(path) as f:
                    out[name] = int(f.read().strip())
            except (OSError, ValueError):
                continue  # histograms and write-only files
    return out


def scrape(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=STEP_TIMEOUT) as r:
        return r.read().decode()


def metric(text, name):
    """The value of an unlabelled sample `name` in Prometheus text, or None."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def start_ready(argv, name):
    """A virtlens command with `--ready-fd`, returned once it said ready."""
    r, w = os.pipe()
    proc = subprocess.Popen(argv + ["--ready-fd", str(w)], pass_fds=(w,),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(w)
    with os.fdopen(r, "rb") as ready:
        said = ready.readline()
    if said.strip() != b"ready":
        out, err = proc.communicate(timeout=STEP_TIMEOUT)
        raise SystemExit(f"{name} did not get ready: {out.decode(errors='replace')}"
                         f"{err.decode(errors='replace')}")
    return proc


def stop_json(proc, name):
    """SIGINT, then the command's stdout as JSON (stderr kept for the record)."""
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise SystemExit(f"{name} did not stop on SIGINT")
    if proc.returncode not in (0, -signal.SIGINT, 130):
        raise SystemExit(f"{name} failed ({proc.returncode}): {err.decode(errors='replace')}")
    return out.decode(), err.decode(errors="replace")


def live(args):
    """Every live path on one held micro-VM, over one window whose exits every tool sees.

    The VM is stopped (SIGSTOP) while the tools start, runs for the window, and is stopped
    again before any tool stops: `virtlens record` (tracefs), `record --summary`, `top` with BPF
    and with --no-bpf, `serve` (BPF) scraped over loopback, `perf kvm stat record` and KVM's
    debugfs counters then all cover the same exits. Then, with the VM running, `kvm_stat -1` and
    `diagnose --live` as a user runs them."""
    v = args.virtlens
    out = args.out
    os.makedirs(out, exist_ok=True)
    tmp = "/tmp/lab-live"
    os.makedirs(tmp, exist_ok=True)
    case = {"id": "live", "construction": {"kind": "microvm", "replay": args.replay}}
    guest = Guest(case, v, os.path.join(out, "guest-console.log"))
    steps = Steps("live")
    step = steps.step
    files = {}
    try:
        guest.wait_started()
        pid = guest.proc.pid
        step("guest_start")
        os.kill(pid, signal.SIGSTOP)
        wait_stopped(pid)
        before = debugfs_counters(pid)
        sel = ["--pid", str(pid)]
        record = start_ready([v, "record", *sel, "-o", f"{tmp}/capture.parquet", "--force"],
                             "virtlens record")
        summary = start_ready([v, "record", "--summary", "--json", *sel], "record --summary")
        top_bpf = start_ready([v, "top", "--once", "--json", "--interval", "86400", *sel],
                              "top")
        top_trace = start_ready([v, "top", "--once", "--json", "--no-bpf", "--interval",
                                 "86400", *sel], "top --no-bpf")
        serve = start_ready([v, "serve", "--json", "--listen", "127.0.0.1:0", "--interval",
                             "1", *sel], "serve")
        start_line = json.loads(serve.stdout.readline())
        url = f"http://{start_line['listen']}/metrics"
        perf = PerfKvmStat(f"{tmp}/perf.data", tmp).enable()
        step("tools_start")
        os.kill(pid, signal.SIGCONT)
        time.sleep(args.seconds)
        os.kill(pid, signal.SIGSTOP)
        wait_stopped(pid)
        step("window")
        after = debugfs_counters(pid)
        # A collection that began after the stop has every exit of the window.
        seen = metric(scrape(url), "virtlens_collects_total") or 0
        while (metric(scrape(url), "virtlens_collects_total") or 0) < seen + 2:
            time.sleep(0.1)
        files["metrics.txt"] = scrape(url)
        files["serve.json"] = json.dumps(start_line)
        files["serve-stderr.txt"] = stop_json(serve, "serve")[1]
        step("serve_scrape")
        perf_text = stop(perf, "perf kvm stat record")
        files["top-bpf.json"], _ = stop_json(top_bpf, "top")
        files["top-tracefs.json"], _ = stop_json(top_trace, "top --no-bpf")
        files["summary.json"], _ = stop_json(summary, "record --summary")
        files["record.txt"] = "".join(stop_json(record, "virtlens record"))
        step("tools_stop")
        files["debugfs.json"] = json.dumps({"before": before, "after": after}, indent=1)
        os.kill(pid, signal.SIGCONT)
        kvm_stat = start_kvm_stat_once()
        diag = subprocess.run([v, "diagnose", "--live", *sel, "--duration", str(args.seconds),
                               "--json", "--fail-on", "critical"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=STEP_TIMEOUT)
        if diag.returncode not in (0, 1):
            raise SystemExit(f"diagnose --live failed ({diag.returncode}): {diag.stderr}")
        files["diagnose-live.json"] = diag.stdout
        files["kvm_stat.txt"] = kvm_stat_output(kvm_stat)
        step("diagnose_live")
        if guest.proc.poll() is not None:
            raise SystemExit(f"the micro-VM ended ({guest.proc.returncode}): {guest.lines}")
    finally:
        try:
            os.kill(guest.proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        guest.stop()
    for name, text in files.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    for name in ("capture.parquet", "perf.data"):
        shutil.copyfile(os.path.join(tmp, name), os.path.join(out, name))
    shutil.rmtree(tmp)
    with open(os.path.join(out, "live.json"), "w") as f:
        json.dump({"replay": args.replay, "pid": pid, "window_s": args.seconds, "steps_s": steps.taken,
                   "perf_kvm_stat_record": perf_text.strip().splitlines()[-2:],
                   "host": {"kernel": os.uname().release, "cpu": cpu_model()}}, f, indent=2)
        f.write("\n")
    print(f"inside: live paths: {steps.taken}", flush=True)
