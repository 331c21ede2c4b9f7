//! `virtlens record` and `virtlens top` as a user runs them, against micro-VMs in this test
//! process (threads named `CPU 0/KVM`): exactly N `kvm_pio` events for N port writes, in the
//! profile `report` reads back and in the raw events DuckDB reads; two recorders at once do
//! not disturb each other; every catchable terminating signal restores the kernel's tracing
//! state and removes the spool, SIGPIPE does not end a capture; after SIGKILL the next run of
//! another command removes the instance, the spool and the unfinished file; without root it
//! says so and exits 2. Every capture is waited for through `--ready-fd`, never a sleep.
//!
//! Needs root, tracefs and /dev/kvm (and DuckDB for its check): `virtlens_testkit::require`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use virtlens_testkit::{Need, require};

use crate::common::*;

const HOST: [Need; 3] = [Need::Root, Need::Tracefs, Need::Kvm];

/// Records `n` writes to `port` by a micro-VM of this process into `dir/cap.parquet`.
fn capture_port_writes(dir: &TempDir, port: u16, n: u32) -> (PathBuf, String) {
    let me = std::process::id();
    let file = dir.0.join("cap.parquet");
    let vcpu = Vcpu::new(port, n);
    let rec = record(&file, &["--pid", &me.to_string()]);
    assert_eq!(vcpu.run(), u64::from(n));
    signal(&rec, "INT");
    let out = finish(rec);
    (file, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn record_captures_every_port_write_and_report_counts_them() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    const N: u32 = 1500;
    const PORT: u16 = 0x5e3;
    let me = std::process::id();
    let dir = TempDir::new("record");
    let (file, text) = capture_port_writes(&dir, PORT, N);
    assert!(
        text.contains("recorded") && text.contains("0 lost, stopped by SIGINT"),
        "{text}"
    );
    assert!(text.contains("of kernel memory"), "{text}");
    assert_eq!(dir.names(), ["cap.parquet"], "nothing else is left");

    let report = report_json(&file, &[]);
    assert_eq!(port_count(&report, PORT, me), u64::from(N), "report");
    let by_pid = report_json(&file, &["--pid", &me.to_string(), "--by", "vcpu"]);
    assert!(by_pid.to_string().contains("\"vcpu\""), "{by_pid}");
    let text = Command::new(BIN).arg("report").arg(&file).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("{PORT:#x}")), "{text}");
}

#[test]
fn duckdb_reads_every_port_write_of_a_capture() {
    if !require(&[Need::Root, Need::Tracefs, Need::Kvm, Need::Duckdb]) {
        return;
    }
    let _g = shared();
    const N: u32 = 1300;
    const PORT: u16 = 0x5e9;
    let me = std::process::id();
    let dir = TempDir::new("duckdb");
    let (file, _) = capture_port_writes(&dir, PORT, N);
    let sql = format!(
        "import duckdb; print(duckdb.sql(\"SELECT count(*) FROM '{}' WHERE event = 'kvm_pio' \
         AND port = {PORT} AND pid = {me}\").fetchall()[0][0])",
        file.display()
    );
    let out = Command::new("python3").args(["-c", &sql]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let n: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(n, u64::from(N), "DuckDB");
}

#[test]
fn two_recorders_at_once_both_see_every_event() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    const N: u32 = 1200;
    const PORT: u16 = 0x5e5;
    let me = std::process::id();
    let dir = TempDir::new("two");
    let (a, b) = (dir.0.join("a.parquet"), dir.0.join("b.parquet"));
    let vcpu = Vcpu::new(PORT, N);
    let ra = record(&a, &[]);
    let rb = record(&b, &["--events", "kvm:kvm_pio,kvm:kvm_userspace_exit"]);
    assert_eq!(vcpu.run(), u64::from(N));
    signal(&rb, "TERM");
    signal(&ra, "INT");
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

/// Every signal whose default action ends a process and that a process may catch (the
/// real-time ones by their ends).
const STOP_SIGNALS: [&str; 16] = [
    "INT", "TERM", "HUP", "QUIT", "USR1", "USR2", "ALRM", "VTALRM", "PROF", "XCPU", "XFSZ", "IO",
    "PWR", "STKFLT", "RTMIN", "RTMAX",
];

#[test]
fn every_stop_signal_restores_the_tracing_state_and_removes_the_spool() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    let dir = TempDir::new("signals");
    let _vm = own_vm();
    let before = global_state();
    let running: Vec<_> = STOP_SIGNALS
        .iter()
        .map(|sig| {
            let file = dir.0.join(format!("{sig}.parquet"));
            let rec = record_own(&file, &["--json"]);
            let pid = rec.id();
            assert!(instance_of(pid).exists(), "SIG{sig}: the instance is there");
            assert_eq!(
                leftovers_in(&dir, pid).len(),
                2,
                "SIG{sig}: a spool and an unfinished file while it runs"
            );
            assert_eq!(
                registrations_of(pid).len(),
                3,
                "SIG{sig}: the spool, the unfinished file and the tracing instance registered"
            );
            (sig, file, rec)
        })
        .collect();
    for (sig, file, rec) in running {
        let pid = rec.id();
        signal(&rec, sig);
        let out = finish(rec);
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["stopped_by"], format!("SIG{sig}"), "{summary}");
        assert!(
            !instance_of(pid).exists(),
            "SIG{sig}: the instance is removed"
        );
        assert_eq!(leftovers_in(&dir, pid), Vec::<String>::new(), "SIG{sig}");
        assert_eq!(registrations_of(pid), Vec::<PathBuf>::new(), "SIG{sig}");
        report_json(&file, &[]);
    }
    assert_eq!(
        global_state(),
        before,
        "the global tracing state is untouched"
    );
}

