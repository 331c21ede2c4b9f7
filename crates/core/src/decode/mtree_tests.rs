//! Tests of the address maps read from `info mtree` (`decode::mtree`).

use super::*;
use crate::decode::Decoder;

/// A q35 guest (virtio-net, 2 GiB) as `info mtree` prints it, trimmed to the regions the
/// tests need; region names are QEMU's.
const Q35: &str = "\
(qemu) info mtree
address-space: cpu-memory-0
address-space: memory
  0000000000000000-ffffffffffffffff (prio 0, i/o): system
    0000000000000000-000000007fffffff (prio 0, ram): alias ram-below-4g @pc.ram 0000000000000000-000000007fffffff
    0000000000000000-ffffffffffffffff (prio -1, i/o): pci
      00000000000a0000-00000000000bffff (prio 1, i/o): vga-lowmem
      00000000000c0000-00000000000dffff (prio 1, rom): pc.rom
      00000000000e0000-00000000000fffff (prio 1, rom): alias isa-bios @pc.bios 0000000000020000-000000000003ffff
      00000000fd000000-00000000fdffffff (prio 1, ram): vga.vram
      00000000fea00000-00000000fea00fff (prio 1, i/o): virtio-net-pci-msix
        00000000fea00000-00000000fea0003f (prio 0, i/o): msix-table
        00000000fea00800-00000000fea00807 (prio 0, i/o): msix-pba
      00000000fffc0000-00000000ffffffff (prio 0, rom): pc.bios
      0000000800000000-0000000800003fff (prio 1, i/o): virtio-pci
        0000000800000000-0000000800000fff (prio 0, i/o): virtio-pci-common-virtio-net
        0000000800001000-0000000800001fff (prio 0, i/o): virtio-pci-isr-virtio-net
        0000000800002000-0000000800002fff (prio 0, i/o): virtio-pci-device-virtio-net
        0000000800003000-0000000800003fff (prio 0, i/o): virtio-pci-notify-virtio-net
    00000000000a0000-00000000000bffff (prio 1, i/o): alias smram-region @pci 00000000000a0000-00000000000bffff
    00000000000c0000-00000000000c3fff (prio 1, ram): alias pam-rom @pc.ram 00000000000c0000-00000000000c3fff
    00000000000c0000-00000000000c3fff (prio 1, i/o): alias pam-pci @pci 00000000000c0000-00000000000c3fff [disabled]
    00000000000e0000-00000000000fffff (prio 1, i/o): alias pam-pci @pci 00000000000e0000-00000000000fffff
    00000000b0000000-00000000bfffffff (prio 0, i/o): pcie-mmcfg-mmio
    00000000fec00000-00000000fec00fff (prio 0, i/o): kvm-ioapic
    00000000fed00000-00000000fed003ff (prio 0, i/o): hpet
    00000000fed1c000-00000000fed1ffff (prio 1, i/o): lpc-rcrb-mmio
    00000000fee00000-00000000feefffff (prio 4096, i/o): kvm-apic-msi
    0000000100000000-000000017fffffff (prio 0, ram): alias ram-above-4g @pc.ram 0000000080000000-00000000ffffffff

address-space: I/O
  0000000000000000-000000000000ffff (prio 0, i/o): io
    0000000000000000-0000000000000007 (prio 0, i/o): dma-chan
    0000000000000008-000000000000000f (prio 0, i/o): dma-cont
    0000000000000020-0000000000000021 (prio 0, i/o): kvm-pic
    0000000000000040-0000000000000043 (prio 0, i/o): kvm-pit
    0000000000000060-0000000000000060 (prio 0, i/o): i8042-data
    0000000000000061-0000000000000061 (prio 0, i/o): pcspk
    0000000000000064-0000000000000064 (prio 0, i/o): i8042-cmd
    0000000000000070-0000000000000071 (prio 0, i/o): rtc
      0000000000000070-0000000000000070 (prio 0, i/o): rtc-index
    0000000000000080-0000000000000080 (prio 0, i/o): ioport80
    00000000000000a0-00000000000000a1 (prio 0, i/o): kvm-pic
    00000000000000b2-00000000000000b3 (prio 0, i/o): apm-io
    00000000000003f8-00000000000003ff (prio 0, i/o): serial
    00000000000004d0-00000000000004d0 (prio 0, i/o): kvm-elcr
    00000000000004d1-00000000000004d1 (prio 0, i/o): kvm-elcr
    0000000000000510-0000000000000511 (prio 0, i/o): fwcfg
    0000000000000514-000000000000051b (prio 0, i/o): fwcfg.dma
    0000000000000600-000000000000067f (prio 0, i/o): ich9-pm
      0000000000000600-0000000000000603 (prio 0, i/o): acpi-evt
      0000000000000604-0000000000000605 (prio 0, i/o): acpi-cnt
      0000000000000608-000000000000060b (prio 0, i/o): acpi-tmr
      0000000000000620-000000000000062f (prio 0, i/o): acpi-gpe0
      0000000000000630-0000000000000637 (prio 0, i/o): acpi-smi
      0000000000000660-000000000000067f (prio 0, i/o): sm-tco
    0000000000000cc0-0000000000000cd7 (prio 0, i/o): acpi-pci-hotplug
    0000000000000cd8-0000000000000ce3 (prio 0, i/o): acpi-cpu-hotplug
    0000000000000cf8-0000000000000cfb (prio 0, i/o): pci-conf-idx
    0000000000000cf9-0000000000000cf9 (prio 1, i/o): lpc-reset-control
    0000000000000cfc-0000000000000cff (prio 0, i/o): pci-conf-data
    000000000000c040-000000000000c07f (prio 1, i/o): virtio-pci

