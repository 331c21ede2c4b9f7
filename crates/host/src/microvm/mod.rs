//! The micro-VM: the seed of the lab (`virtlens lab` / `exitcost`). A [`MicroVm`] is one KVM
//! VM with one vCPU and a block of RAM at guest-physical 0, running tiny guest programs that
//! are assembled at run time ([`guest`]), until they halt. Port and MMIO exits are answered in
//! userspace and counted ([`RunStats`]); every `KVM_RUN` is watched, so a hung guest is an
//! error ([`Error::Hung`]) after the watchdog time, not a hung tool.
//!
//! ```no_run
//! use std::time::Duration;
//! use virtlens_host::microvm::{MicroVm, guest};
//!
//! let mut vm = MicroVm::new(1 << 20)?;
//! vm.load_real_mode(&guest::pio_loop(0x80, 1000)?)?;
//! let stats = vm.run(Duration::from_secs(5))?;
//! assert_eq!(stats.pio_exits, 1000);
//! # Ok::<(), virtlens_host::microvm::Error>(())
//! ```
//!
//! Needs read/write access to /dev/kvm. The process-wide handler of SIGRTMIN is replaced by a
//! no-op (it is the signal the watchdog uses to interrupt `KVM_RUN`). All `unsafe` code is in
//! `sys`.

mod error;
pub mod guest;
#[allow(unsafe_code)]
mod sys;
mod vm;
mod watchdog;

pub use error::{Error, exception_name};
pub use vm::{MicroVm, RunStats};
