#!/usr/bin/env python3
"""Runs inside the lab host (lab/host.sh run …): one scenario of the causal lab, recorded with
every tool a user of a KVM host would have.

    inside.py scenario CASE_DIR OUT_DIR [--seconds S] [--virtlens PATH]
    inside.py live OUT_DIR [--replay NAME] [--seconds S] [--virtlens PATH]

It starts the scenario's guest as cause.json's `construction` says (a Linux guest under QEMU+KVM,
or one of virtlens's micro-VM traps), waits for the guest's workload to say it runs, then records
the same window with `virtlens record` (a Parquet capture) and `perf kvm stat record` (perf.data),
both started and confirmed before the window opens (the guest held while they start and stop, as
every tracepoint switch here is: see `hold`); then `kvm_stat -1` and, for a Linux guest,
QEMU's QMP `query-stats` replies (VM and vCPUs). It writes what it saw of
the guest and the timings to OUT_DIR/run.json. `perf kvm stat report` and `perf script` of the
perf.data are left to whoever reads OUT_DIR (they need no KVM host).

`live` runs every live path of virtlens on one held micro-VM over one window all tools see
(see inside_live.py), for tests that compare their counts.

No step waits by sleeping for another to be ready: the guest's start line, virtlens's ready fd and
perf's control fifo are the signals; the only sleep is the recording window itself.
"""

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

CACHE = os.environ.get("LAB_CACHE", "/tmp/lab-cache")
# The Linux guests' initramfs lab/host.sh built for this run's guest binary.
GUEST_INITRD = os.environ.get("LAB_GUEST", os.path.join(CACHE, "guest.gz"))
# How long any one step may take before the scenario is given up (TCG is slow, but not this slow).
STEP_TIMEOUT = 300
# How long a guest may take to start its workload (about 20 s is usual under TCG).
START_TIMEOUT = 150
# The exit status of a run whose guest hung or died on its own (now and then, under an emulated
# host): the scenario may be tried again; any other failure is the scenario's.
GUEST_FAILED = 75


class Steps:
    """The time each step of a run took, printed as it ends (the host's console shows how far
    a run got)."""

    def __init__(self, name):
        self.name = name
        self.taken = {}
        self.t = time.monotonic()

    def step(self, what):
        now = time.monotonic()
        self.taken[what] = round(now - self.t, 2)
        self.t = now
        print(f"inside: {self.name}: {what} after {self.taken[what]} s", flush=True)


class Guest:
    """The scenario's VM: a QEMU process or a `virtlens lab --replay` micro-VM. Its console is
    read by a thread that keeps the lab's own lines and drops the rest (a serial-console flood
    must not fill the disk)."""

    def __init__(self, case, virtlens, log_path):
        self.case = case
        self.lines = []
        self.started = threading.Event()
        self.start_line = None
        c = case["construction"]
        if c["kind"] == "linux":
            argv = linux_guest_argv(case)
        elif c["kind"] == "microvm":
            argv = [virtlens, "lab", "--replay", c["replay"], "--duration", "100000"]
        else:
            raise SystemExit(f"cause.json: unknown construction kind {c['kind']!r}")
        self.argv = argv
        self.log = open(log_path, "wb", buffering=0)
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        kept = 0
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            lab_line = line.startswith(("lab-guest:", "workload ", "replay ")) or "error" in line
            if lab_line or kept < 64 * 1024:
                self.log.write(raw)
                kept += len(raw)
            if lab_line:
                self.lines.append(line)
            if ": running" in line and not self.started.is_set():
                self.start_line = line
                self.started.set()
        self.started.set()

    def wait_started(self):
        if not self.started.wait(START_TIMEOUT) or self.start_line is None:
            self.stop()
            print(f"inside: the guest did not start its workload in {START_TIMEOUT} s; "
                  f"its lines: {self.lines}", file=sys.stderr, flush=True)
            sys.exit(GUEST_FAILED)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(30)
        self.log.close()