memory-region: pc.ram
  0000000000000000-00000000ffffffff (prio 0, ram): pc.ram

memory-region: pc.bios
  00000000fffc0000-00000000ffffffff (prio 0, rom): pc.bios

memory-region: pci
  0000000000000000-ffffffffffffffff (prio -1, i/o): pci
    00000000000a0000-00000000000bffff (prio 1, i/o): vga-lowmem
    00000000000c0000-00000000000dffff (prio 1, rom): pc.rom
    00000000000e0000-00000000000fffff (prio 1, rom): alias isa-bios @pc.bios 0000000000020000-000000000003ffff
";

fn parse_ok(text: &str, origin: &str) -> AddressMap {
    let r = AddressMap::parse(text, origin);
    assert!(r.is_ok(), "{r:?}");
    r.unwrap_or_default()
}

fn q35() -> AddressMap {
    parse_ok(Q35, "q35.mtree")
}

#[test]
fn q35_io_ports() {
    let m = q35();
    assert_eq!(m.name_port(0xc050), Some("virtio-pci"));
    assert_eq!(m.name_port(0x608), Some("acpi-tmr"));
    assert_eq!(m.name_port(0x60b), Some("acpi-tmr"));
    // Inside ich9-pm but in no child: the container's name.
    assert_eq!(m.name_port(0x640), Some("ich9-pm"));
    assert_eq!(m.name_port(0x70), Some("rtc-index"));
    assert_eq!(m.name_port(0x71), Some("rtc"));
    assert_eq!(m.name_port(0xcf9), Some("lpc-reset-control"));
    assert_eq!(m.name_port(0xcf8), Some("pci-conf-idx"));
    assert_eq!(m.name_port(0xcfa), Some("pci-conf-idx"));
    assert_eq!(m.name_port(0x3fd), Some("serial"));
    // Unassigned ports are not named after the `io` root.
    assert_eq!(m.name_port(0x1234), None);
    assert_eq!(m.name_port(0x1_0000), None);
}

#[test]
fn q35_memory() {
    let m = q35();
    assert_eq!(m.name_addr(0x1000), Some("ram-below-4g"));
    assert_eq!(m.name_addr(0x1_2000_0000), Some("ram-above-4g"));
    assert_eq!(m.name_addr(0xfee0_00b0), Some("kvm-apic-msi"));
    assert_eq!(m.name_addr(0xfec0_0010), Some("kvm-ioapic"));
    assert_eq!(m.name_addr(0xfed0_00f0), Some("hpet"));
    assert_eq!(m.name_addr(0xb010_0000), Some("pcie-mmcfg-mmio"));
    assert_eq!(
        m.name_addr(0x8_0000_3004),
        Some("virtio-pci-notify-virtio-net")
    );
    assert_eq!(m.name_addr(0xfea0_0010), Some("msix-table"));
    assert_eq!(m.name_addr(0xfea0_0100), Some("virtio-net-pci-msix"));
    // The smram-region alias shows its target's subregion.
    assert_eq!(m.name_addr(0xa_1000), Some("vga-lowmem"));
    // The enabled PAM alias wins; the disabled one is ignored.
    assert_eq!(m.name_addr(0xc_1000), Some("pam-rom"));
    // Outside the PAM windows RAM (prio 0) beats everything in `pci` (prio -1).
    assert_eq!(m.name_addr(0xc_8000), Some("ram-below-4g"));
    // The PAM alias into `pci` shows pci's isa-bios alias.
    assert_eq!(m.name_addr(0xe_0000), Some("isa-bios"));
    assert_eq!(m.name_addr(0xf_fff0), Some("isa-bios"));
    assert_eq!(m.name_addr(0xffff_fff0), Some("pc.bios"));
    // PCI MMIO that no device claims.
    assert_eq!(m.name_addr(0xc000_0000), Some("pci"));
    assert_eq!(m.name_in("cpu-memory-0", 0x1000), Some("ram-below-4g"));
    let spaces: Vec<&str> = m.address_spaces().collect();
    assert_eq!(spaces, vec!["cpu-memory-0", "memory", "I/O"]);
    assert!(!m.is_empty());
    assert!(
        m.ranges("I/O")
            .any(|(s, e, n)| (s, e, n) == (0x608, 0x60b, "acpi-tmr"))
    );
}

