//! The in-kernel aggregation on a real kernel with a real micro-VM: N port writes by this
//! thread are counted exactly N times under (this process, this thread, kvm_pio, out, port),
//! the userspace-exit → KVM_RUN latency pair closes once per exit, and the kvm_exit/kvm_entry
//! programs are attached even where those tracepoints never fire.

use std::time::Duration;

use virtlens_host::microvm::{MicroVm, pio_loop};
use virtlens_host::{
    bpf::{Aggregation, Limits, Pair},
    testing::event_index,
};
use virtlens_testkit::{Need, require};

/// This thread's id, from /proc/thread-self (`PID/task/TID`).
fn this_tid() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").unwrap();
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

#[test]
fn port_writes_of_a_micro_vm_are_counted_exactly_in_the_kernel() {
    if !require(&[Need::Root, Need::Kvm, Need::Bpf, Need::Tracefs]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    const N: u32 = 2500;
    const PORT: u16 = 0x5d1;
    let agg = Aggregation::start(None, Limits::default()).unwrap();
    let events = agg.events();
    for e in ["kvm_exit", "kvm_entry", "kvm_pio", "kvm_userspace_exit"] {
        assert!(events.contains(&e), "{e} has no program: {:?}", agg.notes);
    }
    let before = agg.read().unwrap();
    let mut vm = MicroVm::new(1 << 20).unwrap();
    vm.load_real_mode(&pio_loop(PORT, N).unwrap()).unwrap();
    let stats = vm.run(Duration::from_secs(30)).unwrap();
    assert_eq!(stats.pio_exits, u64::from(N));
    let after = agg.read().unwrap();
    let d = after.since(Some(&before));

    let (me, tid) = (std::process::id(), this_tid());
    let pio = event_index("kvm_pio").unwrap();
    let ours: Vec<_> = d
        .counts
        .iter()
        .filter(|(k, _)| k.tgid == me && k.event == pio && k.detail == u64::from(PORT))
        .collect();
    assert_eq!(ours.len(), 1, "one key for the port: {ours:?}");
    let (k, n) = ours[0];
    assert_eq!((k.tid, k.sub, *n), (tid, 1, u64::from(N)), "{k:?}");

    // Every port exit returned to userspace (reason 2, KVM_EXIT_IO) and came back into
    // KVM_RUN: the VMM pair closed once per write, with positive durations.
    let uexit = event_index("kvm_userspace_exit").unwrap();
    let io_exits: u64 = d
        .counts
        .iter()
        .filter(|(k, _)| k.tgid == me && k.tid == tid && k.event == uexit && k.detail == 2)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(io_exits, u64::from(N));
    if events.contains(&"kvm_fpu") {
        let h = d
            .hists
            .iter()
            .find(|(k, _)| {
                k.tgid == me && k.tid == tid && k.event == Pair::Vmm as u32 && k.detail == 2
            })
            .map(|(_, h)| h.clone())
            .unwrap_or_else(|| panic!("no VMM latency histogram: {:?}", d.hists));
        assert_eq!(h.count(), u64::from(N));
        assert!(h.sum_ns >= h.count(), "{h:?}");
        assert_eq!(h.buckets[0], 0, "no exit is handled in under 2 ns");
    }
    assert!(d.other().is_empty(), "nothing overflowed: {:?}", d.other());
}

#[test]
fn a_full_count_map_counts_in_the_other_bucket() {
    if !require(&[Need::Root, Need::Kvm, Need::Bpf, Need::Tracefs]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    // A map of one key and no hot slots: the first key takes it, every other key overflows.
    let limits = Limits {
        counts: 1,
        hot_slots: 0,
        ..Limits::default()
    };
    let agg = Aggregation::start(None, limits).unwrap();
    let mut vm = MicroVm::new(1 << 20).unwrap();
    const N: u32 = 300;
    vm.load_real_mode(&pio_loop(0x5d2, N).unwrap()).unwrap();
    vm.run(Duration::from_secs(30)).unwrap();
    let s = agg.read().unwrap();
    assert!(s.counts.len() <= 1, "{:?}", s.counts);
    let counted: u64 = s.counts.iter().map(|(_, n)| n).sum();
    let other: u64 = s.other().iter().map(|(_, n)| n).sum();
    // This VM's N port exits and N userspace exits are all there, keyed or in `other`
    // (other VMs on the machine may add to both).
    assert!(counted + other >= 2 * u64::from(N), "{counted} + {other}");
    assert!(other >= u64::from(N), "{other}");
}

#[test]
fn an_interval_becomes_a_profile_of_this_vmm_s_ports() {
    if !require(&[Need::Root, Need::Kvm, Need::Bpf, Need::Tracefs]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    use virtlens_core::profile::{Key, TableKind};
    use virtlens_host::capture::CaptureOptions;
    use virtlens_host::testing::BpfLive;

    const N: u32 = 700;
    const PORT: u16 = 0x5d3;
    let mut vm = MicroVm::new(1 << 20).unwrap();
    let me = std::process::id();
    let opts = CaptureOptions {
        pid: Some(me),
        ..CaptureOptions::default()
    };
    let mut live = BpfLive::start(&opts, Limits::default()).unwrap();
    vm.load_real_mode(&pio_loop(PORT, N).unwrap()).unwrap();
    vm.run(Duration::from_secs(30)).unwrap();
    let (iv, extras) = live.take().unwrap();
    let ports = iv
        .profile
        .tables
        .iter()
        .find(|t| t.kind == TableKind::Ioport)
        .unwrap_or_else(|| panic!("no ioport table: {:?}", iv.profile.tables));
    let row = ports
        .rows
        .iter()
        .find(|r| matches!(r.key, Key::Port { port, .. } if port == u64::from(PORT)))
        .unwrap();
    assert_eq!((row.pid, row.count), (Some(me), u64::from(N)));
    // Only the selected VMM is in the profile.
    assert!(
        iv.profile
            .tables
            .iter()
            .flat_map(|t| &t.rows)
            .all(|r| r.pid == Some(me))
    );
    assert!(iv.events >= 2 * u64::from(N), "pio + userspace exits");
    if live.events().contains(&"kvm_fpu") {
        let vmm = extras
            .hists
            .iter()
            .find(|h| h.pid == me && h.pair == Pair::Vmm)
            .unwrap();
        assert!(vmm.hist.count() >= u64::from(N));
    }
    // The next interval has none of these writes.
    let (next, _) = live.take().unwrap();
    let again: u64 = next
        .profile
        .tables
        .iter()
        .filter(|t| t.kind == TableKind::Ioport)
        .flat_map(|t| &t.rows)
        .filter(|r| matches!(r.key, Key::Port { port, .. } if port == u64::from(PORT)))
        .map(|r| r.count)
        .sum();
    assert_eq!(again, 0);
    drop(vm);
}

#[test]
fn the_kernel_times_each_program_while_asked_to() {
    if !require(&[Need::Root, Need::Kvm, Need::Bpf, Need::Tracefs]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    use virtlens_host::bpf::RunTimeStats;
    const N: u32 = 400;
    let agg = Aggregation::start(None, Limits::default()).unwrap();
    let stats = RunTimeStats::enable().unwrap();
    let mut vm = MicroVm::new(1 << 20).unwrap();
    vm.load_real_mode(&pio_loop(0x5d4, N).unwrap()).unwrap();
    vm.run(Duration::from_secs(30)).unwrap();
    let runs = agg.program_runs();
    let pio = runs.iter().find(|p| p.event == "kvm_pio").unwrap();
    // At least this VM's writes (other VMs on the machine may add), each timed.
    assert!(pio.runs >= u64::from(N), "{runs:?}");
    assert!(pio.run_ns > 0, "{runs:?}");
    drop(stats);
}

/// Runs `pio_guest N PORT` on CPU 0 to its end (taskset execs it: the pid stays): its pid.
fn guest_on_cpu0(n: u32, port: u16) -> u32 {
    let child = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(virtlens_testkit::pio_guest())
        .args([n.to_string(), format!("{port:#x}")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "pio_guest: {out:?}");
    pid
}

#[test]
fn hot_slots_count_exactly_and_pass_to_the_next_vmm_when_theirs_exits() {
    if !require(&[Need::Root, Need::Kvm, Need::Bpf, Need::Tracefs]) {
        return;
    }
    // Which key takes CPU 0's one slot depends on every KVM user of the machine.
    let _g = virtlens_testkit::exclusive();
    const N: u32 = 700;
    let limits = Limits {
        hot_slots: 1,
        ..Limits::default()
    };
    let agg = Aggregation::start(None, limits).unwrap();
    let pio = event_index("kvm_pio").unwrap();
    let port_count = |s: &virtlens_host::bpf::Snapshot, pid: u32, port: u16| -> u64 {
        s.counts
            .iter()
            .filter(|(k, _)| k.tgid == pid && k.event == pio && k.detail == u64::from(port))
            .map(|(_, n)| n)
            .sum()
    };
    let vmm_samples = |s: &virtlens_host::bpf::Snapshot, pid: u32| -> u64 {
        s.hists
            .iter()
            .filter(|(k, _)| k.tgid == pid && k.event == Pair::Vmm as u32 && k.detail == 2)
            .map(|(_, h)| h.count())
            .sum()
    };
    let hot_pio = |pid: u32| {
        let (counts, hists) = agg.hot_keys().unwrap();
        let c = counts.iter().any(|k| k.tgid == pid && k.event == pio);
        let h = hists
            .iter()
            .any(|k| k.tgid == pid && k.event == Pair::Vmm as u32);
        (c, h)
    };
    let fpu = agg.events().contains(&"kvm_fpu");

    // A takes CPU 0's slots; B, while A's are live, counts in the hashes; both exactly.
    let a = guest_on_cpu0(N, 0x5e1);
    let b = guest_on_cpu0(N, 0x5e2);
    let s = agg.read().unwrap();
    assert_eq!(port_count(&s, a, 0x5e1), u64::from(N));
    assert_eq!(port_count(&s, b, 0x5e2), u64::from(N));
    assert_eq!(hot_pio(a), (true, fpu), "A's keys are in the slots");
    assert_eq!(
        hot_pio(b),
        (false, false),
        "B's are not: the slots were A's"
    );
    if fpu {
        assert_eq!(vmm_samples(&s, a), u64::from(N));
        assert_eq!(vmm_samples(&s, b), u64::from(N));
    }

    // Both exited: their keys go, A's slots are retired, and C takes them over.
    assert!(agg.prune_exited().unwrap() >= 2);
    let s = agg.read().unwrap();
    assert_eq!(port_count(&s, a, 0x5e1) + port_count(&s, b, 0x5e2), 0);
    assert_eq!(hot_pio(a), (false, false));
    let c = guest_on_cpu0(N, 0x5e3);
    let s = agg.read().unwrap();
    assert_eq!(port_count(&s, c, 0x5e3), u64::from(N));
    assert_eq!(hot_pio(c), (true, fpu), "C took over A's retired slots");
    if fpu {
        assert_eq!(vmm_samples(&s, c), u64::from(N));
    }
}
