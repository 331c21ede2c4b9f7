//! `virtlens compare A B [C…]`

use std::process::ExitCode;

use virtlens_core::analysis::{Comparison, compare};
use virtlens_core::profile::Profile;

use super::inputs;
use crate::args::CompareArgs;
use crate::output::{self, OutputOptions};

pub fn run(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let out = OutputOptions::with_html(a.input.json, &a.page)?;
    let profiles = inputs::profiles(&a.files, &a.input)?;
    let comparison = build(&profiles, a)?;
    output::emit(&comparison, out)?;
    Ok(ExitCode::SUCCESS)
}

/// The comparison of `profiles` (at least two inputs, or labelled tables in one).
pub fn build(profiles: &[Profile], a: &CompareArgs) -> anyhow::Result<Comparison> {
    let decoder = inputs::decoder(&a.input)?;
    let comparison = compare(profiles, &decoder);
    if comparison.inputs.len() < 2 && comparison.counters.is_none() {
        anyhow::bail!(
            "compare needs at least two inputs (files, or labelled tables in one file); got {}",
            comparison.inputs.len()
        );
    }
    Ok(comparison)
}
