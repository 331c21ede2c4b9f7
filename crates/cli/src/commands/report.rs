//! `virtlens report FILE…`

use std::process::ExitCode;

use virtlens_core::analysis::report::{self, By, Options};
use virtlens_core::render;

use super::inputs;
use crate::args::{ByArg, ReportArgs};
use crate::output;

pub fn run(a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let profiles = inputs::profiles(&a.files, &a.input)?;
    let decoder = inputs::decoder(&a.input)?;
    let options = Options {
        by: match a.by {
            None => By::Table,
            Some(ByArg::Reason) => By::Reason,
            Some(ByArg::Port) => By::Port,
            Some(ByArg::Mmio) => By::Mmio,
            Some(ByArg::Msr) => By::Msr,
            Some(ByArg::Vcpu) => By::Vcpu,
            Some(ByArg::Vm) => By::Vm,
        },
        top: a.top,
    };
    let report = report::build(&profiles, &decoder, &options);
    if a.input.json {
        output::print(&format!("{}\n", render::json(&report)));
    } else {
        output::print(&render::report_text::render(&report, &output::style()));
    }
    Ok(ExitCode::SUCCESS)
}
