//! `virtlens report FILE…`

use std::process::ExitCode;

use virtlens_core::analysis::{By, Report, ReportOptions as Options, report};
use virtlens_core::profile::Profile;

use super::inputs;
use crate::args::{ByArg, ReportArgs};
use crate::output::{self, OutputOptions};

pub fn run(a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let out = OutputOptions::with_html(a.input.json, &a.page)?;
    let profiles = inputs::profiles(&a.files, &a.input)?;
    let report = build(&profiles, a)?;
    output::emit(&report, out)?;
    Ok(ExitCode::SUCCESS)
}

/// The report of `profiles` with the options of `a` (its files already read).
pub fn build(profiles: &[Profile], a: &ReportArgs) -> anyhow::Result<Report> {
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
            Some(ByArg::Rip) => By::Rip,
        },
        top: a.top,
        symbols: inputs::guest_symbols(&a.guest_code)?,
    };
    Ok(report(profiles, &decoder, &options))
}
