//! Tests of the `info mtree` line parser (`decode::mtree_parse`).

use super::*;

#[test]
fn range_lines() {
    let r = parse_range("    0000000000000608-000000000000060b (prio 0, i/o): acpi-tmr").ok();
    let r = r.map(|r| (r.indent, r.start, r.end, r.prio, r.rest.trim()));
    assert_eq!(r, Some((4, 0x608, 0x60b, 0, "acpi-tmr")));
    let r = parse_range("  0000000000000000-ffffffffffffffff (prio -1, i/o): pci").ok();
    assert_eq!(r.map(|r| (r.prio, r.end)), Some((-1, u64::MAX)));
    // Old QEMU: 8 digits and `RW` instead of the type.
    let r = parse_range("  fee00000-feefffff (prio 4096, RW): apic-msi").ok();
    assert_eq!(
        r.map(|r| (r.start, r.rest.trim())),
        Some((0xfee0_0000, "apic-msi"))
    );
    let r = parse_range("[DETECTED OVERFLOW!] 0000000000000010-000000000000001f (prio 0, i/o): x");
    assert!(r.is_ok());
    assert_eq!(parse_range("hello").err(), Some(RANGE));
    assert_eq!(parse_range("0000-zz (prio 0, i/o): x").err(), Some(RANGE));
    assert_eq!(parse_range("0000-0010 prio 0: x").err(), Some(PRIO));
    assert_eq!(parse_range("0000-0010 (prio x, i/o): x").err(), Some(PRIO));
    assert_eq!(
        parse_range("00000000000000000-1 (prio 0, i/o): x").err(),
        Some(RANGE)
    );
}

#[test]
fn names_and_suffixes() {
    assert_eq!(flat_name(" pc.rom @0000000000000000 kvm"), "pc.rom");
    assert_eq!(flat_name(" mmio fallback 1"), "mmio fallback 1");
    assert_eq!(flat_name(" e1000e-mmio owner:{dev id=net0}"), "e1000e-mmio");
    assert_eq!(strip_disabled("pam-pci [disabled]"), ("pam-pci", true));
    assert_eq!(strip_owner("x orphan"), "x");
    let a = parse_alias_target("pc.ram 0000000000000000-000000007fffffff");
    assert_eq!(
        a.map(|a| (a.target, a.offset)),
        Some(("pc.ram".to_string(), Some(0)))
    );
    assert!(parse_alias_target("pc.ram").is_none());
    assert_eq!(strip_quoting(">>   0000"), "  0000");
}
