//! `virtlens diagnose --iops N | --fio FILE.json` end to end, and the counter files in
//! `report`, `compare` and `diagnose`: the talk's VP table at 4.5 M IOPS, real fio JSON
//! (recorded here, and run live when fio is installed), bad rates and files (exit 2).

use std::process::Command;

use serde_json::Value;
use virtlens_testkit::{Need, require};

use crate::common::run as virtlens;
use crate::common::{self, TempDir, data};

fn json(args: &[&str]) -> Value {
    common::json_of(args, &[0, 1])
}

/// fio's total IO rate, read the plain way: every job's read and write IOPS.
fn fio_iops(path: &str) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    let doc: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["read"]["iops"].as_f64().unwrap() + j["write"]["iops"].as_f64().unwrap())
        .sum()
}

fn io_rate(v: &Value) -> f64 {
    v["inputs"][0]["evidence"]["io"]["rate"]["iops"]
        .as_f64()
        .unwrap_or_else(|| panic!("{v:#}"))
}

#[test]
fn the_talks_table_at_4_5_m_iops_is_interrupt_delivery_at_2_intercepts_per_io() {
    let table = data("perfmon/talk-10m-iops-vp-table.txt");
    let v = json(&["diagnose", &table, "--iops", "4500000", "--json"]);
    let main = &v["findings"][0];
    assert_eq!(main["id"], "hv.interrupt-delivery", "{v:#}");
    assert_eq!(main["role"], "main");
    let per_io = main["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "intercepts per IO")
        .and_then(|e| e["per_io"].as_f64())
        .unwrap();
    assert_eq!(format!("{per_io:.2}"), "2.05");
    assert_eq!(io_rate(&v), 4_500_000.0);
    assert_eq!(v["inputs"][0]["evidence"]["tables"][0], "perfmon");
    // The text says it per IO too.
    let out = virtlens(&["diagnose", &table, "--iops", "4500000"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2.05/IO"), "{text}");
    assert_eq!(out.status.code(), Some(1), "a high finding: exit 1");
}

#[test]
fn report_and_compare_read_counter_files() {
    let table = data("perfmon/talk-10m-iops-vp-table.txt");
    let v = json(&["report", &table, "--json"]);
    let series = v["counters"][0]["series"].as_array().unwrap();
    assert_eq!(series.len(), 8, "{v:#}");
    let (b, c) = (
        data("perfmon/process-bytes-edt-2021-b.csv"),
        data("perfmon/process-bytes-edt-2021-c.csv"),
    );
    let out = virtlens(&["compare", &b, &c]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(r"\Process(_Total)\Private Bytes"), "{text}");
    // A counter log without Hyper-V counters is read, and has nothing to diagnose.
    let v = json(&["diagnose", &b, "--json"]);
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0), "{v:#}");
}

#[test]
fn fio_json_gives_the_io_rate_of_all_jobs() {
    let report = data("exit-reports/11-perf-kvm-stat-ioport-2012-format.txt");
    for file in ["randread-qd32-io_uring.json", "randrw-qd1-2jobs-psync.json"] {
        let fio = data(&format!("fio/{file}"));
        let v = json(&[
            "diagnose", &report, "--window", "10", "--fio", &fio, "--json",
        ]);
        let iops = fio_iops(&fio);
        assert!((io_rate(&v) - iops).abs() < 1e-6, "{file}: {}", io_rate(&v));
        // The port writes over the window, per IO.
        let io = &v["inputs"][0]["evidence"]["io"];
        let per_second = io["notify"]["per_second"].as_f64().unwrap();
        let per_io = io["notify"]["per_io"].as_f64().unwrap();
        assert!((per_io - per_second / iops).abs() < 1e-12, "{io:#}");
        assert_eq!(io["rate"]["basis"], "fio");
    }
}

#[test]
fn an_endless_fio_file_is_refused_at_the_cap() {
    // repro A3: `--fio /dev/zero` was read whole (24 GB, then the OOM killer).
    let report = data("exit-reports/11-perf-kvm-stat-ioport-2012-format.txt");
    let out = virtlens(&["diagnose", &report, "--fio", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--fio /dev/zero") && err.contains("MiB"),
        "{err}"
    );
}

#[test]
fn a_pipe_is_spooled_only_up_to_its_cap() {
    // repro C2: a perf.data arriving on a pipe was copied to $TMPDIR with no cap (6.6 GB in 10 s).
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_virtlens"))
        .args(["report", "--format", "perf-data", "-"])
        .stdin(zero)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("through a pipe") && err.contains("MiB"),
        "{err}"
    );
}

#[test]
fn random_bytes_under_a_forced_text_format_are_refused_not_read_forever() {
    // repro C3: `--format trace-text /dev/urandom` read on (1.35 GB after 60 s).
    let out = virtlens(&["report", "--format", "trace-text", "/dev/urandom"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("expected trace event lines"), "{err}");
}

/// Seeded noise, line after line: random bytes (no line breaks, `^C` in many), with one line
/// that reads as a perf script event (`D:b: 1`) as random bytes now and then make: line 1000.
fn noise_line(n: usize, state: &mut u64, line: &mut Vec<u8>) {
    line.clear();
    if n == 1000 {
        line.extend_from_slice(b"D:b: 1\n");
        return;
    }
    for _ in 0..100 {
        // xorshift64: the same bytes on every run.
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        line.extend(state.to_le_bytes().iter().filter(|&&b| b != b'\n').take(2));
    }
    line.push(b'\n');
}

/// `virtlens report --format FORMAT -` started, with the pipe to its standard input.
fn report_of_stdin(format: &str) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_virtlens"))
        .args(["report", "--format", format, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// Lines of noise [`endless_noise`] writes at most: ten times where reading should stop.
const NOISE_LINES: usize = 1_000_000;

/// `virtlens report --format FORMAT -` fed `head`, then an endless stream of seeded noise
/// lines (through a pipe, as `/dev/urandom` is read; `event` puts an event line at line 1000
/// of the noise) until it closes the pipe: its output, and how many lines were written. The
/// stream ends after [`NOISE_LINES`] lines, so that a virtlens that reads on fails the test
/// instead of hanging it.
fn endless_noise(format: &str, head: Vec<u8>, event: bool) -> (std::process::Output, usize) {
    let (child, mut stdin) = report_of_stdin(format);
    // Writes until virtlens closes the pipe (then the write fails and the thread ends).
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        if stdin.write_all(&head).is_err() {
            return 0;
        }
        let (mut state, mut line) = (0x9e37_79b9_7f4a_7c15u64, Vec::new());
        for n in 1..=NOISE_LINES {
            noise_line(if event { n } else { n + 1 }, &mut state, &mut line);
            if stdin.write_all(&line).is_err() {
                return n;
            }
        }
        NOISE_LINES
    });
    let out = child.wait_with_output().unwrap();
    (out, writer.join().unwrap())
}

/// Feeds `format` `head` and then [`endless_noise`], and asserts what a refusal is: exit 2,
/// every one of `needles` in the error, and reading stopped past line 100,000 and well before
/// the stream's end.
fn assert_refused(format: &str, head: Vec<u8>, event: bool, needles: &[&str]) {
    let (out, written) = endless_noise(format, head, event);
    assert_eq!(out.status.code(), Some(2), "{format}: {out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        needles.iter().all(|needle| err.contains(needle)),
        "{format}: {err}"
    );
    assert!(
        (100_001..NOISE_LINES).contains(&written),
        "{format}: {written} lines written"
    );
}

/// repro C3, deterministic: an endless stream of random bytes that holds one line reading as
/// an event is still refused. It was read forever, and each of its lines with `^C` in it kept
/// a note (5 GB in 15 minutes).
#[test]
fn an_endless_stream_of_noise_with_one_event_line_is_refused() {
    assert_refused(
        "trace-text",
        Vec::new(),
        true,
        &[
            "expected trace event lines",
            "found 1 event line(s) among the first 100000 lines (the first on line 1000)",
            "not a trace",
        ],
    );
}

/// The line formats [`real_rows_then_endless_noise_are_refused`] and
/// [`formats_that_start_with_their_rows_refuse_endless_noise`] check.
const ROW_FORMATS: [&str; 5] = [
    "kvm-stat",
    "perf-kvm-stat",
    "virsh-domstats",
    "bcc-kvmexit",
    "perf-prof",
];

/// The formats whose output starts with what they read refuse endless noise after 100,000
/// lines of it, with the error they give a finite input of it, and say where they stopped.
/// (They read it for as long as it lasted.)
#[test]
fn formats_that_start_with_their_rows_refuse_endless_noise() {
    for format in ROW_FORMATS {
        assert_refused(
            format,
            Vec::new(),
            false,
            &[
                "expected",
                "nothing of it in the first 100000 lines, so reading stopped there",
            ],
        );
    }
}

/// The same formats fed a real output of theirs and then endless noise: the rows at its
/// start do not keep them reading. Past 100,000 lines, fewer than one line in 101 was a row
/// or a header, and reading stops there. (A row read once turned the check off.)
#[test]
fn real_rows_then_endless_noise_are_refused() {
    let samples = [
        "exit-reports/18-kvm_stat-debugfs-legacy-haswell-io-exits.txt",
        "exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt",
        "virsh/domstats-win11-glances.txt",
        "exit-reports/01-bcc-kvmexit-all-threads.txt",
        "reliability/D0-perf-prof-intact.txt",
    ];
    for (format, sample) in ROW_FORMATS.into_iter().zip(samples) {
        assert_refused(
            format,
            std::fs::read(data(sample)).unwrap(),
            false,
            &[
                ":100000: only ",
                "of the first 100000 lines are this format's rows or headers",
                "so reading stopped here",
            ],
        );
    }
}

/// A live session with no VM running prints a header and no rows every interval: past
/// 100,000 lines of it, it is read on to its end (and then has nothing to report).
#[test]
fn an_idle_live_session_is_read_to_its_end() {
    let interval = "\nAnalyze events for all VMs, all VCPUs:\n\n             VM-EXIT    Samples  \
                    Samples%     Time%    Min Time    Max Time         Avg time\n\nTotal \
                    Samples:0, Total events handled time:0.00us.\n\n";
    let text: String = (0..13_000)
        .map(|i| {
            format!(
                "{:02}:{:02}:{:02}.000123\n{interval}",
                10 + i / 3600,
                i / 60 % 60,
                i % 60
            )
        })
        .collect();
    assert!(text.lines().count() > 100_000);
    let (child, mut stdin) = report_of_stdin("perf-kvm-stat");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(text.as_bytes())
    });
    let out = child.wait_with_output().unwrap();
    assert!(
        writer.join().unwrap().is_ok(),
        "the input was not read to its end"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        err.contains("nothing to read") && !err.contains("reading stopped"),
        "{err}"
    );
}

