//! The lab leaves nothing behind: after a whole lab run (every mode, every scenario, VMs with
//! irqchips, PITs, ioeventfds and coalesced rings, and the hung VMCALL runs the watchdog
//! interrupts) this process has the same fds and threads as before and no KVM fd open.
//! Needs /dev/kvm. The other tests of the suite open fds and start threads in the same process:
//! the test runs again in a process of its own (`virtlens_testkit::in_own_process`).

use std::time::{Duration, Instant};

use virtlens_host::lab::{self, Options};
use virtlens_testkit::{Need, require};

fn fds() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|t| t.to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn a_lab_run_leaves_no_fd_thread_or_kvm_object() {
    if !require(&[Need::Kvm]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    if !virtlens_testkit::in_own_process() {
        return;
    }
    let (fds_before, threads_before) = (fds(), threads());
    let opts = Options {
        rounds: 1,
        ops: Some(64),
        ..Options::lab(true)
    };
    let report = lab::run_lab(&opts, &mut |_| {});
    assert!(!report.tests.is_empty() && !report.scenarios.is_empty());
    let fds_after = fds();
    assert_eq!(fds_after, fds_before, "fds before and after");
    assert!(
        !fds_after.iter().any(|t| t.contains("kvm")),
        "a KVM fd is still open: {fds_after:?}"
    );
    // A finished thread leaves /proc a moment after its work is done (a scoped thread's scope
    // returns when its closure has, and even a joined thread's id is cleared, which wakes the
    // joiner, before the kernel releases the task). Wait for that, boundedly; a thread that is
    // still running never leaves and fails the test.
    let deadline = Instant::now() + Duration::from_secs(10);
    while threads() > threads_before && Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert_eq!(threads(), threads_before, "threads before and after");
}
