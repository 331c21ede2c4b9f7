//! `virtlens lab [--json] [--quick] [--offline] [--io-path]`: the exit costs, the trap scenarios
//! and the IO path (or, with `--io-path`, the IO path only),
//! measured with micro-VMs on /dev/kvm, with a progress bar on a terminal. Without a usable
//! /dev/kvm (or with `--offline`) it renders the bundled recording, labelled as one: a banner
//! in text; in JSON `"measured": false` and exit status [`NOT_MEASURED`], so a script cannot
//! take it for a measurement.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use virtlens_core::measure::{LAB_SCHEMA, LabReport, diagnose_scenarios, label_lab};
use virtlens_core::render::LabRecording;
use virtlens_host::lab::{self, Tick};

use crate::args::LabArgs;
use crate::output::{self, OutputOptions};

/// The exit status of `lab --json` when it printed the bundled recording, not a measurement.
pub const NOT_MEASURED: u8 = 3;

/// A lab result virtlens recorded on a development machine (PVM backend), shown offline.
const RECORDING: &str = include_str!("../../../../testdata/lab/pvm-dev-machine.json");

pub fn run(a: &LabArgs) -> anyhow::Result<ExitCode> {
    if let Some(name) = &a.replay {
        return replay(name, a.duration);
    }
    let out = OutputOptions::with_html(a.json, &a.page)?;
    match shown(a, true)? {
        Shown::Measured(report) => {
            output::emit(&report, out)?;
            Ok(ExitCode::SUCCESS)
        }
        Shown::Recording { report, why } => offline(&report, &why, out),
    }
}

/// What `lab` shows: a measurement, or the bundled recording and why nothing was measured.
pub enum Shown {
    Measured(LabReport),
    Recording { report: LabReport, why: String },
}

/// Measures (with a progress bar on a terminal when `progress`), or, with `--offline` or
/// without a usable /dev/kvm, returns the bundled recording, labelled as one.
pub fn shown(a: &LabArgs, progress: bool) -> anyhow::Result<Shown> {
    let why = if a.offline {
        Some("--offline was given".to_string())
    } else {
        lab::kvm_usable()
            .err()
            .map(|e| format!("cannot measure here ({e})"))
    };
    if let Some(why) = why {
        return Ok(Shown::Recording {
            report: recording()?,
            why,
        });
    }
    let mut opts = lab::Options::lab(a.quick);
    opts.io_path_only = a.io_path;
    let mut report = if progress {
        with_progress(|tick| lab::run_lab(&opts, tick))
    } else {
        lab::run_lab(&opts, &mut |_| {})
    };
    diagnose_scenarios(&mut report);
    Ok(Shown::Measured(report))
}

/// `lab --replay SCENARIO/VARIANT`: one trap kept running, a line when it starts and one when
/// it ends (the start line is what a script waits for before it starts watching).
fn replay(name: &str, duration: f64) -> anyhow::Result<ExitCode> {
    if !(duration > 0.0 && duration.is_finite()) {
        anyhow::bail!("--duration {duration} must be a positive number of seconds");
    }
    lab::kvm_usable().map_err(|e| anyhow::anyhow!("cannot replay here: {e}"))?;
    let started = std::time::Instant::now();
    let ops = lab::replay(name, Duration::from_secs_f64(duration), &mut || {
        let mut out = std::io::stdout();
        let _ = writeln!(
            out,
            "replay {name}: running for {duration} s (pid {})",
            std::process::id()
        );
        let _ = out.flush();
    })
    .map_err(|e| anyhow::anyhow!("replaying {name}: {e}"))?;
    let secs = started.elapsed().as_secs_f64();
    let _ = writeln!(
        std::io::stdout(),
        "replay {name}: {ops} operations in {secs:.1} s ({:.0}/s)",
        ops as f64 / secs.max(1e-9)
    );
    Ok(ExitCode::SUCCESS)
}

/// The bundled recording, shown by this virtlens: in its schema, labelled by its rules, and
/// never as measured.
fn recording() -> anyhow::Result<LabReport> {
    let mut report: LabReport = serde_json::from_str(RECORDING)
        .map_err(|e| anyhow::anyhow!("the bundled lab recording is unreadable: {e}"))?;
    report.schema = LAB_SCHEMA.to_string();
    report.measured = false;
    label_lab(&mut report);
    diagnose_scenarios(&mut report);
    Ok(report)
}

fn offline(report: &LabReport, why: &str, out: OutputOptions) -> anyhow::Result<ExitCode> {
    let json = out.json;
    if json {
        eprintln!(
            "virtlens lab: {why}; printing the bundled recording (\"measured\": false, exit \
             status {NOT_MEASURED})"
        );
    }
    output::emit(&LabRecording { report, why }, out)?;
    Ok(if json {
        ExitCode::from(NOT_MEASURED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `work` with a progress bar on stderr when it is a terminal, and none otherwise.
pub(super) fn with_progress<T>(work: impl FnOnce(&mut dyn FnMut(Tick<'_>)) -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return work(&mut |_| {});
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} (eta {eta}) {msg}",
    ) {
        bar.set_style(style);
    }
    // Keeps the spinner and the clock moving while one long run holds the bar still.
    bar.enable_steady_tick(Duration::from_millis(200));
    let result = work(&mut |t: Tick<'_>| {
        bar.set_length(t.total);
        bar.set_position(t.done);
        bar.set_message(t.label.to_string());
    });
    bar.finish_and_clear();
    result
}
