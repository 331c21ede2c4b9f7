//! The IO-path guest (64-bit ring 0): a driver that submits `qd` requests by bumping the
//! submission tail in its ring page, notifies the device with one port write, and waits until
//! the completion tail catches up — halting until an interrupt (modes with interrupts) or
//! spinning on the tail (polling). Its interrupt handler (vector [`VECTOR`]) counts the
//! interrupt and acknowledges it with an EOI to the xAPIC page or the x2APIC EOI MSR.
//!
//! ```text
//! setup:  rbx = ring page; IDT gate VECTOR → handler; [LAPIC SVR = 0x1ff]; sti
//! body:   sq += qd; out NOTIFY_PORT
//! wait:   cli; if cq == sq goto ok; sti; hlt; jmp wait      (interrupts)
//!         if cq == sq goto ok; pause; jmp wait              (polling)
//! ok:     sti
//! handler: push; irqs += 1; EOI; pop; iretq
//! ```

use iced_x86::code_asm::{dword_ptr, dx, eax, ecx, edx, rax, rcx, rdx, word_ptr};
use virtlens_core::measure::Mode;

use crate::lab::asm::{Prog, looped};
use crate::microvm::Error;
use crate::microvm::layout::{DATA_PAGE, IDT_ADDR};

/// The interrupt vector completions arrive on.
pub const VECTOR: u8 = 0x40;
/// The port the driver notifies the device on.
pub const NOTIFY_PORT: u16 = 0xc060;
/// The ring page: submission tail, completion tail, interrupts the handler saw.
pub const RING: u64 = DATA_PAGE + 0x100;
pub const SQ_TAIL: i32 = 0;
pub const CQ_TAIL: i32 = 4;
pub const IRQS: i32 = 8;
/// The xAPIC page and its registers.
pub const APIC_BASE: u64 = 0xfee0_0000;
const APIC_EOI: u64 = APIC_BASE + 0xb0;
const APIC_SVR: u64 = APIC_BASE + 0xf0;
/// The x2APIC EOI MSR.
const X2APIC_EOI: u32 = 0x80b;

/// How the driver learns of completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Halt until an interrupt; the handler EOIs through the xAPIC page.
    InterruptXapic,
    /// Halt until an interrupt; the handler EOIs through the x2APIC MSR.
    InterruptX2apic,
    /// Spin on the completion tail.
    Poll,
}

/// The driver for queue depth `qd`; `enable_apic` sets the in-kernel LAPIC's SVR.
pub fn program(qd: u32, wait: Wait, enable_apic: bool) -> Result<Vec<u8>, Error> {
    let setup = |p: &mut Prog| -> Result<(), Error> {
        p.point_at(RING)?;
        let mut handler = p.a.create_label();
        let mut over = p.a.create_label();
        // IDT gate: offset 0..15, selector 8, present 64-bit interrupt gate, offset 16..63.
        let gate = IDT_ADDR + u64::from(VECTOR) * 16;
        p.a.lea(rax, iced_x86::code_asm::ptr(handler))?;
        p.a.mov(rcx, gate)?;
        p.a.mov(word_ptr(rcx), iced_x86::code_asm::ax)?;
        p.a.mov(word_ptr(rcx + 2), 8u32)?;
        p.a.mov(word_ptr(rcx + 4), 0x8e00u32)?;
        p.a.shr(rax, 16)?;
        p.a.mov(word_ptr(rcx + 6), iced_x86::code_asm::ax)?;
        p.a.shr(rax, 16)?;
        p.a.mov(dword_ptr(rcx + 8), eax)?;
        p.a.mov(dword_ptr(rcx + 12), 0u32)?;
        if enable_apic {
            p.a.mov(rax, APIC_SVR)?;
            p.a.mov(dword_ptr(rax), 0x1ffu32)?;
        }
        p.a.sti()?;
        p.a.jmp(over)?;
        p.a.set_label(&mut handler)?;
        p.a.push(rax)?;
        p.a.push(rcx)?;
        p.a.push(rdx)?;
        p.a.add(p.dword(IRQS), 1u32)?;
        match wait {
            Wait::InterruptX2apic => {
                p.a.mov(ecx, X2APIC_EOI)?;
                p.a.xor(eax, eax)?;
                p.a.xor(edx, edx)?;
                p.a.wrmsr()?;
            }
            _ => {
                p.a.mov(rax, APIC_EOI)?;
                p.a.mov(dword_ptr(rax), 0u32)?;
            }
        }
        p.a.pop(rdx)?;
        p.a.pop(rcx)?;
        p.a.pop(rax)?;
        p.a.iretq()?;
        p.a.set_label(&mut over)?;
        Ok(())
    };
    let body = |p: &mut Prog| -> Result<(), Error> {
        let mut wait_top = p.a.create_label();
        let mut ok = p.a.create_label();
        p.a.mov(eax, p.dword(SQ_TAIL))?;
        p.a.add(eax, qd)?;
        p.a.mov(p.dword(SQ_TAIL), eax)?;
        p.a.mov(dx, u32::from(NOTIFY_PORT))?;
        p.a.out(dx, iced_x86::code_asm::al)?;
        p.a.set_label(&mut wait_top)?;
        match wait {
            Wait::Poll => {
                p.a.mov(eax, p.dword(CQ_TAIL))?;
                p.a.cmp(eax, p.dword(SQ_TAIL))?;
                p.a.je(ok)?;
                p.a.pause()?;
                p.a.jmp(wait_top)?;
            }
            _ => {
                p.a.cli()?;
                p.a.mov(eax, p.dword(CQ_TAIL))?;
                p.a.cmp(eax, p.dword(SQ_TAIL))?;
                p.a.je(ok)?;
                p.a.sti()?;
                p.a.hlt()?;
                p.a.jmp(wait_top)?;
            }
        }
        p.a.set_label(&mut ok)?;
        p.a.sti()?;
        Ok(())
    };
    looped(Mode::Long64, &setup, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_assembles() {
        for wait in [Wait::InterruptXapic, Wait::InterruptX2apic, Wait::Poll] {
            for qd in [1, 128] {
                let code = program(qd, wait, wait != Wait::InterruptXapic).unwrap_or_default();
                assert!(code.len() > 40, "{wait:?} {qd}");
            }
        }
    }
}
