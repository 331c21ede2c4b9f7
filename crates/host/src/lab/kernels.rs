//! The kernels `virtlens stretch --lab` and `virtlens model overcommit --measure` run, assembled
//! once with iced-x86 and run as the *same bytes* natively (called as a function, see `jit`)
//! and inside a micro-VM, so the only difference between the two numbers is where they ran.
//!
//! Both take their arguments in SysV registers (rdi, rsi, rdx), leave the checked answer in
//! rax, use only caller-saved registers, and end with `ret` natively or with the write to
//! [`DONE_PORT`] in a guest:
//!
//! - [`Kernel::Queens`]: count the placements of rdx queens (bitboard depth-first search,
//!   recursive, on the stack), rdi times; rax = rdi × solutions.
//! - [`Kernel::Chase`]: rdi dependent loads through the u64 array at rsi, starting at index
//!   rdx (`i = a[i]`); rax = the last index.

use iced_x86::code_asm::{
    CodeAssembler, al, dx, eax, ecx, edx, qword_ptr, r8, r8d, r9, r9d, r10, r10d, r11, r11d, rax,
    rcx, rdi, rdx, rsi,
};

use crate::microvm::Error;
use crate::microvm::layout::DONE_PORT;

/// Which kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
    Queens,
    Chase,
}

/// How the kernel ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// `ret`: called as a function natively.
    Return,
    /// `out DONE_PORT, al`: the end of a guest run.
    DonePort,
}

/// The bytes [`end`] takes, whichever the ending: the code after it (the queens search) then
/// sits at the same offset natively and in the guest, so both run the same bytes at the same
/// alignment (a hot loop's placement against 32/64-byte boundaries changes its speed).
const END_BYTES: usize = 8;

fn end(a: &mut CodeAssembler, ending: Ending) -> Result<(), Error> {
    let used = match ending {
        Ending::Return => {
            a.ret()?;
            1
        }
        Ending::DonePort => {
            a.mov(dx, u32::from(DONE_PORT))?;
            a.out(dx, al)?;
            5
        }
    };
    a.nops_with_size(END_BYTES - used)?;
    Ok(())
}

fn queens(a: &mut CodeAssembler, ending: Ending) -> Result<(), Error> {
    let (mut rep, mut done, mut place) = (a.create_label(), a.create_label(), a.create_label());
    let (mut search, mut next, mut back) = (a.create_label(), a.create_label(), a.create_label());
    a.mov(ecx, edx)?;
    a.mov(r8d, 1)?;
    a.shl(r8, iced_x86::code_asm::cl)?;
    a.dec(r8)?; // all = (1 << n) - 1
    a.xor(eax, eax)?;
    a.test(rdi, rdi)?;
    a.jz(done)?;
    a.set_label(&mut rep)?;
    a.xor(r9d, r9d)?; // columns
    a.xor(r10d, r10d)?; // one diagonal
    a.xor(r11d, r11d)?; // the other
    a.call(place)?;
    a.dec(rdi)?;
    a.jnz(rep)?;
    a.set_label(&mut done)?;
    end(a, ending)?;
    // place: counts the completions of (r9, r10, r11) into rax.
    a.set_label(&mut place)?;
    a.cmp(r9, r8)?;
    a.jne(search)?;
    a.inc(rax)?;
    a.ret()?;
    a.set_label(&mut search)?;
    a.mov(rcx, r9)?;
    a.or(rcx, r10)?;
    a.or(rcx, r11)?;
    a.not(rcx)?;
    a.and(rcx, r8)?; // free squares
    a.set_label(&mut next)?;
    a.test(rcx, rcx)?;
    a.jz(back)?;
    a.mov(rdx, rcx)?;
    a.neg(rdx)?;
    a.and(rdx, rcx)?; // lowest free square
    a.xor(rcx, rdx)?;
    for r in [rcx, r9, r10, r11] {
        a.push(r)?;
    }
    a.or(r9, rdx)?;
    a.or(r10, rdx)?;
    a.shl(r10, 1)?;
    a.or(r11, rdx)?;
    a.shr(r11, 1)?;
    a.call(place)?;
    for r in [r11, r10, r9, rcx] {
        a.pop(r)?;
    }
    a.jmp(next)?;
    a.set_label(&mut back)?;
    a.ret()?;
    Ok(())
}

