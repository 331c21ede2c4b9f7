//! The VMM side of the lab's guests: the few devices a VMM would emulate in userspace for the
//! exits the lab provokes, answered the way a VMM answers them.
//!
//! - the ACPI PM timer at port [`PM_TIMER_PORT`]: a 24-bit counter at 3.579545 MHz derived
//!   from host time;
//! - a 16550 UART at [`UART_BASE`]: the line-status register says the transmitter is empty;
//! - an HPET-like register block at [`HPET_BASE`]: capabilities, a main counter at 100 MHz
//!   derived from host time, and writable registers (comparators, configuration);
//! - an xAPIC page at [`APIC_BASE`] for a VMM without an in-kernel irqchip: version register,
//!   EOI and the other registers stored;
//! - an interrupt source at port [`IRQ_PORT`]: a write asks for vector [`IRQ_VECTOR`], which
//!   the run loop injects with KVM_INTERRUPT (VMs without an in-kernel irqchip);
//! - MSRs KVM sends to userspace read [`USER_MSR_VALUE`]; hypercalls return 0; every other
//!   read gives [`OTHER_READ`] bytes.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::microvm::Devices;

/// The ACPI PM timer port (QEMU's PIIX4/ICH9 PM base 0x600 + 8).
pub(crate) const PM_TIMER_PORT: u16 = 0x608;
/// COM1.
pub(crate) const UART_BASE: u16 = 0x3f8;
/// The HPET's MMIO base.
pub(crate) const HPET_BASE: u64 = 0xfed0_0000;
/// The xAPIC page.
pub(crate) const APIC_BASE: u64 = 0xfee0_0000;
/// What an MSR read that reached userspace returns.
pub(crate) const USER_MSR_VALUE: u64 = 0x1234;
/// The byte every other read returns.
pub(crate) const OTHER_READ: u8 = 0x5a;
/// A write here asks the VMM to inject [`IRQ_VECTOR`].
pub(crate) const IRQ_PORT: u16 = 0x520;
/// The vector the lab's interrupt tests use (the IO path's).
pub(crate) const IRQ_VECTOR: u8 = super::io_path::guest::VECTOR;

const HPET_LEN: u64 = 0x400;
const APIC_LEN: u64 = 0x1000;
/// The HPET period in femtoseconds (10 ns: a 100 MHz counter).
const HPET_PERIOD_FS: u64 = 10_000_000;

/// The lab's device models. HLT never ends a run (guests end by writing the done port).
#[derive(Debug)]
pub(crate) struct LabDevices {
    start: Instant,
    hpet: BTreeMap<u64, u64>,
    apic: BTreeMap<u64, u32>,
    /// EOIs written to the userspace APIC page.
    pub eois: u64,
    /// Bytes the guest wrote to the UART data register.
    pub uart_bytes: u64,
    /// An interrupt asked for at [`IRQ_PORT`] and not injected yet.
    irq_pending: bool,
}

impl Default for LabDevices {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            hpet: BTreeMap::new(),
            apic: BTreeMap::new(),
            eois: 0,
            uart_bytes: 0,
            irq_pending: false,
        }
    }
}

fn put(data: &mut [u8], value: u64) {
    let bytes = value.to_le_bytes();
    for (d, b) in data
        .iter_mut()
        .zip(bytes.iter().chain(std::iter::repeat(&0)))
    {
        *d = *b;
    }
}

fn get(data: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = data.len().min(8);
    b[..n].copy_from_slice(&data[..n]);
    u64::from_le_bytes(b)
}

impl LabDevices {
    fn ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The PM timer's 24-bit count now.
    pub(crate) fn pm_timer(&self) -> u32 {
        ((u128::from(self.ns()) * 3_579_545 / 1_000_000_000) & 0xff_ffff) as u32
    }

    fn hpet_read(&self, offset: u64) -> u64 {
        match offset & !7 {
            // capabilities: 64-bit counter, 3 timers, vendor 0x8086, period in fs
            0x000 => HPET_PERIOD_FS << 32 | 0x8086 << 16 | 1 << 13 | 2 << 8 | 1,
            0x0f0 => self.ns() / 10,
            reg => self.hpet.get(&reg).copied().unwrap_or(0),
        }
    }
}

impl Devices for LabDevices {
    fn pio_in(&mut self, port: u16, data: &mut [u8]) {
        match port {
            PM_TIMER_PORT => put(data, u64::from(self.pm_timer())),
            p if p == UART_BASE + 5 => put(data, 0x60), // LSR: THRE | TEMT
            _ => data.fill(OTHER_READ),
        }
    }

    fn pio_out(&mut self, port: u16, data: &[u8]) {
        if port == UART_BASE {
            self.uart_bytes += data.len() as u64;
        } else if port == IRQ_PORT {
            self.irq_pending = true;
        }
    }

    fn mmio_read(&mut self, gpa: u64, data: &mut [u8]) {
        if (HPET_BASE..HPET_BASE + HPET_LEN).contains(&gpa) {
            let off = gpa - HPET_BASE;
            let value = self.hpet_read(off) >> ((off & 7) * 8);
            put(data, value);
        } else if (APIC_BASE..APIC_BASE + APIC_LEN).contains(&gpa) {
            let value = match gpa - APIC_BASE {
                0x30 => 0x5_0014, // version: 0x14, max LVT 5
                reg => self.apic.get(&reg).copied().unwrap_or(0),
            };
            put(data, u64::from(value));
        } else {
            data.fill(OTHER_READ);
        }
    }

    fn mmio_write(&mut self, gpa: u64, data: &[u8]) {
        if (HPET_BASE..HPET_BASE + HPET_LEN).contains(&gpa) {
            self.hpet.insert((gpa - HPET_BASE) & !7, get(data));
        } else if (APIC_BASE..APIC_BASE + APIC_LEN).contains(&gpa) {
            let reg = gpa - APIC_BASE;
            if reg == 0xb0 {
                self.eois += 1;
            }
            self.apic.insert(reg, get(data) as u32);
        }
    }

    fn rdmsr(&mut self, _index: u32) -> Option<u64> {
        Some(USER_MSR_VALUE)
    }

    fn halt_ends_run(&self) -> bool {
        false
    }

    fn pending_interrupt(&self) -> Option<u8> {
        self.irq_pending.then_some(IRQ_VECTOR)
    }

    fn interrupt_injected(&mut self) {
        self.irq_pending = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_answer_like_a_vmm() {
        let mut d = LabDevices::default();
        let mut b = [0u8; 4];
        d.pio_in(PM_TIMER_PORT, &mut b);
        assert_eq!(b[3], 0, "24-bit counter");
        let mut lsr = [0u8; 1];
        d.pio_in(UART_BASE + 5, &mut lsr);
        assert_eq!(lsr[0] & 0x20, 0x20, "transmitter empty");
        let mut caps = [0u8; 8];
        d.mmio_read(HPET_BASE + 4, &mut caps[..4]);
        assert_eq!(get(&caps[..4]), HPET_PERIOD_FS);
        d.mmio_write(HPET_BASE + 0x108, &7u32.to_le_bytes());
        let mut cmp = [0u8; 4];
        d.mmio_read(HPET_BASE + 0x108, &mut cmp);
        assert_eq!(get(&cmp), 7);
        d.mmio_write(APIC_BASE + 0xb0, &[0; 4]);
        assert_eq!(d.eois, 1);
        let mut ver = [0u8; 4];
        d.mmio_read(APIC_BASE + 0x30, &mut ver);
        assert_eq!(get(&ver), 0x5_0014);
        assert!(!d.halt_ends_run());
    }
}
