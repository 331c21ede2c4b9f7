//! Exits of KVM on arm64 and RISC-V, read from real tool output and diagnosed with the
//! architecture's own rules (not x86's): the ISA is told from the names, an idle guest reads as
//! idle, data aborts as MMIO or stage-2 faults.

use virtlens_core::config::GuestFamily;
use virtlens_core::decode::{Decoder, Isa};
use virtlens_core::diagnose::{self, Diagnosis, Options};
use virtlens_core::sources;

use super::common::sample;

fn diag(prefix: &str) -> Diagnosis {
    let p = sources::read_path(&sample("exit-reports", prefix), None).unwrap();
    diagnose::diagnose(
        &[p],
        None,
        &Decoder::builtin(),
        &Options {
            guest: Some(GuestFamily::Linux),
            ..Options::default()
        },
    )
}

fn ids(d: &Diagnosis) -> Vec<&str> {
    d.findings.iter().map(|f| f.id.as_str()).collect()
}

#[test]
fn arm64_kvm_stat_is_arm64_and_its_idle_guest_is_idle() {
    let p = sources::read_path(&sample("exit-reports", "36-"), None).unwrap();
    assert_eq!(p.origin.isa, Some(Isa::Arm64));
    let d = diag("36-");
    // WFx is the guest halting; the UNKNOWN class of kvm_stat is IRQ exits, not unnamed codes.
    assert!(ids(&d).contains(&"idle.hlt"), "{:?}", ids(&d));
    assert!(!ids(&d).contains(&"unknown.exit-codes"), "{:?}", ids(&d));
    // No x86 family reads arm64 exits.
    for f in &d.findings {
        for x86 in ["timer.", "apic.", "io.", "msr.", "mmio.", "hv.", "cpuid."] {
            assert!(!f.id.starts_with(x86), "{} on arm64", f.id);
        }
        assert!(!f.cause.contains("HLT"), "{}: {}", f.id, f.cause);
    }
    let idle = d.findings.iter().find(|f| f.id == "idle.hlt").unwrap();
    assert!(idle.cause.contains("WFI"), "{}", idle.cause);
    assert!(
        d.findings
            .iter()
            .all(|f| f.severity <= diagnose::Severity::Low)
    );
}

#[test]
fn arm64_kvm_stat_rows_pasted_without_their_header_read_the_same_way() {
    let p = sources::read_path(&sample("exit-reports", "35-"), None).unwrap();
    assert_eq!(p.origin.isa, Some(Isa::Arm64));
    let d = diag("35-");
    assert!(ids(&d).contains(&"idle.hlt"), "{:?}", ids(&d));
    assert!(
        d.findings
            .iter()
            .all(|f| f.severity <= diagnose::Severity::Low)
    );
    // kvm_exit(UNKNOWN) is IRQ exits on arm64: interrupts, not unnamed codes.
    assert!(!ids(&d).contains(&"unknown.exit-codes"), "{:?}", ids(&d));
}

#[test]
fn arm64_perf_kvm_stat_data_aborts_are_the_main_problem() {
    let p = sources::read_path(&sample("exit-reports", "37-"), None).unwrap();
    assert_eq!(p.origin.isa, Some(Isa::Arm64));
    let d = diag("37-");
    let main = &d.findings[0];
    assert_eq!(main.id, "arch.guest-abort");
    assert_eq!(main.evidence[0].key, "DABT_LOW");
    // Without kvm_mmio counts it says both readings and how to tell them apart.
    assert!(main.cause.contains("MMIO") && main.cause.contains("memory"));
    assert!(
        main.confirm
            .as_deref()
            .is_some_and(|c| c.contains("kvm_mmio"))
    );
    // The type-keyed IRQ row is named, not unknown.
    assert!(!ids(&d).contains(&"unknown.exit-codes"), "{:?}", ids(&d));
    assert!(
        main.sources
            .iter()
            .any(|s| s.reference.contains("sergey.senozhatsky"))
    );
}

