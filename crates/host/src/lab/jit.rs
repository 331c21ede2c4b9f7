//! Runs the lab kernels natively: the assembled bytes go into an anonymous mapping that is
//! made executable (and no longer writable) and called as a SysV function of three integers.
//! [`NativeQueens`] and [`NativeChase`] are the safe faces: the chase checks, once, that every
//! entry of its buffer is an index inside it, so the kernel cannot read outside. This is the
//! one place outside `microvm::sys` with `unsafe`, each block with its argument.

use std::io;
use std::ptr::NonNull;

use virtlens_guest::Mapping;

use super::kernels::{Ending, Kernel, assemble};
use crate::microvm::Error;

/// Executable code, unmapped on drop.
#[derive(Debug)]
pub(super) struct Code {
    ptr: NonNull<u8>,
    len: usize,
}

impl Code {
    /// Maps `bytes` read-only and executable.
    fn new(bytes: &[u8]) -> io::Result<Code> {
        let len = bytes.len().max(1).next_multiple_of(4096);
        // SAFETY: a fresh anonymous private mapping of the kernel's choosing; checked below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(addr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        let code = Code { ptr, len };
        // SAFETY: the mapping is `len` ≥ bytes.len() writable bytes that nothing else uses;
        // mprotect then changes only its permissions.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.as_ptr(), bytes.len());
            if libc::mprotect(addr, len, libc::PROT_READ | libc::PROT_EXEC) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(code)
    }

    /// Calls the code with (rdi, rsi, rdx) and returns rax.
    ///
    /// # Safety
    /// The code must be a function that follows the SysV calling convention (it keeps the
    /// callee-saved registers and the stack balanced, and returns with `ret`), and every memory
    /// access it makes with these arguments must stay inside memory the caller owns.
    unsafe fn call(&self, rdi: u64, rsi: u64, rdx: u64) -> u64 {
        // SAFETY: the mapping is executable and holds the code; the caller guarantees the rest.
        let f: extern "sysv64" fn(u64, u64, u64) -> u64 =
            unsafe { std::mem::transmute::<*mut u8, _>(self.ptr.as_ptr()) };
        f(rdi, rsi, rdx)
    }
}

impl Drop for Code {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in `new`; no call into it can be running (calls
        // borrow `self`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

fn code(kernel: Kernel) -> Result<Code, Error> {
    Code::new(&assemble(kernel, Ending::Return, 0)?)
        .map_err(|e| Error::Memory(format!("executable mapping: {e}")))
}

/// The queens kernel, native.
#[derive(Debug)]
pub(super) struct NativeQueens(Code);

impl NativeQueens {
    pub(super) fn new() -> Result<Self, Error> {
        Ok(NativeQueens(code(Kernel::Queens)?))
    }

    /// `reps` counts of `n` (≤ 14) queens; returns the sum of the counts.
    pub(super) fn run(&self, reps: u64, n: u64) -> u64 {
        // SAFETY: the queens kernel is a SysV function that touches no memory but its stack
        // (recursion depth n ≤ 14, a few hundred bytes).
        unsafe { self.0.call(reps, 0, n.min(14)) }
    }
}

/// The chase kernel, native, over its own buffer.
#[derive(Debug)]
pub(super) struct NativeChase {
    code: Code,
    map: Mapping,
    words: usize,
}

impl NativeChase {
    /// Takes the buffer; every entry must be an index inside it.
    pub(super) fn new(mut map: Mapping) -> Result<Self, Error> {
        let words = map.words();
        let n = words.len();
        if let Some(bad) = words.iter().position(|&w| w as usize >= n) {
            return Err(Error::Memory(format!(
                "chase buffer entry {bad} points outside the buffer"
            )));
        }
        Ok(NativeChase {
            code: code(Kernel::Chase)?,
            words: n,
            map,
        })
    }

    /// The buffer's address (for /proc/self/smaps).
    pub(super) fn addr(&self) -> usize {
        self.map.addr()
    }

    /// `hops` loads from index `start`; returns the last index (None when `start` is outside).
    pub(super) fn run(&mut self, hops: u64, start: u64) -> Option<u64> {
        if start as usize >= self.words {
            return None;
        }
        let base = self.map.words().as_mut_ptr() as u64;
        // SAFETY: a SysV function that only loads `base[i]` for indices i that start inside
        // the buffer and come from it; `new` checked every entry is inside.
        Some(unsafe { self.code.call(hops, base, start) })
    }
}
