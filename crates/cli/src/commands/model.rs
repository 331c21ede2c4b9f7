//! `virtlens model overcommit`: the over-commit models for given pCPUs, vCPUs and utilization;
//! with `--measure`, the same question measured on this host with busy micro-VM vCPUs.

use std::process::ExitCode;

use virtlens_core::model::{Inputs, predict};

use crate::args::OvercommitArgs;
use crate::output::{self, OutputOptions};

pub fn overcommit(a: &OvercommitArgs) -> anyhow::Result<ExitCode> {
    let pcpus = a
        .pcpus
        .unwrap_or_else(|| virtlens_guest::online_cpus() as u32);
    if a.measure {
        return measure(a, pcpus);
    }
    let m = predict(Inputs {
        pcpus,
        vcpus: a.vcpus,
        util: a.util,
        background: a.background,
    })
    .map_err(anyhow::Error::msg)?;
    output::emit(&m, OutputOptions::stdout(a.json))?;
    Ok(ExitCode::SUCCESS)
}

fn measure(a: &OvercommitArgs, pcpus: u32) -> anyhow::Result<ExitCode> {
    virtlens_host::lab::kvm_usable().map_err(anyhow::Error::msg)?;
    let measured =
        super::lab::with_progress(|tick| virtlens_host::lab::run_crowd(a.max_vcpus, a.runs, tick))?;
    let table = virtlens_core::model::check(pcpus, &measured).map_err(anyhow::Error::msg)?;
    output::emit(&table, OutputOptions::stdout(a.json))?;
    Ok(ExitCode::SUCCESS)
}
