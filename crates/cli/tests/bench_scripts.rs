//! The bench scripts' small variants, as CI runs them: each must finish with its correctness
//! checks holding (the counts equal to its anchor's: the lines of the trace, the transcript's
//! `Total Samples:`, perf script's events, the guest's port writes; and the A/B mode's two
//! reports identical). The times they print are never checked: these machines are too noisy.
//! This build's virtlens is timed, against itself as the A/B baseline (the mode then checks
//! that two runs agree). The perf.data and capture ones need root, /dev/kvm, perf and tracefs.

use std::path::Path;
use std::process::Command;

use virtlens_testkit::{Need, require};

const BIN: &str = env!("CARGO_BIN_EXE_virtlens");

/// Runs `bench/NAME ARGS --binary BIN --baseline BIN`; returns its output, failing on a
/// non-zero exit (a correctness check failed) or a mismatch it printed.
fn bench(name: &str, args: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("python3")
        .arg(root.join("bench").join(name))
        .args(args)
        .args(["--binary", BIN, "--baseline", BIN])
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 bench/{name}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "bench/{name} failed:\n{text}");
    assert!(!text.contains("MISMATCH"), "{text}");
    text
}

/// [`bench`] of a script whose A/B mode compares the two binaries' reports.
fn bench_ab(name: &str, args: &[&str]) -> String {
    let text = bench(name, args);
    assert!(
        text.contains("ok: the baseline's report"),
        "bench/{name} ran no A/B check:\n{text}"
    );
    text
}

/// Whether a bench said what its timed runs met in the page cache (laid out as read from disk
/// by `benchlib.settle`, then `benchlib.cached`), and how it measured peak memory
/// (`benchlib.peak_rss_kib`, the one method all three use).
fn says_cache_and_rss(text: &str) -> bool {
    let settled =
        "page cache: the input was laid out as read from disk before the first timed run, then ";
    (text.contains(&format!("{settled}wholly cached before each of the"))
        || text.contains(&format!("{settled}evicted in part before")))
        && text.contains("peak RSS (ru_maxrss from wait4(2), spawned by a fresh Python child)")
}

/// The benches' peak RSS is the run's own, not that of the bench that spawned it: Linux folds
/// the memory a process leaves at exec into its peak, and a bench holds tens of MiB by the
/// time it measures. Here a Python that holds 256 MiB measures `true`.
#[test]
fn peak_rss_is_the_runs_own_not_the_spawners() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let code = "import sys;sys.path.insert(0,sys.argv[1]);import benchlib;\
                held=bytearray(256<<20);held[::4096]=b'x'*len(held[::4096]);\
                print(benchlib.peak_rss_kib(['true']))";
    let out = Command::new("python3")
        .args(["-c", code])
        .arg(root.join("bench"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let kib: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(kib < 64 << 10, "`true` measured at {kib} KiB");
}

/// A file is read in place on every core, its pages dropped behind the lines read: peak
/// memory does not grow with the file. A 128 MiB transcript (the bench's generator) is read in
/// less than half its size (about 24 MiB here; a check of each part as a whole before its lines
/// once held all of it, 528 MiB for a 537 MB file).
#[test]
fn a_large_transcript_is_read_in_flat_memory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = virtlens_testkit::TempDir::new("flat-memory");
    let file = dir.path().join("live.txt");
    let made = Command::new("python3")
        .arg(root.join("bench/gen_perf_kvm_stat_live.py"))
        .arg(&file)
        .arg("128")
        .status()
        .unwrap();
    assert!(made.success());
    // The peak resident set of `virtlens report FILE`, measured as the benches measure it.
    let code = "import sys;sys.path.insert(0,sys.argv[1]);import benchlib;\
                print(benchlib.peak_rss_kib(sys.argv[2:]))";
    let out = Command::new("python3")
        .args(["-c", code])
        .arg(root.join("bench"))
        .args([BIN, "report"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let kib: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(kib < 64 << 10, "peak RSS {kib} KiB reading a 128 MiB file");
}

#[test]
fn text_benches_count_every_line_and_every_exit() {
    let out = bench(
        "trace_text_throughput.py",
        &["--size-mb", "2", "--runs", "1"],
    );
    assert!(
        out.contains("ok: ") && out.contains("events counted") && says_cache_and_rss(&out),
        "{out}"
    );
    let out = bench_ab("parse_throughput.py", &["--size-mb", "2", "--runs", "1"]);
    assert!(
        out.contains("in `Total Samples:` lines") && says_cache_and_rss(&out),
        "{out}"
    );
}

#[test]
fn perf_data_bench_counts_what_perf_script_prints() {
    if !require(&[Need::Root, Need::Kvm, Need::Perf]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let guest = virtlens_testkit::pio_guest();
    let out = bench_ab(
        "perf_data_vs_perf_script.py",
        &[
            "--events",
            "20000",
            "--runs",
            "1",
            "--guest",
            &guest.to_string_lossy(),
        ],
    );
    assert!(
        out.contains("printed by perf script") && says_cache_and_rss(&out),
        "{out}"
    );
}

#[test]
fn capture_bench_counts_every_port_write_in_every_mode() {
    if !require(&[
        Need::Root,
        Need::Kvm,
        Need::Perf,
        Need::Tracefs,
        Need::Bpf,
        Need::Duckdb,
    ]) {
        return;
    }
    // Alone: its counts are of one port system-wide, and its timings should not be others'.
    let _g = virtlens_testkit::exclusive();
    let guest = virtlens_testkit::pio_guest();
    let guest = guest.to_string_lossy();
    let text = bench(
        "capture_overhead.py",
        &[
            "--rounds", "1", "--writes", "1000", "--settle", "0", "--check", "--guest", &guest,
        ],
    );
    assert!(
        text.contains("every capture holds exactly 1000 kvm_pio rows"),
        "{text}"
    );
    assert!(
        text.contains("counted exactly 1000 port writes of the guest every round"),
        "{text}"
    );
    // perf's cost is measured only if perf recorded the guest (it once started too late).
    assert!(
        text.contains("perf: recorded exactly 1000 port writes of the guest every round"),
        "{text}"
    );
    assert!(
        text.contains("A/B added cost per guest exit, bpf"),
        "{text}"
    );
}
