//! virtlens's integration tests: the `virtlens` binary run as a user runs it, live captures on
//! this machine, the HTML pages in Chromium, the causal lab's cases and the lab host.
//!
//! One test binary for the whole crate (each former `tests/X.rs` is module `X`; it links the
//! crate once instead of once per file). Run it all, or one module:
//!
//! ```text
//! cargo test -p virtlens --test tests
//! cargo test -p virtlens --test tests -- diagnose_cli::
//! ```
//!
//! Its tests run as threads of one process: those that must not overlap take
//! `virtlens_testkit::shared()` or `exclusive()` (crates/testkit/src/machine.rs).

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

mod bench_scripts;
mod browser;
mod common;

mod capture_cli;
mod diagnose_cases;
mod diagnose_cli;
mod diagnose_io;
mod diagnose_live;
mod fleet_captures;
mod guest_code;
mod guest_units;
mod help_examples;
mod html_charts;
mod html_pages;
mod json_schemas;
mod lab_arm64;
mod lab_cases;
mod lab_host;
mod lint_cli;
mod mcp_server;
mod mtree_and_filters;
mod output_cli;
mod readme;
mod regression;
mod report_compare;
mod sched_cli;
mod serve_network;
mod serve_prometheus;
mod serve_rules;
mod stretch_cli;
mod testkit_units;
