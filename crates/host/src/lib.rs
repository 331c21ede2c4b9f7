//! virtlens-host: the parts of virtlens that touch this Linux host (tracefs capture, KVM binary
//! statistics, VM discovery, the micro-VM lab, the guest-side bench suite, the Prometheus
//! exporter). They arrive with their issues; today the crate holds the host-facts probe the
//! CLI uses to label output.

pub mod bpf;
pub mod capture;
pub mod discovery;
pub mod facts;
pub mod kvm_stats;
pub mod lab;
pub mod microvm;
pub mod sched;
pub mod serve;

/// Whether this host has a KVM device node.
pub fn has_kvm() -> bool {
    std::path::Path::new("/dev/kvm").exists()
}
