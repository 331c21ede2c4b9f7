//! Lab guest programs: one operation in a counted loop, assembled at run time for any
//! [`Mode`]. The loop count comes in rdi (set by the runner before each run), so one program
//! serves every run:
//!
//! ```text
//!         <setup>                 ; registers the body needs, once
//!         test edi, edi
//!         jz done
//! top:    <body>                  ; one operation
//!         dec edi
//!         jnz top
//! done:   mov dx, DONE_PORT
//!         out dx, al              ; ends the run
//! ```
//!
//! Bodies reach memory through one pointer: rbx in 64-bit code, ebx in 32-bit code, es:bx in
//! real mode (so real mode reaches only the first MiB plus 64 KiB).

use iced_x86::code_asm::{
    AsmMemoryOperand, CodeAssembler, ax, bx, byte_ptr, dword_ptr, dx, ebx, edi, es, rbx,
};
use virtlens_core::measure::Mode;

use crate::microvm::Error;
use crate::microvm::layout::{CODE_ADDR, DONE_PORT};

/// A program being assembled for one mode.
pub(crate) struct Prog {
    pub a: CodeAssembler,
    pub mode: Mode,
}

impl Prog {
    /// An empty program for `mode`.
    pub(crate) fn new(mode: Mode) -> Result<Prog, Error> {
        Ok(Prog {
            a: CodeAssembler::new(mode.bitness())?,
            mode,
        })
    }

    /// Points the memory pointer at guest-physical `gpa`; unsupported where the mode cannot
    /// address it.
    pub(crate) fn point_at(&mut self, gpa: u64) -> Result<(), Error> {
        match self.mode {
            Mode::Real => {
                let segment = u16::try_from(gpa >> 4).map_err(|_| {
                    Error::Unsupported(format!(
                        "real mode cannot address {gpa:#x} (beyond the first MiB)"
                    ))
                })?;
                self.a.mov(ax, u32::from(segment))?;
                self.a.mov(es, ax)?;
                self.a.mov(bx, (gpa & 0xf) as u32)?;
            }
            Mode::Prot32 => self.a.mov(ebx, u32_addr(gpa)?)?,
            Mode::Long64 | Mode::User64 => self.a.mov(rbx, gpa)?,
        }
        Ok(())
    }

    fn ptr(&self, offset: i32, f: fn(AsmMemoryOperand) -> AsmMemoryOperand) -> AsmMemoryOperand {
        match self.mode {
            Mode::Real => f(bx + offset).es(),
            Mode::Prot32 => f(ebx + offset),
            Mode::Long64 | Mode::User64 => f(rbx + offset),
        }
    }

    /// A byte at the pointer plus `offset`.
    pub(crate) fn byte(&self, offset: i32) -> AsmMemoryOperand {
        self.ptr(offset, byte_ptr)
    }

    /// A dword at the pointer plus `offset`.
    pub(crate) fn dword(&self, offset: i32) -> AsmMemoryOperand {
        self.ptr(offset, dword_ptr)
    }
}

fn u32_addr(gpa: u64) -> Result<u32, Error> {
    u32::try_from(gpa).map_err(|_| Error::Unsupported(format!("{gpa:#x} is above 4 GiB")))
}

/// A body or set-up step.
pub(super) type Emit<'a> = &'a dyn Fn(&mut Prog) -> Result<(), Error>;

/// The loop program of `mode`: `setup` once, then `body` rdi times, then the done write.
pub(super) fn looped(mode: Mode, setup: Emit<'_>, body: Emit<'_>) -> Result<Vec<u8>, Error> {
    let mut p = Prog::new(mode)?;
    let mut top = p.a.create_label();
    let mut done = p.a.create_label();
    setup(&mut p)?;
    p.a.test(edi, edi)?;
    p.a.jz(done)?;
    p.a.set_label(&mut top)?;
    body(&mut p)?;
    p.a.dec(edi)?;
    p.a.jnz(top)?;
    p.a.set_label(&mut done)?;
    p.a.mov(dx, u32::from(DONE_PORT))?;
    p.a.out(dx, iced_x86::code_asm::al)?;
    Ok(p.a.assemble(CODE_ADDR)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_assembles_a_nop_loop_and_real_mode_refuses_high_addresses() {
        for mode in Mode::ALL {
            let code = looped(mode, &|_| Ok(()), &|p| Ok(p.a.nop()?)).unwrap_or_default();
            assert!(code.contains(&0x90), "{mode}: nop");
            assert_eq!(code.last(), Some(&0xee), "{mode}: ends in out dx, al");
        }
        let far = looped(Mode::Real, &|p| p.point_at(0xfee0_0000), &|_| Ok(()));
        assert!(matches!(far, Err(Error::Unsupported(_))));
        let near = looped(Mode::Real, &|p| p.point_at(0xd_0000), &|p| {
            Ok(p.a.mov(p.byte(0), iced_x86::code_asm::al)?)
        });
        assert!(near.is_ok());
    }
}
