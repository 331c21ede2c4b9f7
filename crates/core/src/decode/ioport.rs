//! IO ports of QEMU's PC machines (`pc` = i440fx/PIIX, `q35` = ICH9): legacy ISA devices by
//! register, the ACPI PM blocks where QEMU's firmware puts them, fw_cfg, PCI config ports and
//! QEMU's debug ports. Ports that PCI firmware assigns (device BARs) are not here: an
//! `info mtree` map names those.

/// Which QEMU PC machine a guest runs on, where port assignments differ. No input names its
/// machine to the decoders yet (they are called with `None`, both machines' names); the
/// machine-specific answers are checked by the tests below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Machine {
    /// `pc` / i440fx with PIIX3/PIIX4. The firmware places the ACPI PM block: SeaBIOS at
    /// 0x600 (as on q35; seen in QEMU 7.2's `info mtree`, testdata/mtree/pc-info-mtree.txt),
    /// OVMF (UEFI, e.g. Windows 11 guests) at 0xb000.
    Pc,
    /// `q35` with ICH9: ACPI PM block at 0x600 whatever the firmware.
    Q35,
}

/// The name of a well-known port, on either machine (ports that only one machine or firmware
/// uses say which in parentheses: `acpi-pm-timer (pc with OVMF)`).
pub(crate) fn port_name(port: u16) -> Option<String> {
    port_name_for(port, None)
}

/// The name of a well-known port on `machine` (`None`: either machine).
pub(crate) fn port_name_for(port: u16, machine: Option<Machine>) -> Option<String> {
    if let Some(n) = machine_port(port, machine) {
        return Some(n);
    }
    common_port(port)
}

/// Whether a port is an ACPI PM timer (0x608–0x60b: q35, and pc with SeaBIOS; 0xb008–0xb00b:
/// pc with OVMF).
pub(crate) fn is_acpi_pm_timer(port: u16) -> bool {
    matches!(port, 0x608..=0x60b | 0xb008..=0xb00b)
}

/// Whether a port is the CMOS RTC (index 0x70, data 0x71).
pub(crate) fn is_rtc(port: u16) -> bool {
    matches!(port, 0x70 | 0x71)
}

/// Whether a port belongs to one of the four ISA serial ports.
pub(crate) fn is_serial(port: u16) -> bool {
    serial_index(port).is_some()
}

/// Whether a port is the i8254 PIT (0x40–0x43).
pub(crate) fn is_pit(port: u16) -> bool {
    matches!(port, 0x40..=0x43)
}

/// Where a chipset port lives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    /// The 0x600 PM block: q35 always, pc with SeaBIOS.
    Pm600,
    /// q35 only.
    Q35,
    /// pc with OVMF (PIIX4 PM base 0xb000) and pc's fixed hotplug/GPE ports.
    Pc,
}

/// The ACPI, SMBus and hotplug ports that depend on the chipset or firmware.
fn machine_port(port: u16, machine: Option<Machine>) -> Option<String> {
    let (block, name): (Block, &str) = match port {
        0x600..=0x601 => (Block::Pm600, "acpi-pm1-evt (status)"),
        0x602..=0x603 => (Block::Pm600, "acpi-pm1-evt (enable)"),
        0x604..=0x605 => (Block::Pm600, "acpi-pm1-cnt"),
        0x608..=0x60b => (Block::Pm600, "acpi-pm-timer"),
        0x620..=0x62f => (Block::Q35, "acpi-gpe0"),
        0x630..=0x633 => (Block::Q35, "acpi-smi-en"),
        0x634..=0x637 => (Block::Q35, "acpi-smi-sts"),
        0x660..=0x67f => (Block::Q35, "ich9-tco"),
        0x700..=0x73f => (Block::Pm600, "pm-smbus"),
        0xcc0..=0xcd7 => (Block::Q35, "acpi-pci-hotplug"),
        0xcd8..=0xcf7 => (Block::Q35, "acpi-cpu-hotplug"),
        0xb000..=0xb001 => (Block::Pc, "acpi-pm1-evt (status)"),
        0xb002..=0xb003 => (Block::Pc, "acpi-pm1-evt (enable)"),
        0xb004..=0xb005 => (Block::Pc, "acpi-pm1-cnt"),
        0xb008..=0xb00b => (Block::Pc, "acpi-pm-timer"),
        0xafe0..=0xafe3 => (Block::Pc, "acpi-gpe0"),
        0xae00..=0xae17 => (Block::Pc, "acpi-pci-hotplug"),
        0xaf00..=0xaf1f => (Block::Pc, "acpi-cpu-hotplug"),
        0xb100..=0xb13f => (Block::Pc, "pm-smbus"),
        _ => return None,
    };
    let firmware_pm = (0xb000..=0xb03f).contains(&port) || (0xb100..=0xb13f).contains(&port);
    match (machine, block) {
        (_, Block::Pm600) | (Some(Machine::Q35), Block::Q35) | (Some(Machine::Pc), Block::Pc) => {
            Some(name.to_string())
        }
        (Some(_), _) => None,
        (None, Block::Q35) => Some(format!("{name} (q35)")),
        (None, Block::Pc) if firmware_pm => Some(format!("{name} (pc with OVMF)")),
        (None, Block::Pc) => Some(format!("{name} (pc)")),
    }
}