def linux_guest_argv(case):
    c = case["construction"]
    workload = c["workload"] + ["--duration", "100000"] if c["workload"] != ["idle"] else ["idle"]
    append = " ".join(
        ["console=ttyS0", "quiet", "panic=-1"]
        + c.get("kernel_args", [])
        + ([f"lab_modules={','.join(c['modules'])}"] if c.get("modules") else [])
        + ([f"lab_net={c['net']}"] if c.get("net") else [])
        + [f"lab_workload={','.join(workload)}"]
    )
    return [
        "qemu-system-x86_64", "-name", f"lab-{case['id']}", "-accel", "kvm",
        "-cpu", c.get("cpu", "host"), "-machine", c.get("machine", "pc"),
        "-m", str(c.get("memory_mb", 256)), "-smp", str(c.get("cpus", 2)),
        "-nodefaults", "-no-reboot", "-display", "none", "-monitor", "none",
        # qboot, not SeaBIOS: SeaBIOS parks the application processors in HLT with no IDT,
        # and under TCG's SVM an event delivered there triple-faults the guest, which TCG turns
        # into a reset of the whole lab host. qboot leaves them to Linux (and boots faster).
        "-bios", "/usr/share/qemu/qboot.rom",
        "-kernel", f"{CACHE}/vmlinuz", "-initrd", GUEST_INITRD, "-append", append,
        "-serial", "stdio",
        # QMP, for the reply to `query-stats` a user of QEMU ≥ 7.1 can paste (qmp_stats below).
        "-qmp", f"unix:{qmp_socket(case)},server=on,wait=off",
    ] + c.get("qemu", [])


def qmp_socket(case):
    return os.path.join("/tmp", f"lab-{case['id']}.qmp")


def qmp_stats(path):
    """QEMU's replies to `query-stats` for the VM and for its vCPUs (KVM's binary statistics as
    QEMU reads them: totals since the VM started), as the monitor sent them, one JSON line each,
    after the capabilities handshake. Asynchronous events between them are left out."""
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(STEP_TIMEOUT)
        s.connect(path)
        lines = s.makefile("rb")

        def reply(command):
            if command is not None:
                s.sendall(json.dumps(command).encode() + b"\n")
            while True:
                raw = lines.readline()
                if not raw:
                    raise SystemExit(f"inside: QMP {path} closed before answering {command}")
                doc = json.loads(raw)
                if "event" not in doc:
                    if "error" in doc:
                        raise SystemExit(f"inside: QMP {command}: {doc['error']}")
                    return raw

        reply(None)  # the greeting
        reply({"execute": "qmp_capabilities"})
        return b"".join(reply({"execute": "query-stats", "arguments": {"target": t}})
                        for t in ("vm", "vcpu"))


