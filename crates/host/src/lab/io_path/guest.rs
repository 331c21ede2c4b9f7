//! The IO-path guest (64-bit ring 0): a driver that submits `qd` requests by bumping the
//! submission tail in its ring page, notifies the device with one port write, and waits until
//! it has reaped every completion — halting until an interrupt (modes with interrupts; the
//! handler reaps) or reaping by spinning on the completion tail (polling). The handler
//! (vector [`VECTOR`]) counts the interrupt, reaps what the device completed, and acknowledges
//! with an EOI to the xAPIC page or the x2APIC EOI MSR. The driver counts its halts, so every
//! count per IO is the guest's own and does not depend on what the backend reports.
//!
//! ```text
//! setup:   rbx = ring page; IDT gate VECTOR → handler; [x2APIC on]; [LAPIC SVR = 0x1ff]; sti
//! body:    sq += qd; out NOTIFY_PORT
//! wait:    cli; if reaped == sq goto ok; halts += 1; sti; hlt; jmp wait    (interrupts)
//!          reaped = cq; if reaped == sq goto ok; pause; jmp wait           (polling)
//! ok:      sti
//! handler: irqs += 1; reaped = cq; EOI; iretq
//! ```

use iced_x86::code_asm::{al, ax, dword_ptr, dx, eax, ecx, edx, ptr, rax, rcx, rdx, word_ptr};
use virtlens_core::measure::Mode;

use crate::lab::asm::{Prog, looped};
use crate::microvm::Error;
use crate::microvm::layout::{DATA_PAGE, IDT_ADDR};

/// The interrupt vector completions arrive on.
pub(crate) const VECTOR: u8 = 0x40;
/// The port the driver notifies the device on.
pub(crate) const NOTIFY_PORT: u16 = 0xc060;
/// The ring page and its words: submission tail (driver), completion tail (device),
/// interrupts the handler took, completions the driver reaped, halts.
pub(crate) const RING: u64 = DATA_PAGE + 0x100;
pub(crate) const SQ_TAIL: i32 = 0;
pub(crate) const CQ_TAIL: i32 = 4;
pub(crate) const IRQS: i32 = 8;
pub(crate) const REAPED: i32 = 12;
pub(crate) const HALTS: i32 = 16;
/// The xAPIC page and its registers.
pub(crate) const APIC_BASE: u64 = 0xfee0_0000;
pub(crate) const APIC_EOI: u64 = APIC_BASE + 0xb0;
const APIC_SVR: u64 = APIC_BASE + 0xf0;
/// IA32_APIC_BASE and its enable (EN) and x2APIC (EXTD) bits.
const IA32_APIC_BASE: u32 = 0x1b;
const APIC_EN_EXTD: u32 = 0xc00;
/// The x2APIC EOI and spurious-vector MSRs.
pub(crate) const X2APIC_EOI: u32 = 0x80b;
const X2APIC_SVR: u32 = 0x80f;

/// How the driver learns of completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Halt until an interrupt; the handler EOIs through the xAPIC page.
    InterruptXapic,
    /// Halt until an interrupt; the handler EOIs through the x2APIC MSR (x2APIC mode).
    InterruptX2apic,
    /// Spin on the completion tail.
    Poll,
}

/// Emits an IDT gate for [`VECTOR`] pointing at the code that follows, the handler itself
/// (`handler` emits its body; the frame is saved and restored around it), and jumps over it.
pub(crate) fn interrupt_handler(
    p: &mut Prog,
    handler: &dyn Fn(&mut Prog) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut entry = p.a.create_label();
    let mut over = p.a.create_label();
    // IDT gate: offset 0..15, selector 8, present 64-bit interrupt gate, offset 16..63.
    let gate = IDT_ADDR + u64::from(VECTOR) * 16;
    p.a.lea(rax, ptr(entry))?;
    p.a.mov(rcx, gate)?;
    p.a.mov(word_ptr(rcx), ax)?;
    p.a.mov(word_ptr(rcx + 2), 8u32)?;
    p.a.mov(word_ptr(rcx + 4), 0x8e00u32)?;
    p.a.shr(rax, 16)?;
    p.a.mov(word_ptr(rcx + 6), ax)?;
    p.a.shr(rax, 16)?;
    p.a.mov(dword_ptr(rcx + 8), eax)?;
    p.a.mov(dword_ptr(rcx + 12), 0u32)?;
    p.a.jmp(over)?;
    p.a.set_label(&mut entry)?;
    p.a.push(rax)?;
    p.a.push(rcx)?;
    p.a.push(rdx)?;
    handler(p)?;
    p.a.pop(rdx)?;
    p.a.pop(rcx)?;
    p.a.pop(rax)?;
    p.a.iretq()?;
    p.a.set_label(&mut over)?;
    Ok(())
}