#[test]
fn arm64_trace_lines_key_traps_by_class_and_other_exits_by_type() {
    // The kernel's TP_printk of arm64 kvm_exit: "%s: HSR_EC: 0x%04x (%s), PC: 0x%016lx".
    let text = "\
 qemu-system-aar-4242  [001] ....  100.000001: kvm_exit: TRAP: HSR_EC: 0x0024 (DABT_LOW), PC: 0xffff800010203040
 qemu-system-aar-4242  [001] ....  100.000010: kvm_entry: PC: 0xffff800010203044
 qemu-system-aar-4242  [001] ....  100.000020: kvm_exit: IRQ: HSR_EC: 0x0000 (UNKNOWN), PC: 0xffff800010203044
 qemu-system-aar-4242  [001] ....  100.000030: kvm_entry: PC: 0xffff800010203044
 qemu-system-aar-4242  [001] ....  100.000040: kvm_exit: TRAP: HSR_EC: 0x0001 (WFx), PC: 0xffff800010203048
 qemu-system-aar-4242  [001] ....  100.000090: kvm_entry: PC: 0xffff80001020304c
";
    let p = sources::read_bytes(text.as_bytes(), "arm64-trace", None).unwrap();
    assert_eq!(p.origin.isa, Some(Isa::Arm64));
    let names: Vec<String> = p
        .tables
        .iter()
        .flat_map(|t| t.rows.iter().map(|r| r.key.to_string()))
        .collect();
    for want in ["DABT_LOW", "IRQ", "WFx"] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("UNKNOWN")), "{names:?}");
}

/// Real kernel output: the trace buffer of Debian's arm64 kernel in the arm64 lab host
/// (lab/arm64-host.sh) while the lab guest made exactly 200 MMIO stores and 10 PSCI calls plus
/// its power-off. Every one is read as its class, and the stores are the main problem.
#[test]
fn arm64_lab_trace_counts_the_guest_s_exits_exactly() {
    let path = virtlens_testkit::repo_root().join("testdata/arm64-lab/trace.txt");
    let p = sources::read_path(&path, None).unwrap();
    assert_eq!(p.origin.isa, Some(Isa::Arm64));
    let count = |kind: &str, key: &str| -> u64 {
        p.tables
            .iter()
            .filter(|t| t.kind.to_string() == kind)
            .flat_map(|t| &t.rows)
            .filter(|r| r.key.key_text() == key)
            .map(|r| r.count)
            .sum()
    };
    assert_eq!(count("vmexit", "DABT_LOW"), 200);
    assert_eq!(count("vmexit", "HVC64"), 11);
    assert_eq!(count("mmio", "0x10000000"), 200);
    let d = diagnose::diagnose(&[p], None, &Decoder::builtin(), &Options::default());
    assert_eq!(ids(&d).first(), Some(&"arch.guest-abort"), "{:?}", ids(&d));
}

#[test]
fn riscv_perf_kvm_stat_reads_both_eras_under_one_name() {
    let p = sources::read_path(&sample("exit-reports", "34-"), None).unwrap();
    assert!(p.tables.iter().all(|t| t.isa == Some(Isa::Riscv)));
    let d = diag("34-");
    let first = d
        .findings
        .iter()
        .find(|f| f.id == "arch.guest-abort")
        .unwrap();
    assert_eq!(first.evidence[0].key, "EXC_STORE_GUEST_PAGE_FAULT");
    // Before 6.17 perf printed interrupts as UNKNOWN: the author's conclusion.
    let unknown = d
        .findings
        .iter()
        .find(|f| f.id == "unknown.exit-codes")
        .unwrap();
    assert!(unknown.cause.contains("interrupt"));
}

#[test]
fn the_bcc_aarch64_port_reads_with_its_times_and_says_idle() {
    let p = sources::read_path(&sample("exit-reports", "38-"), None).unwrap();
    let t = &p.tables[0];
    assert_eq!(t.isa, Some(Isa::Arm64));
    let wfx = t.rows.iter().find(|r| r.key.to_string() == "WFx").unwrap();
    assert_eq!(wfx.count, 143 + 21);
    // count × the printed mean, summed over both threads.
    let want = (143.0f64 * 34_780_751.4).round() + (21.0f64 * 192_253_853.0).round();
    assert_eq!(wfx.time.total_ns, Some(want as u64));
    // The author elided rows: the table says it is partial.
    assert!(t.partial);
    let d = diag("38-");
    assert!(
        d.findings
            .iter()
            .all(|f| f.severity <= diagnose::Severity::Info),
        "{:?}",
        ids(&d)
    );
    assert_eq!(d.inputs[0].verdict, diagnose::Verdict::Idle);
}
