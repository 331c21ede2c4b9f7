//! virtlens-guest: the part of virtlens that runs *inside* a guest (or on bare metal, for the
//! baseline): the load generator (`load`, `virtlens load`), the guest-side benchmark suite
//! ([`bench`], `virtlens bench`), and the causal lab's workloads (`workload`), each one
//! known cause of VM exits. It depends on no KVM, tracefs or Parquet code, so it builds as
//! one small static binary (`--target x86_64-unknown-linux-musl`) that runs unchanged in any
//! x86-64 Linux guest; the main `virtlens` binary offers the same subcommands by calling this
//! crate as a library.
//!
//! The JSON it writes ([`schema`]) is what `virtlens stretch` reads: one document per layer
//! (native, VM, nested VM), each measure with its repeated samples and their median and spread,
//! and the environment's fingerprint (hypervisor, clocksource, steal, page sizes), so the stretch
//! between layers can be told apart from noise and explained.

// `pub` means public API: an item other crates cannot reach is pub(crate) (docs/development.md).
#![warn(unreachable_pub)]
// The load generator, the bench suite and the workloads are reached through `cli` (the
// `virtlens` and `virtlens-guest` commands): without that feature (virtlens-core and -host
// build this crate so) they and what only they use are unreachable, not dead.
#![cfg_attr(not(feature = "cli"), allow(dead_code, unreachable_pub))]
// Elsewhere than on x86-64 only the /proc readings and mappings virtlens-host uses are built
// (the load generator, bench suite and workloads drive x86 devices and CPUID).
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unreachable_pub))]

pub mod schema;
pub mod stats;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod bench;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod fingerprint;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod load;
#[cfg(target_os = "linux")]
mod procfs;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod sys;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod workload;

#[cfg(all(feature = "cli", target_os = "linux", target_arch = "x86_64"))]
pub mod cli;
#[cfg(all(feature = "cli", target_os = "linux", target_arch = "x86_64"))]
pub mod render;

// What virtlens-host and virtlens-core use: /proc readings, the environment's fingerprint, and
// memory mapped with a chosen page size.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub use fingerprint::probe as probe_fingerprint;
#[cfg(target_os = "linux")]
pub use procfs::{CpuTicks, SchedStat, anon_huge_kb, online_cpus, procs_running};
#[cfg(target_os = "linux")]
pub use sys::{Mapping, Pages};

/// Not API: the guest library has no test binary of its own (Cargo.toml), so its checks live in
/// the CLI's suite (crates/cli/tests/guest_units.rs), which reaches these internals here.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[doc(hidden)]
pub mod testing {
    pub use crate::bench::{QUEENS_SOLUTIONS, fio_figures, iperf3_figures, queens};
    pub use crate::load::task::{Work, io_wait};
    pub use crate::procfs::{anon_huge_kb_in, count_cpu_list, procs_running_in};
}

/// The version of virtlens that wrote a document.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
