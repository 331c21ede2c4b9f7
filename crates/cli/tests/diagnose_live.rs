//! `virtlens diagnose --live`: while this test process runs a micro-VM that reads the ACPI PM
//! timer (the lab's clock_read trap, in a thread named `CPU 0/KVM`), a child virtlens captures
//! this process through its own tracefs instance and must name `timer.acpi-pm-port`. The
//! guest starts when the capture says it is ready (`--ready-fd`) and the capture ends at
//! SIGINT once the guest is done: no sleep, no time window. Needs root, tracefs and /dev/kvm.

use std::sync::{Arc, Barrier};

use virtlens_core::measure::Mode;
use virtlens_host::lab::variant_profile;
use virtlens_testkit::{Need, require};

use crate::common::{finish_any, signal, start_ready};

#[test]
fn live_diagnosis_names_the_acpi_pm_timer_trap() {
    if !require(&[Need::Root, Need::Tracefs, Need::Kvm]) {
        return;
    }
    // Alone: the capture takes every KVM event of this process (other tests run VMs in it)
    // and diagnoses their rates.
    let _alone = virtlens_testkit::exclusive();
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
    let child = start_ready(&[
        "diagnose",
        "--live",
        "--duration",
        "3600",
        "--pid",
        &me,
        "--guest",
        "windows",
        "--json",
    ]);
    go.wait();
    let recorded = guest.join().unwrap().unwrap();
    assert!(!recorded.tables.is_empty());
    signal(&child, "INT");
    let out = finish_any(child);
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
