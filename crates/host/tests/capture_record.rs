//! Live capture, in-process: while a micro-VM in a thread named like a QEMU vCPU thread
//! (`CPU 0/KVM`) does N port writes, `capture::record_profile` (what `diagnose --live` uses)
//! must count exactly N `kvm_pio` for that port, attributed to this process and vCPU 0, name
//! the VM, say that kvm_exit/kvm_entry did not fire on PVM, read this VM's KVM statistics, and
//! leave no tracefs instance behind. Discovery must see this process as a VMM meanwhile.
//!
//! The guest runs once the capture says tracing is on (`Control::ready`), the capture ends when
//! the test sets its stop flag after the guest is done, and the VM lives until the capture has
//! read its statistics: no sleep, no time window. Needs root, tracefs and /dev/kvm.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

use virtlens_core::profile::{Access, Key, Profile, TableKind};
use virtlens_host::capture::{self, CaptureError, CaptureOptions, Control};
use virtlens_host::discovery;
use virtlens_host::microvm::{MicroVm, pio_loop};
use virtlens_testkit::{Need, require};

const HOST: [Need; 3] = [Need::Root, Need::Tracefs, Need::Kvm];

/// `record_profile` with `opts` until `stop`, calling `ready` when tracing is on.
fn capture_until(
    opts: &CaptureOptions,
    stop: &AtomicBool,
    ready: &mut dyn FnMut(),
) -> Result<Profile, CaptureError> {
    let ctl = Control {
        stop,
        ready: &mut |_| ready(),
        progress: &mut |_| {},
    };
    capture::record_profile(opts, ctl)
}

/// A capture with `opts` on its own thread, returned once tracing is on, with its stop flag.
fn start_capture(
    opts: CaptureOptions,
) -> (
    std::thread::JoinHandle<Result<Profile, CaptureError>>,
    Arc<AtomicBool>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let stop_flag = Arc::clone(&stop);
    let capture = std::thread::spawn(move || {
        capture_until(&opts, &stop_flag, &mut || {
            let _ = ready_tx.send(());
        })
    });
    if ready_rx.recv().is_err() {
        panic!(
            "the capture ended before it was ready: {:?}",
            capture.join()
        );
    }
    (capture, stop)
}

const N: u32 = 700;
const PORT: u16 = 0x5e1;

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
    if !require(&HOST) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let me = std::process::id();
    // The VM exists before the capture starts (so its statistics are read), runs its writes
    // once the capture is on, and lives until the capture has read its statistics.
    let created = Arc::new(Barrier::new(2));
    let go = Arc::new(Barrier::new(2));
    let release = Arc::new(Barrier::new(2));
    let (c, g, r) = (Arc::clone(&created), Arc::clone(&go), Arc::clone(&release));
    let (done_tx, done_rx) = mpsc::channel();
    let vcpu = std::thread::Builder::new()
        .name("CPU 0/KVM".into())
        .spawn(move || {
            let mut vm = MicroVm::new(1 << 20).unwrap();
            vm.load_real_mode(&pio_loop(PORT, N).unwrap()).unwrap();
            c.wait();
            g.wait();
            let stats = vm.run(Duration::from_secs(20)).unwrap();
            let _ = done_tx.send(());
            r.wait();
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
        pid: Some(me),
        ..CaptureOptions::default()
    };
    let (capture, stop) = start_capture(opts);
    // Looked up once it exists: a later capture of this process has a suffixed name.
    let instance = virtlens_testkit::tracefs_instance(me);
    assert!(
        Path::new(&instance).exists(),
        "ready means the instance is on"
    );
    go.wait();
    // The guest's writes are done when its run returns (the thread then waits for `release`).
    done_rx.recv().unwrap();
    stop.store(true, Ordering::Relaxed);
    let profile = capture.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    release.wait();
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
    // On PVM kvm_exit/kvm_entry never fire, and the profile says so; elsewhere they do, and
    // it says nothing of the kind.
    let says_no_exits = profile
        .warnings
        .iter()
        .any(|n| n.message.contains("kvm_exit and kvm_entry"));
    assert_eq!(
        says_no_exits,
        Path::new("/sys/module/kvm_pvm").exists(),
        "{:?}",
        profile.warnings
    );
    let stats = profile
        .tables
        .iter()
        .find(|t| t.kind == TableKind::KvmStats)
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
    if !require(&HOST) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let stop = AtomicBool::new(true);
    let opts = CaptureOptions {
        vm: Some("no-such-vm-anywhere".into()),
        ..CaptureOptions::default()
    };
    let e = capture_until(&opts, &stop, &mut || panic!("never ready")).unwrap_err();
    assert!(e.is_usage(), "{e}");
    assert!(e.to_string().contains("no-such-vm-anywhere"), "{e}");
    let bad = CaptureOptions {
        events: vec!["kvm:no_such_event".into()],
        ..CaptureOptions::default()
    };
    let e = capture_until(&bad, &stop, &mut || panic!("never ready")).unwrap_err();
    assert!(
        e.is_usage() && e.to_string().contains("no_such_event"),
        "{e}"
    );
}

