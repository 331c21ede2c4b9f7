//! `virtlens diagnose --live`: while this test process runs a micro-VM that reads the ACPI PM
//! timer (the lab's clock_read trap, in a thread named `CPU 0/KVM`), a child virtlens captures
//! this process through its own tracefs instance and must name `timer.acpi-pm-port`. Needs
//! root, tracefs and /dev/kvm (prints SKIP otherwise).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use virtlens_core::measure::Mode;
use virtlens_host::lab::scenarios::variant_profile;

fn skip_reason() -> Option<&'static str> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        == Some("0");
    if !root {
        return Some("not root");
    }
    if !Path::new("/sys/kernel/tracing/instances").is_dir() {
        return Some("no tracefs at /sys/kernel/tracing");
    }
    if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_err()
    {
        return Some("/dev/kvm is not usable");
    }
    None
}

#[test]
fn live_diagnosis_names_the_acpi_pm_timer_trap() {
    if let Some(why) = skip_reason() {
        println!("SKIP: {why}");
        return;
    }
    let me = std::process::id().to_string();
    // `--pid` selects a VMM: this process must hold a KVM VM, and its vCPU thread must exist,
    // before the capture starts (the kernel filter lists the VMM's threads).
    let _held = virtlens_host::microvm::MicroVm::new(1 << 20).unwrap();
    let go = Arc::new(Barrier::new(2));
    let start = Arc::clone(&go);
    let guest = std::thread::Builder::new()
        .name("CPU 0/KVM".into())
        .spawn(move || {
            start.wait();
            variant_profile("clock_read", "acpi_pm_timer", Mode::Long64, 50_000)
        })
        .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_virtlens"))
        .args([
            "diagnose",
            "--live",
            "--duration",
            "4",
            "--pid",
            &me,
            "--guest",
            "windows",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let the capture start, then read the PM timer from the vCPU thread.
    std::thread::sleep(Duration::from_millis(1500));
    go.wait();
    let recorded = guest.join().unwrap().unwrap();
    assert!(!recorded.tables.is_empty());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["id"].as_str()).collect())
        .unwrap_or_default();
    assert!(ids.contains(&"timer.acpi-pm-port"), "{ids:?}\n{stderr}");
    // A high finding makes the exit code 1 (the default --fail-on is high).
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}
