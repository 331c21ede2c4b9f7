//! virtlens-core's integration tests: every reader against real samples, the diagnosis and
//! lint rules, the fuzz properties (proptest) and the regression cases.
//!
//! One test binary for the whole crate (each former `tests/X.rs` is module `X`; it links the
//! crate once instead of once per file). Run it all, or one module:
//!
//! ```text
//! cargo test -p virtlens-core --test tests
//! cargo test -p virtlens-core --test tests -- kvm_stat::
//! ```
//!
//! Its tests run as threads of one process: those that must not overlap take
//! `virtlens_testkit::shared()` or `exclusive()` (crates/testkit/src/machine.rs).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

mod common;
mod handbuilt;

mod apicv_inhibit;
mod architectures;
mod bcc_kvmexit;
mod bhyve_dtrace;
mod diagnose_fuzz;
mod diagnose_hypotheses;
mod diagnose_hypotheses_more;
mod diagnose_iopath;
mod diagnose_public_sources;
mod diagnose_rules;
mod diagnose_samples;
mod diagnose_sched;
mod diagnose_seeds;
mod findings_doc;
mod fuzz_bcc_kvmexit;
mod fuzz_bhyve_dtrace;
mod fuzz_config;
mod fuzz_counters;
mod fuzz_fio_json;
mod fuzz_guest_symbols;
mod fuzz_kernel_log;
mod fuzz_perf_data;
mod fuzz_perf_kvm_stat;
mod fuzz_perf_stat;
mod fuzz_perfmon;
mod fuzz_ring_buffer;
mod fuzz_trace_text;
mod fuzz_wrapped_trace;
mod fuzz_xenalyze;
mod guest_code;
mod kernel_log;
mod kvm_stat;
mod kvm_stat_headerless;
mod libvirt_oracle;
mod line_damage;
mod lint_configs;
mod perf_kvm_stat;
mod perf_kvm_stat_headerless;
mod perf_prof;
mod perf_stat;
mod perfmon;
mod qmp_stats;
mod regression;
mod stretch_figures;
mod timeline;
mod trace_text;
mod virsh_domstats;
mod wrapped_inputs;
mod xenalyze;
