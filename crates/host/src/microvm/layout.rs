//! The guest-physical memory map every micro-VM uses, whatever its mode:
//!
//! ```text
//! 0x00000 .. 0x00400  real-mode interrupt vector table
//! 0x00500 .. 0x01500  16-bit exception stubs (guest::exception_handlers)
//! 0x01800 .. 0x01850  GDT (see tables::gdt)
//! 0x02000 .. 0x03000  IDT (32-bit: 8-byte gates, 64-bit: 16-byte gates)
//! 0x03000 .. 0x05000  32/64-bit exception stubs, 32 bytes each
//! 0x05000 .. 0x06000  a data page for guest programs (RAM stores, TSC page, rings, buffers)
//! 0x06000 .. 0x07000  ring-0 stack (top at STACK_TOP; TSS.rsp0 for ring-3 guests)
//! 0x08000 .. 0x10000  the program (CODE_ADDR)
//! 0x10000 .. 0x1206a  64-bit TSS with an all-zero I/O bitmap (every port allowed at CPL3)
//! 0x14000 .. 0x1c000  ring-3 stack (top at USER_STACK_TOP)
//! 0x20000 .. 0x26000  page tables: PML4, PDPT, 4 PDs of 2 MiB pages (identity map of 4 GiB)
//! 0x26000 .. 0x80000  free RAM (RAM ends at DEFAULT_MEMORY)
//! 0xd0000 ..          no RAM: MMIO the lab uses (reachable from real mode with es = 0xd000)
//! ```

/// Where programs are loaded and start.
pub const CODE_ADDR: u64 = 0x8000;
/// The largest program.
pub(crate) const CODE_MAX: usize = 0x8000;
/// The initial (ring-0) stack pointer.
pub(crate) const STACK_TOP: u64 = 0x7000;
/// The initial stack pointer of ring-3 guests.
pub(crate) const USER_STACK_TOP: u64 = 0x1_c000;
/// A page of RAM free for guest programs' data.
pub(crate) const DATA_PAGE: u64 = 0x5000;
/// The GDT.
pub(crate) const GDT_ADDR: u64 = 0x1800;
/// The IDT (protected and long mode).
pub(crate) const IDT_ADDR: u64 = 0x2000;
/// The 32/64-bit exception stubs.
pub(crate) const STUBS32_ADDR: u64 = 0x3000;
/// The size of one 32/64-bit exception stub slot.
pub(crate) const STUB32_STRIDE: u64 = 32;
/// The 64-bit TSS.
pub(crate) const TSS_ADDR: u64 = 0x1_0000;
/// The TSS's fixed part; the I/O bitmap follows it.
pub(crate) const TSS_BASE_LEN: u64 = 0x68;
/// The I/O bitmap: one bit per port, 65536 ports.
pub(crate) const IO_BITMAP_LEN: u64 = 0x2000;
/// The TSS limit: fixed part, bitmap, and the bitmap's terminating 0xff byte.
pub(crate) const TSS_LIMIT: u64 = TSS_BASE_LEN + IO_BITMAP_LEN;
/// The PML4; the PDPT and the 4 page directories follow it page by page.
pub(crate) const PML4_ADDR: u64 = 0x2_0000;
/// The default guest RAM (512 KiB: everything above is MMIO).
pub(crate) const DEFAULT_MEMORY: usize = 0x8_0000;
/// The port every lab program writes to when it is done.
pub const DONE_PORT: u16 = 0x501;

/// GDT selectors.
pub(crate) mod sel {
    /// 64-bit code, ring 0.
    pub(crate) const CODE64: u16 = 0x08;
    /// Flat data, ring 0.
    pub(crate) const DATA: u16 = 0x10;
    /// 32-bit code, ring 0.
    pub(crate) const CODE32: u16 = 0x18;
    /// 64-bit code, ring 3 (RPL 3).
    pub(crate) const USER_CODE64: u16 = 0x2b;
    /// Flat data, ring 3 (RPL 3).
    pub(crate) const USER_DATA: u16 = 0x33;
    /// The TSS (two GDT slots in long mode).
    pub(crate) const TSS: u16 = 0x38;
}
