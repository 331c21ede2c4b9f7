//! Over-commit seen from the host, by crowding this machine. Three micro-VM vCPUs per online
//! CPU — threads named like QEMU's (`CPU n/KVM`), each spinning in the ring-3 queens kernel —
//! run while `capture::record_profile` (what `diagnose --live` uses) records this process:
//! every vCPU thread must be in the profile's scheduler samples with its ready share, the
//! runnable vCPUs must outnumber the CPUs, and `diagnose` must raise `sched.overcommit` at
//! medium or above. k spinning threads on c CPUs get at most c/k of a CPU each, so each waits
//! most of the time whatever else the machine does: no timing can make it pass or fail.
//!
//! The uncrowded run — one vCPU that ran once and is then blocked, as a halted vCPU is — must
//! be reported too, and raise no `sched.*` finding above low.
//!
//! A capture ends once it has reported its progress three times (three seconds, some sixty
//! readings of the threads' states): no sleep. Needs root, tracefs and /dev/kvm.

use std::sync::atomic::{AtomicBool, Ordering};

use virtlens_core::analysis::{SchedSummary, VmSched, summarize_sched as summarize};
use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Diagnosis, Options, Severity};
use virtlens_core::profile::Profile;
use virtlens_guest::online_cpus;
use virtlens_host::capture::{self, CaptureOptions, Control};
use virtlens_host::lab::Busy;
use virtlens_testkit::{Need, require};

const HOST: [Need; 3] = [Need::Root, Need::Tracefs, Need::Kvm];

/// This process's capture, ended after `ticks` progress reports.
fn capture_this_process(ticks: u32) -> Profile {
    let stop = AtomicBool::new(false);
    let mut seen = 0;
    let mut progress = |_: &capture::Progress| {
        seen += 1;
        if seen >= ticks {
            stop.store(true, Ordering::Relaxed);
        }
    };
    let opts = CaptureOptions {
        pid: Some(std::process::id()),
        buffer_kb: 1024,
        ..CaptureOptions::default()
    };
    let ctl = Control {
        stop: &stop,
        ready: &mut |_| {},
        progress: &mut progress,
    };
    capture::record_profile(&opts, ctl).unwrap()
}

/// The scheduler samples of capture `p`, summarized.
fn sched_summary(p: &Profile) -> SchedSummary {
    summarize(
        p.sched
            .as_ref()
            .expect("the capture sampled the vCPU threads"),
    )
}

fn this_vm(s: &SchedSummary) -> &VmSched {
    let me = std::process::id();
    s.vms
        .iter()
        .find(|v| v.pid == me)
        .unwrap_or_else(|| panic!("this process is not in the samples: {s:?}"))
}

fn diagnosis(p: &Profile) -> Diagnosis {
    diagnose::diagnose(
        std::slice::from_ref(p),
        None,
        &Decoder::builtin(),
        &Options::default(),
    )
}

fn sched_findings(d: &Diagnosis) -> Vec<(String, Severity)> {
    d.findings
        .iter()
        .filter(|f| f.id.starts_with("sched."))
        .map(|f| (f.id.clone(), f.severity))
        .collect()
}

#[test]
fn a_crowded_host_shows_every_vcpus_ready_share_and_raises_overcommit() {
    if !require(&HOST) {
        return;
    }
    // Alone: it crowds the machine's CPUs, and counts this process's vCPU threads (other tests
    // make theirs).
    let _alone = virtlens_testkit::exclusive();
    let cpus = u32::try_from(online_cpus()).unwrap();
    let k = 3 * cpus;
    let busy = Busy::start(k, None).unwrap();
    let p = capture_this_process(3);
    busy.stop().unwrap();

    let s = sched_summary(&p);
    let vm = this_vm(&s);
    assert_eq!(vm.vcpus.len(), k as usize, "{vm:?}");
    let mut indexes: Vec<Option<u32>> = vm.vcpus.iter().map(|v| v.sampled.vcpu).collect();
    indexes.dedup();
    assert_eq!(indexes, (0..k).map(Some).collect::<Vec<_>>());
    for v in &vm.vcpus {
        assert!(
            v.sampled.wall_ns > 0 && v.sampled.run_ns > 0 && v.ready_share > 0.0,
            "vCPU {:?} (tid {}) has no ready share: {v:?}",
            v.sampled.vcpu,
            v.sampled.tid
        );
    }
    assert!(
        s.runnable_per_cpu.is_some_and(|r| r > 1.0),
        "{k} spinning vCPUs on {cpus} CPUs: {s:?}"
    );

    let d = diagnosis(&p);
    let found = sched_findings(&d);
    assert!(
        found
            .iter()
            .any(|(id, sev)| id == "sched.overcommit" && *sev >= Severity::Medium),
        "{found:?}\n{s:?}"
    );
}

#[test]
fn a_halted_vcpu_is_reported_and_raises_nothing_above_low() {
    if !require(&HOST) {
        return;
    }
    // Alone: it crowds the machine's CPUs, and counts this process's vCPU threads (other tests
    // make theirs).
    let _alone = virtlens_testkit::exclusive();
    let idle = Busy::start(1, Some(1)).unwrap();
    let p = capture_this_process(3);
    assert_eq!(idle.stop().unwrap(), vec![1]);

    let s = sched_summary(&p);
    let vm = this_vm(&s);
    assert_eq!(vm.vcpus.len(), 1, "{vm:?}");
    assert!(vm.vcpus[0].sampled.wall_ns > 0);
    let d = diagnosis(&p);
    let found = sched_findings(&d);
    assert!(
        found.iter().all(|(_, sev)| *sev <= Severity::Low),
        "{found:?}\n{s:?}"
    );
    assert!(
        !found.iter().any(|(id, _)| id != "sched.host-steal"),
        "a halted vCPU does not wait for a CPU: {found:?}"
    );
}

/// A thread that carries a vCPU's name without being the vCPU (a task the vCPU thread started,
/// such as KVM's per-VM workers, before it names itself) and was there first: the capture
/// reports the thread that runs guest code, once, and not the impostor.
#[test]
fn of_two_threads_with_one_vcpus_name_the_one_running_guest_code_is_the_vcpu() {
    if !require(&HOST) {
        return;
    }
    let _alone = virtlens_testkit::exclusive();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    // Started first, so the lower thread id: the sampler meets it before the vCPU.
    let impostor = std::thread::Builder::new()
        .name("CPU 0/KVM".into())
        .spawn(move || {
            let me = std::fs::read_link("/proc/thread-self").unwrap();
            let tid: u32 = me.file_name().unwrap().to_str().unwrap().parse().unwrap();
            tid_tx.send(tid).unwrap();
            let _ = stop_rx.recv();
        })
        .unwrap();
    let impostor_tid = tid_rx.recv().unwrap();
    let busy = Busy::start(1, None).unwrap();
    let p = capture_this_process(4);
    busy.stop().unwrap();
    stop_tx.send(()).unwrap();
    impostor.join().unwrap();

    let s = sched_summary(&p);
    let vm = this_vm(&s);
    assert_eq!(vm.vcpus.len(), 1, "{vm:?}");
    let v = &vm.vcpus[0].sampled;
    assert_ne!(
        v.tid, impostor_tid,
        "the impostor was taken for vCPU 0: {vm:?}"
    );
    assert_eq!(v.vcpu, Some(0));
    assert!(v.run_ns > 0, "{v:?}");
}
