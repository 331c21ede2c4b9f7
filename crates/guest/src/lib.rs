//! virtlens-guest: the part of virtlens that runs *inside* a guest (or on bare metal, for the
//! baseline): the load generator ([`load`], `virtlens load`), the guest-side benchmark suite
//! ([`bench`], `virtlens bench`), and the causal lab's workloads ([`workload`]), each one
//! known cause of VM exits. It depends on no KVM, tracefs or Parquet code, so it builds as
//! one small static binary (`--target x86_64-unknown-linux-musl`) that runs unchanged in any
//! x86-64 Linux guest; the main `virtlens` binary offers the same subcommands by calling this
//! crate as a library.
//!
//! The JSON it writes ([`schema`]) is what `virtlens stretch` reads: one document per layer
//! (native, VM, nested VM), each measure with its repeated samples and their median and spread,
//! and the environment's fingerprint (hypervisor, clocksource, steal, page sizes), so the stretch
//! between layers can be told apart from noise and explained.

pub mod schema;
pub mod stats;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod bench;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod fingerprint;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod load;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod procfs;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[allow(unsafe_code)]
pub mod sys;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod workload;

#[cfg(all(feature = "cli", target_os = "linux", target_arch = "x86_64"))]
pub mod cli;
#[cfg(all(feature = "cli", target_os = "linux", target_arch = "x86_64"))]
pub mod render;

/// The version of virtlens that wrote a document.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