/// Enables the in-kernel local APIC: software-enable bit in the spurious-vector register, in
/// xAPIC mode through the page, in x2APIC mode (switched on first) through the MSR.
pub(crate) fn enable_apic(p: &mut Prog, x2apic: bool) -> Result<(), Error> {
    if x2apic {
        p.a.mov(ecx, IA32_APIC_BASE)?;
        p.a.rdmsr()?;
        p.a.or(eax, APIC_EN_EXTD)?;
        p.a.wrmsr()?;
        p.a.mov(ecx, X2APIC_SVR)?;
        p.a.mov(eax, 0x1ffu32)?;
        p.a.xor(edx, edx)?;
        p.a.wrmsr()?;
    } else {
        p.a.mov(rax, APIC_SVR)?;
        p.a.mov(dword_ptr(rax), 0x1ffu32)?;
    }
    Ok(())
}

/// An EOI to the local APIC (clobbers rax, rcx, rdx).
pub(crate) fn eoi(p: &mut Prog, x2apic: bool) -> Result<(), Error> {
    if x2apic {
        p.a.mov(ecx, X2APIC_EOI)?;
        p.a.xor(eax, eax)?;
        p.a.xor(edx, edx)?;
        p.a.wrmsr()?;
    } else {
        p.a.mov(rax, APIC_EOI)?;
        p.a.mov(dword_ptr(rax), 0u32)?;
    }
    Ok(())
}

/// The driver for queue depth `qd`; `in_kernel_apic`: the VM has an in-kernel LAPIC to
/// enable (without one the VMM plays the interrupt controller and sees the EOI).
pub(crate) fn program(qd: u32, wait: Wait, in_kernel_apic: bool) -> Result<Vec<u8>, Error> {
    let x2apic = wait == Wait::InterruptX2apic;
    if x2apic && !in_kernel_apic {
        return Err(Error::Unsupported(
            "x2APIC EOIs need the in-kernel local APIC".into(),
        ));
    }
    let setup = |p: &mut Prog| -> Result<(), Error> {
        p.point_at(RING)?;
        if wait != Wait::Poll {
            interrupt_handler(p, &|p| {
                p.a.add(p.dword(IRQS), 1u32)?;
                p.a.mov(eax, p.dword(CQ_TAIL))?;
                p.a.mov(p.dword(REAPED), eax)?;
                eoi(p, x2apic)
            })?;
            if in_kernel_apic {
                enable_apic(p, x2apic)?;
            }
        }
        p.a.sti()?;
        Ok(())
    };
    let body = |p: &mut Prog| -> Result<(), Error> {
        let mut wait_top = p.a.create_label();
        let mut ok = p.a.create_label();
        p.a.mov(eax, p.dword(SQ_TAIL))?;
        p.a.add(eax, qd)?;
        p.a.mov(p.dword(SQ_TAIL), eax)?;
        p.a.mov(dx, u32::from(NOTIFY_PORT))?;
        p.a.out(dx, al)?;
        p.a.set_label(&mut wait_top)?;
        if wait == Wait::Poll {
            p.a.mov(eax, p.dword(CQ_TAIL))?;
            p.a.mov(p.dword(REAPED), eax)?;
            p.a.cmp(eax, p.dword(SQ_TAIL))?;
            p.a.je(ok)?;
            p.a.jmp(wait_top)?;
        } else {
            p.a.cli()?;
            p.a.mov(eax, p.dword(REAPED))?;
            p.a.cmp(eax, p.dword(SQ_TAIL))?;
            p.a.je(ok)?;
            p.a.add(p.dword(HALTS), 1u32)?;
            p.a.sti()?;
            p.a.hlt()?;
            p.a.jmp(wait_top)?;
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
    fn every_variant_assembles_and_x2apic_needs_the_kernel_apic() {
        for wait in [Wait::InterruptXapic, Wait::InterruptX2apic, Wait::Poll] {
            for qd in [1, 128] {
                let code = program(qd, wait, true).unwrap_or_default();
                assert!(code.len() > 40, "{wait:?} {qd}");
            }
        }
        assert!(matches!(
            program(1, Wait::InterruptX2apic, false),
            Err(Error::Unsupported(_))
        ));
    }
}
