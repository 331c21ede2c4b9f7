//! The system tables a guest of each mode needs (see `layout` for where they go): the GDT,
//! the IDT and its exception stubs for 32- and 64-bit code, the 64-bit TSS with its I/O bitmap,
//! the identity-mapped page tables, and the segment registers KVM is given for each mode.
//! A stub reports its vector on [`super::guest::EXCEPTION_PORT`], like the
//! real-mode ones, so a guest fault becomes an error naming the vector and the faulting rip.

use iced_x86::code_asm::{CodeAssembler, al, dx};
use kvm_bindings::{kvm_segment, kvm_sregs};
use virtlens_core::measure::Mode;

use super::error::Error;
use super::guest::EXCEPTION_PORT;
use super::layout::{
    GDT_ADDR, IDT_ADDR, IO_BITMAP_LEN, PML4_ADDR, STUB32_STRIDE, STUBS32_ADDR, TSS_ADDR,
    TSS_BASE_LEN, TSS_LIMIT, sel,
};

/// A segment descriptor's fields.
#[derive(Clone, Copy)]
struct Desc {
    base: u32,
    limit: u32,
    /// Access byte: present, DPL, S, type.
    access: u8,
    /// Flags nibble: G, D/B, L, AVL.
    flags: u8,
}

const FLAT: u32 = 0xf_ffff;
const CODE64: Desc = Desc {
    base: 0,
    limit: FLAT,
    access: 0x9b,
    flags: 0xa,
};
const DATA: Desc = Desc {
    base: 0,
    limit: FLAT,
    access: 0x93,
    flags: 0xc,
};
const CODE32: Desc = Desc {
    base: 0,
    limit: FLAT,
    access: 0x9b,
    flags: 0xc,
};
const USER_CODE64: Desc = Desc {
    base: 0,
    limit: FLAT,
    access: 0xfb,
    flags: 0xa,
};
const USER_DATA: Desc = Desc {
    base: 0,
    limit: FLAT,
    access: 0xf3,
    flags: 0xc,
};
/// A busy TSS (type 11), as TR holds it.
const TSS: Desc = Desc {
    base: TSS_ADDR as u32,
    limit: TSS_LIMIT as u32,
    access: 0x8b,
    flags: 0,
};

impl Desc {
    fn encode(self) -> u64 {
        let (b, l) = (u64::from(self.base), u64::from(self.limit));
        (l & 0xffff)
            | (b & 0xff_ffff) << 16
            | u64::from(self.access) << 40
            | (l >> 16 & 0xf) << 48
            | u64::from(self.flags & 0xf) << 52
            | (b >> 24 & 0xff) << 56
    }

    fn segment(self, selector: u16) -> kvm_segment {
        let g = self.flags >> 3 & 1;
        kvm_segment {
            base: u64::from(self.base),
            limit: if g == 1 {
                self.limit << 12 | 0xfff
            } else {
                self.limit
            },
            selector,
            type_: self.access & 0xf,
            present: self.access >> 7,
            dpl: self.access >> 5 & 3,
            db: self.flags >> 2 & 1,
            s: self.access >> 4 & 1,
            l: self.flags >> 1 & 1,
            g,
            avl: self.flags & 1,
            unusable: 0,
            padding: 0,
        }
    }
}

/// Vectors for which the CPU pushes an error code.
pub(super) fn has_error_code(vector: u8) -> bool {
    matches!(vector, 8 | 10..=14 | 17 | 21 | 29 | 30)
}

fn asm_err(e: iced_x86::IcedError) -> Error {
    Error::Assemble(e.to_string())
}