fn chase(a: &mut CodeAssembler, ending: Ending) -> Result<(), Error> {
    let (mut top, mut done) = (a.create_label(), a.create_label());
    a.mov(rax, rdx)?;
    a.test(rdi, rdi)?;
    a.jz(done)?;
    a.set_label(&mut top)?;
    a.mov(rax, qword_ptr(rsi + rax * 8))?;
    a.dec(rdi)?;
    a.jnz(top)?;
    a.set_label(&mut done)?;
    end(a, ending)
}

/// The kernel's machine code, for code placed at `origin` (every branch is relative, so the
/// bytes also run anywhere else).
pub(super) fn assemble(kernel: Kernel, ending: Ending, origin: u64) -> Result<Vec<u8>, Error> {
    let mut a = CodeAssembler::new(64)?;
    match kernel {
        Kernel::Queens => queens(&mut a, ending)?,
        Kernel::Chase => chase(&mut a, ending)?,
    }
    Ok(a.assemble(origin)?)
}

/// The answer [`Kernel::Chase`] must give: the index after `hops` loads from `start`.
pub(super) fn chase_answer(words: &[u64], start: u64, hops: u64) -> u64 {
    let mut i = start;
    for _ in 0..hops {
        i = words.get(i as usize).copied().unwrap_or(0);
    }
    i
}

/// A random cycle through `words`, one hop per 4 KiB page at a varying cache line (the same
/// layout as the guest suite's TLB probe); returns the start index.
pub(super) fn page_cycle(words: &mut [u64], seed: u64) -> u64 {
    const PAGE: usize = 512;
    let n = words.len() / PAGE;
    if n == 0 {
        return 0;
    }
    let mut order: Vec<usize> = (0..n).collect();
    fastrand::Rng::with_seed(seed).shuffle(&mut order);
    let slot = |page: usize| page * PAGE + (page * 8 + 8 * (page >> 6)) % PAGE;
    for (i, &page) in order.iter().enumerate() {
        words[slot(page)] = slot(order[(i + 1) % n]) as u64;
    }
    slot(order[0]) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kernels_assemble_with_both_endings() {
        for k in [Kernel::Queens, Kernel::Chase] {
            let ret = assemble(k, Ending::Return, 0).unwrap();
            let out = assemble(k, Ending::DonePort, 0x8000).unwrap();
            assert!(!ret.is_empty() && !out.is_empty());
            assert!(out.contains(&0xee), "{k:?}: out dx, al");
            assert_eq!(
                ret.len(),
                out.len(),
                "{k:?}: the endings take the same bytes"
            );
        }
        // The queens search after the ending is the same bytes at the same offset.
        let ret = assemble(Kernel::Queens, Ending::Return, 0).unwrap();
        let out = assemble(Kernel::Queens, Ending::DonePort, 0x8000).unwrap();
        let at = ret.iter().zip(&out).position(|(a, b)| a != b).unwrap();
        let tail = at + END_BYTES;
        assert_eq!(ret[tail..], out[tail..]);
    }

    #[test]
    fn the_page_cycle_visits_every_page_once() {
        let mut w = vec![0u64; 512 * 64];
        let start = page_cycle(&mut w, 3);
        let mut seen = std::collections::BTreeSet::new();
        let mut i = start;
        for _ in 0..64 {
            assert!(seen.insert(i / 512), "page visited twice");
            i = w[i as usize];
        }
        assert_eq!(i, start);
        assert_eq!(chase_answer(&w, start, 64), start);
    }
}
