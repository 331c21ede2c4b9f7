//! Live capture, in-process: while a micro-VM in a thread named like a QEMU vCPU thread
//! (`CPU 0/KVM`) does N port writes, `capture::record_profile` (what `diagnose --live` uses)
//! must count exactly N `kvm_pio` for that port, attributed to this process and vCPU 0, name
//! the VM, say that kvm_exit/kvm_entry did not fire on PVM, read this VM's KVM statistics, and
//! leave no tracefs instance behind. Discovery must see this process as a VMM meanwhile.
//!
//! Needs root, tracefs and /dev/kvm; otherwise the test prints `SKIP: …` and passes.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use virtlens_core::profile::{Access, Key, Profile, TableKind};
use virtlens_host::capture::{self, CaptureOptions};
use virtlens_host::discovery;
use virtlens_host::microvm::{MicroVm, guest};

const N: u32 = 700;
const PORT: u16 = 0x5e1;

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
    if !Path::new("/sys/kernel/tracing/instances").is_dir() {
        return Some("tracefs is not mounted at /sys/kernel/tracing".into());
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

fn port_writes(p: &Profile, port: u16, pid: u32) -> (u64, Vec<Option<u32>>) {
    let rows: Vec<_> = p
        .tables
        .iter()
        .filter(|t| t.kind == TableKind::Ioport)
        .flat_map(|t| &t.rows)
        .filter(|r| {
            r.pid == Some(pid)
                && r.key
                    == Key::Port {
                        port: u64::from(port),
                        access: Some(Access::Out),
                    }
        })
        .collect();
    (
        rows.iter().map(|r| r.count).sum(),
        rows.iter().map(|r| r.vcpu).collect(),
    )
}

#[test]
fn record_profile_counts_every_port_write_of_this_vm() {
    if let Some(why) = skip_reason() {
        println!("SKIP: {why}");
        return;
    }
    let me = std::process::id();
    // The VM exists before the capture starts (so its statistics are read), and runs its
    // writes once the capture is on.
    let created = Arc::new(Barrier::new(2));
    let go = Arc::new(Barrier::new(2));
    let (c, g) = (Arc::clone(&created), Arc::clone(&go));
    let vcpu = std::thread::Builder::new()
        .name("CPU 0/KVM".into())
        .spawn(move || {
            let mut vm = MicroVm::new(1 << 20).unwrap();
            vm.load_real_mode(&guest::pio_loop(PORT, N).unwrap())
                .unwrap();
            c.wait();
            g.wait();
            let stats = vm.run(Duration::from_secs(20)).unwrap();
            // Keep the VM (and its fds) until the capture has read its statistics.
            std::thread::sleep(Duration::from_millis(1500));
            stats
        })
        .unwrap();
    created.wait();

    let found = discovery::probe(me).expect("this process holds a VM, so it is a VMM");
    assert!(!found.kvm_fds.vms.is_empty() && !found.kvm_fds.vcpus.is_empty());
    assert!(
        found.threads.iter().any(|t| t.vcpu == Some(0)),
        "{:?}",
        found.threads
    );

    let opts = CaptureOptions {
        duration: Some(Duration::from_millis(1200)),
        pid: Some(me),
        ..CaptureOptions::default()
    };
    let capture = std::thread::spawn(move || capture::record_profile(&opts));
    // Give the capture time to set up before the guest runs.
    let instance = format!("/sys/kernel/tracing/instances/virtlens-{me}");
    let on =
        |f: &str| std::fs::read_to_string(format!("{instance}/{f}")).is_ok_and(|s| s.trim() == "1");
    for _ in 0..500 {
        // A new instance starts with tracing on and no events: the event first.
        if on("events/kvm/kvm_pio/enable") && on("tracing_on") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    go.wait();
    let profile = capture.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    let run = vcpu.join().unwrap();
    assert_eq!(run.pio_exits, u64::from(N));

    let (count, vcpus) = port_writes(&profile, PORT, me);
    assert_eq!(count, u64::from(N), "kvm_pio events for port {PORT:#x}");
    assert_eq!(vcpus, vec![Some(0)], "the thread name says vCPU 0");
    assert_eq!(profile.origin.format, "capture");
    assert!(
        profile.origin.vm_names.contains_key(&me),
        "{:?}",
        profile.origin.vm_names
    );
    if Path::new("/sys/module/kvm_pvm").exists() {
        assert!(
            profile
                .warnings
                .iter()
                .any(|n| n.message.contains("kvm_exit and kvm_entry")),
            "{:?}",
            profile.warnings
        );
    }
    let stats = profile
        .tables
        .iter()
        .find(|t| t.kind == TableKind::Event("kvm_stats".into()))
        .unwrap_or_else(|| panic!("no kvm_stats table: {:?}", profile.warnings));
    assert!(stats.overlapping);
    let exits: u64 = stats
        .rows
        .iter()
        .filter(|r| r.key.key_text() == "exits" && r.pid == Some(me) && r.vcpu == Some(0))
        .map(|r| r.count)
        .sum();
    assert!(exits >= u64::from(N), "exits stat moved by {exits}");
    assert!(!Path::new(&instance).exists(), "the instance is removed");
}

#[test]
fn without_a_matching_vm_it_is_a_selection_error() {
    if let Some(why) = skip_reason() {
        println!("SKIP: {why}");
        return;
    }
    let opts = CaptureOptions {
        duration: Some(Duration::from_millis(100)),
        vm: Some("no-such-vm-anywhere".into()),
        ..CaptureOptions::default()
    };
    let e = capture::record_profile(&opts).unwrap_err();
    assert!(e.is_usage(), "{e}");
    assert!(e.to_string().contains("no-such-vm-anywhere"), "{e}");
    let bad = CaptureOptions {
        events: vec!["kvm:no_such_event".into()],
        ..CaptureOptions::default()
    };
    let e = capture::record_profile(&bad).unwrap_err();
    assert!(
        e.is_usage() && e.to_string().contains("no_such_event"),
        "{e}"
    );
}
