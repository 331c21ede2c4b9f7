//! `virtlens load` and `virtlens bench`: the guest-side commands, run from the main binary by
//! calling the virtlens-guest crate (the same code as the static `virtlens-guest` binary).

use std::process::ExitCode;

use virtlens_guest::cli::{BenchArgs, LoadArgs};
use virtlens_guest::render;

use crate::output;

pub fn load(a: &LoadArgs) -> anyhow::Result<ExitCode> {
    let r = a.run().map_err(anyhow::Error::msg)?;
    if a.json {
        output::print(&format!("{}\n", virtlens_core::render::json(&r)));
    } else {
        output::print(&render::load(&r));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn bench(a: &BenchArgs) -> anyhow::Result<ExitCode> {
    let r = super::lab::with_progress(|tick| {
        a.run(&mut |done, total, label| {
            tick(virtlens_host::lab::Tick {
                done: done as u64,
                total: total as u64,
                label,
            })
        })
    })
    .map_err(anyhow::Error::msg)?;
    if a.json {
        output::print(&format!("{}\n", virtlens_core::render::json(&r)));
    } else {
        output::print(&render::bench(&r));
    }
    Ok(ExitCode::SUCCESS)
}