/// Ports that are the same on both machines.
fn common_port(port: u16) -> Option<String> {
    if let Some(n) = serial_name(port) {
        return Some(n);
    }
    if let Some(n) = ide_name(port) {
        return Some(n);
    }
    let fixed = match port {
        0x00..=0x07 => {
            let what = if port.is_multiple_of(2) {
                "address"
            } else {
                "count"
            };
            return Some(format!("dma1 chan{} {what}", port / 2));
        }
        0x08 => "dma1 status/command",
        0x09 => "dma1 request",
        0x0a => "dma1 single mask",
        0x0b => "dma1 mode",
        0x0c => "dma1 clear flip-flop",
        0x0d => "dma1 master clear",
        0x0e => "dma1 clear mask",
        0x0f => "dma1 write mask",
        0x20 => "pic-master command",
        0x21 => "pic-master data (IMR)",
        0x40 => "pit counter0",
        0x41 => "pit counter1",
        0x42 => "pit counter2 (speaker)",
        0x43 => "pit mode/command",
        0x60 => "i8042 data",
        0x61 => "port-b (speaker, NMI status)",
        0x64 => "i8042 command/status",
        0x70 => "rtc-index",
        0x71 => "rtc-data",
        0x7e..=0x7f => "kvmvapic",
        0x80 => "post-code (io delay)",
        0x81..=0x8f => "dma-page",
        0x92 => "port92 (fast A20, reset)",
        0xa0 => "pic-slave command",
        0xa1 => "pic-slave data (IMR)",
        0xb2 => "apm-cnt (SMI command)",
        0xb3 => "apm-sts",
        0xc0..=0xcf => {
            let chan = 4 + (port - 0xc0) / 4;
            let what = if (port - 0xc0) % 4 < 2 {
                "address"
            } else {
                "count"
            };
            return Some(format!("dma2 chan{chan} {what}"));
        }
        0xd0..=0xdf => "dma2 control",
        0xe9 => "debugcon (0xe9)",
        0xf0 => "ioportF0 (FPU error)",
        0x1ce => "vbe-index",
        0x1cf..=0x1d0 => "vbe-data",
        0x278..=0x27f => return Some(parallel_name(1, port - 0x278)),
        0x378..=0x37f => return Some(parallel_name(0, port - 0x378)),
        0x3b0..=0x3df => return Some(vga_name(port)),
        0x3f0 => "fdc status A",
        0x3f1 => "fdc status B",
        0x3f2 => "fdc DOR (digital output)",
        0x3f3 => "fdc tape drive",
        0x3f4 => "fdc MSR/DSR (main status)",
        0x3f5 => "fdc data FIFO",
        0x3f7 => "fdc DIR/CCR",
        0x402 => "debugcon (firmware debug port)",
        0x4d0 => "elcr master",
        0x4d1 => "elcr slave",
        0x501..=0x502 => "isa-debug-exit",
        0x505 => "pvpanic",
        0x510 => "fw_cfg selector",
        0x511 => "fw_cfg data",
        0x514..=0x51b => "fw_cfg dma",
        0xa00..=0xa17 => "acpi-mem-hotplug",
        0xcf8 | 0xcfa | 0xcfb => "pci-config-address",
        0xcf9 => "reset-control (0xcf9)",
        0xcfc..=0xcff => "pci-config-data",
        0x5658 => "vmport",
        _ => return None,
    };
    Some(fixed.to_string())
}

