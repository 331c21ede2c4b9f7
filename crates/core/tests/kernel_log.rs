//! The kernel-log reader on real host logs (testdata/kernel-logs/README.md): each is detected,
//! read into its `kernel_log` rows, and diagnosed to its author's conclusion; a kernel log
//! given beside an exit profile joins it; files of other formats are not taken for one.

use virtlens_core::decode::Decoder;
use virtlens_core::diagnose::{self, Diagnosis, Options, Severity, Verdict};
use virtlens_core::profile::{Key, Profile, TableKind};
use virtlens_core::sources::{self, Format};
use virtlens_testkit::testdata;

fn read(name: &str) -> (Vec<u8>, Profile) {
    let path = testdata("kernel-logs").join(name);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        sources::detect(&bytes),
        Some(Format::KernelLog),
        "{name} is detected as a kernel log"
    );
    let p = sources::read_path(&path, None).unwrap();
    assert_eq!(p.origin.format, "kernel-log");
    (bytes, p)
}

fn diagnose(profiles: &[Profile]) -> Diagnosis {
    diagnose::diagnose(profiles, None, &Decoder::builtin(), &Options::default())
}

fn rows(p: &Profile, name: &str) -> Vec<(Option<u32>, u64)> {
    p.tables
        .iter()
        .filter(|t| t.kind == TableKind::KernelLog)
        .flat_map(|t| &t.rows)
        .filter(|r| matches!(&r.key, Key::Event { name: n } if n == name))
        .map(|r| (r.vcpu, r.count))
        .collect()
}

/// google/novm#26: five boot-time `unhandled rdmsr` lines — "It should be fine".
#[test]
fn novm_unhandled_rdmsr_is_harmless() {
    let (_, p) = read("01-novm-dmesg-unhandled-rdmsr.txt");
    let msrs: Vec<u64> = p.tables[0]
        .rows
        .iter()
        .filter_map(|r| match r.key {
            Key::Msr { index, .. } => Some(index),
            _ => None,
        })
        .collect();
    assert_eq!(msrs.len(), 5);
    assert!(msrs.contains(&0x1c9) && msrs.contains(&0x606));
    assert!(
        p.tables[0]
            .rows
            .iter()
            .all(|r| r.pid == Some(12633) && r.vcpu == Some(0))
    );
    let d = diagnose(&[p]);
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "hostlog.unhandled-msr")
        .unwrap();
    assert_eq!(f.severity, Severity::Info, "each MSR once: harmless");
    assert!(d.worst() <= Some(Severity::Info));
    assert_ne!(d.inputs[0].verdict, Verdict::Problem);
}

/// virt-manager#570: the 6.x `Unhandled WRMSR(0xc0010115)` on each vCPU, in journalctl's
/// format — noise, silenced by ignoring unknown MSRs.
#[test]
fn virt_manager_amd_wrmsr_is_noise_with_its_silencer() {
    let (_, p) = read("02-virt-manager-journalctl-amd-unhandled-wrmsr.txt");
    let t = &p.tables[0];
    assert_eq!(t.rows.len(), 4);
    assert!(t.rows.iter().all(|r| r.key
        == Key::Msr {
            index: 0xc001_0115,
            access: Some(virtlens_core::profile::Access::Write)
        }));
    let mut vcpus: Vec<_> = t.rows.iter().filter_map(|r| r.vcpu).collect();
    vcpus.sort_unstable();
    assert_eq!(vcpus, [0, 1, 2, 3]);
    assert!(t.window.as_ref().and_then(|w| w.duration_ns) == Some(1_000_000_000));
    let d = diagnose(&[p]);
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "hostlog.unhandled-msr")
        .unwrap();
    assert!(f.severity <= Severity::Low);
    assert!(f.fixes.iter().any(|x| {
        x.libvirt
            .as_deref()
            .is_some_and(|l| l.contains("msrs unknown='ignore'"))
    }));
}

/// jfcarter.net: one split-lock trap of `CPU 1/KVM` — "a red herring … not a big deal".
#[test]
fn one_split_lock_trap_is_low() {
    let (_, p) = read("03-jfcarter-syslog-one-split-lock.txt");
    assert_eq!(rows(&p, "split_lock"), [(Some(1), 1)]);
    let d = diagnose(&[p]);
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "hostlog.split-lock")
        .unwrap();
    assert_eq!(f.severity, Severity::Low);
    assert_ne!(d.inputs[0].verdict, Verdict::Problem);
}

