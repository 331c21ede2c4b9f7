//! `virtlens load`, `bench` and `workload`: the guest-side commands, run from the main binary by
//! calling the virtlens-guest crate (the same code as the static `virtlens-guest` binary).

use std::process::ExitCode;

use serde::Serialize;
use virtlens_core::render::{Export, Style, json};
use virtlens_guest::cli::{BenchArgs, LoadArgs, WorkloadArgs};
use virtlens_guest::render;
use virtlens_guest::schema::{BenchReport, LoadReport};

use crate::output::{self, OutputOptions};

/// A guest-side result shown through the one export path (the guest crate renders its own
/// text: it is built without virtlens-core).
struct Guest<'a, T> {
    result: &'a T,
    text: fn(&T) -> String,
}

impl<T: Serialize> Export for Guest<'_, T> {
    fn json(&self) -> String {
        json(self.result)
    }
    fn text(&self, _style: &Style) -> String {
        (self.text)(self.result)
    }
}

pub fn load(a: &LoadArgs) -> anyhow::Result<ExitCode> {
    let r = a.run().map_err(anyhow::Error::msg)?;
    let shown = Guest::<LoadReport> {
        result: &r,
        text: render::load,
    };
    output::emit(&shown, OutputOptions::stdout(a.json))?;
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
    let shown = Guest::<BenchReport> {
        result: &r,
        text: render::bench,
    };
    output::emit(&shown, OutputOptions::stdout(a.json))?;
    Ok(ExitCode::SUCCESS)
}

/// `virtlens workload KIND`: its start line comes from the workload itself, its end line here.
pub fn workload(a: &WorkloadArgs) -> anyhow::Result<ExitCode> {
    let d = a.run().map_err(anyhow::Error::msg)?;
    let _ = std::io::Write::write_all(
        &mut std::io::stdout(),
        render::workload(a.kind, &d).as_bytes(),
    );
    Ok(ExitCode::SUCCESS)
}
