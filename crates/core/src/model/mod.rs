//! Capacity models: pure maths that predict what a host's configuration costs its guests,
//! each stating its assumptions, each checked against what virtlens can measure.
//! `overcommit`: the stretch and ready time of vCPUs sharing too few physical CPUs.

pub(crate) mod checked;
pub(crate) mod overcommit;

// What other crates use of this area (docs/development.md, "Public API").
pub use checked::{CrowdRun, check};
pub use overcommit::{Inputs, predict};