/// VirtualBox#2: every vCPU thread (EMT-0…3) trapped and the guest became 10–20× slower;
/// split_lock_detect=off was the way out.
#[test]
fn split_locks_on_every_vcpu_are_a_problem() {
    let (_, p) = read("04-virtualbox-dmesg-split-lock-every-vcpu.txt");
    let mut r = rows(&p, "split_lock");
    r.sort_unstable();
    assert_eq!(r, [(Some(0), 1), (Some(1), 1), (Some(2), 1), (Some(3), 1)]);
    let d = diagnose(&[p]);
    let f = d.main_of(1).unwrap();
    assert_eq!(f.id, "hostlog.split-lock");
    assert!(f.severity >= Severity::Medium);
    assert!(f.fixes.iter().any(|x| {
        x.host
            .as_deref()
            .is_some_and(|h| h.contains("split_lock_detect=off"))
    }));
    assert_eq!(d.inputs[0].verdict, Verdict::Problem);
}

/// harvester#564: `CPU 0/KVM` stuck 2471 s and an RCU stall — filed as a host bug.
#[test]
fn vcpu_soft_lockup_is_high() {
    let (_, p) = read("05-harvester-dmesg-T-vcpu-soft-lockup.txt");
    let t = &p.tables[0];
    let lockup = t
        .rows
        .iter()
        .find(|r| {
            r.key
                == Key::Event {
                    name: "soft_lockup".into(),
                }
        })
        .unwrap();
    assert_eq!(lockup.vcpu, Some(0));
    assert_eq!(lockup.time.max_ns, Some(2471 * 1_000_000_000));
    assert!(
        p.warnings
            .iter()
            .any(|n| n.message.contains("not about KVM"))
    );
    let d = diagnose(&[p]);
    let f = d.main_of(1).unwrap();
    assert_eq!(f.id, "hostlog.vcpu-stall");
    assert_eq!(f.severity, Severity::High);
}

/// `virtlens diagnose exits.txt dmesg.txt`: the log is joined with the exit profile (one
/// input, not two), and BUS_LOCK exits with split-lock lines make one finding with both.
#[test]
fn a_kernel_log_joins_the_exit_profile() {
    let exits = "Analyze events for all VMs, all VCPUs:\n\n\
        VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n\n\
        BUS_LOCK      6000    60.00%    50.00%      1.00us     90.00us     10.00us ( +-   1.00% )\n\
        HLT           4000    40.00%    50.00%      1.00us   9000.00us     15.00us ( +-   1.00% )\n\n\
        Total Samples:10000, Total events handled time:120000.00us.\n";
    let exit_p = sources::read_bytes(exits.as_bytes(), "exits.txt", None).unwrap();
    assert_eq!(exit_p.origin.format, "perf-kvm-stat");
    let (_, log) = read("04-virtualbox-dmesg-split-lock-every-vcpu.txt");
    let d = diagnose(&[exit_p, log]);
    assert_eq!(
        d.inputs.len(),
        1,
        "the log is joined, not an input of its own"
    );
    assert!(d.comparison.is_none());
    assert!(d.notes.iter().any(|n| n.contains("joined")));
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "hostlog.split-lock")
        .unwrap();
    assert!(f.evidence.iter().any(|e| e.key == "BUS_LOCK" && e.explains));
    assert!(f.evidence.iter().any(|e| e.key == "split_lock"));
}

/// Other formats' files are not taken for kernel logs, and a file of no kernel-log shape is
/// refused when forced, naming its first line.
#[test]
fn detection_is_strict_and_refusal_stays() {
    let mut files = Vec::new();
    let mut dirs: Vec<_> = [
        "exit-reports",
        "perfmon",
        "configs",
        "readers",
        "fio",
        "mtree",
        "cases",
    ]
    .map(testdata)
    .into();
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 50);
    {
        for path in files {
            let bytes = std::fs::read(&path).unwrap();
            let head = &bytes[..bytes.len().min(sources::DETECT_BYTES)];
            assert_ne!(
                sources::detect(head),
                Some(Format::KernelLog),
                "{} taken for a kernel log",
                path.display()
            );
        }
    }
    let text = b"hello world\nthis is not a log\n";
    assert_eq!(sources::detect(text), None);
    let e = sources::read_bytes(text, "notes.txt", Some(Format::KernelLog)).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("notes.txt") && m.contains("expected a kernel log"),
        "{m}"
    );
    // A plain dmesg without any KVM message is a kernel log with nothing to say.
    let plain = b"[    0.000000] Linux version 6.1.0\n[    0.100000] Command line: ro quiet\n\
                  [    1.000000] usb 1-1: new high-speed USB device\n";
    assert_eq!(sources::detect(plain), Some(Format::KernelLog));
    let p = sources::read_bytes(plain, "dmesg.txt", None).unwrap();
    assert!(p.tables[0].rows.is_empty());
    assert_eq!(diagnose(&[p]).inputs[0].verdict, Verdict::NothingToDiagnose);
}

