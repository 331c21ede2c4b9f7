//! MMIO ranges of QEMU's PC machines: the local APIC and HPET by register, the IOAPIC, TPM,
//! q35's PCIe ECAM window (decoded to bus:device.function), the legacy VGA/option-ROM/BIOS
//! holes and the flash below 4 GiB. Device BARs are placed by firmware; an `info mtree` map
//! names those.

use super::ioport::Machine;

/// The xAPIC page (the default APIC base).
pub(crate) const LAPIC_BASE: u64 = 0xfee0_0000;
/// The IOAPIC QEMU maps for `pc` and `q35`.
pub(crate) const IOAPIC_BASE: u64 = 0xfec0_0000;
/// The HPET QEMU maps for `pc` and `q35`.
pub(crate) const HPET_BASE: u64 = 0xfed0_0000;
/// q35's PCIe ECAM (MMCONFIG) window: 256 buses, 256 MiB.
pub(crate) const Q35_ECAM_BASE: u64 = 0xb000_0000;
const Q35_ECAM_SIZE: u64 = 0x1000_0000;

/// Whether a guest-physical address is in the local APIC's register page.
pub(crate) fn is_lapic(gpa: u64) -> bool {
    (LAPIC_BASE..LAPIC_BASE + 0x1000).contains(&gpa)
}

/// Whether a guest-physical address is in the HPET's register block.
pub(crate) fn is_hpet(gpa: u64) -> bool {
    (HPET_BASE..HPET_BASE + 0x400).contains(&gpa)
}

/// Whether a guest-physical address is in the IOAPIC's page.
pub(crate) fn is_ioapic(gpa: u64) -> bool {
    (IOAPIC_BASE..IOAPIC_BASE + 0x1000).contains(&gpa)
}

/// The name of a well-known guest-physical address (either PC machine).
pub(crate) fn mmio_name(gpa: u64) -> Option<String> {
    mmio_name_for(gpa, None)
}

/// The name of a well-known guest-physical address on `machine` (`None`: either machine; the
/// q35-only ECAM window then says so).
pub(crate) fn mmio_name_for(gpa: u64, machine: Option<Machine>) -> Option<String> {
    if is_lapic(gpa) {
        return Some(lapic_name(gpa - LAPIC_BASE));
    }
    if is_ioapic(gpa) {
        return Some(ioapic_name(gpa - IOAPIC_BASE));
    }
    if is_hpet(gpa) {
        return Some(hpet_name(gpa - HPET_BASE));
    }
    if (Q35_ECAM_BASE..Q35_ECAM_BASE + Q35_ECAM_SIZE).contains(&gpa) {
        let tag = match machine {
            Some(Machine::Pc) => return None,
            Some(Machine::Q35) => "",
            None => " (q35)",
        };
        let off = gpa - Q35_ECAM_BASE;
        let (bus, dev, func, reg) = (off >> 20, (off >> 15) & 0x1f, (off >> 12) & 7, off & 0xfff);
        return Some(format!(
            "pcie-ecam{tag} {bus:02x}:{dev:02x}.{func} +{reg:#x}"
        ));
    }
    let fixed = match gpa {
        0xa_0000..=0xb_ffff => "vga-lowmem",
        0xc_0000..=0xd_ffff => "option-rom area",
        0xe_0000..=0xf_ffff => "isa-bios",
        0xfee0_1000..=0xfeef_ffff => "apic-msi (MSI write)",
        0xfed4_0000..=0xfed4_4fff => {
            return Some(format!("tpm locality {}", (gpa - 0xfed4_0000) >> 12));
        }
        0xfed1_c000..=0xfed1_ffff => match machine {
            Some(Machine::Pc) => return None,
            Some(Machine::Q35) => "lpc-rcrb",
            None => "lpc-rcrb (q35)",
        },
        0xffc0_0000..=0xffff_ffff => "bios flash",
        _ => return None,
    };
    Some(fixed.to_string())
}

/// A local APIC register by offset in the APIC page: `lapic EOI (0xb0)`, `lapic +0x3f0`.
fn lapic_name(off: u64) -> String {
    let reg = off & !0xf;
    let name = match reg {
        0x020 => "ID".to_string(),
        0x030 => "version".to_string(),
        0x080 => "TPR".to_string(),
        0x090 => "APR".to_string(),
        0x0a0 => "PPR".to_string(),
        0x0b0 => "EOI".to_string(),
        0x0c0 => "RRD".to_string(),
        0x0d0 => "LDR".to_string(),
        0x0e0 => "DFR".to_string(),
        0x0f0 => "SVR".to_string(),
        0x100..=0x170 => format!("ISR{}", (reg - 0x100) >> 4),
        0x180..=0x1f0 => format!("TMR{}", (reg - 0x180) >> 4),
        0x200..=0x270 => format!("IRR{}", (reg - 0x200) >> 4),
        0x280 => "ESR".to_string(),
        0x2f0 => "LVT CMCI".to_string(),
        0x300 => "ICR low".to_string(),
        0x310 => "ICR high".to_string(),
        0x320 => "LVT timer".to_string(),
        0x330 => "LVT thermal".to_string(),
        0x340 => "LVT PMI".to_string(),
        0x350 => "LVT LINT0".to_string(),
        0x360 => "LVT LINT1".to_string(),
        0x370 => "LVT error".to_string(),
        0x380 => "TMICT".to_string(),
        0x390 => "TMCCT".to_string(),
        0x3e0 => "TDCR".to_string(),
        _ => return format!("lapic +{off:#x}"),
    };
    format!("lapic {name} ({reg:#x})")
}

