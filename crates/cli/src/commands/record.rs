//! `virtlens record [--vm NAME|--pid PID] [--duration S] [--events LIST] [--force] -o FILE`: a
//! live capture into a Parquet file (raw events + the profile), with a progress line on a
//! terminal and nothing on stderr in pipes. `-o` is checked before tracing starts, and the
//! file appears only once complete. Ctrl-C, SIGTERM and every other catchable terminating
//! signal end the capture cleanly; `--ready-fd` says when tracing is on.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use virtlens_core::render::{count, rate};
use virtlens_host::capture::{
    self, CaptureOptions, Control, OutputFile, Progress, Ready, ReadyFd, StopSignals,
};

use crate::args::{LiveArgs, RecordArgs};
use crate::output::{self, OutputOptions};

pub fn run(a: &RecordArgs) -> anyhow::Result<ExitCode> {
    let mut ready_fd = a.live.ready_fd.map(ReadyFd::take).transpose()?;
    let opts = capture_options(a)?;
    let Some(path) = a.output.as_deref() else {
        return super::record_summary::run(a, &opts, ready_fd);
    };
    capture::preflight(&opts)?;
    let out = OutputFile::prepare(path, a.force)?;
    let signals = StopSignals::install().context("installing the signal handlers")?;
    let tty = std::io::stderr().is_terminal();
    let mut ready = |r: &Ready| {
        if tty {
            eprintln!("recording: {}", r.buffers.describe());
        }
        if let Some(fd) = ready_fd.take() {
            fd.signal();
        }
    };
    let mut progress = |p: &Progress| {
        if tty {
            let mut err = std::io::stderr();
            let _ = write!(
                err,
                "\r\x1b[Krecording: {} events, {} lost, {} · {:.0} s (Ctrl-C stops)",
                count(p.events),
                count(p.lost),
                rate(p.rate),
                p.elapsed.as_secs_f64()
            );
            let _ = err.flush();
        }
    };
    let ctl = Control {
        stop: signals.flag(),
        ready: &mut ready,
        progress: &mut progress,
    };
    let result = capture::record_to_file(&opts, out, ctl);
    if tty {
        eprint!("\r\x1b[K");
    }
    let (_profile, mut summary) = result?;
    summary.stopped_by = signals.which();
    output::emit(&summary, OutputOptions::stdout(a.json))?;
    Ok(ExitCode::SUCCESS)
}

/// The capture options of `record`: [`options`] and `--duration`.
pub fn capture_options(a: &RecordArgs) -> anyhow::Result<CaptureOptions> {
    let mut opts = options(&a.live)?;
    opts.duration = match a.duration {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => anyhow::bail!("--duration must be a positive number of seconds, not {s}"),
    };
    Ok(opts)
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
