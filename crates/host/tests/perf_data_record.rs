//! Real perf.data files, recorded here: the micro-VM example guest runs under `perf record -e
//! 'kvm:*'` and `perf kvm stat record`, and virtlens-core's perf.data source must count every
//! event exactly as `perf script` does, and find the guest's port writes. Damaged copies of
//! the recording must give an error or a partial profile with a warning, never a panic.
//!
//! Needs /dev/kvm, perf and root (`virtlens_testkit::require`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use virtlens_core::profile::{Access, Key, Profile, TableKind};
use virtlens_core::sources::{self, Format};
use virtlens_testkit::{Need, TempDir, require};

const N: u32 = 300;
const PORT: u16 = 0x510;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Event name → count, as `perf script -F event` prints them (`kvm:kvm_pio:` → `kvm_pio`).
fn perf_script_counts(file: &Path) -> BTreeMap<String, u64> {
    let text = run(Command::new("perf")
        .arg("script")
        .arg("-i")
        .arg(file)
        .args(["-F", "event"]));
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let name = line.trim().trim_end_matches(':');
        if name.is_empty() {
            continue;
        }
        let bare = name.rsplit(':').next().unwrap_or(name);
        *counts.entry(bare.to_string()).or_default() += 1;
    }
    counts
}

fn table_counts(p: &Profile, kind: &TableKind) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for t in p.tables.iter().filter(|t| &t.kind == kind) {
        for r in &t.rows {
            *counts.entry(r.key.key_text()).or_default() += r.count;
        }
    }
    counts
}

fn port_writes(p: &Profile, port: u16) -> u64 {
    p.tables
        .iter()
        .filter(|t| t.kind == TableKind::Ioport)
        .flat_map(|t| &t.rows)
        .filter(|r| {
            r.key
                == Key::Port {
                    port: u64::from(port),
                    access: Some(Access::Out),
                }
        })
        .map(|r| r.count)
        .sum()
}

#[test]
fn recorded_files_match_perf_script() {
    if !require(&[Need::Root, Need::Kvm, Need::Perf]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let guest = virtlens_testkit::pio_guest();
    let dir = TempDir::new("perf-record");
    let file = dir.0.join("pio.data");
    run(Command::new("perf")
        .args(["record", "-q", "-e", "kvm:*", "-o"])
        .arg(&file)
        .arg("--")
        .arg(&guest)
        .arg(N.to_string())
        .arg(format!("{PORT:#x}")));

    let p = sources::read_path(&file, None).unwrap();
    assert_eq!(p.origin.format, "perf-data");
    let ours = table_counts(&p, &TableKind::Events);
    let perf = perf_script_counts(&file);
    assert!(!perf.is_empty(), "perf script printed no events");
    assert_eq!(
        ours, perf,
        "virtlens and perf script count events differently"
    );
    assert_eq!(port_writes(&p, PORT), u64::from(N), "ioport table");
    assert!(
        p.origin.vm_names.values().any(|n| n == "pio_guest"),
        "{:?}",
        p.origin.vm_names
    );
    assert!(p.origin.kernel.is_some() && p.origin.vendor.is_some());
    if Path::new("/sys/module/kvm_pvm").exists() {
        // kvm-on-dev-machines.md §3: per port write, 1 kvm_pio, 1 userspace exit, 2 kvm_fpu.
        assert_eq!(ours.get("kvm_pio"), Some(&u64::from(N)));
        assert_eq!(ours.get("kvm_fpu"), Some(&(2 * u64::from(N) + 2)));
        let exits = table_counts(&p, &TableKind::UserspaceExit);
        assert_eq!(exits.get("KVM_EXIT_IO"), Some(&u64::from(N)));
        assert_eq!(exits.get("KVM_EXIT_HLT"), Some(&1));
    }

    // A truncated copy and a corrupted copy: an error naming the file, or a partial profile
    // with a warning; never a panic.
    let bytes = std::fs::read(&file).unwrap();
    let cut = dir.0.join("cut.data");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    match sources::read_path(&cut, None) {
        Ok(p) => assert!(
            !p.warnings.is_empty(),
            "truncated copy read without a warning"
        ),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with(&cut.display().to_string()) && msg.contains("byte"),
                "{msg}"
            );
        }
    }
    let data_at = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let mut bad = bytes.clone();
    for (i, b) in bad[data_at..].iter_mut().enumerate().step_by(4099) {
        *b ^= 0x5a ^ (i as u8);
    }
    let corrupt = dir.0.join("corrupt.data");
    std::fs::write(&corrupt, &bad).unwrap();
    match sources::read_path(&corrupt, Some(Format::PerfData)) {
        Ok(p) => assert!(
            !p.warnings.is_empty(),
            "corrupted copy read without a warning"
        ),
        Err(e) => assert!(e.to_string().contains("byte"), "{e}"),
    }
}

#[test]
fn perf_kvm_stat_record_files_are_read() {
    if !require(&[Need::Root, Need::Kvm, Need::Perf]) {
        return;
    }
    let _g = virtlens_testkit::shared();
    let guest = virtlens_testkit::pio_guest();
    let dir = TempDir::new("perf-kvm-stat");
    let file = dir.0.join("kvm-stat.data");
    run(Command::new("perf")
        .args(["kvm", "stat", "record", "-q", "-o"])
        .arg(&file)
        .arg("--")
        .arg(&guest)
        .arg(N.to_string())
        .arg(format!("{PORT:#x}")));
    let p = sources::read_path(&file, None).unwrap();
    let ours = table_counts(&p, &TableKind::Events);
    assert_eq!(ours, perf_script_counts(&file));
    assert_eq!(port_writes(&p, PORT), u64::from(N));
}
