//! virtlens-host: the parts of virtlens that touch this Linux host (tracefs capture, KVM binary
//! statistics, VM discovery, the micro-VM lab, the guest-side bench suite, the Prometheus
//! exporter). They arrive with their issues; today the crate holds the host-facts probe the
//! CLI uses to label output.

// `pub` means public API: an item other crates cannot reach is pub(crate) (docs/development.md).
#![warn(unreachable_pub)]

pub mod bpf;
pub mod capture;
pub mod discovery;
// The micro-VMs are x86-64 guests (real-mode and long-mode code, port I/O, CPUID): the lab and
// exit-cost measurement are built on x86-64 hosts only. Capture, serving and discovery work on
// every KVM architecture.
#[cfg(target_arch = "x86_64")]
pub mod lab;
#[cfg(target_arch = "x86_64")]
pub mod microvm;
pub mod serve;

mod facts;
// The micro-VMs read more of it than capture does.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unreachable_pub))]
mod kvm_stats;
mod sched;

pub use facts::probe as probe_facts;
pub use sched::Sampler;

/// Not API: internals that integration tests (this crate's and the CLI's) check directly. Those
/// tests need KVM, tracefs or sockets, so they stay in the integration binaries rather than
/// becoming unit tests that `cargo test --lib` would run. Nothing else may use these.
#[doc(hidden)]
pub mod testing {
    /// tests/bpf_aggregation.rs: the in-kernel aggregation against the tracefs count.
    pub use crate::bpf::{live::BpfLive, plan::event_index};
    /// tests/capture_record.rs: a capture's leftovers carry this process as their owner.
    pub use crate::capture::leftovers::Owner as LeftoverOwner;
    /// tests/io_path.rs, io_path_diagnosed.rs: one io_path lab configuration, run and checked.
    #[cfg(target_arch = "x86_64")]
    pub use crate::lab::io_path::{
        Config as IoPathConfig, RunCounts,
        profile::{iops as io_path_iops, profile as io_path_profile},
        rounds::{Plan as IoPathPlan, check as check_io_path, measure as measure_io_path},
        run as run_io_path,
    };
    /// tests/deploy_files.rs: the exposition the shipped dashboards and alerts are checked on.
    pub use crate::serve::exposition::{
        classic as classic_exposition, encode as encode_exposition, registry as exposition_registry,
    };
    /// tests/serve_http.rs: the HTTP layer's limits, on a loopback socket.
    pub use crate::serve::http::{HEADER_TIMEOUT, Http, Texts, max_connections};
    /// The CLI's tests/serve_prometheus.rs: the QMP client against a real socket.
    pub use crate::serve::qmp::Qmp;
    /// tests/deploy_files.rs: the state the exposition is made of.
    pub use crate::serve::state::State;
}