#[test]
fn sigpipe_and_sighup_under_nohup_do_not_end_a_capture() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    let dir = TempDir::new("sigpipe");
    let _vm = own_vm();
    let me = std::process::id().to_string();
    let file = dir.0.join("cap.parquet").to_string_lossy().into_owned();
    // SIGHUP ignored from the start, as nohup does it.
    let mut nohup = Command::new("nohup");
    nohup
        .arg(BIN)
        .args(["record", "-o", &file, "--pid", &me, "--json"])
        .args(["--ready-fd", "3"]);
    let rec = start_command_ready(&nohup);
    // SIGPIPE is ignored as in every Rust program (a closed pipe is an EPIPE error where it
    // is written); SIGHUP because it was ignored when virtlens started.
    signal(&rec, "PIPE");
    signal(&rec, "HUP");
    signal(&rec, "INT");
    let out = finish(rec);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["stopped_by"], "SIGINT", "{summary}");
}

#[test]
fn after_sigkill_top_once_removes_the_instance_the_spool_and_the_unfinished_file() {
    if !require(&HOST) {
        return;
    }
    let _g = exclusive();
    let dir = TempDir::new("sigkill");
    let _vm = own_vm();
    let rec = record_own(&dir.0.join("killed.parquet"), &[]);
    let pid = rec.id();
    signal(&rec, "KILL");
    let _ = rec.take().wait();
    assert!(instance_of(pid).exists(), "SIGKILL leaves the instance");
    assert_eq!(leftovers_in(&dir, pid).len(), 2, "{:?}", dir.names());
    // The spool, the unfinished file and the tracing instance.
    assert_eq!(registrations_of(pid).len(), 3);
    let me = std::process::id().to_string();
    let out = run(&["top", "--once", "--json", "--interval", "0.1", "--pid", &me]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!instance_of(pid).exists(), "top removed the instance");
    assert_eq!(dir.names(), Vec::<String>::new(), "top removed the files");
    assert_eq!(registrations_of(pid), Vec::<PathBuf>::new());
}

#[test]
fn top_once_shows_this_vm_by_name() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
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
    let top = start_ready(&["top", "--once", "--json", "--interval", "2", "--vm", &name]);
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
    if !require(&[Need::Root]) {
        return;
    }
    let setpriv = which("setpriv").unwrap_or_else(|| panic!("setpriv (util-linux) is missing"));
    // A copy that user nobody can run whatever the permissions of the build folder.
    let dir = TempDir::new("nobody");
    let bin = dir.0.join("virtlens");
    std::fs::copy(BIN, &bin).unwrap();
    let out_path = dir.0.join("never.parquet");
    for perms in [&dir.0, &bin] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(perms, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    for args in [
        &["record", "-o", &out_path.to_string_lossy()][..],
        &["top", "--once"][..],
    ] {
        let out = Command::new(&setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(args)
            .env_remove("XDG_RUNTIME_DIR")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("needs root"), "{err}");
    }
    assert!(!out_path.exists());
    // Said before anything was made for the capture (no runtime folder for user nobody).
    assert!(!std::env::temp_dir().join("virtlens-65534").exists());
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[test]
fn record_summary_counts_in_the_kernel_and_prints_the_report() {
    if !require(&[Need::Root, Need::Tracefs, Need::Kvm, Need::Bpf]) {
        return;
    }
    let _g = shared();
    const N: u32 = 1100;
    // Not 0x5e9 (the DuckDB test's): both count this process's writes to their port.
    const PORT: u16 = 0x5eb;
    let me = std::process::id();
    let vcpu = Vcpu::new(PORT, N);
    let rec = start_ready(&[
        "record",
        "--summary",
        "--json",
        "--duration",
        "2",
        "--pid",
        &me.to_string(),
    ]);
    assert_eq!(vcpu.run(), u64::from(N));
    let out = finish(rec);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = report.to_string();
    // report's JSON: the ioport rows of this VM count exactly the guest's writes.
    let mut n = 0;
    let mut stack = vec![&report];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if m.get("code") == Some(&Value::from(u64::from(PORT)))
                    && m.get("access") == Some(&Value::from("out"))
                {
                    n += m.get("count").and_then(Value::as_u64).unwrap_or(0);
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    assert_eq!(n, u64::from(N), "{text}");
    assert!(
        text.contains("virtlens-bpf"),
        "counted in the kernel: {text}"
    );
}