#[test]
fn an_instance_whose_owner_pid_was_taken_since_is_removed_by_the_next_run() {
    // repro E2: after `kill -9` the instance kept tracing, and a later root run left it in place
    // when another process had taken the dead capture's pid.
    if !require(&[Need::Root, Need::Tracefs]) {
        return;
    }
    let _alone = virtlens_testkit::exclusive();
    // This process's pid with another start time: the registered owner is gone, its pid reused.
    let me = std::process::id();
    let instance = Path::new("/sys/kernel/tracing/instances").join(format!("virtlens-{me}-4242"));
    std::fs::create_dir(&instance).unwrap();
    std::fs::write(instance.join("tracing_on"), "1").unwrap();
    let runtime = Path::new("/run/virtlens");
    {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new().mode(0o700).create(runtime);
    }
    let link = runtime.join(format!("{me}-1-4242.instance"));
    std::os::unix::fs::symlink(&instance, &link).unwrap();
    let notes = capture::sweep_leftovers();
    let gone = !instance.exists();
    if !gone {
        let _ = std::fs::write(instance.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&instance);
    }
    assert!(gone, "the instance of a reused pid stayed: {notes:?}");
    assert!(!link.exists(), "its registration went with it");
    assert!(
        notes
            .iter()
            .any(|n| n.contains(&format!("virtlens-{me}-4242"))),
        "{notes:?}"
    );
}

#[test]
fn an_unregistered_instance_names_its_owner_so_a_reused_pid_does_not_keep_it() {
    // repro E2 without the registration (it could not be written, or was removed): the
    // instance's own name carries its owner's start time.
    if !require(&[Need::Root, Need::Tracefs]) {
        return;
    }
    let _alone = virtlens_testkit::exclusive();
    let me = virtlens_host::testing::LeftoverOwner::me();
    let stale = Path::new("/sys/kernel/tracing/instances").join(format!(
        "virtlens-{}-s{}",
        me.pid,
        me.start + 1
    ));
    let live = Path::new("/sys/kernel/tracing/instances")
        .join(format!("virtlens-{}-s{}-77", me.pid, me.start));
    for dir in [&stale, &live] {
        std::fs::create_dir(dir).unwrap();
    }
    std::fs::write(stale.join("tracing_on"), "1").unwrap();
    let notes = capture::sweep_leftovers();
    let (stale_gone, live_kept) = (!stale.exists(), live.exists());
    for dir in [&stale, &live] {
        let _ = std::fs::remove_dir(dir);
    }
    assert!(
        stale_gone,
        "the instance of a pid reused since stayed: {notes:?}"
    );
    assert!(
        live_kept,
        "the instance of a live owner was removed: {notes:?}"
    );
}

/// A VM in another process that exits before the capture reads its events (the capture is
/// stopped only after the process is gone, and a short guest ends before the first read)
/// still counts under that process: the capture's instance sets `record-tgid`, so the
/// kernel's `saved_tgids` names the exited thread's process.
#[test]
fn a_vm_that_exited_before_its_events_were_read_keeps_its_process() {
    if !require(&HOST) {
        return;
    }
    // Alone: a capture's tracefs instance is named after this process, as the other test's is.
    let _g = virtlens_testkit::exclusive();
    let guest = virtlens_testkit::pio_guest();
    const WRITES: u32 = 500;
    const GONE_PORT: u16 = 0x5e2;
    let opts = CaptureOptions::default();
    let (capture, stop) = start_capture(opts);
    let child = std::process::Command::new(&guest)
        .args([WRITES.to_string(), format!("{GONE_PORT:#x}")])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "pio_guest failed: {out:?}");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the VM is gone"
    );
    stop.store(true, Ordering::Relaxed);
    let profile = capture.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    let (count, _) = port_writes(&profile, GONE_PORT, pid);
    assert_eq!(
        count,
        u64::from(WRITES),
        "kvm_pio events for port {GONE_PORT:#x} under the exited process {pid}"
    );
}
