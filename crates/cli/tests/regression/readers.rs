//! How commands take their input and give their output: standard input streamed (never read
//! whole), small inputs (configurations, mtree dumps) capped, binary inputs readable through a
//! pipe, durations validated before anything starts, and a closed stdout ending the program
//! quietly.
//!
//! Memory is bounded with the shell's `ulimit -v` (an address-space limit): a program that
//! reads its input whole runs out of memory under it; one that streams does not. That is a
//! yes/no outcome, not a timing or a size threshold.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use virtlens_testkit::Need;

use crate::common::{BIN, data, shared};

/// The address-space limit (KiB) commands run under here: far above what streaming needs,
/// far below what reading 256 MiB whole needs.
const LIMIT_KIB: u64 = 192 * 1024;

/// `virtlens ARGS` under the address-space limit, with `stdin` written to it from a thread.
fn limited(args: &[&str], stdin: Option<Box<dyn Read + Send>>) -> Output {
    let _g = shared();
    let script = format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\"");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(BIN)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run virtlens: {e}"));
    let writer = stdin.zip(child.stdin.take()).map(|(mut from, mut to)| {
        std::thread::spawn(move || {
            // The child may stop reading (an error, or a crash): a broken pipe is its answer.
            let _ = std::io::copy(&mut from, &mut to);
        })
    });
    let out = child.wait_with_output().unwrap();
    if let Some(w) = writer {
        let _ = w.join();
    }
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// 256 MiB of trace text: one `kvm_exit` line, then long blank lines (cheap to read, so the
/// test is about memory, not speed).
fn big_trace() -> Box<dyn Read + Send> {
    let event = b"qemu-system-x86 12345 [002] 770.850287: kvm:kvm_exit: reason HLT rip 0x1\n";
    let mut blank = vec![b' '; 64 * 1024];
    blank.push(b'\n');
    let chunk: Vec<u8> = blank.repeat(16);
    let rest = std::iter::repeat_n(chunk, 256)
        .flatten()
        .collect::<Vec<u8>>();
    Box::new(std::io::Cursor::new(event.to_vec()).chain(std::io::Cursor::new(rest)))
}

#[test]
fn report_stdin_is_streamed_in_bounded_memory() {
    let out = limited(&["report", "--json", "-"], Some(big_trace()));
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tables"][0]["total"]["count"], 1);
}

#[test]
fn lint_dev_zero_ends_with_a_clear_error() {
    let out = limited(&["lint", "/dev/zero"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("more than 16 MiB"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn config_and_mtree_inputs_are_capped() {
    let table = data("exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt");
    for args in [
        vec!["diagnose", table.as_str(), "--config", "/dev/zero"],
        vec!["report", table.as_str(), "--mtree", "/dev/zero"],
    ] {
        let out = limited(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("more than 16 MiB"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn forced_text_format_on_dev_zero_ends_with_a_clear_error() {
    let out = limited(&["report", "--format", "trace-text", "/dev/zero"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("without a line break"),
        "{}",
        stderr(&out)
    );
}

/// `report /dev/stdin` opens a pipe that cannot seek ("Illegal seek" before); `report -` with
/// a perf.data on a pipe goes the same way.
#[test]
fn perf_data_through_a_pipe_is_read() {
    let file = data("perf-data/kvm-stat-record-pio-50.perf.data");
    let bytes = std::fs::read(&file).unwrap();
    let _g = shared();
    let expected = Command::new(BIN)
        .args(["report", "--json", &file])
        .output()
        .unwrap();
    assert!(expected.status.success(), "{}", stderr(&expected));
    // The tables, without the input's name (the path differs).
    let tables = |o: &Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        for t in v["tables"].as_array_mut().into_iter().flatten() {
            t["input"] = serde_json::Value::Null;
        }
        v["tables"].clone()
    };
    for path in ["/dev/stdin", "-"] {
        let input: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(bytes.clone()));
        let out = limited(&["report", "--json", path], Some(input));
        assert!(out.status.success(), "{path}: {}", stderr(&out));
        assert_eq!(tables(&out), tables(&expected), "{path}");
    }
}

#[test]
fn huge_durations_are_refused_before_anything_starts() {
    let _g = shared();
    for args in [
        [
            "record",
            "--duration",
            "1e300",
            "-o",
            "/nonexistent/x.parquet",
        ],
        ["top", "--interval", "1e300", "--once", "--json"],
        ["diagnose", "--live", "--duration", "1e300", "--json"],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("1e300"), "{args:?}: {}", stderr(&out));
    }
}

/// `virtlens top | head -1`: the reader goes away after one line, and top must end (quietly,
/// status 0) instead of refreshing into a closed pipe forever.
#[test]
fn top_ends_quietly_when_its_reader_goes_away() {
    if !virtlens_testkit::require(&[Need::Root, Need::Tracefs]) {
        return;
    }
    let _leftovers = shared();
    let mut child = Command::new(BIN)
        .args(["top", "--interval", "0.05"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    if let Some(out) = child.stdout.take() {
        BufReader::new(out).read_line(&mut first).unwrap();
    } // the read end is closed here, as `head -1` closes it
    assert!(first.starts_with("virtlens top"), "{first}");
    let (tx, rx) = mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    // A watchdog, not a timing assertion: before the fix top never ended.
    let out = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("top kept running after its stdout was closed");
        }
    };
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
    assert_eq!(stderr(&out), "");
    let _ = std::io::stdout().flush();
}