#[test]
fn map_overrides_builtin_names() {
    let d = Decoder::with_map(q35());
    assert_eq!(d.port(0xc050).as_deref(), Some("virtio-pci"));
    assert_eq!(Decoder::builtin().port(0xc050), None);
    assert_eq!(d.port(0x608).as_deref(), Some("acpi-tmr: acpi-pm-timer"));
    assert_eq!(
        Decoder::builtin().port(0x608).as_deref(),
        Some("acpi-pm-timer")
    );
    // Not in the map: the built-in table still answers.
    assert_eq!(
        d.port(0x402).as_deref(),
        Some("debugcon (firmware debug port)")
    );
    assert_eq!(
        d.mmio(0xfee0_00b0).as_deref(),
        Some("kvm-apic-msi: lapic EOI (0xb0)")
    );
    assert!(d.mmio(0xfed4_0000).is_some_and(|n| n.starts_with("pci")));
    assert_eq!(d.msr(0x830).as_deref(), Some("X2APIC_ICR"));
}

#[test]
fn flat_view() {
    let text = "\
FlatView #0
 AS \"I/O\", root: io
 Root memory region: io
  0000000000000000-0000000000000007 (prio 0, i/o): dma-chan
  0000000000000008-000000000000001f (prio 0, i/o): io @0000000000000008
  0000000000000cc4-0000000000000cd7 (prio 0, i/o): acpi-pci-hotplug
  0000000000000cd8-0000000000000cf7 (prio 0, i/o): acpi-cpu-hotplug

FlatView #1
 AS \"memory\", root: system
 AS \"cpu-memory-0\", root: system
 Root memory region: system
  0000000000000000-000000000009ffff (prio 0, ram): pc.ram kvm
  00000000000c0000-00000000000dffff (prio 1, rom): pc.rom @0000000000000000 kvm
  00000000fee00000-00000000feefffff (prio 4096, i/o): kvm-apic-msi
  Dispatch
    Physical sections
      #0 @0000000000000000..ffffffffffffffff (noname) [unassigned]
    Nodes (9 bits per level, 6 levels) ptr=[3] skip=4
      [0]
          0       skip=3  ptr=[3]
";
    let m = parse_ok(text, "flat.txt");
    assert_eq!(m.name_port(0x3), Some("dma-chan"));
    assert_eq!(m.name_port(0x10), None);
    assert_eq!(m.name_port(0xcd8), Some("acpi-cpu-hotplug"));
    assert_eq!(m.name_addr(0xc_0010), Some("pc.rom"));
    assert_eq!(m.name_addr(0x9_ffff), Some("pc.ram"));
    assert_eq!(m.name_in("cpu-memory-0", 0xfee0_0000), Some("kvm-apic-msi"));
}

#[test]
fn quoted_wrapped_and_annotated() {
    let text = "\
> (qemu) info mtree -o
> address-space: memory
>   0000000000000000-ffffffffffffffff (prio 0, i/o): system
>     0000000000000000-000000001fffffff (prio 0, i/o): alias ram-below-4g
> @pc.ram 0000000000000000-000000001fffffff
>     0000000000100000-00000000001fffff (prio 1, i/o): tseg-blackhole [disabled]
>     00000000fed00000-00000000fed003ff (prio 0, i/o): hpet owner:{dev path=/machine/unattached/device[7]}
>
>  ----------------
>  | Q35 with PIT |
";
    let m = parse_ok(text, "mail.txt");
    assert_eq!(m.name_addr(0x10_0000), Some("ram-below-4g"));
    assert_eq!(m.name_addr(0xfed0_0000), Some("hpet"));
}