/// The 256 stubs for `bitness` (32 or 64) code, laid out from [`STUBS32_ADDR`].
fn stubs(bitness: u32) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(256 * STUB32_STRIDE as usize);
    for vector in 0..=255u8 {
        let addr = STUBS32_ADDR + u64::from(vector) * STUB32_STRIDE;
        let mut a = CodeAssembler::new(bitness).map_err(asm_err)?;
        let mut halt = a.create_label();
        a.mov(al, u32::from(vector)).map_err(asm_err)?;
        a.mov(dx, u32::from(EXCEPTION_PORT)).map_err(asm_err)?;
        a.out(dx, al).map_err(asm_err)?;
        a.set_label(&mut halt).map_err(asm_err)?;
        a.hlt().map_err(asm_err)?;
        a.jmp(halt).map_err(asm_err)?;
        let mut code = a.assemble(addr).map_err(asm_err)?;
        if code.len() > STUB32_STRIDE as usize {
            return Err(Error::Assemble(format!(
                "exception stub is {} bytes, more than its slot",
                code.len()
            )));
        }
        code.resize(STUB32_STRIDE as usize, 0xf4);
        out.extend_from_slice(&code);
    }
    Ok(out)
}

/// Whether `rip` lies inside the 32/64-bit stubs.
pub(super) fn in_stubs32(rip: u64) -> bool {
    (STUBS32_ADDR..STUBS32_ADDR + 256 * STUB32_STRIDE).contains(&rip)
}

fn gdt() -> Vec<u8> {
    let tss = TSS.encode() & !(0xf << 40) | 0x9 << 40; // in memory: available (type 9)
    let entries = [
        0,
        CODE64.encode(),
        DATA.encode(),
        CODE32.encode(),
        DATA.encode(),
        USER_CODE64.encode(),
        USER_DATA.encode(),
        tss,
        u64::from(TSS_ADDR as u32 >> 31 >> 1), // base bits 32..63 (zero)
    ];
    entries.iter().flat_map(|e| e.to_le_bytes()).collect()
}

fn idt(mode: Mode) -> Vec<u8> {
    let mut out = Vec::new();
    for vector in 0..256u64 {
        let off = STUBS32_ADDR + vector * STUB32_STRIDE;
        if mode == Mode::Prot32 {
            let gate = (off & 0xffff)
                | u64::from(sel::CODE32) << 16
                | 0x8e << 40
                | (off >> 16 & 0xffff) << 48;
            out.extend_from_slice(&gate.to_le_bytes());
        } else {
            let low = (off & 0xffff)
                | u64::from(sel::CODE64) << 16
                | 0x8e << 40
                | (off >> 16 & 0xffff) << 48;
            out.extend_from_slice(&low.to_le_bytes());
            out.extend_from_slice(&(off >> 32).to_le_bytes());
        }
    }
    out
}

fn tss() -> Vec<u8> {
    let mut t = vec![0u8; (TSS_LIMIT + 1) as usize];
    t[4..12].copy_from_slice(&super::layout::STACK_TOP.to_le_bytes()); // rsp0
    t[0x66..0x68].copy_from_slice(&(TSS_BASE_LEN as u16).to_le_bytes()); // I/O map base
    t[(TSS_BASE_LEN + IO_BITMAP_LEN) as usize] = 0xff;
    t
}

fn page_tables() -> Vec<u8> {
    const PAGE: u64 = 0x1000;
    let mut t = vec![0u8; 6 * PAGE as usize];
    let mut put = |table: u64, index: u64, value: u64| {
        let at = (table * PAGE + index * 8) as usize;
        t[at..at + 8].copy_from_slice(&value.to_le_bytes());
    };
    put(0, 0, (PML4_ADDR + PAGE) | 0x7);
    for pd in 0..4 {
        put(1, pd, (PML4_ADDR + (2 + pd) * PAGE) | 0x7);
        for entry in 0..512 {
            put(2 + pd, entry, ((pd * 512 + entry) << 21) | 0x87);
        }
    }
    t
}

