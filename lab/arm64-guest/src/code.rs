//! The guest's instructions, encoded here (A64, little-endian words) so that the lab needs no
//! assembler. `aarch64-linux-gnu-objdump -D -b binary -m aarch64` of the words shows them.

/// The address the guest stores to: no memory slot backs it.
pub const MMIO_AT: u64 = 0x1000_0000;
const PSCI_VERSION: u32 = 0x8400_0000;
const PSCI_SYSTEM_OFF: u32 = 0x8400_0008;

/// `movz xD, #imm, lsl #(16 * hw)`.
fn movz(d: u32, imm: u16, hw: u32) -> u32 {
    0xd280_0000 | (hw << 21) | (u32::from(imm) << 5) | d
}

/// `movk xD, #imm, lsl #(16 * hw)`.
fn movk(d: u32, imm: u16, hw: u32) -> u32 {
    0xf280_0000 | (hw << 21) | (u32::from(imm) << 5) | d
}

/// `xD = value` (32 bits) in two instructions.
fn mov32(d: u32, value: u32) -> [u32; 2] {
    [movz(d, value as u16, 0), movk(d, (value >> 16) as u16, 1)]
}

/// `str wT, [xN]`.
fn str_w(t: u32, n: u32) -> u32 {
    0xb900_0000 | (n << 5) | t
}

/// `subs xD, xD, #1`.
fn decrement(d: u32) -> u32 {
    0xf100_0400 | (d << 5) | d
}

/// `b.ne` back by `back` instructions.
fn b_ne_back(back: u32) -> u32 {
    let imm19 = (back.wrapping_neg()) & 0x7_ffff;
    0x5400_0001 | (imm19 << 5)
}

/// `hvc #0`.
const HVC: u32 = 0xd400_0002;
/// `b .`
const SPIN: u32 = 0x1400_0000;

/// WRITES stores to [`MMIO_AT`], HVCS PSCI_VERSION calls, then PSCI SYSTEM_OFF.
pub fn program(writes: u32, hvcs: u32) -> Vec<u32> {
    let mut p = Vec::new();
    p.extend(mov32(1, MMIO_AT as u32));
    p.extend(mov32(2, writes));
    p.push(str_w(2, 1));
    p.push(decrement(2));
    p.push(b_ne_back(2));
    // KVM returns a PSCI call's results in x0-x3 (SMCCC), so the count is kept in x19.
    p.extend(mov32(19, hvcs));
    p.extend(mov32(0, PSCI_VERSION));
    p.push(HVC);
    p.push(decrement(19));
    p.push(b_ne_back(4));
    p.extend(mov32(0, PSCI_SYSTEM_OFF));
    p.push(HVC);
    p.push(SPIN);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words, against what GNU as makes of the same lines (aarch64-linux-gnu-as 2.40).
    #[test]
    fn encodings_match_the_assembler() {
        assert_eq!(movz(1, 0, 0), 0xd280_0001); // movz x1, #0
        assert_eq!(movk(1, 0x1000, 1), 0xf2a2_0001); // movk x1, #0x1000, lsl #16
        assert_eq!(str_w(2, 1), 0xb900_0022); // str w2, [x1]
        assert_eq!(decrement(2), 0xf100_0442); // subs x2, x2, #1
        assert_eq!(b_ne_back(2), 0x54ff_ffc1); // b.ne .-8
    }
}
