//! Guest programs, assembled at run time with iced-x86's code assembler, and the real-mode
//! memory map they are loaded into:
//!
//! ```text
//! 0x0000 .. 0x0400   interrupt vector table: every vector points at its stub
//! 0x0500 .. 0x1500   one 16-byte stub per vector: `mov al, VECTOR; mov dx, 0x502; out dx, al; hlt`
//! .. 0x7000          stack (grows down from STACK_TOP)
//! 0x8000 ..          the program (CODE_ADDR)
//! ```
//!
//! A guest fault therefore shows up as an `out` to [`EXCEPTION_PORT`] from inside the stub
//! area, which the VM turns into an error naming the vector and the faulting `cs:ip`, instead
//! of a silent hang.

use iced_x86::code_asm::{CodeAssembler, al, dx, ecx};

use super::error::Error;

/// Where real-mode programs are loaded and start.
pub(crate) const CODE_ADDR: u64 = 0x8000;
/// The guest-physical address of the exception stubs.
pub(crate) const STUB_BASE: u64 = 0x500;
/// The size of one exception stub slot.
pub(crate) const STUB_STRIDE: u64 = 16;
/// The port the exception stubs write their vector number to.
pub(crate) const EXCEPTION_PORT: u16 = 0x502;
/// The smallest guest memory a real-mode program needs (code at 0x8000 and room for it).
pub(crate) const MIN_MEMORY: usize = 0x10000;

fn asm_err(e: iced_x86::IcedError) -> Error {
    Error::Assemble(e.to_string())
}

/// A 16-bit program that writes `al` to `port` `count` times (`out dx, al` in a
/// `dec ecx; jnz` loop) and then halts: `count` KVM_EXIT_IO exits, then one KVM_EXIT_HLT.
pub fn pio_loop(port: u16, count: u32) -> Result<Vec<u8>, Error> {
    let mut a = CodeAssembler::new(16).map_err(asm_err)?;
    let mut top = a.create_label();
    let mut done = a.create_label();
    a.mov(dx, u32::from(port)).map_err(asm_err)?;
    a.mov(al, 0x5a_u32).map_err(asm_err)?;
    a.mov(ecx, count).map_err(asm_err)?;
    a.test(ecx, ecx).map_err(asm_err)?;
    a.jz(done).map_err(asm_err)?;
    a.set_label(&mut top).map_err(asm_err)?;
    a.out(dx, al).map_err(asm_err)?;
    a.dec(ecx).map_err(asm_err)?;
    a.jnz(top).map_err(asm_err)?;
    a.set_label(&mut done).map_err(asm_err)?;
    a.hlt().map_err(asm_err)?;
    a.assemble(CODE_ADDR).map_err(asm_err)
}

/// The interrupt vector table and the 256 exception stubs, as `(guest address, bytes)` pieces.
pub(crate) fn exception_handlers() -> Result<Vec<(u64, Vec<u8>)>, Error> {
    let mut ivt = Vec::with_capacity(256 * 4);
    let mut stubs = Vec::with_capacity(256 * STUB_STRIDE as usize);
    for vector in 0..=255u8 {
        let addr = STUB_BASE + u64::from(vector) * STUB_STRIDE;
        let offset = u16::try_from(addr).map_err(|_| Error::Assemble("stub past 64 KiB".into()))?;
        ivt.extend_from_slice(&offset.to_le_bytes());
        ivt.extend_from_slice(&0u16.to_le_bytes());
        let mut a = CodeAssembler::new(16).map_err(asm_err)?;
        let mut halt = a.create_label();
        a.mov(al, u32::from(vector)).map_err(asm_err)?;
        a.mov(dx, u32::from(EXCEPTION_PORT)).map_err(asm_err)?;
        a.out(dx, al).map_err(asm_err)?;
        a.set_label(&mut halt).map_err(asm_err)?;
        a.hlt().map_err(asm_err)?;
        a.jmp(halt).map_err(asm_err)?;
        let mut code = a.assemble(addr).map_err(asm_err)?;
        if code.len() > STUB_STRIDE as usize {
            return Err(Error::Assemble(format!(
                "exception stub is {} bytes, more than its {STUB_STRIDE}-byte slot",
                code.len()
            )));
        }
        code.resize(STUB_STRIDE as usize, 0xf4); // pad with HLT
        stubs.extend_from_slice(&code);
    }
    Ok(vec![(0, ivt), (STUB_BASE, stubs)])
}

/// Whether a guest `rip` lies inside the exception stubs.
pub(crate) fn in_stubs(rip: u64) -> bool {
    (STUB_BASE..STUB_BASE + 256 * STUB_STRIDE).contains(&rip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pio_loop_encodes_the_expected_instructions() {
        let code = pio_loop(0x80, 3).unwrap_or_default();
        // mov dx,0x80 ; mov al,0x5a ; mov ecx,3 (66 prefix in 16-bit code)
        assert_eq!(&code[..5], &[0xba, 0x80, 0x00, 0xb0, 0x5a]);
        assert_eq!(&code[5..11], &[0x66, 0xb9, 3, 0, 0, 0]);
        assert!(code.contains(&0xee), "out dx, al");
        assert_eq!(code.last(), Some(&0xf4), "ends in hlt");
    }

    #[test]
    fn every_vector_has_a_stub_in_its_slot() {
        let pieces = exception_handlers().unwrap_or_default();
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0].1.len(), 1024);
        assert_eq!(pieces[1].1.len(), 256 * STUB_STRIDE as usize);
        // vector 13's IVT entry points at its stub, which loads al=13
        let entry = u16::from_le_bytes([pieces[0].1[52], pieces[0].1[53]]);
        assert_eq!(u64::from(entry), STUB_BASE + 13 * STUB_STRIDE);
        let stub = &pieces[1].1[13 * STUB_STRIDE as usize..];
        assert_eq!(&stub[..2], &[0xb0, 13]);
        assert!(in_stubs(u64::from(entry)));
    }
}
