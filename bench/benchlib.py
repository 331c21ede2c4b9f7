"""What the bench scripts share: which binaries they time, and the correctness checks that
make a run fail (a count that differs from its anchor's, an A/B pair whose reports differ).
Times never fail a run: these machines are too noisy for that (see docs/performance.md).
Every timed run starts with its input wholly in the page cache, laid out as read from disk
(`settle`), and the scripts say how often it had to be read in again first (`cached`).

--binary and --guest name the builds to time (the CI's smoke run passes its debug builds);
without them the scripts build the release ones first.
"""
import ctypes
import json
import mmap
import os
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


def _libc():
    """libc with the prototypes `resident_share` calls, set up once."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


LIBC = _libc()
MAP_FAILED = ctypes.c_void_p(-1).value


def resident_share(path):
    """The share of `path`'s pages that are in the page cache (mincore(2) of a map of it), or
    None where the kernel cannot be asked."""
    size = os.path.getsize(path)
    if size == 0:
        return 1.0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == MAP_FAILED:
            return None
        try:
            pages = -(-size // mmap.PAGESIZE)
            vec = (ctypes.c_ubyte * pages)()
            if LIBC.mincore(addr, size, vec) != 0:
                return None
            return (pages - bytes(vec).count(0)) / pages
        finally:
            LIBC.munmap(addr, size)
    finally:
        os.close(fd)


# Input file -> [timed runs, runs before which part of it had left the page cache].
EVICTIONS = {}


def settle(path):
    """Lays `path` out in the page cache as a first read from disk does: its cached pages are
    dropped (posix_fadvise DONTNEED: clean pages only, so nothing is lost) and it is read
    through once in 1 MiB reads. A file just written sits in the page cache in pieces as
    small as its writes were; read ahead from disk it sits in large ones, which a reader
    that maps the file maps 2 MiB at a time. On the development host the same 446 MB
    perf.data, read by the same build, took 8,627 page faults when written 4 KiB at a time
    and 2,019 read from disk, and was 11% slower (docs/performance.md). Settled first, every
    run meets the same layout, also after an eviction (`cached` reads back the same way)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)


def cached(path):
    """Makes sure all of `path` is in the page cache before a timed run: on these virtual
    machines the page cache is trimmed while gigabytes are free, and a run that
    meets evicted pages reads them from disk (one such run of a 446 MB perf.data took 0.90 s
    against 0.28 s). A file not wholly cached is read through first, untimed, and counted.
    Before its first timed run the file is laid out as read from disk (`settle`)."""
    if path not in EVICTIONS:
        settle(path)
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
    settled = "laid out as read from disk before the first timed run, then "
    if evicted == 0:
        return (f"page cache: the input was {settled}wholly cached before each of the {runs} "
                f"timed runs")
    return (f"page cache: the input was {settled}evicted in part before {evicted} of the "
            f"{runs} timed runs; it was read in again first, untimed")


def timed(cmd, reads=None):
    """Runs `cmd`: its wall time and its CPU time (user + system), in seconds. On a shared
    machine the wall time follows what the other tenants leave free; the CPU time is the
    steadier measure of the work done (an A/B prints both). `reads`: the input file, made
    wholly cached first ([`cached`])."""
    if reads:
        cached(reads)
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, cmd)
    return wall, usage.ru_utime + usage.ru_stime


# How `peak_rss_kib` measures, for the benches' reports.
PEAK_RSS_METHOD = "ru_maxrss from wait4(2), spawned by a fresh Python child"

# Spawns argv[1:] and prints its exit code and its ru_maxrss. It repeats `timed`'s spawn and
# wait4 on purpose: importing this module would raise the probe's own memory, the floor of
# what it can report.
_RSS_PROBE = (
    "import os,subprocess,sys;"
    "c=subprocess.Popen(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL);"
    "_,s,u=os.wait4(c.pid,0);"
    "print(os.waitstatus_to_exitcode(s),u.ru_maxrss)")


def peak_rss_kib(cmd):
    """The peak resident set size of one run of `cmd`, in KiB. Linux folds the high-water mark
    of the memory a process leaves at exec into its ru_maxrss, so a run spawned from this
    script would report at least this script's peak (60-80 MiB once a bench has counted a
    file's lines). The run is therefore spawned from a fresh Python child, whose own memory
    (about 15 MiB) is the floor of what this can report: a run reported at the floor used no
    more than that. (The child's own ru_maxrss is no measure of that floor: it inherited this
    script's peak at its exec.)"""
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE] + cmd, check=True,
                         capture_output=True, text=True)
    code, peak = (int(x) for x in out.stdout.split())
    if code != 0:
        raise subprocess.CalledProcessError(code, cmd)
    return peak


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