/// An IOAPIC register by offset: `ioapic IOREGSEL (0x0)`.
fn ioapic_name(off: u64) -> String {
    let name = match off & !0xf {
        0x00 => "IOREGSEL",
        0x10 => "IOWIN",
        0x40 => "EOI",
        _ => return format!("ioapic +{off:#x}"),
    };
    format!("ioapic {name} ({:#x})", off & !0xf)
}

/// An HPET register by offset: `hpet main counter (0xf0)`, `hpet timer1 comparator (0x128)`.
fn hpet_name(off: u64) -> String {
    let reg = off & !7;
    let half = if off & 4 != 0 { " high" } else { "" };
    let name = match reg {
        0x000 => "capabilities".to_string(),
        0x010 => "config".to_string(),
        0x020 => "ISR".to_string(),
        0x0f0 => "main counter".to_string(),
        0x100..=0x3ff => {
            let n = (reg - 0x100) / 0x20;
            let what = match (reg - 0x100) % 0x20 {
                0x00 => "config",
                0x08 => "comparator",
                0x10 => "FSB route",
                _ => return format!("hpet +{off:#x}"),
            };
            format!("timer{n} {what}")
        }
        _ => return format!("hpet +{off:#x}"),
    };
    format!("hpet {name}{half} ({reg:#x})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(a: u64) -> Option<String> {
        mmio_name(a)
    }

    #[test]
    fn lapic_by_register() {
        assert_eq!(n(0xfee0_00b0).as_deref(), Some("lapic EOI (0xb0)"));
        assert_eq!(n(0xfee0_0300).as_deref(), Some("lapic ICR low (0x300)"));
        assert_eq!(n(0xfee0_0310).as_deref(), Some("lapic ICR high (0x310)"));
        assert_eq!(n(0xfee0_0080).as_deref(), Some("lapic TPR (0x80)"));
        assert_eq!(n(0xfee0_0380).as_deref(), Some("lapic TMICT (0x380)"));
        assert_eq!(n(0xfee0_0390).as_deref(), Some("lapic TMCCT (0x390)"));
        assert_eq!(n(0xfee0_03e0).as_deref(), Some("lapic TDCR (0x3e0)"));
        assert_eq!(n(0xfee0_0320).as_deref(), Some("lapic LVT timer (0x320)"));
        assert_eq!(n(0xfee0_0130).as_deref(), Some("lapic ISR3 (0x130)"));
        assert_eq!(n(0xfee0_0204).as_deref(), Some("lapic IRR0 (0x200)"));
        assert_eq!(n(0xfee0_03f0).as_deref(), Some("lapic +0x3f0"));
        assert_eq!(n(0xfee0_0ffc).as_deref(), Some("lapic +0xffc"));
        assert!(is_lapic(0xfee0_0000) && is_lapic(0xfee0_0fff) && !is_lapic(0xfee0_1000));
        assert_eq!(n(0xfee0_1000).as_deref(), Some("apic-msi (MSI write)"));
    }

    #[test]
    fn ioapic_and_hpet() {
        assert_eq!(n(0xfec0_0000).as_deref(), Some("ioapic IOREGSEL (0x0)"));
        assert_eq!(n(0xfec0_0010).as_deref(), Some("ioapic IOWIN (0x10)"));
        assert_eq!(n(0xfec0_0040).as_deref(), Some("ioapic EOI (0x40)"));
        assert_eq!(n(0xfec0_0020).as_deref(), Some("ioapic +0x20"));
        assert!(is_ioapic(0xfec0_0010));
        assert_eq!(n(0xfed0_0000).as_deref(), Some("hpet capabilities (0x0)"));
        assert_eq!(n(0xfed0_0010).as_deref(), Some("hpet config (0x10)"));
        assert_eq!(n(0xfed0_0020).as_deref(), Some("hpet ISR (0x20)"));
        assert_eq!(n(0xfed0_00f0).as_deref(), Some("hpet main counter (0xf0)"));
        assert_eq!(
            n(0xfed0_00f4).as_deref(),
            Some("hpet main counter high (0xf0)")
        );
        assert_eq!(
            n(0xfed0_0100).as_deref(),
            Some("hpet timer0 config (0x100)")
        );
        assert_eq!(
            n(0xfed0_0128).as_deref(),
            Some("hpet timer1 comparator (0x128)")
        );
        assert_eq!(n(0xfed0_0050).as_deref(), Some("hpet +0x50"));
        assert!(is_hpet(0xfed0_03ff) && !is_hpet(0xfed0_0400));
    }

    #[test]
    fn other_ranges() {
        assert_eq!(
            n(0xb000_0000).as_deref(),
            Some("pcie-ecam (q35) 00:00.0 +0x0")
        );
        assert_eq!(
            mmio_name_for(0xb00f_a040, Some(Machine::Q35)).as_deref(),
            Some("pcie-ecam 00:1f.2 +0x40")
        );
        assert_eq!(mmio_name_for(0xb000_0000, Some(Machine::Pc)), None);
        assert_eq!(n(0xa_0000).as_deref(), Some("vga-lowmem"));
        assert_eq!(n(0xe_1000).as_deref(), Some("isa-bios"));
        assert_eq!(n(0xfed4_0000).as_deref(), Some("tpm locality 0"));
        assert_eq!(n(0xfed4_2018).as_deref(), Some("tpm locality 2"));
        assert_eq!(n(0xffff_fff0).as_deref(), Some("bios flash"));
        assert_eq!(n(0x1000), None);
        assert_eq!(n(u64::MAX), None);
    }
}
