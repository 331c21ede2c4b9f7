//! A small eBPF instruction encoder (Documentation/bpf/standardization/instruction-set.rst):
//! the handful of instructions the aggregation programs use, with forward labels resolved
//! when the program is finished. Each instruction is the kernel's `struct bpf_insn`: opcode,
//! `dst:4 | src:4`, a signed 16-bit offset and a signed 32-bit immediate; `ld_imm64` takes
//! two slots.

use std::collections::BTreeMap;

/// One `struct bpf_insn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    /// The 8 bytes the kernel reads, little-endian.
    pub(crate) fn bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.dst & 0x0f) | (self.src << 4);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

/// A register, r0..r10 (r10 is the read-only frame pointer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reg(pub u8);

pub(crate) const R0: Reg = Reg(0);
pub(crate) const R1: Reg = Reg(1);
pub(crate) const R2: Reg = Reg(2);
pub(crate) const R3: Reg = Reg(3);
pub(crate) const R4: Reg = Reg(4);
pub(crate) const R6: Reg = Reg(6);
pub(crate) const R7: Reg = Reg(7);
pub(crate) const R8: Reg = Reg(8);
pub(crate) const R9: Reg = Reg(9);
pub(crate) const FP: Reg = Reg(10);

/// Access sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Size {
    B,
    H,
    W,
    DW,
}

impl Size {
    /// The size of a field of `bytes` bytes, if a load can read it whole.
    pub(crate) fn of_bytes(bytes: usize) -> Option<Size> {
        match bytes {
            1 => Some(Size::B),
            2 => Some(Size::H),
            4 => Some(Size::W),
            8 => Some(Size::DW),
            _ => None,
        }
    }

    fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
}

/// 64-bit ALU operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Mov = 0xb0,
}

/// Conditional jumps (64-bit compares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cond {
    Eq = 0x10,
    Ne = 0x50,
}

/// The helpers the programs call (`enum bpf_func_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Helper {
    MapLookupElem = 1,
    MapUpdateElem = 2,
    KtimeGetNs = 5,
    GetCurrentPidTgid = 14,
}

const CLASS_LD: u8 = 0x00;
const CLASS_LDX: u8 = 0x01;
const CLASS_ST: u8 = 0x02;
const CLASS_STX: u8 = 0x03;
const CLASS_JMP: u8 = 0x05;
const CLASS_ALU64: u8 = 0x07;
const MODE_IMM: u8 = 0x00;
const MODE_MEM: u8 = 0x60;
const MODE_ATOMIC: u8 = 0xc0;
const SRC_X: u8 = 0x08;
const JMP_CALL: u8 = 0x80;
const JMP_EXIT: u8 = 0x90;
const JMP_JA: u8 = 0x00;
/// `src` of an `ld_imm64` whose immediate is a map fd.
const PSEUDO_MAP_FD: u8 = 1;

/// A jump target, placed later with [`Asm::label`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Label(usize);

/// A program being written; see the module doc.
#[derive(Debug, Default)]
pub(crate) struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    /// Jump instruction index → the label it goes to.
    fixups: BTreeMap<usize, Label>,
}

impl Asm {
    pub(crate) fn new() -> Asm {
        Asm::default()
    }

    fn push(&mut self, code: u8, dst: Reg, src: Reg, off: i16, imm: i32) {
        self.insns.push(Insn {
            code,
            dst: dst.0,
            src: src.0,
            off,
            imm,
        });
    }

    /// A new label, not yet placed.
    pub(crate) fn new_label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Places `l` at the next instruction.
    pub(crate) fn label(&mut self, l: Label) {
        if let Some(slot) = self.labels.get_mut(l.0) {
            *slot = Some(self.insns.len());
        }
    }