def start_virtlens_record(virtlens, pid, out):
    """`virtlens record` of the guest's process, confirmed through --ready-fd."""
    r, w = os.pipe()
    proc = subprocess.Popen(
        [virtlens, "record", "--pid", str(pid), "-o", out, "--force", "--ready-fd", str(w)],
        pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    os.close(w)
    with os.fdopen(r, "rb") as ready:
        said = ready.readline()
    if said.strip() != b"ready":
        text = proc.communicate(timeout=STEP_TIMEOUT)[0].decode(errors="replace")
        raise SystemExit(f"virtlens record did not get ready: {text}")
    return proc


class PerfKvmStat:
    """`perf kvm stat record -a`, started with its events off and switched on through perf's
    control fifo when the window opens; its ack says they are on."""

    def __init__(self, out, tmp):
        ctl, ack = os.path.join(tmp, "perf-ctl"), os.path.join(tmp, "perf-ack")
        for f in (ctl, ack):
            if os.path.exists(f):
                os.unlink(f)
            os.mkfifo(f)
        self.proc = subprocess.Popen(
            ["perf", "kvm", "stat", "record", "-a", "-o", out, "-D", "-1",
             "--control", f"fifo:{ctl},{ack}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.ctl_fd = os.open(ctl, os.O_RDWR)
        self.ack_fd = os.open(ack, os.O_RDWR)

    def enable(self):
        os.write(self.ctl_fd, b"enable\n")
        # The ack, unless perf ends first (a bad option, no permission).
        while not select.select([self.ack_fd], [], [], 1.0)[0]:
            if self.proc.poll() is not None:
                raise SystemExit(f"perf kvm stat record ended ({self.proc.returncode}): "
                                 f"{self.proc.stdout.read().decode(errors='replace')}")
        said = os.read(self.ack_fd, 16)
        os.close(self.ctl_fd)
        os.close(self.ack_fd)
        if not said.startswith(b"ack"):
            raise SystemExit(f"perf did not acknowledge enable: {said!r}")
        return self.proc


def stop(proc, name, signalled=False):
    """Ctrl-C, as a user stops a recording (unless `signalled` already: a second one would
    make virtlens give up writing its file), then its output."""
    if not signalled:
        proc.send_signal(signal.SIGINT)
    try:
        text = proc.communicate(timeout=STEP_TIMEOUT)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        raise SystemExit(f"{name} did not stop on SIGINT")
    text = text.decode("utf-8", "replace") if text else ""
    if proc.returncode not in (0, -signal.SIGINT, 130):
        raise SystemExit(f"{name} failed ({proc.returncode}): {text}")
    return text


def start_kvm_stat_once():
    """`kvm_stat -1`: one second of the tracepoint counters, as a user pastes it."""
    return subprocess.Popen(["python3", os.path.join(CACHE, "kvm_stat"), "-1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# kvm_stat -1 run so that it says when its counters are on (at its one sleep) and when it is
# about to close them (at exit), and waits for a line on stdin after each: the guest is held
# across both, since switching tracepoints patches the kernel's text (see `hold`).
KVM_STAT_HELD = r"""
import atexit, runpy, sys, time
path, sleep, said = sys.argv[1], time.sleep, []
def held_sleep(s):
    if not said:
        said.append(True)
        print("lab: counters on", file=sys.stderr, flush=True)
        sys.stdin.readline()
    sleep(s)
def closing():
    sys.stdout.flush()
    print("lab: closing", file=sys.stderr, flush=True)
    sys.stdin.readline()
time.sleep = held_sleep
atexit.register(closing)
sys.argv = [path, "-1"]
runpy.run_path(path, run_name="__main__")
"""


def hold(pid):
    """Stops the guest (SIGSTOP) until every thread is stopped, so no vCPU is inside KVM_RUN.

    A tool that switches tracepoints on or off patches the kernel's text; under TCG a vCPU
    thread inside KVM_RUN at a site patched under it has been seen to spin there for good,
    a soft lockup that stalls the lab host (lab/README.md). So every switch made here is made
    with the guest held."""
    os.kill(pid, signal.SIGSTOP)
    wait_stopped(pid)


def kvm_stat_held(pid):
    """`kvm_stat -1` over one second of the held guest `pid`, released for that second only;
    the guest is held again on return."""
    proc = subprocess.Popen(["python3", "-c", KVM_STAT_HELD, os.path.join(CACHE, "kvm_stat")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)

    def expect(marker):
        said = []
        for line in proc.stderr:
            if line.strip() == marker:
                return
            said.append(line)
        proc.wait()
        raise SystemExit(f"kvm_stat -1 failed ({proc.returncode}): {''.join(said)}")

    expect("lab: counters on")
    os.kill(pid, signal.SIGCONT)
    proc.stdin.write("\n")
    proc.stdin.flush()
    expect("lab: closing")
    hold(pid)
    proc.stdin.write("\n")
    proc.stdin.close()
    out = proc.stdout.read()
    rest = proc.stderr.read()
    if proc.wait(timeout=STEP_TIMEOUT) != 0:
        raise SystemExit(f"kvm_stat -1 failed ({proc.returncode}): {rest}")
    return out


def kvm_stat_output(proc):
    out, err = proc.communicate(timeout=STEP_TIMEOUT)
    if proc.returncode != 0:
        raise SystemExit(f"kvm_stat -1 failed: {err}")
    return out


def scenario(args):
    with open(os.path.join(args.case, "cause.json")) as f:
        case = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    seconds = args.seconds or case["construction"].get("window_s", 1.0)
    # Written to the host's tmpfs first: perf maps its output, which the 9p share cannot do.
    tmp = os.path.join("/tmp", "lab-" + case["id"])
    os.makedirs(tmp, exist_ok=True)
    steps = Steps(case["id"])
    step = steps.step
    guest = Guest(case, args.virtlens, os.path.join(args.out, "guest-console.log"))
    try:
        guest.wait_started()
        step("guest_start")
        # The tools start and stop with the guest held (`hold`): the window is the time it runs.
        hold(guest.proc.pid)
        # perf is launched first (the slower to start) with its events off, and switched on
        # once virtlens records: the window opens when both are on.
        perf_launched = PerfKvmStat(os.path.join(tmp, "perf.data"), tmp)
        record = start_virtlens_record(args.virtlens, guest.proc.pid,
                                       os.path.join(tmp, "capture.parquet"))
        step("virtlens_record_start")
        perf = perf_launched.enable()
        step("perf_start")
        os.kill(guest.proc.pid, signal.SIGCONT)
        time.sleep(seconds)
        hold(guest.proc.pid)
        step("window")
        # Both stopped at once: each takes seconds to write its file under emulation, and
        # neither should record the other's stopping.
        for proc in (perf, record):
            proc.send_signal(signal.SIGINT)
        perf_text = stop(perf, "perf kvm stat record", signalled=True)
        record_text = stop(record, "virtlens record", signalled=True)
        step("tools_stop")
        # kvm_stat after them, not beside them: under emulation its Python takes a CPU the
        # guest's vCPUs would wait for, which the capture's scheduler samples would show.
        kvm_stat = kvm_stat_held(guest.proc.pid)
        os.kill(guest.proc.pid, signal.SIGCONT)
        step("kvm_stat")
        qmp = qmp_stats(qmp_socket(case)) if case["construction"]["kind"] == "linux" else None
        # Its counts are totals since the VM started: a user divides by the VM's uptime.
        qmp_uptime = round(time.monotonic() - guest.t0, 1)
        step("qmp_stats")
        if guest.proc.poll() is not None:
            print(f"inside: the guest ended during the recording (exit status "
                  f"{guest.proc.returncode}): {guest.lines}", file=sys.stderr, flush=True)
            sys.exit(GUEST_FAILED)
    finally:
        try:
            os.kill(guest.proc.pid, signal.SIGCONT)  # held, if a tool failed to stop
        except ProcessLookupError:
            pass
        guest.stop()
    step("guest_stop")
    with open(os.path.join(args.out, "kvm_stat.txt"), "w") as f:
        f.write(kvm_stat)
    if qmp is not None:
        with open(os.path.join(args.out, "qmp-query-stats.json"), "wb") as f:
            f.write(qmp)
    for name in ("capture.parquet", "perf.data"):
        shutil.copyfile(os.path.join(tmp, name), os.path.join(args.out, name))
    shutil.rmtree(tmp)
    run = {
        "id": case["id"],
        "guest_argv": guest.argv,
        "guest_lines": guest.lines,
        "window_s": seconds,
        "steps_s": steps.taken,
        "virtlens_record": record_text.strip().splitlines()[-3:],
        "perf_kvm_stat_record": perf_text.strip().splitlines()[-2:],
        "host": {"kernel": os.uname().release, "cpu": cpu_model()},
    }
    if qmp is not None:
        run["qmp_uptime_s"] = qmp_uptime
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump(run, f, indent=2)
        f.write("\n")
    print(f"inside: {case['id']}: {steps.taken}", flush=True)


def wait_stopped(pid):
    """Until every thread of `pid` is stopped (state T): from then on its vCPUs make no exit.
    A wait for the kernel to act on SIGSTOP, polled at 10 ms, bounded."""
    deadline = time.monotonic() + STEP_TIMEOUT
    while time.monotonic() < deadline:
        states = []
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            tids = []
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                continue
        if states and all(st in ("T", "t") for st in states):
            return
        if not states or all(st in ("Z", "X") for st in states):
            # Exited before it was stopped: the guest powered off (its workload ended or
            # failed), which its console says.
            print(f"inside: process {pid} exited before it was stopped (thread states "
                  f"{states})", file=sys.stderr, flush=True)
            sys.exit(GUEST_FAILED)
        time.sleep(0.01)
    # SIGSTOP is the kernel's to act on: a thread still running after minutes is an emulated
    # host kernel that stalled, so the run may be tried again, as for a guest that hung.
    print(f"inside: process {pid} did not stop in {STEP_TIMEOUT} s (thread states {states})",
          file=sys.stderr, flush=True)
    sys.exit(GUEST_FAILED)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scenario")
    s.add_argument("case")
    s.add_argument("out")
    s.add_argument("--seconds", type=float, help="the recording window (default: cause.json's window_s, else 1)")
    s.add_argument("--virtlens", default="virtlens")
    s = sub.add_parser("live")
    s.add_argument("out")
    s.add_argument("--replay", default="timer_program/trap",
                   help="the micro-VM to hold (virtlens lab --replay NAME)")
    s.add_argument("--seconds", type=float, default=2.0, help="the window")
    s.add_argument("--virtlens", default="virtlens")
    args = p.parse_args()
    if args.cmd == "scenario":
        scenario(args)
    elif args.cmd == "live":
        from inside_live import live  # it imports this module's helpers: imported here, once they exist
        live(args)


if __name__ == "__main__":
    sys.exit(main())
