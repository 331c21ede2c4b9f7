//! `virtlens record` and `virtlens top` as a user runs them, against micro-VMs in this test
//! process (threads named `CPU 0/KVM`): exactly N `kvm_pio` events for N port writes, in the
//! profile `report` reads back and in the raw events DuckDB reads; two recorders at once do
//! not disturb each other; SIGINT and SIGTERM restore the kernel's tracing state; after
//! SIGKILL the next run removes the instance left behind; without root it says so and exits 2.
//!
//! Needs root, tracefs and /dev/kvm (else `SKIP: …`). The DuckDB check needs python3 and
//! installs DuckDB from PyPI when it is missing (`SKIP` when it cannot).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::Value;
use virtlens_host::microvm::{MicroVm, guest};

const BIN: &str = env!("CARGO_BIN_EXE_virtlens");
const TRACEFS: &str = "/sys/kernel/tracing";

fn skip_reason() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("?")
        .to_string();
    if euid != "0" {
        return Some(format!("not root (euid {euid})"));
    }
    if !Path::new(TRACEFS).join("instances").is_dir() {
        return Some(format!("tracefs is not mounted at {TRACEFS}"));
    }
    if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_err()
    {
        return Some("/dev/kvm is not usable".into());
    }
    None
}

macro_rules! require_host {
    () => {
        if let Some(why) = skip_reason() {
            println!("SKIP: {why}");
            return;
        }
    };
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("virtlens-cli-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A micro-VM created now in a thread named `CPU 0/KVM`; `run()` lets it do its writes.
struct Vcpu {
    go: Arc<Barrier>,
    done: std::thread::JoinHandle<u64>,
}

impl Vcpu {
    fn new(port: u16, writes: u32) -> Vcpu {
        let ready = Arc::new(Barrier::new(2));
        let go = Arc::new(Barrier::new(2));
        let (r, g) = (Arc::clone(&ready), Arc::clone(&go));
        let done = std::thread::Builder::new()
            .name("CPU 0/KVM".into())
            .spawn(move || {
                let mut vm = MicroVm::new(1 << 20).unwrap();
                vm.load_real_mode(&guest::pio_loop(port, writes).unwrap())
                    .unwrap();
                r.wait();
                g.wait();
                vm.run(Duration::from_secs(30)).unwrap().pio_exits
            })
            .unwrap();
        ready.wait();
        Vcpu { go, done }
    }

    fn run(self) -> u64 {
        self.go.wait();
        self.done.join().unwrap()
    }
}

fn instance_of(pid: u32) -> PathBuf {
    Path::new(TRACEFS).join(format!("instances/virtlens-{pid}"))
}

/// Waits until virtlens process `pid` has its events enabled and tracing on.
fn wait_ready(child: &mut Child) {
    let dir = instance_of(child.id());
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        // `enable` first: it is set before tracing is turned on.
        if read("events/kvm/kvm_pio/enable").trim() == "1" && read("tracing_on").trim() == "1" {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("virtlens exited early: {status}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("virtlens did not start capturing in 30 s");
}

fn record(out: &Path, extra: &[&str]) -> Child {
    Command::new(BIN)
        .arg("record")
        .arg("-o")
        .arg(out)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, sig: i32) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

fn finish(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "virtlens failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty(), "no progress output in pipes");
    out
}

fn report_json(file: &Path, extra: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("report")
        .arg("--json")
        .args(extra)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The count of port `port` out-accesses by process `pid` in a `report --json`.
fn port_count(report: &Value, port: u16, pid: u32) -> u64 {
    let mut n = 0;
    for t in report["tables"].as_array().unwrap() {
        if t["kind"] != "ioport" {
            continue;
        }
        for r in t["rows"].as_array().unwrap() {
            if r["code"] == u64::from(port) && r["access"] == "out" && r["pid"] == pid {
                n += r["count"].as_u64().unwrap_or(0);
            }
        }
    }
    n
}

/// `SELECT count(*)` of the kvm_pio rows of `port` and `pid`, by DuckDB; `None` when DuckDB
/// cannot be had.
fn duckdb_count(file: &Path, port: u16, pid: u32) -> Option<u64> {
    let has = |py: &str| {
        Command::new(py)
            .args(["-c", "import duckdb"])
            .status()
            .is_ok_and(|s| s.success())
    };
    let py = "python3";
    if !has(py) {
        let _ = Command::new(py)
            .args(["-m", "pip", "install", "-q", "duckdb"])
            .status();
        if !has(py) {
            return None;
        }
    }
    let sql = format!(
        "import duckdb; print(duckdb.sql(\"SELECT count(*) FROM '{}' WHERE event = 'kvm_pio' \
         AND port = {port} AND pid = {pid}\").fetchall()[0][0])",
        file.display()
    );
    let out = Command::new(py).args(["-c", &sql]).output().ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

#[test]
fn record_captures_every_port_write_and_report_and_duckdb_count_them() {
    require_host!();
    const N: u32 = 1500;
    const PORT: u16 = 0x5e3;
    let me = std::process::id();
    let dir = TempDir::new("record");
    let file = dir.0.join("cap.parquet");
    let vcpu = Vcpu::new(PORT, N);
    let mut rec = record(&file, &["--pid", &me.to_string()]);
    wait_ready(&mut rec);
    assert_eq!(vcpu.run(), u64::from(N));
    std::thread::sleep(Duration::from_millis(100));
    signal(&rec, 2);
    let out = finish(rec);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("recorded") && text.contains("0 lost"),
        "{text}"
    );

    let report = report_json(&file, &[]);
    assert_eq!(port_count(&report, PORT, me), u64::from(N), "report");
    let by_pid = report_json(&file, &["--pid", &me.to_string(), "--by", "vcpu"]);
    assert!(by_pid.to_string().contains("\"vcpu\""), "{by_pid}");
    let text = Command::new(BIN).arg("report").arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("{PORT:#x}")), "{text}");
    match duckdb_count(&file, PORT, me) {
        Some(n) => assert_eq!(n, u64::from(N), "DuckDB"),
        None => println!("SKIP: DuckDB check (python3 -m pip install duckdb failed)"),
    }
}

#[test]
fn two_recorders_at_once_both_see_every_event() {
    require_host!();
    const N: u32 = 1200;
    const PORT: u16 = 0x5e5;
    let me = std::process::id();
    let dir = TempDir::new("two");
    let (a, b) = (dir.0.join("a.parquet"), dir.0.join("b.parquet"));
    let vcpu = Vcpu::new(PORT, N);
    let mut ra = record(&a, &[]);
    let mut rb = record(&b, &["--events", "kvm:kvm_pio,kvm:kvm_userspace_exit"]);
    wait_ready(&mut ra);
    wait_ready(&mut rb);
    assert_eq!(vcpu.run(), u64::from(N));
    std::thread::sleep(Duration::from_millis(100));
    signal(&rb, 15);
    signal(&ra, 2);
    finish(ra);
    finish(rb);
    for f in [&a, &b] {
        assert_eq!(
            port_count(&report_json(f, &[]), PORT, me),
            u64::from(N),
            "{}",
            f.display()
        );
    }
}

/// The global tracing state another tool would see (virtlens never touches it).
fn global_state() -> Vec<(String, String)> {
    let mut files: Vec<String> = [
        "tracing_on",
        "trace_clock",
        "buffer_size_kb",
        "current_tracer",
        "set_event",
        "events/kvm/enable",
        "events/kvm/kvm_pio/filter",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    files.sort();
    let mut state: Vec<(String, String)> = files
        .into_iter()
        .map(|f| {
            let v = std::fs::read_to_string(Path::new(TRACEFS).join(&f)).unwrap_or_default();
            (f, v)
        })
        .collect();
    let mut others: Vec<String> = std::fs::read_dir(Path::new(TRACEFS).join("instances"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("virtlens-"))
        .collect();
    others.sort();
    state.push(("other instances".into(), others.join(",")));
    state
}

#[test]
fn sigint_and_sigterm_restore_the_tracing_state() {
    require_host!();
    let dir = TempDir::new("signals");
    let before = global_state();
    for (i, sig) in [2, 15].into_iter().enumerate() {
        let mut rec = record(&dir.0.join(format!("{i}.parquet")), &[]);
        wait_ready(&mut rec);
        let inst = instance_of(rec.id());
        assert!(inst.exists());
        signal(&rec, sig);
        finish(rec);
        assert!(!inst.exists(), "signal {sig}: the instance is removed");
        assert!(dir.0.join(format!("{i}.parquet")).exists());
    }
    assert_eq!(
        global_state(),
        before,
        "the global tracing state is untouched"
    );
}

#[test]
fn after_sigkill_the_next_run_removes_the_instance() {
    require_host!();
    let dir = TempDir::new("sigkill");
    let mut rec = record(&dir.0.join("killed.parquet"), &[]);
    wait_ready(&mut rec);
    let inst = instance_of(rec.id());
    signal(&rec, 9);
    let _ = rec.wait();
    assert!(inst.exists(), "SIGKILL leaves the instance");
    let next = record(&dir.0.join("next.parquet"), &["--duration", "0.2"]);
    let out = finish(next);
    // (A virtlens of another test running meanwhile may have been the one that removed it.)
    assert!(!inst.exists(), "the next run removed it");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("recorded"), "{text}");
    // The killed run's spool folder next to its output is removed by the next run there.
    let stale: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".virtlens-spool")
        })
        .collect();
    assert!(stale.is_empty(), "{stale:?}");
}

#[test]
fn top_once_shows_this_vm_by_name() {
    require_host!();
    const N: u32 = 900;
    const PORT: u16 = 0x5e7;
    let me = std::process::id();
    let vcpu = Vcpu::new(PORT, N);
    let name = std::env::current_exe()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mut top = Command::new(BIN)
        .args(["top", "--once", "--json", "--interval", "2", "--vm", &name])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_ready(&mut top);
    assert_eq!(vcpu.run(), u64::from(N));
    let out = finish(top);
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["schema"], "virtlens.top/1");
    let vm = view["vms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["pid"] == me)
        .unwrap_or_else(|| panic!("this VM is not in {view}"));
    assert_eq!(vm["name"], name.as_str());
    let row = vm["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "port" && r["key"] == format!("{PORT:#x} out"))
        .unwrap_or_else(|| panic!("no port row in {vm}"));
    assert_eq!(row["count"], u64::from(N));
}

#[test]
fn without_root_it_says_what_is_missing_and_exits_2() {
    require_host!();
    let Ok(setpriv) = which("setpriv") else {
        println!("SKIP: setpriv (util-linux) is not installed");
        return;
    };
    for args in [
        &["record", "-o", "/tmp/never.parquet"][..],
        &["top", "--once"][..],
    ] {
        let out = Command::new(&setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("Permission denied") && out.status.code() != Some(2) {
            println!("SKIP: the test binary is not executable by nobody: {err}");
            return;
        }
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("needs root"), "{err}");
    }
}

fn which(name: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}
