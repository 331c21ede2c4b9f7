//! `virtlens record [--vm NAME|--pid PID] [--duration S] [--events LIST] -o FILE`: a live
//! capture into a Parquet file (raw events + the profile), with a progress line on a terminal
//! and nothing on stderr in pipes. Ctrl-C (or SIGTERM) ends the capture cleanly.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use virtlens_core::render::format;
use virtlens_host::capture::{self, CaptureOptions, Progress, StopSignals};

use crate::args::{LiveArgs, RecordArgs};
use crate::output;

pub fn run(a: &RecordArgs) -> anyhow::Result<ExitCode> {
    let mut opts = options(&a.live)?;
    opts.duration = match a.duration {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => anyhow::bail!("--duration must be a positive number of seconds, not {s}"),
    };
    let signals = StopSignals::install().context("installing the SIGINT/SIGTERM handlers")?;
    let tty = std::io::stderr().is_terminal();
    let mut progress = |p: &Progress| {
        if tty {
            let mut err = std::io::stderr();
            let _ = write!(
                err,
                "\r\x1b[Krecording: {} events, {} lost, {} · {:.0} s (Ctrl-C stops)",
                format::count(p.events),
                format::count(p.lost),
                format::rate(p.rate),
                p.elapsed.as_secs_f64()
            );
            let _ = err.flush();
        }
    };
    let result = capture::record_to_file(&opts, &a.output, signals.flag(), &mut progress);
    if tty {
        eprint!("\r\x1b[K");
    }
    let (_profile, summary) = result?;
    if a.json {
        output::print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&summary).unwrap_or_default()
        ));
    } else {
        let mut text = format!(
            "recorded {} events in {:.2} s ({} lost) to {} ({} bytes, {} event columns)\n",
            format::count(summary.events),
            summary.duration_ns as f64 / 1e9,
            format::count(summary.lost),
            summary.path,
            format::count(summary.bytes),
            summary.columns.len()
        );
        for n in &summary.notes {
            text.push_str(&format!("note: {n}\n"));
        }
        text.push_str(&format!("read it with: virtlens report {}\n", summary.path));
        output::print(&text);
    }
    Ok(ExitCode::SUCCESS)
}

/// The capture options of `--vm/--pid/--events/--buffer-kb/--no-kvm-stats`.
pub fn options(a: &LiveArgs) -> anyhow::Result<CaptureOptions> {
    Ok(CaptureOptions {
        duration: None,
        events: a
            .events
            .as_deref()
            .map(|e| e.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default(),
        pid: a.pid,
        vm: a.vm.clone(),
        buffer_kb: a.buffer_kb,
        tracefs: None,
        kvm_stats: !a.no_kvm_stats,
    })
}