/// The `(guest address, bytes)` pieces a `mode` guest needs besides its program (real mode
/// needs only the 16-bit IVT and stubs, which `guest` provides).
pub(super) fn pieces(mode: Mode) -> Result<Vec<(u64, Vec<u8>)>, Error> {
    match mode {
        Mode::Real => super::guest::exception_handlers(),
        Mode::Prot32 => Ok(vec![
            (GDT_ADDR, gdt()),
            (IDT_ADDR, idt(mode)),
            (STUBS32_ADDR, stubs(32)?),
            (TSS_ADDR, tss()),
        ]),
        Mode::Long64 | Mode::User64 => Ok(vec![
            (GDT_ADDR, gdt()),
            (IDT_ADDR, idt(mode)),
            (STUBS32_ADDR, stubs(64)?),
            (TSS_ADDR, tss()),
            (PML4_ADDR, page_tables()),
        ]),
    }
}

/// Sets the segment, control and table registers of `mode` in `s`.
pub(super) fn set_sregs(s: &mut kvm_sregs, mode: Mode) {
    let (code, data, code_sel, data_sel) = match mode {
        Mode::Real => {
            for seg in [
                &mut s.cs, &mut s.ds, &mut s.es, &mut s.fs, &mut s.gs, &mut s.ss,
            ] {
                seg.base = 0;
                seg.selector = 0;
            }
            return;
        }
        Mode::Prot32 => (CODE32, DATA, sel::CODE32, sel::DATA),
        Mode::Long64 => (CODE64, DATA, sel::CODE64, sel::DATA),
        Mode::User64 => (USER_CODE64, USER_DATA, sel::USER_CODE64, sel::USER_DATA),
    };
    s.cs = code.segment(code_sel);
    let data = data.segment(data_sel);
    (s.ds, s.es, s.fs, s.gs, s.ss) = (data, data, data, data, data);
    s.tr = TSS.segment(sel::TSS);
    s.ldt.unusable = 1;
    s.ldt.present = 0;
    s.gdt.base = GDT_ADDR;
    s.gdt.limit = 9 * 8 - 1;
    s.idt.base = IDT_ADDR;
    if mode == Mode::Prot32 {
        s.idt.limit = 256 * 8 - 1;
        s.cr0 = 0x11; // PE | ET
        s.cr4 = 0;
        s.efer = 0;
    } else {
        s.idt.limit = 256 * 16 - 1;
        s.cr3 = PML4_ADDR;
        s.cr4 = 0x20; // PAE
        s.cr0 = 0x8000_0011; // PG | PE | ET
        s.efer = 0x500; // LME | LMA
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_encode_like_the_manuals() {
        assert_eq!(CODE64.encode(), 0x00af_9b00_0000_ffff);
        assert_eq!(DATA.encode(), 0x00cf_9300_0000_ffff);
        assert_eq!(USER_CODE64.encode(), 0x00af_fb00_0000_ffff);
        let cs = USER_CODE64.segment(sel::USER_CODE64);
        assert_eq!((cs.dpl, cs.l, cs.db, cs.limit), (3, 1, 0, 0xffff_ffff));
    }

    #[test]
    fn tables_have_their_sizes() {
        let lm = pieces(Mode::Long64).unwrap_or_default();
        assert_eq!(lm.len(), 5);
        assert_eq!(lm[1].1.len(), 256 * 16);
        assert_eq!(lm[2].1.len(), 256 * STUB32_STRIDE as usize);
        assert_eq!(lm[3].1.len(), (TSS_LIMIT + 1) as usize);
        let pm = pieces(Mode::Prot32).unwrap_or_default();
        assert_eq!(pm[1].1.len(), 256 * 8);
        // PD 3's last entry maps the 2 MiB page just below 4 GiB
        let pt = &lm[4].1;
        let last = u64::from_le_bytes(pt[6 * 4096 - 8..].try_into().unwrap_or([0; 8]));
        assert_eq!(last, 0xffe0_0000 | 0x87);
        assert!(has_error_code(13) && !has_error_code(6));
        assert!(in_stubs32(STUBS32_ADDR + 13 * STUB32_STRIDE));
    }
}
