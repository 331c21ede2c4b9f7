//! `virtlens compare A B [C…]`

use std::process::ExitCode;

use virtlens_core::analysis::compare;
use virtlens_core::render;

use super::inputs;
use crate::args::CompareArgs;
use crate::output;

pub fn run(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let profiles = inputs::profiles(&a.files, &a.input)?;
    let decoder = inputs::decoder(&a.input)?;
    let comparison = compare::build(&profiles, &decoder);
    if comparison.inputs.len() < 2 {
        anyhow::bail!(
            "compare needs at least two inputs (files, or labelled tables in one file); got {}",
            comparison.inputs.len()
        );
    }
    if a.input.json {
        output::print(&format!("{}\n", render::json(&comparison)));
    } else {
        output::print(&render::compare_text::render(&comparison, &output::style()));
    }
    Ok(ExitCode::SUCCESS)
}
