"""What the bench scripts share: which binaries they time, and the correctness checks that
make a run fail (a count that differs from its anchor's, an A/B pair whose reports differ).
Times never fail a run: these machines are too noisy for that (see docs/performance.md).
Every timed run starts with its input wholly in the page cache, and the scripts say how often
it had to be read in again first (`cached`).

--binary and --guest name the builds to time (the CI's smoke run passes its debug builds);
without them the scripts build the release ones first.
"""
import ctypes
import json
import mmap
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
FAILURES = []


def add_binary_args(ap, guest=False):
    ap.add_argument("--binary", help="the virtlens to time (default: build target/release's)")
    if guest:
        ap.add_argument("--guest", help="the pio_guest example to run (default: build the "
                                        "release one)")


def binaries(a, guest=False):
    """The virtlens (and pio_guest) to time: as given, else freshly built release ones."""
    need = [] if a.binary else ["-p", "virtlens"]
    if guest and not a.guest:
        need += ["-p", "virtlens-host", "--example", "pio_guest"]
    if need and not getattr(a, "no_build", False):
        subprocess.run(["cargo", "build", "--release", "-q"] + need, cwd=ROOT, check=True)
    exe = a.binary or os.path.join(TARGET, "release", "virtlens")
    if not guest:
        return exe
    return exe, a.guest or os.path.join(TARGET, "release", "examples", "pio_guest")


def resident_share(path):
    """The share of `path`'s pages that are in the page cache (mincore(2) of a map of it), or
    None where the kernel cannot be asked."""
    size = os.path.getsize(path)
    if size == 0:
        return 1.0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return None
        try:
            pages = -(-size // mmap.PAGESIZE)
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(addr, size, vec) != 0:
                return None
            return (pages - bytes(vec).count(0)) / pages
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


# Input file -> [timed runs, runs before which part of it had left the page cache].
EVICTIONS = {}


def cached(path):
    """Makes sure all of `path` is in the page cache before a timed run: on these virtual
    machines the page cache is trimmed while gigabytes are free, and a run that
    meets evicted pages reads them from disk (one such run of a 446 MB perf.data took 0.90 s
    against 0.28 s). A file not wholly cached is read through first, untimed, and counted."""
    seen = EVICTIONS.setdefault(path, [0, 0])
    seen[0] += 1
    share = resident_share(path)
    if share is not None and share < 1.0:
        seen[1] += 1
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass


def page_cache_line(path):
    """What the runs met in the page cache, for the bench's report."""
    runs, evicted = EVICTIONS.get(path, [0, 0])
    if evicted == 0:
        return f"page cache: the input was wholly cached before each of the {runs} timed runs"
    return (f"page cache: part of the input had been evicted before {evicted} of the {runs} "
            f"timed runs; it was read in again first, untimed")


def timed(cmd, reads=None):
    """Runs `cmd` (its output discarded): its wall time and its CPU time (user + system), in
    seconds. On a shared machine the wall time follows what the other tenants leave free; the
    CPU time is the steadier measure of the work done (an A/B prints both). `reads`: the
    input file, made wholly cached first ([`cached`])."""
    if reads:
        cached(reads)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def interleaved(runs, steps):
    """Runs each of `steps` (callables) once per run, `runs` times, in orders where each step
    follows each other step equally often over a full cycle of orders (a Williams design):
    whatever a step leaves behind (a cold cache, a slowed clock) falls on every other step
    alike, not always on the same one (as in a fixed order or a rotated one)."""
    orders = williams(len(steps))
    for i in range(runs):
        for k in orders[i % len(orders)]:
            steps[k]()


def williams(n):
    """Orders of range(n) in which each ordered pair of neighbours occurs equally often:
    n orders for even n, 2n for odd n."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        if len(first) % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    orders = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        orders += [o[::-1] for o in orders]
    return orders


def report_json(exe, path):
    out = subprocess.run([exe, "report", "--json", path], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def table_total(report, kind):
    return sum(t["total"]["count"] for t in report["tables"] if t["kind"] == kind)


def check(ok, what):
    """Records a correctness failure (the run goes on, and exits 1 at the end)."""
    print(f"{'ok' if ok else 'MISMATCH'}: {what}", flush=True)
    if not ok:
        FAILURES.append(what)


def same_reports(exe, baseline, path):
    """A/B: both binaries must make the same report of the same file."""
    a, b = report_json(exe, path), report_json(baseline, path)
    check(a == b, f"the baseline's report of {os.path.basename(path)} is the same as ours")


def exit_status():
    """1 when a check failed, else 0."""
    if FAILURES:
        print(f"{len(FAILURES)} correctness check(s) failed", file=sys.stderr)
        return 1
    return 0