    /// `dst op= imm` (64-bit).
    pub(crate) fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) {
        self.push(CLASS_ALU64 | op as u8, dst, Reg(0), 0, imm);
    }

    /// `dst op= src` (64-bit).
    pub(crate) fn alu_reg(&mut self, op: Alu, dst: Reg, src: Reg) {
        self.push(CLASS_ALU64 | op as u8 | SRC_X, dst, src, 0, 0);
    }

    /// `dst = imm` (sign-extended to 64 bits).
    pub(crate) fn mov_imm(&mut self, dst: Reg, imm: i32) {
        self.alu_imm(Alu::Mov, dst, imm);
    }

    /// `dst = src`.
    pub(crate) fn mov(&mut self, dst: Reg, src: Reg) {
        self.alu_reg(Alu::Mov, dst, src);
    }

    /// `dst = *(size *)(src + off)`, zero-extended.
    pub(crate) fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) {
        self.push(CLASS_LDX | MODE_MEM | size.bits(), dst, src, off, 0);
    }

    /// `*(size *)(dst + off) = src`.
    pub(crate) fn store(&mut self, size: Size, dst: Reg, off: i16, src: Reg) {
        self.push(CLASS_STX | MODE_MEM | size.bits(), dst, src, off, 0);
    }

    /// `*(size *)(dst + off) = imm`.
    pub(crate) fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) {
        self.push(CLASS_ST | MODE_MEM | size.bits(), dst, Reg(0), off, imm);
    }

    /// `lock *(u64 *)(dst + off) += src` (BPF_ATOMIC | BPF_ADD; the same encoding as the
    /// older BPF_XADD, so it loads on kernels from before 5.12 too).
    pub(crate) fn atomic_add64(&mut self, dst: Reg, off: i16, src: Reg) {
        self.push(CLASS_STX | MODE_ATOMIC | Size::DW.bits(), dst, src, off, 0);
    }

    /// `dst = map` (the two-slot `ld_imm64` with a map fd the kernel turns into the map).
    pub(crate) fn load_map_fd(&mut self, dst: Reg, fd: i32) {
        self.push(
            CLASS_LD | MODE_IMM | Size::DW.bits(),
            dst,
            Reg(PSEUDO_MAP_FD),
            0,
            fd,
        );
        self.push(0, Reg(0), Reg(0), 0, 0);
    }

    /// `if dst <cond> imm goto target`.
    pub(crate) fn jump_imm(&mut self, cond: Cond, dst: Reg, imm: i32, target: Label) {
        self.fixups.insert(self.insns.len(), target);
        self.push(CLASS_JMP | cond as u8, dst, Reg(0), 0, imm);
    }

    /// `if dst <cond> src goto target`.
    pub(crate) fn jump_reg(&mut self, cond: Cond, dst: Reg, src: Reg, target: Label) {
        self.fixups.insert(self.insns.len(), target);
        self.push(CLASS_JMP | cond as u8 | SRC_X, dst, src, 0, 0);
    }

    /// `goto target`.
    pub(crate) fn jump(&mut self, target: Label) {
        self.fixups.insert(self.insns.len(), target);
        self.push(CLASS_JMP | JMP_JA, Reg(0), Reg(0), 0, 0);
    }

    /// Calls a helper; arguments in r1..r5, the result in r0, r1..r5 clobbered.
    pub(crate) fn call(&mut self, helper: Helper) {
        self.push(CLASS_JMP | JMP_CALL, Reg(0), Reg(0), 0, helper as i32);
    }

    /// `return r0`.
    pub(crate) fn exit(&mut self) {
        self.push(CLASS_JMP | JMP_EXIT, Reg(0), Reg(0), 0, 0);
    }

    /// The finished instructions, every jump resolved; an error names a label never placed
    /// or a jump too far for its 16-bit offset.
    pub(crate) fn finish(mut self) -> Result<Vec<Insn>, String> {
        for (&at, &target) in &self.fixups {
            let to = self
                .labels
                .get(target.0)
                .copied()
                .flatten()
                .ok_or_else(|| format!("jump at instruction {at} goes to a label never placed"))?;
            let off = to as i64 - at as i64 - 1;
            let off = i16::try_from(off)
                .map_err(|_| format!("jump at instruction {at} is too far ({off})"))?;
            if let Some(insn) = self.insns.get_mut(at) {
                insn.off = off;
            }
        }
        Ok(self.insns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_the_kernel_s() {
        let mut a = Asm::new();
        a.mov_imm(R0, 0); // b7 00 ...
        a.load(Size::W, R2, R1, 12); // 61 12 0c00
        a.store(Size::DW, FP, -8, R0); // 7b 0a f8ff: dst fp, src r0
        a.atomic_add64(R0, 16, R1); // db 10 1000
        a.load_map_fd(R1, 7); // 18 11 ... imm 7, then a zero slot
        a.call(Helper::GetCurrentPidTgid); // 85 00 imm 14
        a.exit(); // 95
        let b: Vec<[u8; 8]> = a.finish().unwrap().iter().map(Insn::bytes).collect();
        assert_eq!(b[0], [0xb7, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b[1], [0x61, 0x12, 12, 0, 0, 0, 0, 0]);
        assert_eq!(b[2], [0x7b, 0x0a, 0xf8, 0xff, 0, 0, 0, 0]);
        assert_eq!(b[3], [0xdb, 0x10, 16, 0, 0, 0, 0, 0]);
        assert_eq!(b[4], [0x18, 0x11, 0, 0, 7, 0, 0, 0]);
        assert_eq!(b[5], [0; 8]);
        assert_eq!(b[6], [0x85, 0, 0, 0, 14, 0, 0, 0]);
        assert_eq!(b[7], [0x95, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn labels_resolve_forward_and_back() {
        let mut a = Asm::new();
        let top = a.new_label();
        let end = a.new_label();
        a.label(top);
        a.jump_imm(Cond::Eq, R0, 0, end); // 0 → 3: off 2
        a.mov_imm(R0, 1);
        a.jump(top); // 2 → 0: off -3
        a.label(end);
        a.exit();
        let i = a.finish().unwrap();
        assert_eq!((i[0].code, i[0].off), (0x15, 2));
        assert_eq!((i[2].code, i[2].off), (0x05, -3));
    }

    #[test]
    fn an_unplaced_label_is_an_error() {
        let mut a = Asm::new();
        let l = a.new_label();
        a.jump(l);
        assert!(a.finish().unwrap_err().contains("never placed"));
    }
}
