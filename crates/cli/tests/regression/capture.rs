//! `virtlens record`'s output, spool and signals (issue 10, "Why"): two runs on one `-o`, `-o`
//! on a folder or an existing file, SIGQUIT/SIGUSR1 leaving the instance and the spool, a
//! killed run's spool cleaned only next to the same `-o`, `--buffer-kb` 0 and 4 GiB.

use std::path::PathBuf;

use serde_json::Value;
use virtlens_testkit::{Need, require};

use crate::common::*;

const HOST: [Need; 3] = [Need::Root, Need::Tracefs, Need::Kvm];

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn two_records_to_one_output_leave_one_readable_file_and_keep_the_other() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    let dir = TempDir::new("reg-race");
    let out = dir.0.join("cap.parquet");
    let _vm = own_vm();
    let a = record_own(&out, &["--json"]);
    let b = record_own(&out, &["--json"]);
    signal(&a, "INT");
    signal(&b, "INT");
    let results = [finish_any(a), finish_any(b)];
    let won: Vec<_> = results.iter().filter(|o| o.status.success()).collect();
    let lost: Vec<_> = results.iter().filter(|o| !o.status.success()).collect();
    assert_eq!(
        (won.len(), lost.len()),
        (1, 1),
        "one capture is put in place, the other finds it there: {:?}",
        results.iter().map(stderr).collect::<Vec<_>>()
    );
    report_json(&out, &[]);
    let err = stderr(lost[0]);
    assert_eq!(lost[0].status.code(), Some(2), "{err}");
    assert!(err.contains("was created by something else"), "{err}");
    let kept = dir
        .names()
        .into_iter()
        .find(|n| n != "cap.parquet")
        .unwrap_or_else(|| panic!("the other capture is kept: {err}"));
    assert!(err.contains(&kept), "{err}");
    report_json(&dir.0.join(&kept), &[]);
    assert_eq!(
        dir.names().len(),
        2,
        "no spool or part is left: {:?}",
        dir.names()
    );
}

#[test]
fn record_refuses_a_folder_a_device_and_a_missing_or_unwritable_folder_before_tracing() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    let dir = TempDir::new("reg-bad-output");
    let missing = dir.0.join("no/such/folder/cap.parquet");
    for (path, says) in [
        (dir.0.clone(), "is a folder"),
        (PathBuf::from("/dev/null"), "is a character device"),
        (missing, "does not exist"),
        (
            PathBuf::from("/proc/virtlens.parquet"),
            "cannot write in /proc",
        ),
    ] {
        let path = path.to_string_lossy().into_owned();
        let out = run(&["record", "-o", &path, "--duration", "1"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{path}: {err}");
        assert!(
            err.contains(&format!("-o {path}: ")) && err.contains(says),
            "{err}"
        );
        // And it said so before tracing started: it never became ready.
        let (child, ready) = spawn_with_ready(&["record", "-o", &path, "--duration", "1"]);
        assert!(ready.wait().is_err(), "{path}: tracing never started");
        assert_eq!(finish_any(child).status.code(), Some(2));
    }
    assert_eq!(dir.names(), Vec::<String>::new());
}

#[test]
fn record_refuses_an_existing_output_without_force_and_replaces_it_whole_with_force() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    let dir = TempDir::new("reg-exists");
    let file = dir.0.join("cap.parquet");
    std::fs::write(&file, b"an earlier capture").unwrap();
    let path = file.to_string_lossy().into_owned();
    let out = run(&["record", "-o", &path, "--duration", "0.5"]);
    let now = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
    assert_eq!(now, "an earlier capture", "overwritten without --force");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    let (child, ready) = spawn_with_ready(&["record", "-o", &path, "--duration", "1"]);
    assert!(ready.wait().is_err(), "tracing never started");
    assert_eq!(finish_any(child).status.code(), Some(2));

    let _vm = own_vm();
    let rec = record_own(&file, &["--force"]);
    signal(&rec, "INT");
    finish(rec);
    report_json(&file, &[]);
    assert_eq!(dir.names(), ["cap.parquet"]);
}

#[test]
fn sigquit_and_sigusr1_leave_no_instance_and_no_spool() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    let dir = TempDir::new("reg-signals");
    let _vm = own_vm();
    for sig in ["QUIT", "USR1"] {
        let file = dir.0.join(format!("{sig}.parquet"));
        let rec = record_own(&file, &["--json"]);
        let pid = rec.id();
        signal(&rec, sig);
        let out = finish(rec);
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["stopped_by"], format!("SIG{sig}"));
        assert!(!instance_of(pid).exists(), "SIG{sig}: the instance is left");
        assert_eq!(leftovers_in(&dir, pid), Vec::<String>::new(), "SIG{sig}");
        report_json(&file, &[]);
    }
}

#[test]
fn after_sigkill_a_reading_command_elsewhere_removes_the_spool_the_part_and_the_instance() {
    if !require(&HOST) {
        return;
    }
    let _g = exclusive();
    let dir = TempDir::new("reg-sigkill");
    let _vm = own_vm();
    let rec = record_own(&dir.0.join("killed.parquet"), &[]);
    let pid = rec.id();
    signal(&rec, "KILL");
    let _ = rec.take().wait();
    assert_eq!(leftovers_in(&dir, pid).len(), 2, "{:?}", dir.names());
    // Another command, reading a file somewhere else, from another folder.
    let sample =
        virtlens_testkit::testdata("exit-reports/13-perf-kvm-stat-vmexit-intel-msr-write-hlt.txt");
    let out = std::process::Command::new(BIN)
        .arg("report")
        .arg(&sample)
        .current_dir("/")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(dir.names(), Vec::<String>::new(), "spool and part removed");
    assert!(!instance_of(pid).exists(), "instance removed");
    assert_eq!(registrations_of(pid), Vec::<PathBuf>::new());
}

#[test]
fn buffer_kb_0_and_4_gib_are_refused_and_the_kernel_memory_is_said() {
    if !require(&HOST) {
        return;
    }
    let _g = shared();
    let dir = TempDir::new("reg-buffer");
    let out_path = dir.0.join("cap.parquet").to_string_lossy().into_owned();
    for kb in ["0", "4194304"] {
        let out = run(&[
            "record",
            "-o",
            &out_path,
            "--duration",
            "0.1",
            "--buffer-kb",
            kb,
        ]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "--buffer-kb {kb}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("64..=1048576"), "{}", stderr(&out));
    }
    assert_eq!(dir.names(), Vec::<String>::new());
    let help = run(&["record", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("8192 KiB × 64 CPUs = 512 MiB"), "{help}");
    let out = run(&[
        "record",
        "-o",
        &out_path,
        "--duration",
        "0.1",
        "--buffer-kb",
        "256",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("ring buffers of 256 KiB per CPU × "),
        "{text}{}",
        stderr(&out)
    );
}