/// A file of the noise lines numbered `lines` ([`noise_line`], from xorshift state `seed`), in
/// a temporary folder named after `name` (kept while the first value lives): it and its path.
fn noise_file(name: &str, seed: u64, lines: std::ops::RangeInclusive<usize>) -> (TempDir, String) {
    let dir = TempDir::new(name);
    let path = dir.0.join("noise.txt");
    let (mut state, mut line, mut bytes) = (seed, Vec::new(), Vec::new());
    for n in lines {
        noise_line(n, &mut state, &mut line);
        bytes.extend_from_slice(&line);
    }
    std::fs::write(&path, &bytes).unwrap();
    (dir, path.display().to_string())
}

/// The same noise in a file (read on every core, in blocks): refused at the same line.
#[test]
fn a_file_of_noise_with_one_event_line_is_refused() {
    let (_dir, path) = noise_file("noise", 0x9e37_79b9_7f4a_7c15, 1..=150_000);
    let out = virtlens(&["report", "--format", "trace-text", &path]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(":100000: expected trace event lines") && err.contains("not a trace"),
        "{err}"
    );
}

/// Noise under every forced format is refused (exit 2), not read as a table of random names.
/// (`--format counter-table` printed random lines starting with `\\` as counters.)
#[test]
fn noise_under_any_forced_format_is_refused() {
    // Past line 1000, so without the one line that reads as an event.
    let (_dir, path) = noise_file("noise-formats", 0x2545_f491_4f6c_dd1d, 1_001..=6_000);
    for format in [
        "capture",
        "perfmon-csv",
        "qmp-stats",
        "virsh-domstats",
        "perf-data",
        "perf-kvm-stat",
        "kvm-stat",
        "perf-stat",
        "bcc-kvmexit",
        "bhyve-dtrace",
        "xenalyze",
        "perf-prof",
        "trace-text",
        "kernel-log",
        "counter-table",
    ] {
        let out = virtlens(&["report", "--format", format, &path]);
        assert_eq!(out.status.code(), Some(2), "{format}: {out:?}");
    }
}