/// Which ISA serial port (0–3, as QEMU numbers them) a port belongs to, and its offset.
fn serial_index(port: u16) -> Option<(u16, u16)> {
    let (idx, base) = match port {
        0x3f8..=0x3ff => (0, 0x3f8),
        0x2f8..=0x2ff => (1, 0x2f8),
        0x3e8..=0x3ef => (2, 0x3e8),
        0x2e8..=0x2ef => (3, 0x2e8),
        _ => return None,
    };
    Some((idx, port - base))
}

fn serial_name(port: u16) -> Option<String> {
    let (idx, off) = serial_index(port)?;
    let reg = match off {
        0 => "THR/RBR (data)",
        1 => "IER (interrupt enable)",
        2 => "IIR/FCR (interrupt id, FIFO control)",
        3 => "LCR (line control)",
        4 => "MCR (modem control)",
        5 => "LSR (line status)",
        6 => "MSR (modem status)",
        _ => "SCR (scratch)",
    };
    Some(format!("serial{idx} {reg}"))
}

fn ide_name(port: u16) -> Option<String> {
    let (idx, off) = match port {
        0x1f0..=0x1f7 => (0, port - 0x1f0),
        0x170..=0x177 => (1, port - 0x170),
        0x3f6 => return Some("ide0 alt-status/device-control".to_string()),
        0x376 => return Some("ide1 alt-status/device-control".to_string()),
        _ => return None,
    };
    let reg = match off {
        0 => "data",
        1 => "error/features",
        2 => "sector count",
        3 => "lba low",
        4 => "lba mid",
        5 => "lba high",
        6 => "drive/head",
        _ => "status/command",
    };
    Some(format!("ide{idx} {reg}"))
}

fn parallel_name(idx: u16, off: u16) -> String {
    let reg = match off {
        0 => "data",
        1 => "status",
        2 => "control",
        _ => "EPP/ECP",
    };
    format!("parallel{idx} {reg}")
}

