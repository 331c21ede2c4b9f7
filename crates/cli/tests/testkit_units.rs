//! The test kit's own checks (need names, kernel versions, the readiness pipe, the machine
//! guards): they run in this suite, so the test kit builds no test binary of its own.

use std::process::{Command, Stdio};

use virtlens_testkit::machine::is_free;
use virtlens_testkit::ready::with_ready_fd;
use virtlens_testkit::{Need, exclusive, in_own_process, kernel_version, shared};

#[test]
fn names_are_distinct() {
    let all = [
        Need::Root,
        Need::Kvm,
        Need::KvmStats,
        Need::Tracefs,
        Need::Perf,
        Need::Duckdb,
        Need::Mcp,
        Need::Chromium,
        Need::Prometheus,
        Need::Bpf,
        Need::Fio,
        Need::LibvirtTestdata,
        Need::Qemu,
        Need::Pdftotext,
    ];
    let mut names: Vec<_> = all.iter().map(|n| n.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len());
}

#[test]
fn kernel_versions() {
    assert_eq!(kernel_version("6.1.0-18-amd64\n"), (6, 1));
    assert_eq!(kernel_version("5.14.0"), (5, 14));
    assert_eq!(kernel_version("4.19.0+"), (4, 19));
    assert_eq!(kernel_version("junk"), (0, 0));
}

#[test]
fn a_line_on_fd_3_is_readiness_and_an_exit_without_one_is_not() {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "echo ready >&3; echo out"]);
    let (mut wrapped, ready) = with_ready_fd(&cmd);
    let child = wrapped.stdout(Stdio::piped()).spawn();
    drop(wrapped);
    let child = child.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ready.wait().as_deref(), Ok("ready"));
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");

    let mut silent = Command::new("sh");
    silent.args(["-c", "exit 3"]);
    let (mut wrapped, ready) = with_ready_fd(&silent);
    let child = wrapped.spawn();
    drop(wrapped);
    let mut child = child.unwrap_or_else(|e| panic!("{e}"));
    assert!(ready.wait().is_err());
    assert_eq!(child.wait().ok().and_then(|s| s.code()), Some(3));
}

#[test]
fn a_hold_is_reentrant_and_ends_with_its_last_guard() {
    // Other tests of the suite take guards too: this one looks at the lock alone.
    if !in_own_process() {
        return;
    }
    let outer = exclusive();
    let inner = shared();
    drop(outer);
    // Still held: another thread cannot hold the machine exclusively.
    assert!(std::thread::spawn(|| !is_free()).join().unwrap_or(false));
    drop(inner);
    assert!(std::thread::spawn(is_free).join().unwrap_or(false));
    let _shared = shared();
    let upgrade = std::panic::catch_unwind(|| exclusive());
    assert!(upgrade.is_err(), "shared() then exclusive() is refused");
}
