//! The over-commit view through the binary, on this machine crowded with three micro-VM vCPUs
//! per online CPU (threads named `CPU n/KVM`, ring-3 compute): `virtlens record --pid` keeps
//! the vCPU threads' scheduler samples in the capture file, `report` of the file shows every
//! vCPU's ready share, `diagnose` of the file raises `sched.overcommit`, and `top --once
//! --json` gives the ready share per VM and per vCPU thread. k spinning threads on c CPUs
//! each wait most of the time, whatever else runs: the assertions are about evidence the test
//! made, not timings. The crowd runs until each command is done. Needs root, tracefs, /dev/kvm.

use serde_json::Value;
use virtlens_guest::online_cpus;
use virtlens_host::lab::Busy;
use virtlens_testkit::{Need, require};

use crate::common::{TempDir, exclusive, finish, record_own, run};

/// This process's vCPU rows in a `sched` summary (from `top --json` or `report --json`) of
/// threads that ran in the window. The crowd's vCPUs all run. A task cloned from a vCPU thread
/// carries its name until it names itself (KVM's per-VM `kvm-nx-lpage-recovery` workers are
/// tasks of the VMM process on this machine's 6.18 kernel); a `CPU 4/KVM` that never ran,
/// most likely one of those seen in that moment, made a CI run count seven vCPUs for six.
fn my_vcpus(sched: &Value) -> Vec<Value> {
    let me = u64::from(std::process::id());
    sched["vms"]
        .as_array()
        .unwrap_or_else(|| panic!("no VMs: {sched}"))
        .iter()
        .filter(|v| v["pid"] == me)
        .flat_map(|v| v["vcpus"].as_array().cloned().unwrap_or_default())
        .filter(|v| v["dispatches"].as_u64().is_some_and(|d| d > 0))
        .collect()
}

fn assert_each_vcpu_waits(vcpus: &[Value], k: u32, what: &str) {
    assert_eq!(vcpus.len(), k as usize, "{what}: {vcpus:?}");
    for v in vcpus {
        let ready = v["ready_share"].as_f64().unwrap_or(0.0);
        assert!(
            ready > 0.0 && v["wall_ns"].as_u64().unwrap_or(0) > 0,
            "{what}: {v}"
        );
    }
}

#[test]
fn record_report_diagnose_and_top_show_ready_per_vcpu_on_a_crowded_host() {
    if !require(&[Need::Root, Need::Tracefs, Need::Kvm]) {
        return;
    }
    // Alone: the test counts this process's vCPU threads (other tests make theirs) and
    // crowds the machine's CPUs.
    let _alone = exclusive();
    let k = 3 * u32::try_from(online_cpus()).unwrap();
    let busy = Busy::start(k, None).unwrap();
    let dir = TempDir::new("sched");
    let file = dir.0.join("crowded.parquet");
    finish(record_own(&file, &["--duration", "3"]));
    let me = std::process::id().to_string();
    let top = run(&["top", "--once", "--json", "--pid", &me, "--interval", "2"]);
    busy.stop().unwrap();

    let path = file.to_string_lossy().into_owned();
    let report = run(&["report", "--json", &path]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let sched = &report["sched"][0];
    assert_each_vcpu_waits(&my_vcpus(sched), k, "report");
    assert!(
        sched["runnable_per_cpu"].as_f64().unwrap_or(0.0) > 1.0,
        "{sched}"
    );
    let text = run(&["report", &path]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("vCPU scheduling") && text.contains("CPU"),
        "{text}"
    );

    let diag = run(&["diagnose", "--json", &path]);
    let d: Value = serde_json::from_slice(&diag.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&diag.stderr)));
    let found: Vec<(&str, &str)> = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap_or(""),
                f["severity"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        found
            .iter()
            .any(|(id, sev)| *id == "sched.overcommit" && matches!(*sev, "medium" | "high")),
        "{found:?}"
    );
    let f = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "sched.overcommit")
        .unwrap();
    assert_eq!(f["effect"]["model"]["vcpus"], k, "{f}");
    let tables = &d["inputs"][0]["evidence"]["tables"];
    assert!(
        tables.as_array().unwrap().iter().any(|t| t == "sched"),
        "{tables}"
    );

    assert!(
        top.status.success(),
        "{}",
        String::from_utf8_lossy(&top.stderr)
    );
    let view: Value = serde_json::from_slice(&top.stdout).unwrap();
    assert_each_vcpu_waits(&my_vcpus(&view["sched"]), k, "top");
}

/// A QEMU VM, paused before its first instruction, killed when dropped.
struct Qemu(std::process::Child);

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `top --once --json` on a real QEMU with the `-name` given: its notes.
fn top_notes_of_qemu(name: &str) -> Vec<String> {
    let qemu = Qemu(
        std::process::Command::new("qemu-system-x86_64")
            .args(["-accel", "kvm", "-M", "pc", "-m", "64", "-display", "none"])
            .args(["-nodefaults", "-S", "-name", name])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = qemu.0.id().to_string();
    if name.contains("debug-threads=on") {
        crate::common::wait_for("QEMU's vCPU thread, named", || {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
            tasks
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .any(|c| c.starts_with("CPU 0/KVM"))
                .then_some(())
        });
    }
    // QEMU holds its VM (and so counts as a VMM) a moment after it starts: top says which
    // VMs there are until then.
    let out = crate::common::wait_for("QEMU to hold its KVM VM", || {
        let out = run(&["top", "--once", "--json", "--pid", &pid]);
        out.status.success().then_some(out)
    });
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    drop(qemu);
    v["notes"]
        .as_array()
        .unwrap_or_else(|| panic!("no notes: {v}"))
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_qemu_without_debug_threads_is_told_how_to_get_per_vcpu_ready_times() {
    if !require(&[Need::Root, Need::Kvm, Need::Tracefs, Need::Qemu]) {
        return;
    }
    let hint = |notes: &[String]| notes.iter().any(|n| n.contains("debug-threads=on"));
    let plain = top_notes_of_qemu("plain-guest");
    assert!(hint(&plain), "{plain:?}");
    let named = top_notes_of_qemu("named-guest,debug-threads=on");
    assert!(!hint(&named), "{named:?}");
}