#[test]
fn a_fio_run_here_feeds_diagnose() {
    if !require(&[Need::Fio]) {
        return;
    }
    let dir = TempDir::new("diagnose-fio");
    let out = dir.0.join("fio.json");
    let status = Command::new("fio")
        .args([
            "--name=diagnose-io",
            "--rw=randread",
            "--bs=4k",
            "--size=4M",
            "--ioengine=psync",
            "--number_ios=2000",
            "--output-format=json",
        ])
        .arg(format!("--directory={}", dir.0.display()))
        .arg(format!("--output={}", out.display()))
        .status()
        .unwrap();
    assert!(status.success());
    let fio = out.display().to_string();
    let report = data("exit-reports/11-perf-kvm-stat-ioport-2012-format.txt");
    let v = json(&[
        "diagnose", &report, "--window", "10", "--fio", &fio, "--json",
    ]);
    let iops = io_rate(&v);
    assert!(iops > 0.0);
    let fio_rate = v["inputs"][0]["evidence"]["io"]["rate"]["fio"]["iops"]
        .as_f64()
        .unwrap();
    assert_eq!(iops, fio_rate);
}

#[test]
fn bad_rates_and_files_exit_2() {
    let report = data("exit-reports/11-perf-kvm-stat-ioport-2012-format.txt");
    let fio = data("fio/randread-qd32-io_uring.json");
    for args in [
        vec!["diagnose", &report, "--iops", "0"],
        vec!["diagnose", &report, "--iops", "-5"],
        vec!["diagnose", &report, "--iops", "many"],
        vec!["diagnose", &report, "--iops", "1000", "--fio", &fio],
        vec!["diagnose", &report, "--fio", &report],
        vec!["diagnose", &report, "--fio", "/nonexistent/fio.json"],
    ] {
        let out = virtlens(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let out = virtlens(&["diagnose", &report, "--fio", &report]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("11-perf-kvm-stat-ioport-2012-format.txt"),
        "{err}"
    );
}