fn vga_name(port: u16) -> String {
    let reg = match port {
        0x3b4 | 0x3d4 => "CRTC index",
        0x3b5 | 0x3d5 => "CRTC data",
        0x3ba | 0x3da => "input status 1",
        0x3c0 => "attribute index/data",
        0x3c1 => "attribute data (read)",
        0x3c2 => "misc output (write)",
        0x3c4 => "sequencer index",
        0x3c5 => "sequencer data",
        0x3c6 => "DAC mask",
        0x3c7 => "DAC read index",
        0x3c8 => "DAC write index",
        0x3c9 => "DAC data",
        0x3ca => "feature control (read)",
        0x3cc => "misc output (read)",
        0x3ce => "graphics index",
        0x3cf => "graphics data",
        _ => return "vga".to_string(),
    };
    format!("vga {reg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(p: u16) -> Option<String> {
        port_name(p)
    }

    #[test]
    fn legacy_devices() {
        assert_eq!(n(0x20).as_deref(), Some("pic-master command"));
        assert_eq!(n(0xa1).as_deref(), Some("pic-slave data (IMR)"));
        assert_eq!(n(0x40).as_deref(), Some("pit counter0"));
        assert_eq!(n(0x43).as_deref(), Some("pit mode/command"));
        assert_eq!(n(0x60).as_deref(), Some("i8042 data"));
        assert_eq!(n(0x64).as_deref(), Some("i8042 command/status"));
        assert_eq!(n(0x61).as_deref(), Some("port-b (speaker, NMI status)"));
        assert_eq!(n(0x70).as_deref(), Some("rtc-index"));
        assert_eq!(n(0x71).as_deref(), Some("rtc-data"));
        assert_eq!(n(0x80).as_deref(), Some("post-code (io delay)"));
        assert_eq!(n(0x03).as_deref(), Some("dma1 chan1 count"));
        assert_eq!(n(0xc4).as_deref(), Some("dma2 chan5 address"));
        assert_eq!(n(0x4d0).as_deref(), Some("elcr master"));
        assert_eq!(n(0xb2).as_deref(), Some("apm-cnt (SMI command)"));
    }

    #[test]
    fn serial_by_register() {
        assert_eq!(n(0x3f8).as_deref(), Some("serial0 THR/RBR (data)"));
        assert_eq!(n(0x3f9).as_deref(), Some("serial0 IER (interrupt enable)"));
        assert_eq!(n(0x3fd).as_deref(), Some("serial0 LSR (line status)"));
        assert_eq!(n(0x3ff).as_deref(), Some("serial0 SCR (scratch)"));
        assert_eq!(n(0x2fd).as_deref(), Some("serial1 LSR (line status)"));
        assert_eq!(n(0x3e8).as_deref(), Some("serial2 THR/RBR (data)"));
        assert_eq!(n(0x2ee).as_deref(), Some("serial3 MSR (modem status)"));
        assert!(is_serial(0x3fd) && is_serial(0x2e8) && !is_serial(0x3f7));
    }

    #[test]
    fn storage_video_firmware() {
        assert_eq!(n(0x1f7).as_deref(), Some("ide0 status/command"));
        assert_eq!(n(0x3f6).as_deref(), Some("ide0 alt-status/device-control"));
        assert_eq!(n(0x170).as_deref(), Some("ide1 data"));
        assert_eq!(n(0x3f5).as_deref(), Some("fdc data FIFO"));
        assert_eq!(n(0x378).as_deref(), Some("parallel0 data"));
        assert_eq!(n(0x3d4).as_deref(), Some("vga CRTC index"));
        assert_eq!(n(0x3b0).as_deref(), Some("vga"));
        assert_eq!(n(0x510).as_deref(), Some("fw_cfg selector"));
        assert_eq!(n(0x511).as_deref(), Some("fw_cfg data"));
        assert_eq!(n(0x514).as_deref(), Some("fw_cfg dma"));
        assert_eq!(n(0x402).as_deref(), Some("debugcon (firmware debug port)"));
        assert_eq!(n(0x501).as_deref(), Some("isa-debug-exit"));
        assert_eq!(n(0x505).as_deref(), Some("pvpanic"));
        assert_eq!(n(0x5658).as_deref(), Some("vmport"));
        assert_eq!(n(0xcf8).as_deref(), Some("pci-config-address"));
        assert_eq!(n(0xcf9).as_deref(), Some("reset-control (0xcf9)"));
        assert_eq!(n(0xcfe).as_deref(), Some("pci-config-data"));
    }

    #[test]
    fn acpi_depends_on_machine_and_firmware() {
        // As QEMU 7.2 + SeaBIOS lays them out (testdata/mtree/*-info-mtree.txt).
        assert_eq!(n(0x608).as_deref(), Some("acpi-pm-timer"));
        assert_eq!(n(0x604).as_deref(), Some("acpi-pm1-cnt"));
        assert_eq!(n(0x700).as_deref(), Some("pm-smbus"));
        assert_eq!(n(0xb008).as_deref(), Some("acpi-pm-timer (pc with OVMF)"));
        assert_eq!(n(0xae00).as_deref(), Some("acpi-pci-hotplug (pc)"));
        assert_eq!(n(0xcd8).as_deref(), Some("acpi-cpu-hotplug (q35)"));
        for m in [Machine::Q35, Machine::Pc] {
            assert_eq!(
                port_name_for(0x608, Some(m)).as_deref(),
                Some("acpi-pm-timer")
            );
        }
        assert_eq!(port_name_for(0xb008, Some(Machine::Q35)), None);
        assert_eq!(
            port_name_for(0xb008, Some(Machine::Pc)).as_deref(),
            Some("acpi-pm-timer")
        );
        assert_eq!(port_name_for(0x620, Some(Machine::Pc)), None);
    }

    #[test]
    fn unknown_ports() {
        assert_eq!(n(0xc050), None);
        assert_eq!(n(0x1234), None);
        assert_eq!(n(0xffff), None);
    }
}
