//! The micro-VM the lab (`virtlens lab` / `exitcost`) is built on. A [`MicroVm`] is one KVM
//! VM with one vCPU and a block of RAM at guest-physical 0 (`layout`), running tiny guest
//! programs assembled at run time (iced-x86) in real mode, 32-bit protected mode, 64-bit long
//! mode ring 0 or 64-bit ring 3 ([`Mode`]; the GDT, IDT, TSS with its I/O bitmap and page
//! tables come from `tables`). Exits are answered by a [`Devices`] model and counted
//! ([`RunStats`]); guest exceptions become [`Error::GuestException`] naming the vector and the
//! faulting rip; every `KVM_RUN` is watched, so a hung guest is an error ([`Error::Hung`])
//! after the watchdog time, not a hung tool. [`VmConfig`] adds an in-kernel irqchip and PIT,
//! MSR and hypercall exits to userspace; ioeventfds and coalesced MMIO are added per VM.
//!
//! ```no_run
//! use std::time::Duration;
//! use virtlens_host::microvm::{MicroVm, pio_loop};
//!
//! let mut vm = MicroVm::new(1 << 20)?;
//! vm.load_real_mode(&pio_loop(0x80, 1000)?)?;
//! let stats = vm.run(Duration::from_secs(5))?;
//! assert_eq!(stats.pio_exits, 1000);
//! # Ok::<(), virtlens_host::microvm::Error>(())
//! ```
//!
//! Needs read/write access to /dev/kvm. The process-wide handler of SIGRTMIN is replaced by a
//! no-op (it is the signal the watchdog uses to interrupt `KVM_RUN`). All `unsafe` code is in
//! `sys`.

mod error;
pub(crate) mod guest;
pub(crate) mod layout;
mod run;
#[allow(unsafe_code)]
mod sys;
mod tables;
mod vm;
mod watchdog;

pub use error::{Error, exception_name};
pub use run::{Access, Devices, RunStats, Zeros};
pub(crate) use sys::{RamWord, borrow_fd, thread_cpu_ns, wait_readable};
pub use virtlens_core::measure::Mode;
pub use vm::{HC_MAP_GPA_RANGE, MicroVm, VmConfig};

// What other crates use of this area (docs/development.md, "Public API").
pub use guest::pio_loop;
pub use layout::{CODE_ADDR, DONE_PORT};
