//! `virtlens record --summary [--duration S] [--vm NAME|--pid PID] [--json]`: no file and no
//! event leaves the kernel: the exits are counted there (BPF; the trace buffer where BPF is
//! unavailable, and a note says why) until the duration ends or a signal stops it, then the
//! profile is printed as `report` prints it (`--json`: report's JSON), with the vCPU threads'
//! ready % sampled meanwhile.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use virtlens_core::analysis::report::{self, By, Options};
use virtlens_core::decode::Decoder;
use virtlens_core::profile::Note;
use virtlens_host::bpf::Limits;
use virtlens_host::bpf::Source;
use virtlens_host::capture::{CaptureOptions, ReadyFd, StopSignals};
use virtlens_host::sched::Sampler;

use crate::args::RecordArgs;
use crate::output::{self, OutputOptions};

/// How often the trace buffer is drained (the BPF maps need nothing) and the stop looked at.
const SLICE: Duration = Duration::from_millis(50);

pub fn run(
    a: &RecordArgs,
    opts: &CaptureOptions,
    ready_fd: Option<ReadyFd>,
) -> anyhow::Result<ExitCode> {
    let signals = StopSignals::install().context("installing the signal handlers")?;
    let (mut source, notes) = Source::start(opts, Limits::default(), true)?;
    let mut sched =
        Sampler::for_selection(opts.pid, opts.vm.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
    if let Some(fd) = ready_fd {
        fd.signal();
    }
    let started = Instant::now();
    let polled = (|| -> anyhow::Result<()> {
        while !signals.stopped() && opts.duration.is_none_or(|d| started.elapsed() < d) {
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
    iv.profile.sched = Some(sched.finish());
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
    let report = report::build(&[iv.profile], &Decoder::builtin(), &options);
    output::emit(&report, OutputOptions::stdout(a.json))?;
    Ok(ExitCode::SUCCESS)
}
