//! `virtlens exitcost [--json] [--runs N] [--ops N] [--mode M] [--budget S]`: what each kind
//! of VM exit costs on this host, measured with micro-VMs on /dev/kvm, within a time budget
//! (what keeping to it changed is said: in the text, and in the JSON's notes and on stderr).

use std::process::ExitCode;
use std::time::Duration;

use virtlens_core::measure::{ExitCostReport, Mode};
use virtlens_host::lab;

use super::lab::with_progress;
use crate::args::{ExitcostArgs, ModeArg};
use crate::output::{self, OutputOptions};

pub fn run(a: &ExitcostArgs) -> anyhow::Result<ExitCode> {
    check(a)?;
    let out = OutputOptions::with_html(a.json, &a.page)?;
    let report = measure(a, true)?;
    if a.json {
        for n in &report.notes {
            eprintln!("virtlens exitcost: {n}");
        }
    }
    output::emit(&report, out)?;
    Ok(ExitCode::SUCCESS)
}

/// Whether this host can measure (a usable /dev/kvm) and the budget is one.
fn check(a: &ExitcostArgs) -> anyhow::Result<()> {
    if let Err(e) = lab::kvm_usable() {
        anyhow::bail!(
            "virtlens exitcost measures with micro-VMs and needs /dev/kvm ({e}); \
             `virtlens lab --offline` shows a recorded result"
        );
    }
    if !(a.budget.is_finite() && a.budget > 0.0 && a.budget <= 86_400.0) {
        anyhow::bail!(
            "--budget must be between 0 and 86400 seconds, not {}",
            a.budget
        );
    }
    Ok(())
}

/// Measures the exit costs as `a` says, within its budget (a progress bar on a terminal when
/// `progress`).
pub fn measure(a: &ExitcostArgs, progress: bool) -> anyhow::Result<ExitCostReport> {
    check(a)?;
    let mut opts = lab::Options::exitcost();
    opts.budget = Duration::from_secs_f64(a.budget);
    opts.rounds = usize::try_from(a.runs).unwrap_or(usize::MAX);
    opts.ops = a.ops;
    if let Some(m) = a.mode {
        opts.modes = vec![match m {
            ModeArg::Real => Mode::Real,
            ModeArg::Prot32 => Mode::Prot32,
            ModeArg::Long64 => Mode::Long64,
            ModeArg::User64 => Mode::User64,
        }];
    }
    Ok(if progress {
        with_progress(|tick| lab::run_exitcost(&opts, tick))
    } else {
        lab::run_exitcost(&opts, &mut |_| {})
    })
}