#[test]
fn errors_name_origin_and_line() {
    let text = "address-space: I/O\n  0000000000000000-000000000000ffff (prio 0, i/o): io\n    garbage here\n";
    let e = AddressMap::parse(text, "bad.mtree").err();
    let msg = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.starts_with("bad.mtree:3: expected an address range"),
        "{msg}"
    );
    assert!(msg.contains("`garbage here`"), "{msg}");

    let text = "address-space: I/O\n  0000-0010 prio 0: io\n";
    let msg = AddressMap::parse(text, "x")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        msg.starts_with("x:2: expected `(prio N, TYPE): NAME`"),
        "{msg}"
    );

    let text = "address-space: I/O\n  0000000000000010-0000000000000000 (prio 0, i/o): io\n";
    let e = AddressMap::parse(text, "x").err();
    assert!(
        matches!(e, Some(MtreeError::Inverted { line: 2, .. })),
        "{e:?}"
    );

    let text = "  0000000000000000-000000000000ffff (prio 0, i/o): io\n";
    let msg = AddressMap::parse(text, "y")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(msg.starts_with("y:1: expected a section header"), "{msg}");

    let e = AddressMap::parse("", "empty").err();
    assert_eq!(
        e,
        Some(MtreeError::Empty {
            origin: "empty".to_string()
        })
    );
    let long = format!("address-space: I/O\n{}\n", "x".repeat(300));
    let msg = AddressMap::parse(&long, "z")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(msg.ends_with("…`") && msg.len() < 250, "{msg}");
}

#[test]
fn large_dumps_stay_fast() {
    let mut text =
        String::from("address-space: I/O\n  0000000000000000-000000000000ffff (prio 0, i/o): io\n");
    for i in 0..5000u64 {
        text.push_str(&format!(
            "    {:016x}-{:016x} (prio 0, i/o): dev{i}\n",
            i * 8,
            i * 8 + 7
        ));
        text.push_str(&format!(
            "      {:016x}-{:016x} (prio 0, i/o): reg{i}\n",
            i * 8,
            i * 8
        ));
    }
    let m = parse_ok(&text, "big");
    assert_eq!(m.name_port(8 * 4321), Some("reg4321"));
    assert_eq!(m.name_port(8 * 4321 + 3), Some("dev4321"));
}

#[test]
fn alias_loops_and_deep_nesting_are_bounded() {
    let mut text = String::from(
        "address-space: memory\n  0000000000000000-ffffffffffffffff (prio 0, i/o): system\n",
    );
    text.push_str("    0000000000000000-0000000000000fff (prio 0, i/o): alias a @b 0000000000000000-0000000000000fff\n");
    text.push_str("memory-region: b\n  0000000000000000-0000000000000fff (prio 0, i/o): b\n");
    text.push_str("    0000000000000000-0000000000000fff (prio 0, i/o): alias c @b 0000000000000000-0000000000000fff\n");
    for i in 0..3000 {
        text.push_str(&" ".repeat(2 * i + 4));
        text.push_str("0000000000000000-0000000000000fff (prio 0, i/o): deep\n");
    }
    let m = AddressMap::parse(&text, "loop").ok();
    assert_eq!(m.as_ref().and_then(|m| m.name_addr(0x10)), Some("deep"));
}

#[test]
fn alias_fan_out_is_bounded() {
    let mut text = String::from(
        "address-space: memory\n  0000000000000000-ffffffffffffffff (prio 0, i/o): system\n",
    );
    let alias = |p: &str, i: usize| {
        format!(
            "{p}0000000000000000-0000000000000fff (prio {i}, i/o): alias a{i} @b 0000000000000000-0000000000000fff\n"
        )
    };
    for i in 0..300 {
        text.push_str(&alias("    ", i));
    }
    text.push_str("memory-region: b\n  0000000000000000-0000000000000fff (prio 0, i/o): b\n");
    for i in 0..300 {
        text.push_str(&alias("    ", i));
    }
    let start = std::time::Instant::now();
    let m = parse_ok(&text, "fan-out");
    assert!(m.name_addr(0x10).is_some());
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
}

proptest::proptest! {
    #[test]
    fn mtree_never_panics(s in "\\PC*") {
        let _ = AddressMap::parse(&s, "x");
    }

    #[test]
    fn mtree_lines_never_panic(lines in proptest::collection::vec(
        "( {0,8})([0-9a-f]{1,16})-([0-9a-f]{1,16}) \\(prio -?[0-9]{1,3}, (i/o|ram)\\): (alias )?[a-z@ .-]{0,12}( \\[disabled\\])?",
        0..40,
    )) {
        let text = format!("address-space: memory\n{}", lines.join("\n"));
        if let Ok(m) = AddressMap::parse(&text, "p") {
            let _ = m.name_addr(0x1000);
        }
    }
}
