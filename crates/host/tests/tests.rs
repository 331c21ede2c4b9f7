//! virtlens-host's integration tests: captures, BPF, perf.data recordings and the lab's
//! micro-VMs on this machine's /dev/kvm and tracefs, and the exporter's deploy files.
//!
//! One test binary for the whole crate (each former `tests/X.rs` is module `X`; it links the
//! crate once instead of once per file). Run it all, or one module:
//!
//! ```text
//! cargo test -p virtlens-host --test tests
//! cargo test -p virtlens-host --test tests -- lab_exits::
//! ```
//!
//! Its tests run as threads of one process: those that must not overlap take
//! `virtlens_testkit::shared()` or `exclusive()` (crates/testkit/src/machine.rs).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

mod bpf_aggregation;
mod capture_record;
mod deploy_files;
mod io_path;
mod io_path_diagnosed;
mod lab_diagnosed;
mod lab_exits;
mod lab_leaks;
mod lab_microvm;
mod lab_scenarios;
mod perf_data_record;
mod sched_crowding;
mod serve_http;