/// A cut or damaged KVM line is noted with its line, never dropped in silence.
#[test]
fn damaged_lines_are_noted() {
    let text = "[1.0] kvm [1]: vcpu0 unhandled rdmsr: 0x1c9\n\
                [2.0] x86/split lock detection: #AC: CPU 1/KVM/17\n\
                [3.0] kvm [1]: vcpu0 unhandled rdmsr: 0x";
    let p = sources::read_bytes(text.as_bytes(), "d.txt", None).unwrap();
    assert!(p.tables[0].partial);
    assert!(
        p.warnings.iter().any(|n| n.line == Some(2)),
        "{:?}",
        p.warnings
    );
    assert!(
        p.warnings.iter().any(|n| n.line == Some(3)),
        "{:?}",
        p.warnings
    );
}

/// An MSR line wrapped after its guest rIP (as mail and narrow terminals do) reads as one line;
/// the continuation of another message is not taken for it.
#[test]
fn wrapped_msr_lines_read_as_one() {
    let text = "[ 6044.472516] kvm [3412]: vcpu0, guest rIP: 0xfffff8019c8d6103\n\
                unhandled rdmsr: 0x611\n\
                [ 6046.201977] kvm [3412]: vcpu1, guest rIP: 0xfffff8019d7c9188\n\
                [ 6047.000000] usb 1-1: new device\n";
    let p = sources::read_bytes(text.as_bytes(), "w.txt", None).unwrap();
    let msrs: Vec<_> = p.tables[0]
        .rows
        .iter()
        .filter(|r| matches!(r.key, Key::Msr { index: 0x611, .. }))
        .collect();
    assert_eq!(msrs.len(), 1);
    assert_eq!((msrs[0].pid, msrs[0].vcpu), (Some(3412), Some(0)));
    // The second head had no continuation: kept as a KVM line, not an MSR.
    assert_eq!(rows(&p, "kvm_other"), [(None, 1)]);
}

/// Without bus-lock exits, VMX's EXCEPTION_NMI rows (where a split-lock #AC exits) join the
/// finding as context only: the log's threads grade it.
#[test]
fn exception_exits_are_context_for_split_locks() {
    let exits = "Analyze events for all VMs, all VCPUs:\n\n\
        VM-EXIT    Samples  Samples%     Time%    Min Time    Max Time         Avg time\n\n\
        EXCEPTION_NMI  3000    30.00%    20.00%      1.00us     90.00us      5.00us ( +-   1.00% )\n\
        HLT            7000    70.00%    80.00%      1.00us   9000.00us     15.00us ( +-   1.00% )\n\n\
        Total Samples:10000, Total events handled time:120000.00us.\n";
    let exit_p = sources::read_bytes(exits.as_bytes(), "exits.txt", None).unwrap();
    let (_, log) = read("03-jfcarter-syslog-one-split-lock.txt");
    let d = diagnose(&[exit_p, log]);
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "hostlog.split-lock")
        .unwrap();
    assert_eq!(f.severity, Severity::Low);
    let e = f
        .evidence
        .iter()
        .find(|e| e.key == "EXCEPTION_NMI")
        .unwrap();
    assert!(!e.explains);
}

/// A stall of a vCPU thread in a run whose other input shows over-commit names it as the
/// likelier cause (the over-commit reading here is an esxtop log's: the logic, not a host).
#[test]
fn a_stall_beside_overcommit_says_so() {
    let path = testdata("perfmon").join("esxtop-built-to-layout.csv");
    let esx = sources::read_path(&path, None).unwrap();
    let (_, log) = read("05-harvester-dmesg-T-vcpu-soft-lockup.txt");
    let d = diagnose(&[esx, log]);
    assert!(d.findings.iter().any(|f| f.id == "hv.overcommit"));
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "hostlog.vcpu-stall")
        .unwrap();
    assert!(f.evidence.iter().any(|e| e.key == "hv.overcommit"));
}

/// kube-opennebula#1: a QEMU thread hung 120 s before the host's kernel oopsed — the stall
/// leads, the perfctr MSR line (4.4's `disabled perfctr wrmsr`) is context.
#[test]
fn qemu_hung_task_before_a_panic_leads() {
    let (_, p) = read("06-opennebula-dmesg-qemu-hung-task-panic.txt");
    assert_eq!(
        rows(&p, "hung_task"),
        [(None, 1)],
        "a VMM thread, vCPU unknown"
    );
    assert!(p.tables[0].rows.iter().any(|r| r.key
        == Key::Msr {
            index: 0xc2,
            access: Some(virtlens_core::profile::Access::Write)
        }));
    let d = diagnose(&[p]);
    let f = d.main_of(1).unwrap();
    assert_eq!(f.id, "hostlog.vcpu-stall");
    assert_eq!(f.severity, Severity::High);
    let m = d
        .findings
        .iter()
        .find(|f| f.id == "hostlog.unhandled-msr")
        .unwrap();
    assert_eq!(m.severity, Severity::Info);
}
