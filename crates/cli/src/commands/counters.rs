//! `virtlens counters FILE…`: performance counters analysed like PAL does, in virtlens's
//! findings vocabulary.

use std::process::ExitCode;

use anyhow::bail;
use virtlens_core::counters;
use virtlens_core::profile::Profile;

use super::inputs;
use crate::args::CountersArgs;
use crate::output::{self, OutputOptions};

pub fn run(a: &CountersArgs) -> anyhow::Result<ExitCode> {
    check(a)?;
    let out = OutputOptions::with_html(a.input.json, &a.page)?;
    let profiles = inputs::profiles(&a.files, &a.input)?;
    let report = build(&profiles, a)?;
    output::emit(&report, out)?;
    let at = a.fail_on.severity();
    let fails = report
        .inputs
        .iter()
        .flat_map(|i| &i.findings)
        .any(|f| f.level >= at);
    Ok(if fails {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The options that are wrong whatever the input: checked before anything is read.
pub fn check(a: &CountersArgs) -> anyhow::Result<()> {
    if let Some(i) = a.iops
        && !(i.is_finite() && i > 0.0)
    {
        bail!("--iops must be a positive number of IOs per second, got {i}");
    }
    Ok(())
}

/// The counters report of `profiles`; an input without counters is an error.
pub fn build(profiles: &[Profile], a: &CountersArgs) -> anyhow::Result<counters::Report> {
    check(a)?;
    let report = counters::report(profiles, a.iops);
    if report.inputs.is_empty() {
        bail!(
            "no performance counters in the input(s); `counters` reads PDH-CSV (typeperf, relog -f csv, esxtop -b) and pasted counter tables"
        );
    }
    Ok(report)
}
