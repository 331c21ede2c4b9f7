//! `virtlens record --summary [--duration S] [--vm NAME|--pid PID] [--json]`: no file and no
//! event leaves the kernel: the exits are counted there (BPF; the trace buffer where BPF is
//! unavailable, and a note says why) until the duration ends or a signal stops it, then the
//! profile is printed as `report` prints it (`--json`: report's JSON), with the vCPU threads'
//! ready % sampled meanwhile.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use virtlens_core::analysis::{By, Report, ReportOptions as Options, report};
use virtlens_core::decode::Decoder;
use virtlens_core::profile::Note;
use virtlens_host::Sampler;
use virtlens_host::bpf::Limits;
use virtlens_host::bpf::Source;
use virtlens_host::capture::{CaptureOptions, ReadyFd, StopSignals};

use crate::args::RecordArgs;
use crate::output::{self, OutputOptions};

/// How often the trace buffer is drained (the BPF maps need nothing) and the stop looked at.
const SLICE: Duration = Duration::from_millis(50);

pub fn run(
    a: &RecordArgs,
    opts: &CaptureOptions,
    mut ready_fd: Option<ReadyFd>,
) -> anyhow::Result<ExitCode> {
    let signals = StopSignals::install().context("installing the signal handlers")?;
    let report = summary(opts, signals.flag(), &mut || {
        if let Some(fd) = ready_fd.take() {
            fd.signal();
        }
    })?;
    output::emit(&report, OutputOptions::stdout(a.json))?;
    Ok(ExitCode::SUCCESS)
}

/// Counts the exits until `opts.duration` ends or `stop` is set (`ready` is called once
/// counting is on) and returns them as `report` shows a profile.
pub fn summary(
    opts: &CaptureOptions,
    stop: &AtomicBool,
    ready: &mut dyn FnMut(),
) -> anyhow::Result<Report> {
    let (mut source, notes) = Source::start(opts, Limits::default(), true)?;
    let mut sched =
        Sampler::for_selection(opts.pid, opts.vm.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
    ready();
    let started = Instant::now();
    let stopped = || stop.load(Ordering::Relaxed);
    let polled = (|| -> anyhow::Result<()> {
        while !stopped() && opts.duration.is_none_or(|d| started.elapsed() < d) {
            source.poll()?;
            sched.poll();
            std::thread::sleep(SLICE);
        }
        Ok(())
    })();
    let taken = polled.and_then(|()| Ok(source.take()?));
    let stopped = source.stop();
    let (mut iv, _) = taken?;
    stopped?;
    let sched_notes = sched.notes();
    iv.profile.sched = Some(sched.finish());
    iv.profile
        .warnings
        .extend(sched_notes.into_iter().map(|message| Note {
            line: None,
            message,
        }));
    iv.profile
        .warnings
        .extend(notes.into_iter().map(|message| Note {
            line: None,
            message,
        }));
    let options = Options {
        by: By::Table,
        ..Options::default()
    };
    Ok(report(&[iv.profile], &Decoder::builtin(), &options))
}
